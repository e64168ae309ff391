"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
JSON messages, each ended by a NUL byte, on file descriptors 3 and 4), stdlib only. Used by the
real-browser tests (tests/render/test_html_browser.py) and the page benchmark (benchmarks/htmlpage.py).

    with Browser(scripts=False) as b:
        tab = b.open(Path("diff.html").as_uri() + "#env.NCCL_ALGO")
        tab.dom()            # the DOM the browser built, as HTML
        tab.target_id()      # the id of the element :target matches, or None
        tab.screenshot()     # PNG bytes
        tab.first_paint_ms() # from the Paint Timing entries
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from typing import Any

__all__ = ["Browser", "chromium"]


def chromium() -> str | None:
    """The Chromium (or Chrome) program, or ``None``."""
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name, path="/usr/bin:/bin:/usr/local/bin")
        if found:
            return found
    return None


class Browser:
    """One headless Chromium, its own profile in a temporary folder, its own environment."""

    def __init__(self, width: int = 1100, height: int = 900, timeout: float = 120,
                 scripts: bool = True) -> None:
        program = chromium()
        if program is None:
            raise RuntimeError("no Chromium found (apt-get install chromium)")
        self.timeout = timeout
        self._home = tempfile.TemporaryDirectory(prefix="runsnap-browser-")
        to_child, self._write = os.pipe()
        self._read, from_child = os.pipe()
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-extensions", "--disable-background-networking", "--hide-scrollbars",
                 "--remote-debugging-pipe", f"--user-data-dir={self._home.name}/profile",
                 f"--window-size={width},{height}", "about:blank"]
        if not scripts:  # Blink's own setting: Emulation.setScriptExecutionDisabled is not
            # carried into the renderer a file:// page gets
            flags.insert(0, "--blink-settings=scriptEnabled=false")
        env = {"PATH": "/usr/bin:/bin", "HOME": self._home.name, "LANG": "C.UTF-8"}

        def fds() -> None:  # the protocol's ends at 3 (commands in) and 4 (answers out)
            os.dup2(to_child, 3)
            os.dup2(from_child, 4)

        self._proc = subprocess.Popen([program, *flags], env=env, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      pass_fds=(3, 4), preexec_fn=fds)
        os.close(to_child)
        os.close(from_child)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the browser (asked first, then terminated) and remove its profile."""
        try:
            self.send("Browser.close")
        except (OSError, RuntimeError, TimeoutError):
            pass
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.terminate()
            self._proc.wait(10)
        os.close(self._write)
        os.close(self._read)
        self._home.cleanup()

    def _message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not answer")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Call ``method``; its result (events that arrive meanwhile are kept in
        :attr:`events`)."""
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._write, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            got = self._message(deadline)
            if got.get("id") == self._id:
                if "error" in got:
                    raise RuntimeError(f"{method}: {got['error']}")
                return got.get("result", {})
            self.events.append(got)

    def wait_event(self, method: str, session: str) -> dict[str, Any]:
        """The next event ``method`` of ``session`` (one already arrived counts)."""
        deadline = time.monotonic() + self.timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method and e.get("sessionId") == session:
                    return self.events.pop(i)
            self.events.append(self._message(deadline))

    def open(self, url: str) -> Tab:
        """A new tab at ``url``, once it has loaded."""
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.send("Page.enable", session)
        start = time.monotonic()
        self.send("Page.navigate", session, url=url)
        self.wait_event("Page.loadEventFired", session)
        return Tab(self, session, time.monotonic() - start)


class Tab:
    """A loaded page."""

    def __init__(self, browser: Browser, session: str, load_s: float) -> None:
        self.browser = browser
        self.session = session
        self.load_s = load_s
        """Seconds from navigation to the load event."""

    def _send(self, method: str, **params: Any) -> dict[str, Any]:
        return self.browser.send(method, self.session, **params)

    def dom(self) -> str:
        """The document the browser built, as HTML (read through the DOM domain: no script
        runs in the page)."""
        root = self._send("DOM.getDocument", depth=-1)["root"]
        return str(self._send("DOM.getOuterHTML", nodeId=root["nodeId"])["outerHTML"])

    def target_id(self) -> str | None:
        """The ``id`` of the element ``:target`` matches (the URL's fragment resolved)."""
        root = self._send("DOM.getDocument")["root"]["nodeId"]
        node = self._send("DOM.querySelector", nodeId=root, selector=":target")["nodeId"]
        if not node:
            return None
        attrs = self._send("DOM.getAttributes", nodeId=node)["attributes"]
        pairs = dict(zip(attrs[::2], attrs[1::2], strict=False))
        return pairs.get("id")

    def screenshot(self) -> bytes:
        """What the tab shows, as PNG."""
        return base64.b64decode(self._send("Page.captureScreenshot", format="png")["data"])

    def first_paint_ms(self) -> float:
        """Milliseconds from navigation to the first contentful paint (Paint Timing, read by
        the DevTools protocol: the page's own policy forbids scripts, the protocol is not a
        page script)."""
        for _ in range(100):
            got = self._send("Runtime.evaluate", returnByValue=True, expression=(
                "(performance.getEntriesByName('first-contentful-paint')[0]||{}).startTime"))
            value = got.get("result", {}).get("value")
            if value is not None:
                return float(value)
            time.sleep(0.05)
        raise TimeoutError("no first contentful paint")
