"""``runsnap ls``'s output: a table of the snapshots in a folder, or JSON."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence

from runsnap.snapshot.store import Entry

__all__ = ["render_listing"]


def _when(stamp: str) -> str:
    """A capture time as ``ls`` shows it: UTC, to the second.

    >>> _when("2026-11-30T16:12:24.114+00:00")
    '2026-11-30T16:12:24Z'
    """
    return f"{stamp[:19]}Z" if stamp else "?"


def render_listing(entries: Sequence[Entry], fmt: str = "text", width: int = 0) -> str:
    """``ls`` output: ``text`` (a table, each line cut to ``width`` when given) or ``json``."""
    if fmt == "json":
        import json

        return json.dumps([e.to_dict() for e in entries], indent=2, ensure_ascii=False) + "\n"
    from runsnap.base.terminal import clean, fit

    if not entries:
        return "no snapshots\n"
    rows = [("#", "captured", "label", "exit", "host", "command")]
    for e in entries:
        if e.error:
            rows.append((e.ref, "?", "-", "-", "-", f"{os.path.basename(e.path)}: {e.error}"))
            continue
        rows.append((e.ref, _when(e.captured_at), clean(e.label) or "-",
                     "-" if e.exit_status is None else str(e.exit_status), clean(e.host) or "-",
                     clean(shlex.join(e.command)) if e.command else "(context only)"))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join([*(c.ljust(w) for c, w in zip(r[:5], widths, strict=True)), r[5]]).rstrip()
             for r in rows]
    return "".join(fit(line, width) + "\n" for line in lines)
