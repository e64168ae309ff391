#!/bin/bash
# Install the browser the HTML tests open their pages in: Debian's headless-capable Chromium.
# Idempotent; a no-op when it is there. Exit status 0 when it is there afterwards, 1 otherwise
# (tests/render/test_html_browser.py then skips, saying why).
set -uo pipefail
have() { command -v chromium >/dev/null || command -v chromium-browser >/dev/null; }
have && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "browser: not root or no apt-get: cannot install chromium" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends chromium >/dev/null \
  || exit 1
have
