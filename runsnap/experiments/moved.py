"""The metrics two runs that ended alike printed with other values (``runsnap why`` asks
before it runs GOOD's launch again: :mod:`runsnap.experiments.determinism`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from runsnap.base.records import FrozenRecord

if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["Steady", "moved_metrics", "number"]


class Steady(FrozenRecord):
    """What running GOOD's launch again showed."""

    exact: tuple[str, ...]
    """The moved metrics it gave exactly as GOOD recorded: judged at tolerance 0."""
    said: str
    """What it showed, in words."""
    launches: int = 0


def number(value: Any) -> float | None:
    """A finite number, else None (a flag, text, NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def moved_metrics(good: Snapshot, bad: Snapshot) -> list[str]:
    """The metrics both runs printed with other values, where they ended alike (the same exit
    status and signal)."""
    g, b = good.records.outcome, bad.records.outcome
    if (g.exit_status, g.signal) != (b.exit_status, b.signal) or g.exit_status is None:
        return []
    out = []
    for name, value in g.metrics.items():
        x, y = number(value), number(b.metrics.get(name))
        if x is not None and y is not None and x != y:
            out.append(name)
    return out
