"""A change that makes a launch's result vary from launch to launch: found and proven when
``bisect`` sees the judged metric take another value on the same trial.

A flaky trial is no proof of a cause, and ``bisect`` says "not reproducible" when a trial
does not give the same verdict twice. One kind of flakiness is itself the cause, the most
common of "two identical runs": BAD leaves unpinned what GOOD pins (``PYTHONHASHSEED``, a seed
variable or option), so every launch with the change draws its own result and a verdict by
the nearer of GOOD's and BAD's values is a coin toss. The verdicts cannot guide that search;
whether the result varies can. For a metric the program printed (never the wall time or the
peak memory, which vary in every launch):

1. GOOD's own launch must give one value, bit for bit, :data:`ROUNDS` times; else every
   launch varies and nothing is claimed;
2. the smallest set of changes whose launches vary (ddmin, a set "bad" when :data:`ROUNDS`
   launches of it give two values or more: one without the cause gives one value each time);
3. that set launched :data:`ROUNDS` + 1 times gives a value of its own each time. A generic
   flaky launch would not have given GOOD's one value over and over; so an expert takes the
   set as the cause, and so does :func:`search`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from runsnap.errors import SnapshotError
from runsnap.experiments.judging import OutcomeJudge
from runsnap.snapshot import load

__all__ = ["ROUNDS", "NotVarying", "judged_metric", "search", "value"]

#: Launches of a set that tell whether it varies; of GOOD's own launch.
ROUNDS = 3

Launch = Callable[[frozenset[int]], "float | None"]
Minimise = Callable[[Sequence[int], Callable[[frozenset[int]], bool]], frozenset[int]]


class NotVarying(Exception):
    """The launches do not show a change that makes the result vary: the message says why."""


def judged_metric(judge: OutcomeJudge | None) -> str | None:
    """The printed metric that decides the verdicts, or None (exit status, error, wall time)."""
    m = judge.measure if judge is not None else None
    return m.name if m is not None and m.key[0] == "metrics" else None


def value(judge: OutcomeJudge | None, snapshot: str | None) -> float | None:
    """The judged metric's value in the snapshot at ``snapshot`` (None: not there)."""
    m = judge.measure if judge is not None else None
    if m is None or not snapshot:
        return None
    try:
        return m.value(load(snapshot).records.outcome)
    except (OSError, SnapshotError):
        return None


def _listed(values: Sequence[float]) -> str:
    """Values as printed (ten digits: two that differ in the last printed digit stay two)."""
    return ", ".join(f"{v:.10g}" for v in values)


def _values(launch: Launch, subset: frozenset[int], n: int) -> list[float]:
    out = []
    for _ in range(n):
        v = launch(subset)
        if v is None:
            raise NotVarying("a launch printed no value of the judged metric")
        out.append(v)
    return out


def search(launch: Launch, minimise: Minimise, within: Sequence[int], name: str
           ) -> tuple[frozenset[int], str]:
    """The changes (indices of ``within``) that make metric ``name`` vary, and the evidence in
    words; ``launch(subset)`` launches GOOD with ``subset`` applied and gives the value,
    ``minimise(start, bad)`` is ddmin. Raises :class:`NotVarying`."""
    goods = _values(launch, frozenset(), ROUNDS)
    if len(set(goods)) != 1:
        raise NotVarying(f"GOOD's own launch gives {name} " + _listed(goods)
                         + ": it varies too")
    seen: dict[frozenset[int], bool] = {}

    def varies(subset: frozenset[int]) -> bool:
        if subset not in seen:
            seen[subset] = len(set(_values(launch, subset, ROUNDS))) > 1
        return seen[subset]

    if not varies(frozenset(within)):
        raise NotVarying(f"{ROUNDS} launches with every change applied give one {name}")
    cause = minimise(within, varies)
    mine = _values(launch, cause, ROUNDS + 1)
    if len(set(mine)) != len(mine):
        raise NotVarying(f"{name} repeats among {len(mine)} launches with the answer: "
                         + _listed(mine))
    return cause, (f"{name} differs in each of {len(mine)} launches with "
                   f"{'it' if len(cause) == 1 else 'them'} ("
                   + _listed(mine) + f"); GOOD's own launch gives "
                   f"{goods[0]:.10g} all {len(goods)} times: the result varies from launch to "
                   "launch")
