"""What "different" means for each snapshot section: one module per section, its comparison
and its scoring side by side, so adding a section touches one file.

Each module has ``compare(a, b)``, which takes the two sections (``{}`` when a snapshot lacks
one) and returns unranked :class:`~runsnap.diffing.result.Difference` records, each with its
locator (:attr:`~runsnap.diffing.result.Difference.path`), and ``score(d, rules)``, which
returns ``(score, reason, hidden)`` from the section's own rules. Both are pure functions over
plain data; git's comparison may be handed :func:`runsnap.diffing.gitlog.commits_between`, the
one look at this machine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from runsnap.diffing.gitlog import CommitLog
from runsnap.diffing.result import Difference
from runsnap.diffing.rules import RankContext, Verdict
from runsnap.diffing.sections import (
    command,
    env,
    findings,
    git,
    models,
    other,
    outcome,
    packages,
    process,
    runtime,
    system,
    tests,
)
from runsnap.diffing.walk import declared, declared_score, errors

__all__ = ["COMPARERS", "SCORERS", "compare_section", "score"]

Comparer = Callable[[Mapping[str, Any], Mapping[str, Any]], list[Difference]]
Scorer = Callable[[Difference, RankContext], Verdict]

#: Section name -> comparer, for sections with their own rules (others: every leaf; git: below).
COMPARERS: dict[str, Comparer] = {
    "command": command.compare,
    "env": env.compare,
    "packages": packages.compare,
    "models": models.compare,
    "system": system.compare,
    "outcome": outcome.compare,
    "process": process.compare,
    "runtime": runtime.compare,
    "tests": tests.compare,
}

#: Section name -> scorer; sections not listed use :func:`runsnap.diffing.sections.other.score`.
SCORERS: dict[str, Scorer] = {
    "env": env.score,
    "command": command.score,
    "packages": packages.score,
    "models": models.score,
    "git": git.score,
    "system": system.score,
    "outcome": outcome.score,
    "process": process.score,
    "runtime": runtime.score,
    "check": findings.score,
}


def compare_section(name: str, a: Mapping[str, Any], b: Mapping[str, Any],
                    commit_log: CommitLog | None = None) -> list[Difference]:
    """Every difference between two versions of section ``name``, its collector errors
    included (``commit_log``: see :func:`runsnap.diffing.gitlog.commits_between`)."""
    if a is b:
        return []
    if name == "git":
        out = git.compare(a, b, commit_log)
    elif name in COMPARERS:
        out = COMPARERS[name](a, b)
    else:
        out = other.compare(name, a, b)
    if name != "git":  # fields compared from their declaration alone (Compare(score, reason))
        out += declared(name, a, b)
    return out + errors(name, a, b)


def score(d: Difference, rules: RankContext) -> Verdict:
    """The section's own score, reason and hidden flag for ``d`` (collector errors alike in
    every section but git, whose repositories have errors of their own)."""
    if d.key == "errors" and d.section != "git":
        return other.score(d, rules)
    if d.section != "git" and len(d.path) > 1:
        by_declaration = declared_score(d.path[0], d.path[1])
        if by_declaration is not None:  # runsnap/snapshot/shapes.py scores it
            return (*by_declaration, False)
    return SCORERS.get(d.section, other.score)(d, rules)
