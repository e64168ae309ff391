"""``runsnap diff --patch``: the uncommitted code of each run as ``git diff`` showed it.

From each snapshot's stored diff (``[git] repos.NAME.diff``), file by file: a file edited in
one run only shows that run's patch; a file edited in both, differently, shows A's patch and
B's. Lines are coloured as git colours them and made safe for a terminal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runsnap.diffing.sections.git import split_patch
from runsnap.render.diff import patch_line
from runsnap.render.style import Style

__all__ = ["render_patch"]


def _repos(snap: Any) -> Mapping[str, Any]:
    git = snap.get("git") or {}
    repos = git.get("repos") if isinstance(git, Mapping) else None
    return repos if isinstance(repos, Mapping) else {}


def render_patch(a: Any, b: Any, color: bool = False) -> str:
    """The uncommitted edits that differ between snapshots ``a`` and ``b``; ``""`` when none."""
    st = Style(color)
    ra, rb = _repos(a), _repos(b)
    out: list[str] = []
    for name in [*ra, *(n for n in rb if n not in ra)]:
        x, y = ra.get(name) or {}, rb.get(name) or {}
        pa, pb = split_patch(str(x.get("diff") or "")), split_patch(str(y.get("diff") or ""))
        for path in [*pa, *(p for p in pb if p not in pa)]:
            if pa.get(path) == pb.get(path):
                continue
            sides = [(tag, patch) for tag, patch in (("A", pa.get(path)), ("B", pb.get(path)))
                     if patch is not None]
            only = "" if len(sides) == 2 else f" (edited in {sides[0][0]} only)"
            out.append(st.bold(f"{name}: {path}{only}"))
            for tag, patch in sides:
                if len(sides) == 2:
                    out.append(st.bold(f"{tag}'s edit:"))
                out += [patch_line(line, st) for line in patch.split("\n")]
            out.append("")
        for tag, repo in (("A", x), ("B", y)):
            if repo.get("diff_truncated"):
                out.append(st.yellow(f"{name}: {tag}'s stored diff was cut at the capture's "
                                     f"--max-diff-bytes; the rest is not in the snapshot"))
    return "\n".join(out).rstrip("\n") + "\n" if out else ""
