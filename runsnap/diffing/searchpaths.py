"""A search path that differs (``PYTHONPATH``, ``LD_LIBRARY_PATH``...), judged by what its
entries put in the runs' way: the failing traceback runs through code found under an entry one
run has alone, or a run imported a package from one (named when the error names it). Read by
:mod:`runsnap.diffing.evidence`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from runsnap.diffing.failingpath import code_on_failing_path
from runsnap.diffing.kinds import Evidence
from runsnap.diffing.naming import excerpt, texts
from runsnap.diffing.result import Difference
from runsnap.diffing.runfacts import RunFacts, tokens
from runsnap.knowledge.env import list_separator, split_list

__all__ = ["own_dirs_only", "search_path_evidence"]


def _entries(value: Any, sep: str) -> list[str]:
    return list(split_list(value, sep)) if isinstance(value, str) else []


def search_path_evidence(d: Difference, runs: Sequence[RunFacts]) -> Evidence | None:
    """For a search path (``PYTHONPATH``, ``LD_LIBRARY_PATH``..., and the interpreter's own
    ``sys.path``, a list): the failing traceback runs through code under an entry one run has
    alone, or a run imported a package from one (named when the error names it: ``No module
    named 'features'`` where the other run imported ``features`` from its script's folder,
    which ``PYTHONSAFEPATH`` kept off the failing run's ``sys.path``)."""
    listed = isinstance(d.a, list) or isinstance(d.b, list)
    if listed:
        ea = [str(e) for e in d.a or () if e]
        eb = [str(e) for e in d.b or () if e]
    else:
        sep = list_separator(d.key, str(d.a or ""), str(d.b or "")) \
            if d.change != "reordered" else None
        if sep != ":":
            return None
        ea, eb = _entries(d.a, sep), _entries(d.b, sep)
    only = {e: "A" for e in ea if e not in eb}
    only.update({e: "B" for e in eb if e not in ea})
    only = {e: side for e, side in only.items() if e.startswith("/")}
    if not only:
        return None
    # sys.path's own entries: the script's folder is on it, and the script ran from there
    # whatever sys.path held; only what was imported from an entry tells
    for entry, side in ({} if listed else only).items():
        found = code_on_failing_path(
            runs, [entry.rstrip("/") + "/"],
            f"code found on {d.key} entry {entry} (set in {side} only)")
        if found:
            return Evidence("failing-path", found[0], rank=found[1])
    said = texts(runs)
    for f in runs:
        for mod, row in f.imported():
            file = str(row.file or "")
            under = [e for e in only if _under_dir(file, e)]
            if not under:
                continue
            entry = under[0]
            for where, text, rank, _run in said:
                if mod in tokens(text):
                    return Evidence("named", (
                        f"{where} names {mod}, which {f.label} imported from {file}, under "
                        f"{d.key} entry {entry} ({_alone(only[entry], listed)}): "
                        f"\"{excerpt(text, mod)}\""), rank=rank)
            return Evidence("read", f"{f.label} imported {mod} from {file}, under {d.key} "
                                    f"entry {entry} ({_alone(only[entry], listed)})")
    return None


def _alone(side: str, listed: bool) -> str:
    """Whose entry it is: ``set in A only`` (a variable's), ``on A's only`` (``sys.path``)."""
    return f"on {side}'s only" if listed else f"set in {side} only"


def _under_dir(file: str, folder: str) -> bool:
    return bool(file) and file.startswith(folder.rstrip("/") + "/")


def _own_dir(snap: Any) -> set[str]:
    """The directories Python puts first on ``sys.path`` for run ``snap``'s command: its
    working directory (``-m``, ``-c``) or the directory of a word of its command line (the
    script's)."""
    command = snap.records.command
    cwd = str(command.cwd or "")
    if not cwd:
        return set()
    return {cwd} | {os.path.dirname(os.path.normpath(os.path.join(cwd, str(w))))
                    for w in command.argv[1:] if str(w) and not str(w).startswith("-")}


def own_dirs_only(a: Any, b: Any) -> bool:
    """Whether the two runs' ``sys.path`` differ only in the first entry, each run's own
    script directory (or working directory): it follows where the script is, which the
    working directory and the program's files (git) show, not which copy of a library is
    imported.

    The runs' imports from it are judged by :func:`search_path_evidence` as for any entry."""
    sa, sb = list(a.records.packages.sys_path), list(b.records.packages.sys_path)
    if not sa or not sb or sa == sb or sa[1:] != sb[1:] or sa[0] == sb[0]:
        return False
    return str(sa[0]) in _own_dir(a) and str(sb[0]) in _own_dir(b)
