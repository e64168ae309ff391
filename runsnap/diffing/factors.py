"""A metric that moved by an input's own factor: ``steps`` 32 -> 8 in the run whose shell set
``PL_TRAINER_LIMIT_TRAIN_BATCHES=0.25``, ``steps_per_epoch`` 64 -> 32 with ``--batch-size``
16 -> 32. The outcome then shows the value, as an error quoting it does: the input reached
what the run reported. :mod:`runsnap.diffing.evidence` takes it as corroboration of a read
or an option: first among its equals, never a margin (each of two inputs may move a metric).

Two numeric values (an option, a variable): a metric's ratio B/A is the values' ratio or its
inverse (a batch twice as large, half the steps). A value on one side only (the other took the
program's default): a fraction strictly between 0 and 1, other than one half, is the metric's
ratio or its inverse (a quarter of the batches). Within 1 %, for a metric that moved by 5 % or
more, never a factor of 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runsnap.diffing.kinds import Evidence
from runsnap.diffing.result import Difference

__all__ = ["by_factor", "metric_factor"]

#: How close a metric's ratio must be to the input's factor (relative).
_CLOSE = 0.01
#: How far a metric must have moved to be explained by a factor at all (relative).
_MOVED = 0.05


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        got = float(str(value).strip())
    except ValueError:
        return None
    return got if got == got and abs(got) != float("inf") else None  # not NaN nor infinite


def _close(x: float, r: float) -> bool:
    return abs(x - r) <= _CLOSE * abs(r)


def _factors(a: Any, b: Any) -> list[float]:
    """The factors B/A the input's values may multiply a count by."""
    va, vb = _number(a), _number(b)
    if va and vb and va != vb:
        return [vb / va, va / vb]
    one = vb if a is None else va if b is None else None
    if one is not None and 0 < one < 1 and not _close(one, 0.5):
        f = one if a is None else 1 / one  # B holds the fraction: B's count is that part
        return [f, 1 / f]
    return []


def metric_factor(d: Difference, ma: Mapping[str, Any], mb: Mapping[str, Any]) -> str | None:
    """The sentence when a metric of A (``ma``) and B (``mb``) moved by the factor ``d``'s
    values make (see the module's text), else None.

    >>> d = Difference("env", "PL_TRAINER_LIMIT_TRAIN_BATCHES", "added", None, "0.25")
    >>> metric_factor(d, {"steps": 32.0, "val_loss": 0.27}, {"steps": 8.0, "val_loss": 0.34})
    'the metric steps moved by the factor its values make (32 -> 8: x0.25)'
    >>> metric_factor(d.replace(b="2"), {"steps": 32.0}, {"steps": 16.0}) is None
    True
    >>> b = Difference("command", "--batch-size", "changed", "16", "32")
    >>> metric_factor(b, {"steps_per_epoch": 64}, {"steps_per_epoch": 32})
    'the metric steps_per_epoch moved by the factor its values make (64 -> 32: x0.5)'
    """
    if d.section not in ("env", "command"):
        return None
    factors = _factors(d.a, d.b)
    if not factors:
        return None
    for name, x in ma.items():
        va, vb = _number(x), _number(mb.get(name))
        if not va or vb is None or not vb:
            continue
        r = vb / va
        if abs(r - 1) < _MOVED:
            continue
        if any(_close(f, r) for f in factors):
            return (f"the metric {name} moved by the factor its values make "
                    f"({va:g} -> {vb:g}: x{r:.3g})")
    return None


def by_factor(d: Difference, ev: Evidence | None,
              metrics: tuple[Mapping[str, Any], Mapping[str, Any]]) -> Evidence | None:
    """``ev`` backed by a metric that moved by the factor ``d``'s values make
    (:func:`metric_factor`), for a variable the program read or an
    option of its command line: ``corroborated``, first among its equals, never a margin (two
    inputs that differ may each move a metric: ``--batch-size`` the steps, ``--lr`` the loss).
    Stronger evidence is left as it is."""
    if d.section == "env" and (ev is None or ev.kind != "read"):
        return ev
    if d.section == "command" and ev is not None and ev.kind not in ("read", "name"):
        return ev
    if d.section not in ("env", "command") or not metrics[0] or not metrics[1]:
        return ev
    factor = metric_factor(d, *metrics)
    if factor is None:
        return ev
    if ev is None or ev.kind != "read":
        return Evidence("name", factor, corroborated=True)
    return ev.replace(sentence=f"{ev.sentence}; and {factor}", corroborated=True)
