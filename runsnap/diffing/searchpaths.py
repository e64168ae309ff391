"""A search path that differs (``PYTHONPATH``, ``LD_LIBRARY_PATH``...), judged by what its
entries put in the runs' way: the failing traceback runs through code found under an entry one
run has alone, or a run imported a package from one (named when the error names it). Read by
:mod:`runsnap.diffing.evidence`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runsnap.diffing.failingpath import code_on_failing_path
from runsnap.diffing.kinds import Evidence
from runsnap.diffing.naming import excerpt, texts
from runsnap.diffing.result import Difference
from runsnap.diffing.runfacts import RunFacts, tokens
from runsnap.knowledge.env import list_separator, split_list

__all__ = ["search_path_evidence"]


def _entries(value: Any, sep: str) -> list[str]:
    return list(split_list(value, sep)) if isinstance(value, str) else []


def search_path_evidence(d: Difference, runs: Sequence[RunFacts]) -> Evidence | None:
    """For a search path (``PYTHONPATH``, ``LD_LIBRARY_PATH``...): the failing traceback runs
    through code under an entry one run has alone, or a run imported a package from one."""
    sep = list_separator(d.key, str(d.a or ""), str(d.b or "")) if d.change != "reordered" \
        else None
    if sep != ":":
        return None
    ea, eb = _entries(d.a, sep), _entries(d.b, sep)
    only = {e: "A" for e in ea if e not in eb}
    only.update({e: "B" for e in eb if e not in ea})
    only = {e: side for e, side in only.items() if e.startswith("/")}
    if not only:
        return None
    for entry, side in only.items():
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
                        f"{d.key} entry {entry} (set in {only[entry]} only): "
                        f"\"{excerpt(text, mod)}\""), rank=rank)
            return Evidence("read", f"{f.label} imported {mod} from {file}, under {d.key} "
                                    f"entry {entry} (set in {only[entry]} only)")
    return None


def _under_dir(file: str, folder: str) -> bool:
    return bool(file) and file.startswith(folder.rstrip("/") + "/")
