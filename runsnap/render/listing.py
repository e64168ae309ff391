"""``runsnap ls``'s output: a table of the snapshots in a folder, or JSON."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Sequence

from runsnap.base.terminal import clean, fit
from runsnap.snapshot.store import Entry

__all__ = ["render_listing"]


def _when(stamp: str) -> str:
    """A capture time as ``ls`` shows it: UTC, to the second.

    >>> _when("2026-11-30T16:12:24.114+00:00")
    '2026-11-30T16:12:24Z'
    """
    return f"{stamp[:19]}Z" if stamp else "?"


#: The widest a label or host column gets (longer ones are cut, ending in "…").
CELL_CHARS = 40
#: The longest command shown when output is not a terminal (on one, its width).
COMMAND_CHARS = 500


def render_listing(entries: Sequence[Entry], fmt: str = "text", width: int = 0) -> str:
    """``ls`` output: ``text`` (a table, each line cut to ``width`` when given) or ``json``."""
    if fmt == "json":
        return json.dumps([e.to_dict() for e in entries], indent=2, ensure_ascii=False) + "\n"

    if not entries:
        return "no snapshots\n"
    rows = [("#", "captured", "label", "exit", "host", "command")]
    # a label or host never widens every row past its cap, and a command never makes a line
    # longer than the terminal (or COMMAND_CHARS without one): time and memory stay bounded
    command_cap = min(width, COMMAND_CHARS) if width > 0 else COMMAND_CHARS

    def cell(text: str, cap: int) -> str:
        return fit(clean(text[:cap + 1]), cap)

    for e in entries:
        if e.error:
            rows.append((e.ref, "?", "-", "-", "-",
                         cell(f"{os.path.basename(e.path)}: {e.error}", command_cap)))
            continue
        command = shlex.join(a[:command_cap + 1] for a in e.command[:command_cap]) \
            if e.command else "(context only)"
        label = cell(e.label, CELL_CHARS) or "-"
        rows.append((e.ref, _when(e.captured_at), f"{label} (pinned)" if e.pinned else label,
                     "-" if e.exit_status is None else str(e.exit_status),
                     cell(e.host, CELL_CHARS) or "-", cell(command, command_cap)))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join([*(c.ljust(w) for c, w in zip(r[:5], widths, strict=True)), r[5]]).rstrip()
             for r in rows]
    return "".join(fit(line, width) + "\n" for line in lines)
