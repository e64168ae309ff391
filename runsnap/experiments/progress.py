"""Where a bisection stands, for a status line: trial k of about N, elapsed, time left."""

from __future__ import annotations

import math

from runsnap.base.records import FrozenRecord

__all__ = ["TrialProgress", "expected_trials"]


class TrialProgress(FrozenRecord):
    """Where a bisection stands, as a trial starts (``verdict`` empty) or ends."""

    trial: int
    expected: int
    """About how many trials the bisection takes in all (never fewer than have run)."""
    elapsed: float
    """Seconds since the bisection started."""
    mean: float
    """Mean seconds of the trials ended so far (0 before the first ends)."""
    applied: int
    of: int
    verdict: str = ""

    @property
    def left(self) -> float | None:
        """About how many seconds are left (None before a trial has ended).

        >>> TrialProgress(3, 9, 20.0, 4.0, 2, 8).left
        28.0
        """
        if not self.mean:
            return None
        ended = self.trial if self.verdict else self.trial - 1
        return max(0, self.expected - ended) * self.mean


def expected_trials(changes: int, baseline: bool, recheck: int) -> int:
    """About how many trials a bisection of ``changes`` takes: GOOD's launch first (when
    ``baseline``), all applied, about 2 log2(n) to halve down to one cause, the re-checks.

    >>> expected_trials(8, False, 2), expected_trials(1, True, 2)
    (11, 6)
    """
    search = 2 * math.ceil(math.log2(changes)) if changes > 1 else 0
    return int(baseline) + 1 + search + 2 * recheck
