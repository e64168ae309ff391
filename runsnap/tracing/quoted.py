"""Which values of a failed run's small config files its own error quotes
(``[runtime.data_files.FILE] quoted``): ``KeyError: 'churned'`` where the ``.env`` the program
loaded says ``LABEL_COLUMN=churned``.

Capture records a config file's key names, never its values (runsnap/tracing/datafiles.py);
so an error that quotes a value the file gave says nothing a diff can tie to the file. As the
run ends, with its error lines in hand, the file is read once more and each key whose value
the error lines hold as a whole token is kept with that token: a word the snapshot's
``[outcome]`` already holds, redacted as the rest of it is (a key whose name says credential
is never looked at). Only for a run that failed, and only values of three characters or more
that are not a boolean, a null or a short number (``0.1``, ``8``: too common to single a
file out). ``diff`` weighs the token as it weighs a quoted variable's value
(runsnap/diffing/datafiles.py)."""

from __future__ import annotations

import os
import re

from runsnap.redact.names import is_secret_name
from runsnap.tracing.datafiles import KEY_PATTERNS, KEYS_SIZE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, MutableMapping
    from typing import Any

__all__ = ["quote_values"]

_YAML = re.compile(KEY_PATTERNS["yaml"] + r"[ \t]+([^#\n]*?)[ \t]*(?:#.*)?$", re.M)
_JSON = re.compile(KEY_PATTERNS["json"] + r'\s*("(?:[^"\\\n]|\\.)*"|[^,\s}\]]+)')
_INI = re.compile(KEY_PATTERNS["ini"] + r"[ \t]*([^\n]*?)[ \t]*$", re.M)
_PLAIN = frozenset(("true", "false", "null", "none", "yes", "no", "on", "off"))
_SHORT_NUMBER = re.compile(r"[-+]?[\d.]{1,3}")
#: At most this many keys a file, and characters a value, are kept.
MAX_QUOTED, MAX_VALUE = 8, 120


def _pairs(path: str, text: str) -> list[tuple[str, str]]:
    pattern = _YAML if path.endswith((".yaml", ".yml")) else _JSON if path.endswith(
        ".json") else _INI
    return [(k, v.strip().strip("'\"")) for k, v in pattern.findall(text)]


def _quoted(value: str, texts: Iterable[str]) -> bool:
    if len(value) < 3 or len(value) > MAX_VALUE or value.lower() in _PLAIN or \
            _SHORT_NUMBER.fullmatch(value):
        return False
    token = re.compile(r"(?<![\w.\-/])" + re.escape(value) + r"(?![\w\-/])")
    return any(token.search(t) for t in texts)


def quote_values(runtime: MutableMapping[str, Any], outcome: Mapping[str, Any]) -> None:
    """Add ``quoted`` (key -> the token as the error printed it) to each config file of
    ``runtime["data_files"]`` (rows with ``keys``) whose values the failed run's error lines
    (``outcome``: the first error, the last exception, the other errors) quote."""
    status = outcome.get("exit_status")
    if not status and not outcome.get("signal"):
        return
    tb = outcome.get("traceback") or {}
    texts = [str(t) for t in (outcome.get("first_error"), tb.get("message"),
                              *(outcome.get("errors") or ())) if t]
    files = runtime.get("data_files")
    if not texts or not isinstance(files, dict):
        return
    for path, row in files.items():
        if not isinstance(row, dict) or not row.get("keys") or row.get("missing"):
            continue
        try:
            if os.path.getsize(path) > KEYS_SIZE:
                continue
            with open(path, "rb") as fh:
                text = fh.read(KEYS_SIZE).decode("utf-8", "replace")
        except OSError:
            continue
        found = {k: v for k, v in _pairs(path, text)
                 if not is_secret_name(k) and _quoted(v, texts)}
        if found:
            row["quoted"] = dict(sorted(found.items())[:MAX_QUOTED])
