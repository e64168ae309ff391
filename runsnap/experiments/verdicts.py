"""What ``runsnap why`` answers: :class:`WhyResult` (and the two launches of ``--prove``,
:class:`Proof`), plain records shared by :mod:`runsnap.experiments.explaining` (the journey)
and :mod:`runsnap.experiments.proving` (its launching half)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from runsnap.base.jsonform import json_form
from runsnap.base.records import FrozenRecord, field

if TYPE_CHECKING:
    from runsnap.diffing import Report
    from runsnap.experiments.bisecting import BisectResult

__all__ = ["EXIT", "Proof", "WhyResult", "WhySettings", "evidence", "restoring"]


class WhySettings(FrozenRecord):
    """How the launches of ``runsnap why`` are judged and told, when any are made (the
    command's options; the launching half turns them into bisect's
    :class:`~runsnap.experiments.bisecting.Options` only then)."""

    test: str | None = None
    timeout: float | None = None
    metric: str | None = None
    metric_tolerance: tuple[str, ...] = ()
    """``--metric-tolerance [NAME=]TOL`` specs, before the project's (the diff's rule)."""
    max_trials: int | None = None
    allow_missing_secrets: bool = False
    progress: Any = None
    """One line a trial (``progress(line)``)."""
    on_trial: Any = None
    """A status line's update (``on_trial(TrialProgress)``)."""
    first: tuple[tuple[Any, ...], ...] = ()
    """Locators a bisection searches first, ahead of the diff's candidates (``why JOB/``: the
    job diff's, where the launches are the job's relaunches)."""

#: ``status`` -> exit status of ``runsnap why``: 0 a cause (proven, found or named by the
#: evidence), 1 none, 130 interrupted.
EXIT = {"proven": 0, "found": 0, "confident": 0, "not-proven": 1, "none": 1, "undecided": 1,
        "not-reproducible": 1, "max-trials": 1, "interrupted": 130}


class Proof(FrozenRecord):
    """The two launches of ``--prove``: GOOD with the cause applied, BAD with it reverted."""

    applied: str
    """GOOD's launch with the cause applied: its verdict (``bad`` proves) and why."""
    reverted: str
    """BAD's launch with the cause reverted: its verdict (``good`` proves) and why."""
    holds: bool
    elapsed: float
    launches: int = 2
    """Two, or more where a launch ended like neither run and was launched once more."""

    def to_dict(self) -> dict[str, Any]:
        return json_form(self)


class WhyResult(FrozenRecord):
    """The verdict of ``runsnap why``."""

    status: str
    """``proven``, ``found`` (by bisect), ``confident`` (named by the evidence, not launched),
    ``not-proven``, ``none``, ``undecided`` (nothing could be launched), ``not-reproducible``,
    ``max-trials`` or ``interrupted``."""
    message: str
    bad: str
    good: str
    reference: str
    """How GOOD was chosen, in words."""
    report: Report
    cause: tuple[Any, ...] = ()
    """The cause: :class:`~runsnap.experiments.applying.Change` records (or the diff's
    :class:`~runsnap.diffing.Difference` when it cannot be applied)."""
    how: str = ""
    """How it was established: the evidence, or the experiment (launches, seconds)."""
    launches: int = 0
    elapsed: float = 0.0
    bisect: BisectResult | None = None
    proof: Proof | None = None
    cannot: tuple[str, ...] = field(default_factory=tuple)
    """What could not be applied by a launch, each with why."""
    experiment: tuple[str, ...] = field(default_factory=tuple)
    """Where no launch of ``why`` could apply the cause: the experiment a person runs, one
    shell line (:mod:`runsnap.experiments.yourself`)."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    """A job's diff notes (``why JOB/``): the ranks paired, the rank shown and why, a rank that
    ran in one job only, differences that count in other ranks only."""

    @property
    def exit_status(self) -> int:
        return EXIT.get(self.status, 1)

    @property
    def restore(self) -> tuple[str, ...]:
        """The change that restores GOOD, one line per part of the cause."""
        return tuple(restoring(c) for c in self.cause)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (docs/why.md)."""
        return {
            "status": self.status, "message": self.message, "bad": self.bad, "good": self.good,
            "reference": self.reference, "verdict": self.report.verdict(),
            "confidence": self.report.confidence or None,
            "cause": [{"section": c.section, "key": c.key, "path": list(c.path), "a": c.a,
                       "b": c.b} for c in self.cause],
            "how": self.how, "restore": list(self.restore), "launches": self.launches,
            "elapsed_s": round(self.elapsed, 3), "cannot": list(self.cannot),
            "experiment": list(self.experiment), "notes": list(self.notes),
            "bisect": self.bisect.to_dict() if self.bisect is not None else None,
            "proof": self.proof.to_dict() if self.proof is not None else None,
        }


def restoring(c: Any) -> str:
    """The change that gives GOOD's value back, in words a person types.

    >>> from runsnap.experiments.applying import Change
    >>> restoring(Change(("env", "NCCL_ALGO"), "env", "NCCL_ALGO", None, "Ring"))
    'unset NCCL_ALGO'
    >>> restoring(Change(("command", "options", "--tp"), "command", "--tp", "4", "8"))
    'give --tp 4'
    >>> restoring(Change(("git", "proj", "diff", "a.py"), "git", "proj: a.py", None, "+1 -1"))
    'in proj: git stash push -u -- a.py (the edit kept in the stash)'
    """
    path = tuple(c.path)
    if path[:1] == ("env",) and len(path) > 2:
        entry = path[3] if len(path) > 3 else c.key
        return f"{'remove' if path[2] == '+' else 'put back'} {entry} in {path[1]}"
    if path[:1] == ("env",):
        return f"unset {c.key}" if c.a is None else f"{c.key}={c.a}"
    if path[:2] == ("command", "options"):
        if c.a is None:
            return f"drop {path[2]}"
        return f"give {path[2]}" if c.a is True else f"give {path[2]} {c.a}"
    if path[:1] == ("models",):
        return f"{c.key}: {c.a} in config.json"
    if path[:1] == ("git",) and len(path) == 4 and path[2] in ("diff", "untracked") \
            and c.a is None:  # an edit or a new file GOOD's tree did not have
        rel = shlex.quote(str(path[3]))
        return f"in {path[1]}: git stash push -u -- {rel} (the edit kept in the stash)"
    return f"{c.where}: back to {c.a}"


def evidence(top: Any) -> str:
    """How the diff's evidence established ``top``, in words."""
    return f"evidence from the runs: {top.reason or '; '.join(top.evidence[:1])}"
