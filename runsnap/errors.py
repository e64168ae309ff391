"""runsnap's exceptions: one base, one subclass per family.

Only the CLI boundary turns these into a one-line message and an exit status;
library callers catch :class:`RunsnapError`.
"""

from __future__ import annotations

__all__ = [
    "CaptureError",
    "ProcessError",
    "RunsnapError",
    "SnapshotError",
    "TrackerError",
    "UsageError",
]


class RunsnapError(Exception):
    """Base of every error runsnap raises on purpose; its message is written for the user."""

    #: The process exit status the CLI uses for this error.
    exit_code: int = 2


class UsageError(RunsnapError):
    """The user asked for something that cannot be done as asked (bad option value, bad path)."""


class SnapshotError(RunsnapError):
    """A snapshot file is missing, unreadable, not TOML, not a runsnap snapshot, or too new."""


class CaptureError(RunsnapError):
    """A capture could not be written at all (as opposed to one section failing)."""


class ProcessError(RunsnapError):
    """A running process named with ``--pid`` does not exist or cannot be read."""


class TrackerError(RunsnapError):
    """An experiment tracker (MLflow, W&B) did not answer, refused, or holds no snapshot for the
    run named."""
