"""What happened to one launch: :class:`LaunchResult`, plain data that
:func:`runsnap.launch.outcome.build` turns into ``[outcome]``."""

from __future__ import annotations

import signal
import time

from runsnap.base.records import Record, field
from runsnap.base.timestamps import utc_timestamp

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.launch.streams import StreamWatch

__all__ = ["RSS_INTERVAL", "LaunchResult", "exit_status_for", "utc_now"]

#: How often the memory of the child's process tree is sampled.
RSS_INTERVAL = 0.5


class LaunchResult(Record):
    """What happened to one launch."""

    argv: tuple[str, ...]
    """What was run."""
    status: str = "exited"
    """``exited``, ``signalled``, ``not_found``, ``not_executable`` or ``failed``."""
    exit_status: int = 0
    """What runsnap exits with: the child's status, 128+N for signal N, 127 or 126."""
    signal_number: int | None = None
    """The signal that ended the child, if one did."""
    error: str | None = None
    """Why the child could not start (with ``not_found``, ``not_executable``, ``failed``)."""
    pid: int | None = None
    started_at: str = ""
    ended_at: str = ""
    duration_s: float = 0.0
    timed_out: bool = False
    """The run's ``timeout`` expired and runsnap stopped the child (SIGTERM, then SIGKILL)."""
    tree_rss_peak: int | None = None
    """The highest summed resident memory of the child and its descendants seen, in bytes."""
    rss_samples: int = 0
    rss_interval: float = RSS_INTERVAL
    modes: dict[str, str] = field(default_factory=dict)
    """How each output stream was wired: ``pipe``, ``pty``, ``inherit``, ``exec`` or ``none``."""
    watches: dict[str, StreamWatch] = field(default_factory=dict)
    """What was seen on each relayed stream (tail, first error, warnings)."""
    log_path: str | None = None
    log_sha256: str | None = None
    log_bytes: int | None = None
    errors: list[str] = field(default_factory=list)
    """Problems of runsnap's own while relaying (the child was not affected)."""

    @property
    def signal_name(self) -> str | None:
        """``SIGKILL`` for 9, and so on."""
        if self.signal_number is None:
            return None
        try:
            return signal.Signals(self.signal_number).name
        except ValueError:
            return f"SIG{self.signal_number}"


def exit_status_for(returncode: int) -> int:
    """runsnap's exit status for a :attr:`subprocess.Popen.returncode`: 128+N for signal N.

    >>> exit_status_for(3), exit_status_for(-9)
    (3, 137)
    """
    return 128 - returncode if returncode < 0 else returncode


def utc_now() -> str:
    """Now, in UTC, ISO 8601 with milliseconds."""
    return utc_timestamp(time.time())
