"""``check`` findings as differences: what is wrong in one run and not in the other.

A draft shorter than its target in both runs is no difference; a misspelt ``NCCL_*`` variable
in B only is one. :func:`compare` runs :func:`runsnap.checks.rules.check` on both snapshots and
returns each finding one side does not share as a difference of the pseudo-section ``check``,
its locator ``("check", KIND, *the finding's path)`` (the grouping puts it under the difference
at that path when there is one).
"""

from __future__ import annotations

from typing import Any

from runsnap.checks.rules import check, unshared
from runsnap.diffing.result import Difference
from runsnap.diffing.rules import RankContext, Verdict

__all__ = ["compare", "score"]


def compare(a: Any, b: Any) -> list[Difference]:
    """The findings of A not in B (``removed``) and of B not in A (``added``). A misspelled
    variable whose meant name has the same value in both runs (unset in both: a devcontainer's
    ``PYTHON_PATH`` beside a ``PYTHONPATH`` neither run sets) is left out: what the misspelling
    keeps from taking effect is the same in both runs, so it explains nothing between them."""
    only_a, only_b = unshared(check(a), check(b))
    va, vb = a.records.env.vars, b.records.env.vars
    only_a = [f for f in only_a if not (f.meant and va.get(f.meant) == vb.get(f.meant))]
    only_b = [f for f in only_b if not (f.meant and va.get(f.meant) == vb.get(f.meant))]
    out = [Difference("check", f"{f.kind} {'/'.join(f.path)}", "removed", f.message, None,
                      score=f.score, evidence=f.details, path=("check", f.kind, *f.path))
           for f in only_a]
    out += [Difference("check", f"{f.kind} {'/'.join(f.path)}", "added", None, f.message,
                       score=f.score, evidence=f.details, path=("check", f.kind, *f.path))
            for f in only_b]
    return out


def score(d: Difference, rules: RankContext) -> Verdict:
    """The finding's own score; its reason says which run it was found in."""
    side = "A" if d.change == "removed" else "B"
    return d.score or 80, f"runsnap check finds this in {side} only: {d.a or d.b}", False
