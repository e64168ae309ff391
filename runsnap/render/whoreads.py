"""``runsnap who-reads``'s output: one line a place, or JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence

from runsnap.whoreads.search import Hit

__all__ = ["render"]


def render(hits: Sequence[Hit], fmt: str = "text") -> str:
    """``text``: one line a place, ``distribution  path/file.py:line  kind`` in columns (with
    the variable's name first when the hits are for several); ``json``:
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
    return "".join("  ".join(f"{cell:<{w}}" for cell, w in zip(r, widths, strict=False))
                   + f"  {r[-1]}\n" for r in rows)
