"""How long work shows its progress: ``bisect`` and ``why``.

On a terminal, one status line rewritten in place (trial k of about N, elapsed time, an
estimate of what is left from the trials so far), redrawn every second; elsewhere one line a
trial; ``--quiet`` nothing."""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from runsnap.base.terminal import fit, width

if TYPE_CHECKING:
    from runsnap.experiments.progress import TrialProgress

__all__ = ["StatusLine", "duration", "trial_line", "wiring"]


def duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``.

    >>> duration(4.2), duration(185), duration(3725)
    ('4s', '3m05s', '1h02m')
    """
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def trial_line(p: TrialProgress, since: float = 0.0) -> str:
    """The status line for ``p``, ``since`` seconds after it was told.

    >>> from runsnap.experiments.progress import TrialProgress
    >>> trial_line(TrialProgress(3, 9, 20.0, 4.0, 2, 8), 1.0)
    'trial 3 of about 9 (2 of 8 applied), 21s elapsed, about 27s left'
    """
    left = p.left
    rest = "estimating what is left" if left is None else \
        f"about {duration(max(0.0, left - (0.0 if p.verdict else since)))} left"
    return (f"trial {p.trial} of about {p.expected} ({p.applied} of {p.of} applied), "
            f"{duration(p.elapsed + since)} elapsed, {rest}")


class StatusLine:
    """One line on a terminal, rewritten in place; :meth:`close` clears it."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.last: tuple[TrialProgress, float] | None = None
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.ticker = threading.Thread(target=self._tick, name="runsnap-status", daemon=True)
        self.ticker.start()

    def trial(self, p: TrialProgress) -> None:
        with self.lock:
            self.last = (p, time.monotonic())
        self.draw()

    def draw(self) -> None:
        with self.lock:
            if self.last is None or self.done.is_set():
                return
            p, at = self.last
            text = fit(f"runsnap: {trial_line(p, time.monotonic() - at)}", width(self.stream))
            try:
                self.stream.write(f"\r\x1b[2K{text}")
                self.stream.flush()
            except (OSError, ValueError):
                self.done.set()

    def _tick(self) -> None:
        while not self.done.wait(1.0):
            self.draw()

    def close(self) -> None:
        """Clear the line (the answer follows on stdout)."""
        with self.lock:
            if not self.done.is_set() and self.last is not None:
                try:
                    self.stream.write("\r\x1b[2K")
                    self.stream.flush()
                except (OSError, ValueError):
                    pass
            self.done.set()


def wiring(quiet: bool, say: Any) -> tuple[Any, Any, StatusLine | None]:
    """``(progress, on_trial, status)`` for the bisection's options: a status line on a
    terminal, one line a trial (``say``) elsewhere, nothing when ``quiet``."""
    if quiet:
        return None, None, None
    if sys.stderr.isatty():
        status = StatusLine()
        return None, status.trial, status
    return say, None, None
