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
    if not width:
        return "".join(clean("  ".join(f"{cell:<{w}}" for cell, w in zip(r, widths,
                                                                         strict=False))
                             + f"  {r[-1]}") + "\n" for r in rows)
    # at a terminal's width the path gets the room: a distribution's name longer than most
    # (opentelemetry-exporter-otlp-proto-http ...) widens its own line's cell, not the column
    dist = len(widths) - 2
    widths[dist] = min(widths[dist], max(DIST_CELL, width // 5))
    kind = max(len(r[-1]) for r in rows)
    lines = []
    for r in rows:
        cells = [f"{c:<{w}}" for c, w in zip(r[:-2], widths[:-1], strict=False)]
        used = sum(len(c) + 2 for c in cells)
        room = max(width - used - 2 - kind, 12)
        path = _middle(r[-2], room)
        lines.append(fit(clean("  ".join([*cells, f"{path:<{min(widths[-1], room)}}"])
                               + f"  {r[-1]}"), width))
    return "".join(line + "\n" for line in lines)


#: The width of the distribution column at a terminal (a longer name widens its own line).
DIST_CELL = 16


def _middle(text: str, room: int) -> str:
    """``text`` cut to ``room`` characters in its middle.

    >>> _middle("torch/testing/_internal/common_utils.py:123", 24)
    'torch/t…mon_utils.py:123'
    """
    if len(text) <= room:
        return text
    tail = room * 2 // 3
    return text[: room - tail - 1] + "…" + text[-tail:]
