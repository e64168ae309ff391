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
    "describe",
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


def describe(exc: BaseException) -> str:
    """What went wrong, in one line for the user: runsnap's own message, an operating-system
    error's text (with its file), or else the exception's type and message (a failure runsnap
    did not expect, still told in one line).

    >>> describe(OSError(28, "No space left on device", "/data/run.toml"))
    '/data/run.toml: No space left on device'
    >>> describe(KeyError("tail"))
    "KeyError: 'tail'"
    """
    if isinstance(exc, RunsnapError):
        return str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename is not None else exc.strerror
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
