"""``runsnap who-reads``'s output: one line a place, or JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence

from runsnap.base.terminal import clean, fit
from runsnap.whoreads.search import Hit

__all__ = ["render"]


def render(hits: Sequence[Hit], fmt: str = "text", width: int = 0) -> str:
    """``text``: one line a place, ``distribution  path/file.py:line  kind`` in columns (with
    the variable's name first when the hits are for several), fitted to ``width`` (0: whole
    lines) by shortening the file's path in its middle, so its name, line and kind stay;
    ``json``:
    ``{"format": "runsnap-who-reads/1", "hits": [...]}``.

    >>> print(render([Hit("X", "pkg", "1.0", "pkg/env.py", 3, "declaration", "X = EnvBool(0)"),
    ...               Hit("X", "pkg", "1.0", "pkg/lib/libx.so", None, "library")]), end="")
    pkg 1.0  pkg/env.py:3     declaration
    pkg 1.0  pkg/lib/libx.so  library
    """
    if fmt == "json":
        return json.dumps({"format": "runsnap-who-reads/1", "hits": [h.to_dict() for h in hits]},
                          indent=2, ensure_ascii=False) + "\n"
    several = len({h.name for h in hits}) > 1
    rows = [((h.name,) if several else ()) + (
        f"{h.dist} {h.version}", h.path if h.line is None else f"{h.path}:{h.line}", h.kind)
        for h in hits]
    if not rows:
        return ""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    if width:
        kind = max(len(r[-1]) for r in rows)
        room = width - sum(widths[:-1]) - 2 * (len(widths)) - kind
        if room < widths[-1]:
            room = max(room, 12)
            rows = [(*r[:-2], _middle(r[-2], room), r[-1]) for r in rows]
            widths[-1] = min(widths[-1], room)

    return "".join(fit(clean("  ".join(f"{cell:<{w}}" for cell, w in zip(r, widths,
                                                                           strict=False))
                             + f"  {r[-1]}"), width) + "\n" for r in rows)


def _middle(text: str, room: int) -> str:
    """``text`` cut to ``room`` characters in its middle.

    >>> _middle("torch/testing/_internal/common_utils.py:123", 24)
    'torch/t…mon_utils.py:123'
    """
    if len(text) <= room:
        return text
    tail = room * 2 // 3
    return text[: room - tail - 1] + "…" + text[-tail:]
