"""``[runtime.data_files]``: the data files the traced processes opened for reading, each with
a content identity taken when the run ended.

The tracing hook's wrappers of ``open`` (``runsnap/probe/hook/_runsnap_trace_files.py``) write one
``("O", path, stack)`` record per file a process opened for reading, ``("o", path)`` per file
it opened for writing, and ``("Q", n)`` for the files beyond its cap. Here, after the child
ended, runsnap reads each file once (the child pays nothing for it, but the outcome is written after
it, so the reading is bounded):

* up to :data:`WHOLE` (4 MiB), the sha256 of the whole file (``hashed = "whole"``): configs,
  eval sets and vocabularies are below it;
* above it, the sha256 of its size, its first and its last :data:`EDGE` bytes (``hashed =
  "first and last MiB"``): a weight or data shard, a 9 MB ``tokenizer.json`` is read 2 MiB at
  most; an edit in its middle that keeps the size is not seen;
* past :data:`BUDGET` (32 MiB) hashed for the run, the size only (``hashed`` says so).

The hash is CPython's built-in SHA-256 (:mod:`runsnap.base.digest`): importing :mod:`hashlib`
loads OpenSSL, which a capture does not pay for before the outcome is written; the built-in
hashes ~100 MB/s here, so the budget bounds this step to ~0.3 s, and a run that read a few
configs pays about a millisecond.

A file written during the run (opened for writing by a traced process, or modified after the
launch began: ``mtime`` at or after it) is an output, marked ``written``, never hashed; a file
gone by the end is ``missing`` (an open that failed is recorded too: the program tried it).
The files a process opened for writing before it read them are listed apart
(``[runtime] data_files_written``): outputs, which the diff tells from inputs when git lists
them as changed (:func:`runsnap.diffing.datafiles.outputs`).
A file read is stamped with when it was last modified (``modified``, UTC): a file written
between two runs (a notebook's override left in the checkout) is told from one both could
have read. Contents are never stored, only their hash, the size, the paths and the opening
frames; of a
small config file (:data:`CONFIG_SUFFIXES`, up to :data:`KEYS_SIZE`), also the names of its keys
(``keys``: YAML ``name:``, JSON ``"name":``, TOML/INI/``.env`` ``name =`` and ``[section]``
lines, found by pattern, never parsed), never their values: an error that quotes a key
(``Option 'lr_schedule' is not accepted``, ``KeyError: 'warmup_steps'``) then names the file
that brought it in or lost it (:mod:`runsnap.diffing.datafiles`). The names pass through the
snapshot's redaction as every string does.
"""

from __future__ import annotations

import os
import re
import stat

from runsnap.base.digest import sha256
from runsnap.base.timestamps import utc_timestamp

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["BUDGET", "CONFIG_SUFFIXES", "EDGE", "KEYS_SIZE", "WHOLE", "config_keys", "data_files"]

#: Files up to this size are hashed whole.
WHOLE = 4 << 20
#: Of a larger file, this much of its start and of its end is hashed (with its size).
EDGE = 1 << 20
#: Bytes hashed per run at most; files beyond it get their size only.
BUDGET = 32 << 20
#: Files listed per run at most (each process keeps 256 already).
MAX_LISTED = 512
#: Config files whose key names are kept, by suffix, and the largest so read.
CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".toml", ".ini", ".cfg", ".conf", ".env")
KEYS_SIZE = 256 << 10
#: Key names kept per file at most, and the longest kept.
MAX_KEYS = 256
_KEY_CHARS = 64
#: A key and its separator, by format (``yaml``, ``json``, ``ini`` for the rest): the one
#: table of what a key looks like, shared with runsnap/tracing/quoted.py's key-value pairs.
KEY_PATTERNS = {"yaml": r"^[ \t]*(?:- +)?([A-Za-z_][\w.\-]*)[ \t]*:",
                "json": r'"([A-Za-z_][\w.\-]*)"\s*:',
                "ini": r"^[ \t]*(?:export +)?([A-Za-z_][\w.\-]*)[ \t]*="}
_YAML_KEY = re.compile(KEY_PATTERNS["yaml"] + r"(?:[ \t]|$)", re.M)
_JSON_KEY = re.compile(KEY_PATTERNS["json"])
_INI_KEY = re.compile(KEY_PATTERNS["ini"], re.M)
_INI_SECTION = re.compile(r"^[ \t]*\[+[ \t]*([A-Za-z_][\w.\-]*)[ \t]*\]+", re.M)


def data_files(python: Sequence[Sequence[tuple[Any, ...]]], started_ns: int | None
               ) -> tuple[dict[str, dict[str, Any]], list[str], int]:
    """``(files, written, left_out)``: path -> what is known of a file opened for reading,
    from the processes' records (``python``: one list per process, its ``P`` record first);
    the paths opened for writing first, sorted; how many files were opened beyond the caps.
    ``started_ns``: when the launch began (``time.time_ns()``)."""
    files: dict[str, dict[str, Any]] = {}
    written: set[str] = set()
    left_out = 0
    for records in python:
        pid = records[0][1] if len(records[0]) > 1 else None
        for rec in records[1:]:
            kind = rec[0]
            if kind == "O" and len(rec) >= 3 and isinstance(rec[1], str):
                entry = files.get(rec[1])
                if entry is None:
                    if len(files) >= MAX_LISTED:
                        left_out += 1
                        continue
                    entry = files[rec[1]] = {"pids": [], "stack": [str(s) for s in rec[2] or ()]}
                if isinstance(pid, int) and pid not in entry["pids"]:
                    entry["pids"].append(pid)
            elif kind == "o" and len(rec) >= 2 and isinstance(rec[1], str):
                written.add(rec[1])
            elif kind == "Q" and len(rec) >= 2 and isinstance(rec[1], int):
                left_out += rec[1]
    budget = [BUDGET]
    for path, entry in sorted(files.items()):
        entry.update(_identity(path, path in written, started_ns, budget))
    outputs = sorted(written)
    left_out += max(0, len(outputs) - MAX_LISTED)
    return dict(sorted(files.items())), outputs[:MAX_LISTED], left_out


def _identity(path: str, written: bool, started_ns: int | None, budget: list[int]
              ) -> dict[str, Any]:
    """What identifies the content of ``path`` now: its hash and size, or why there is none."""
    if written:
        return {"written": True}
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {"missing": True}
    except OSError as exc:
        return {"error": exc.strerror or type(exc).__name__}
    if not stat.S_ISREG(st.st_mode):
        return {"error": "not a regular file"}
    if started_ns is not None and st.st_mtime_ns >= started_ns:
        return {"written": True, "size": st.st_size}
    size = st.st_size
    cost = size if size <= WHOLE else 2 * EDGE
    if cost > budget[0]:
        return {"size": size, "hashed": "not hashed: past the run's budget"}
    keys: list[str] = []
    try:
        if size <= KEYS_SIZE and path.endswith(CONFIG_SUFFIXES):
            with open(path, "rb") as fh:
                data = fh.read()
            digest = sha256(data).hexdigest()
            keys = config_keys(path, data)
        else:
            digest = _sha256(path, size)
    except OSError as exc:
        return {"size": size, "error": exc.strerror or type(exc).__name__}
    budget[0] -= cost
    out: dict[str, Any] = {"sha256": digest, "size": size,
                           "hashed": "whole" if size <= WHOLE else "first and last MiB",
                           "modified": utc_timestamp(st.st_mtime)}
    if keys:
        out["keys"] = keys
    return out


def config_keys(path: str, data: bytes) -> list[str]:
    r"""The key names of config file ``path`` whose content is ``data``, sorted, by pattern
    (see the module's text): never values.

    >>> config_keys("d.yaml", b"# defaults\nepochs: 80\nsched:\n  lr_schedule: cosine\n")
    ['epochs', 'lr_schedule', 'sched']
    >>> config_keys("c.json", b'{"id2label": {"0": "neg"}, "hidden_size": 8}')
    ['hidden_size', 'id2label']
    >>> config_keys("s.toml", b"[train]\nlr = 0.1\nurl = 'http://h?a=b'\n")
    ['lr', 'train', 'url']
    """
    text = data.decode("utf-8", "replace")
    if path.endswith((".yaml", ".yml")):
        found = _YAML_KEY.findall(text)
    elif path.endswith(".json"):
        found = _JSON_KEY.findall(text)
    else:
        found = _INI_KEY.findall(text) + _INI_SECTION.findall(text)
    return sorted({k for k in found if len(k) <= _KEY_CHARS})[:MAX_KEYS]


def _sha256(path: str, size: int) -> str:
    h = sha256()
    with open(path, "rb") as fh:
        if size <= WHOLE:
            while chunk := fh.read(EDGE):
                h.update(chunk)
        else:
            h.update(str(size).encode())
            h.update(fh.read(EDGE))
            fh.seek(size - EDGE)
            h.update(fh.read(EDGE))
    return h.hexdigest()
