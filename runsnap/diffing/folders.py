"""A folder variable with what one run found under it: ``HOME`` differs, and the run whose
home held ``~/.config/churn-train/defaults.yaml`` opened it (jsonargparse's default config,
read before the program's own options); the other run's home held no such file.

A file only one run opened is otherwise where that run went (a consequence, folded:
:mod:`runsnap.diffing.consequences`); under the folder a differing variable names on that
run's side, it is what that folder brought in, and goes under the variable
(:func:`by_folder`, a grouper of :mod:`runsnap.diffing.grouping`): one change, one line, the
file shown with it. A file lies under the variable whose value is its nearest folder
(``XDG_CONFIG_HOME`` before ``HOME``); only single absolute folders count (not ``PATH``-like
lists, not ``/``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runsnap.diffing.grouprecord import Group
from runsnap.diffing.result import Difference

__all__ = ["by_folder"]


def _folder(value: Any) -> str:
    """``value`` as one absolute folder (no trailing ``/``), or ``""``."""
    text = str(value or "").rstrip("/")
    if not text.startswith("/") or ":" in text or "\n" in text or text.count("/") < 2:
        return ""
    return text


def by_folder(diffs: Sequence[Difference], a: Any, b: Any) -> list[Group]:
    """Each differing variable whose value on one side is a folder that a file only that side
    opened lies under, with those files (see the module's text)."""
    files = [d for d in diffs if d.path[:2] == ("runtime", "data_files") and len(d.path) > 2
             and d.change in ("added", "removed")]
    if not files:
        return []
    folders = [d for d in diffs if d.section == "env" and d.change != "reordered"]
    claimed: dict[int, list[Difference]] = {}
    for f in files:
        path = str(f.path[2])
        best: tuple[int, Difference] | None = None
        for d in folders:
            root = _folder(d.b if f.change == "added" else d.a)
            if root and path.startswith(root + "/") and (best is None or len(root) > best[0]):
                best = (len(root), d)
        if best is not None:
            claimed.setdefault(id(best[1]), []).append(f)
    # the members say which run opened what ("in B only"): no line of their own is needed
    return [Group(d, tuple(claimed[id(d)])) for d in folders if id(d) in claimed]
