"""Host facts that move on their own: how much a fact may move between two runs on the same
machine before it counts as a difference (``host-drift.tsv`` beside this module).

The kernel's memory totals change by a little while memory is brought online after boot or a
balloon driver works; free memory changes with every process. Those facts are recorded, and a
comparison counts them only past the tolerance written here, with the reason.
"""

from __future__ import annotations

import fnmatch
import functools
import re

from runsnap.knowledge import rule_lines

__all__ = ["Drift", "drift", "moved_within"]


class Drift:
    """One rule of ``host-drift.tsv``: a fact's key pattern, its tolerance and why it moves."""

    __slots__ = ("pattern", "tolerance", "why")

    def __init__(self, pattern: str, tolerance: float | None, why: str) -> None:
        self.pattern = pattern
        self.tolerance = tolerance
        """The largest relative change that is not a difference (0.03 for 3%); None: never one."""
        self.why = why

    def __repr__(self) -> str:
        return f"Drift({self.pattern!r}, {self.tolerance!r})"


def _tolerance(text: str) -> float | None:
    """``"3%"`` -> 0.03; ``"never"`` -> None.

    >>> _tolerance("3%"), _tolerance("never")
    (0.03, None)
    """
    if text == "never":
        return None
    if not text.endswith("%"):
        raise ValueError(f"host-drift.tsv: tolerance {text!r} is neither N% nor never")
    return float(text[:-1]) / 100


@functools.lru_cache(maxsize=1)
def _rules() -> tuple[tuple[re.Pattern[str], Drift], ...]:
    return tuple((re.compile(fnmatch.translate(glob)), Drift(glob, _tolerance(tol), why))
                 for glob, tol, why in rule_lines("host-drift.tsv"))


def drift(key: str) -> Drift | None:
    """The rule for the ``[system]`` fact ``key`` (as diff names it), or None.

    >>> drift("numa.nodes.node0.memory_bytes").tolerance
    0.03
    >>> drift("kernel") is None
    True
    """
    return next((rule for pattern, rule in _rules() if pattern.fullmatch(key)), None)


def moved_within(key: str, a: object, b: object) -> bool:
    """True when ``a`` -> ``b`` of the fact ``key`` is drift, not a difference: a fact that is
    never compared, or two numbers less than the tolerance apart (relative to the larger one).
    A fact present on one side only is a difference.

    >>> moved_within("memory.total_bytes", 16_000_000_000, 16_100_000_000)
    True
    >>> moved_within("memory.total_bytes", 16_000_000_000, 32_000_000_000)
    False
    >>> moved_within("memory.available_bytes", 1, 2)
    True
    """
    rule = drift(key)
    if rule is None:
        return False
    if rule.tolerance is None:
        return True
    numbers = (int, float)
    if not isinstance(a, numbers) or not isinstance(b, numbers) or isinstance(a, bool) \
            or isinstance(b, bool):
        return False
    larger = max(abs(a), abs(b))
    return larger == 0 or abs(a - b) / larger <= rule.tolerance
