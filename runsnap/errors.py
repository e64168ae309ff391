"""runsnap's exceptions, one base and one subclass per family, and the exit statuses.

Only the CLI boundary turns these into a one-line message and an exit status;
library callers catch :class:`RunsnapError`. Every exit status runsnap chooses itself is named
here and explained in one table, :data:`EXIT_STATUSES` (the README's "Exit statuses" is
checked against it).
"""

from __future__ import annotations

__all__ = [
    "EXIT_STATUSES",
    "FAILED",
    "INTERNAL",
    "INTERRUPTED",
    "NO",
    "OK",
    "PIPE_CLOSED",
    "TIMED_OUT",
    "CaptureError",
    "ProcessError",
    "RunsnapError",
    "Signalled",
    "SnapshotError",
    "TrackerError",
    "UsageError",
    "describe",
]

#: Success; ``diff``: no differences that count.
OK = 0
#: The command's answer is no: ``diff``, the snapshots differ; ``check``, findings;
#: ``who-reads``, no package names the variable; ``bisect``, no cause reproduces.
NO = 1
#: The reader of standard output went away (``| head``): as click ends then.
PIPE_CLOSED = 1
#: Usage or input error (:attr:`RunsnapError.exit_code`).
FAILED = 2
#: A bug of runsnap's own met while it ran: one line, ``runsnap: internal error: ...``.
INTERNAL = 70
#: ``capture --timeout`` stopped the command (as ``timeout(1)``).
TIMED_OUT = 124
#: Interrupted (Ctrl-C, SIGTERM during ``bisect``).
INTERRUPTED = 130

#: Every exit status and its meaning, in the order the README's table lists them.
EXIT_STATUSES: tuple[tuple[str, str], ...] = (
    (str(OK), "success (`diff`: no differences that count; `check`: no findings; `bisect`: "
              "the cause found; `why`: a cause, proven, found or named by the evidence)"),
    (str(NO), "`diff`: the snapshots differ; `check`: findings; `who-reads`: no installed "
              "package names the variable; `bisect`: no cause reproduces; `why`: no cause "
              "(not proven, undecided, not reproducible); any command: the reader of its "
              "output went away (`| head`)"),
    (str(FAILED), "usage or input error: one line on stderr, `runsnap: ...`, never a traceback"),
    (str(INTERNAL), "a bug in runsnap: one line, `runsnap: internal error: ...` (with "
                    "`RUNSNAP_TRACEBACK=1`, the traceback)"),
    (str(TIMED_OUT), "`capture --timeout`: the command was stopped when its time ran out"),
    (str(INTERRUPTED), "interrupted (Ctrl-C)"),
    ("the command's", "`capture -- COMMAND`: the command's own status, 128+N when killed by "
                      "signal N, 127 not found, 126 not executable"),
)


class Signalled(int):
    """The exit status (128+N) of a capture or replay whose command signal N ended: the
    console script then ends by signal N itself, once the outcome is written
    (:func:`runsnap.launch.signals.die_by`), so that a shell sees what it would have seen of
    the command: bash stops a loop on Ctrl-C only when the command died by SIGINT."""

    signal_number: int

    def __new__(cls, status: int, signal_number: int) -> Signalled:
        self = super().__new__(cls, status)
        self.signal_number = signal_number
        return self


class RunsnapError(Exception):
    """Base of every error runsnap raises on purpose; its message is written for the user."""

    #: The process exit status the CLI uses for this error.
    exit_code: int = FAILED


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
