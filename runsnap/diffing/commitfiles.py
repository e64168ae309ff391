"""A repository at another commit, and what of it the program used: the files the commits
between change (:mod:`runsnap.diffing.gitlog`, where the repository is on this machine), set
against the files the runs opened and the modules they imported.

"Another commit: the code changed" says nothing of whether the run touched the change. When
the commits change ``configs/features.yaml`` and the program opened that file for reading
(``[runtime.data_files]``), or change ``fit.py`` and the program imported it
(``[runtime.modules]``, ``[runtime] submodules``) or ran it as its script
(:func:`runsnap.diffing.edits.ran_file`, as for an uncommitted edit), the commit is what the
run read: ``read`` evidence, and the data file's own difference (its other content) is one
view of the same change, shown under the commit (:func:`files_of`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from runsnap.diffing.edits import SCRIPT, ran_file
from runsnap.diffing.gitlog import FILES
from runsnap.diffing.kinds import Evidence
from runsnap.diffing.result import Difference
from runsnap.diffing.runfacts import RunFacts

__all__ = ["commit_read", "files_of"]


def _changed(d: Difference, a: Any, b: Any) -> dict[str, str]:
    """Full path -> path in the repository, for each file the commits of ``d`` (``REPO.commit``)
    change, under either run's checkout of it."""
    line = next((e for e in d.evidence if e.startswith(FILES)), "")
    names = [n.strip() for n in line[len(FILES):].split(", ")]
    names[-1:] = [names[-1].split(" (and ")[0]] if names else []
    repo = d.key[: -len(".commit")]
    roots = {str(r.path) for r in (a.records.git.repos.get(repo), b.records.git.repos.get(repo))
             if r is not None and r.path}
    return {os.path.join(root, n): n for root in roots for n in names if n}


def commit_read(d: Difference, a: Any, b: Any) -> Evidence | None:
    """``read`` evidence for ``d`` (``REPO.commit``) when a run opened for reading, or
    imported, a file the commits between change; None when the runs cannot say."""
    if d.section != "git" or not d.key.endswith(".commit"):
        return None
    changed = _changed(d, a, b)
    for side, snap in (("B", b), ("A", a)):
        for full, name in changed.items():
            got = snap.records.runtime.data_files.get(full)
            if got is not None and not got.written:
                return Evidence("read", f"the program opened {name} for reading in {side}, "
                                "and the commits between change it")
        for full, name in changed.items():
            mod = ran_file(RunFacts.of(snap, side), snap, os.path.normpath(full))
            if mod:
                how = "ran" if mod == SCRIPT else "imported"
                return Evidence("read", f"the program {how} {name} in {side}, and the commits "
                                "between change it")
    return None


def files_of(d: Difference, diffs: Sequence[Difference], a: Any, b: Any) -> list[Difference]:
    """The data files the runs opened (``[runtime.data_files]`` differences) that the commits
    of ``d`` change: one change, shown under the commit."""
    changed = _changed(d, a, b) if d.section == "git" and d.key.endswith(".commit") else {}
    return [m for m in diffs if m.path[:2] == ("runtime", "data_files") and len(m.path) > 2
            and str(m.path[2]) in changed]
