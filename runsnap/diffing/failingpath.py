"""The failing path of a run: the frames of the traceback that ended it, and whether a read of
a variable, or a package's or file's code, lies on them. :mod:`runsnap.diffing.evidence` turns
what is found here into its strongest kind of evidence (``failing-path``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from runsnap.diffing.runfacts import SITE, STDLIB, RunFacts

__all__ = ["code_on_failing_path", "on_failing_path"]


def _frames(facts: RunFacts) -> list[tuple[str, int, str, int]]:
    """The failing traceback's frames as (file, line, function, depth): depth counts the
    program's frames (not Python's own library) below this one, 0 for the one that raised
    the error in the program's code."""
    tb = facts.traceback
    if not tb or not facts.failed:
        return []
    frames = [f for f in tb.get("frames") or () if isinstance(f, Mapping)]
    out: list[tuple[str, int, str, int]] = []
    depth = 0
    for f in reversed(frames):
        file = str(f.get("file", ""))
        own = not STDLIB.search(file)
        out.append((file, int(f.get("line") or 0), str(f.get("function", "")),
                    depth if own else -1))
        if own:
            depth += 1
    return out


def _same_file(tb_file: str, rel: str) -> bool:
    """Whether a traceback's file (absolute, as printed) is the site's (relative) file."""
    tb_file, rel = tb_file.replace("\\", "/"), rel.replace("\\", "/")
    return tb_file == rel or tb_file.endswith("/" + rel) or rel.endswith("/" + tb_file)


def _raised(facts: RunFacts) -> str:
    tb = facts.traceback or {}
    return str(tb.get("type") or "an error")


def _meets(stack: Iterable[Any], frames: Sequence[tuple[str, int, str, int]]
           ) -> tuple[re.Match[str], int] | None:
    """The first frame of a read's call stack that is a function of the failing traceback,
    at most one of the program's frames above the one that raised, with that depth."""
    for entry in stack:
        m = SITE.match(str(entry))
        if m is None:
            continue
        for file, _line, func, depth in frames:
            if 0 <= depth <= 1 and func == m["func"] and _same_file(file, m["path"]):
                return m, depth
    return None


def on_failing_path(name: str, runs: Sequence[RunFacts]) -> tuple[str, int] | None:
    """(sentence, rank) for the read of ``name`` nearest the failing run's raise: a read site
    whose call stack meets the traceback in the function that raised (rank 0) or its caller
    (rank 1); None when no read is on the failing path."""
    best: tuple[str, int] | None = None
    for failing in (v for r in runs for v in r.views()):
        frames = [f for f in _frames(failing) if f[3] >= 0]
        if not frames:
            continue
        innermost = frames[0]
        for reader in runs:
            got = reader.reads(name) or {}
            for site in got.get("sites") or ():
                stack = site.get("stack") if isinstance(site, Mapping) else None
                met = _meets(stack or (), frames)
                if met is None:
                    continue
                m, depth = met
                if depth == 0:
                    where = f"the function that raised {_raised(failing)} at :{innermost[1]}"
                else:
                    where = (f"which called {innermost[2]}, where {_raised(failing)} was "
                             f"raised at :{innermost[1]}")
                found = (f"read at {m['path']}:{m['line']} in {m['func']}, {where} "
                         f"(failing run {failing.label})", depth)
                if best is None or found[1] < best[1]:
                    best = found
    return best


def code_on_failing_path(runs: Sequence[RunFacts], dirs: Sequence[str], what: str
                         ) -> tuple[str, int] | None:
    """(sentence, rank) for a failing traceback frame whose file is under one of ``dirs`` (a
    package's code, a changed file), or None."""
    for failing in (v for r in runs for v in r.views()):
        for file, line, func, depth in _frames(failing):
            if depth < 0:
                continue
            for base in dirs:
                if base and (file.startswith(base.rstrip("/") + "/") or _same_file(file, base)):
                    root = base.rstrip("/").rpartition("/")[0]
                    short = file[len(root) + 1:] if root and file.startswith(root) else file
                    return (f"the failing traceback runs through {what}: {short}:{line} in "
                            f"{func} ({_raised(failing)}, failing run {failing.label})",
                            min(depth, 2))
    return None
