"""Evidence from ``runsnap check``: a finding of the failing side only whose stated
consequence the failing error shows backs the difference it is about, as a message the engine
printed would (:mod:`runsnap.diffing.evidence` takes the stronger of this and its own). Where
the finding's message is printed by the launcher, not the process (an Open MPI rank's), a
failing run that printed nothing of its own failed as the finding says."""

from __future__ import annotations

import re
from collections.abc import Sequence

from runsnap.checks.finding import CONSEQUENCES, LAUNCHER_PRINTS
from runsnap.diffing.kinds import Evidence
from runsnap.diffing.naming import excerpt
from runsnap.diffing.result import Difference
from runsnap.diffing.runfacts import RunFacts

__all__ = ["check_backed"]


def check_backed(diffs: Sequence[Difference], runs: Sequence[RunFacts]
                 ) -> dict[tuple[str, str], Evidence]:
    """Evidence from ``check``: a finding of the failing side only (a ``check`` difference
    added in B, removed in A) whose stated consequence (:data:`runsnap.checks.finding.
    CONSEQUENCES`) the failing error shows backs the difference it is about (a variable, an
    option), as a message the engine printed would."""
    out: dict[tuple[str, str], Evidence] = {}
    for d in diffs:
        if d.section != "check" or len(d.path) < 4 or d.path[1] not in CONSEQUENCES:
            continue
        side = "B" if d.change == "added" else "A"
        failing = [f for f in runs if f.label == side and f.failed and not f.shared_failure]
        where, *rest = d.path[2:]
        key = rest[0] if where == "env" and len(rest) == 1 else (
            f"--{rest[1]}" if where == "command" and rest[:1] == ["options"] and len(rest) == 2
            else None)
        if not failing or key is None:
            continue
        pattern = re.compile(CONSEQUENCES[d.path[1]], re.I)
        if d.path[1] in LAUNCHER_PRINTS and all(not f.errors and not f.tail for f in failing):
            out[("env" if where == "env" else "command", key)] = Evidence("named", (
                f"runsnap check finds in failing run {side} only: {d.b or d.a}; and {side} "
                "failed with no message of its own, as it says (the launcher prints it)"),
                rank=1)
            continue
        for line in (e for f in failing for e in f.errors):
            if pattern.search(line):
                out[("env" if where == "env" else "command", key)] = Evidence("named", (
                    f"runsnap check finds in failing run {side} only: {d.b or d.a}; and "
                    f"{side} failed as it says: \"{excerpt(line, '')}\""), rank=1)
                break
    return out
