"""Relaying the child's output: the wiring of its streams (pipes or ptys), one reader thread per
stream, and the ``--log`` tee.

* stdout/stderr that are **not terminals** become pipes; a reader thread per stream writes each
  chunk to runsnap's own stream, to the ``--log`` file and to a
  :class:`~runsnap.launch.streams.StreamWatch`. If runsnap's stream goes away (EPIPE, EIO from a
  closed terminal) runsnap closes its end of the child's pipe, so the child sees the closed pipe
  (SIGPIPE, EPIPE) as it would have without runsnap. Errors and warnings are looked for while
  the child is quiet, so relaying never waits on them.
* stdout/stderr that **are terminals** become a pseudo-terminal each (``pty``), with the real
  terminal's settings and window size copied onto it: the child still sees a terminal (colours,
  progress bars), stays in the real terminal's foreground process group (Ctrl-C, Ctrl-Z, stdin
  unchanged), and runsnap can still keep the tail. ``inherit_tty=True`` passes the terminal
  through untouched instead, and then that stream's tail is not recorded.
* stdin is always inherited as it is.
"""

from __future__ import annotations

import errno
import fcntl
import os
import select
import subprocess
import sys
import termios
import threading
import time

from runsnap.base.startenv import CLOSED_AT_START
from runsnap.launch.metrics import MetricWatch
from runsnap.launch.streams import StreamWatch

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Sequence

    from runsnap.launch.result import LaunchResult

__all__ = ["LogTee", "Relay", "Streams", "copy_size", "flush_own_streams", "wide_pipe", "write_all"]

_CHUNK = 65536
#: What the child's pipe holds (see :func:`wide_pipe`): the child runs ahead by this much while
#: a chunk is relayed and counted. Not more: what the relay reads was written that many bytes
#: ago, and from a 1 MiB pipe it comes out of the cache no longer (the relay's CPU +12-18%
#: against 256 KiB; benchmarks/RESULTS.md, "Growth (issue 24)").
_PIPE = 1 << 18
#: Bytes read at once from the child: a chunk this size stays in the CPU's cache (L2) from its
#: read through its write to its line count (1 MiB chunks cost ~5% more CPU, 64 KiB ones ~20%
#: more in per-chunk Python; benchmarks/RESULTS.md, "Growth (issue 24)").
_READ = 1 << 18
#: How long the child must stay quiet before the relay scans queued output (milliseconds): a
#: child that writes without pause is relayed without a scan between its writes (what the scan
#: cannot keep up with is counted as unscanned); data that arrives meanwhile ends the wait.
_QUIET_MS = 5


class LogTee:
    """The ``--log`` file: every chunk of both streams, in arrival order, and its sha256.

    ``line_filter`` (whole lines in, bytes out) is what is written instead of the lines: the
    capture passes one that redacts secrets.
    """

    def __init__(self, path: str | os.PathLike[str],
                 line_filter: Callable[[bytes], bytes] | None = None) -> None:
        self.path = os.path.abspath(os.fspath(path))
        self._filter = line_filter
        self._partial = b""
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        import hashlib  # OpenSSL's, fast on a long log; only a --log run needs it

        self._sha = hashlib.sha256()
        self.bytes = 0
        self._lock = threading.Lock()
        self.error: str | None = None

    def write(self, data: bytes) -> None:
        """Append ``data`` (thread-safe); a write error stops the log, never the child."""
        with self._lock:
            if self._fd < 0:
                return
            if self._filter is not None:
                buf = self._partial + data
                cut = buf.rfind(b"\n") + 1
                if len(buf) - cut > _CHUNK:  # an endless line is filtered in pieces
                    cut = len(buf)
                self._partial = buf[cut:]
                data = self._filter(buf[:cut]) if cut else b""
                if not data:
                    return
            try:
                write_all(self._fd, data)
            except OSError as exc:
                self.error = f"log {self.path}: {exc.strerror or exc}; the log stops here"
                self._close()
                return
            self._sha.update(data)
            self.bytes += len(data)

    def close(self) -> str:
        """Close the file; return the sha256 of what was written."""
        with self._lock:
            if self._partial and self._fd >= 0 and self._filter is not None:
                rest, self._partial = self._filter(self._partial), b""
                try:
                    write_all(self._fd, rest)
                    self._sha.update(rest)
                    self.bytes += len(rest)
                except OSError as exc:
                    self.error = f"log {self.path}: {exc.strerror or exc}"
            self._close()
            return self._sha.hexdigest()

    def _close(self) -> None:
        if self._fd >= 0:
            try:
                os.close(self._fd)
            finally:
                self._fd = -1


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd``, waiting while a non-blocking stream is full."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:  # someone made the stream non-blocking: wait until writable
            select.select([], [fd], [])
            continue
        view = view[n:]


class Relay(threading.Thread):
    """Reads one child stream to its end; relays, tees and watches each chunk."""

    def __init__(self, name: str, src: int, dst: int, watch: StreamWatch, log: LogTee | None,
                 pty: bool = False):
        super().__init__(name=f"runsnap-relay-{name}", daemon=True)
        self.src, self.dst, self.watch, self.log = src, dst, watch, log
        self.real, self.pty = dst, pty
        self.relay_error: str | None = None
        self._handing_off = False
        self._wake = os.pipe()  # written by hand_off: the read below stops waiting

    def run(self) -> None:
        try:
            self._relay()
        finally:
            self.watch.close()
            if self.src >= 0 and not self._handing_off:
                os.close(self.src)
                self.src = -1

    def _relay(self) -> None:
        src, watch, log = self.src, self.watch, self.log
        idle = select.poll()
        idle.register(src, select.POLLIN)
        idle.register(self._wake[0], select.POLLIN)
        while True:
            ready = idle.poll(_QUIET_MS if watch.pending else None)
            if not ready:  # the child is quiet: scan meanwhile
                watch.scan(_CHUNK)
                continue
            if self._handing_off:
                return
            try:
                data = os.read(src, _READ)
                arrived = time.monotonic()  # before relaying: the order of the two streams
            except OSError as exc:
                if exc.errno != errno.EIO:  # EIO: the pty's other side is closed: the end
                    self.relay_error = f"reading the child's {watch.name}: {exc}"
                return
            if not data:
                return
            if log is not None:
                log.write(data)
            if self.dst >= 0:  # relayed first: the reader works while the chunk is counted
                try:
                    write_all(self.dst, data)
                except OSError as exc:
                    watch.take(data, arrived)
                    self._reader_gone(exc)
                    return
            watch.take(data, arrived)

    def _reader_gone(self, exc: OSError) -> None:
        """runsnap's own stream failed (its reader exited, its terminal closed). Without
        runsnap the child would have written into that closed pipe itself and got SIGPIPE (or
        EPIPE, EIO): so it does now, as its pipe is closed here. ``--log`` changes nothing,
        as with ``tee``."""
        self.dst = -1
        self.relay_error = (f"runsnap's {self.watch.name} was closed "
                            f"({exc.strerror or exc}): so was the child's")
        os.close(self.src)
        self.src = -1

    def hand_off(self) -> int | None:
        """Stop reading, and leave what is still to come on the child's stream to a ``cat``
        of its own session, writing where runsnap wrote; return its pid (None: none started,
        the relay goes on reading here until runsnap exits).

        For a process the child left behind that still writes (a background grandchild):
        without runsnap it would write straight to runsnap's stream, and its output would
        reach the pipe's reader or the terminal after the child's end, for as long as it runs.
        runsnap itself may not wait for it (the shell gets the child's status when the child
        ends), nor leave it writing into a pipe nobody reads (SIGPIPE). What ``cat`` relays is
        not recorded."""
        self._handing_off = True
        os.write(self._wake[1], b"x")
        self.join(1.0)
        if self.is_alive() or self.src < 0 or self.dst < 0:
            self._handing_off = False
            return None
        cat = next((p for p in ("/usr/bin/cat", "/bin/cat") if os.access(p, os.X_OK)), None)
        try:
            if cat is None:
                raise OSError("no cat")
            helper = subprocess.Popen([cat], stdin=self.src, stdout=self.dst,
                                      stderr=subprocess.DEVNULL, close_fds=True, env={}, cwd="/",
                                      start_new_session=True)
        except OSError:
            helper = None
        os.close(self.src)
        self.src = -1
        return None if helper is None else helper.pid

    def close_wake(self) -> None:
        """Close the pipe :meth:`hand_off` writes to (after the relay ended)."""
        for fd in self._wake:
            try:
                os.close(fd)
            except OSError:  # noqa: PERF203 - closed already
                pass

    def resize(self) -> None:
        """Give a pty the real terminal's new window size (after SIGWINCH)."""
        if self.pty and self.is_alive():
            copy_size(self.real, self.src)


class Streams:
    """The wiring of the child's stdout and stderr, for one launch.

    Made before the child starts (:attr:`child_fds` are its ends); :meth:`start_relays` hands
    runsnap's ends to reader threads once it runs; :meth:`close` closes whatever is still open
    (a child that never started).
    """

    def __init__(self, inherit_tty: bool = False) -> None:
        self.modes: dict[str, str] = {}
        self._wiring: dict[str, tuple[str, int, int]] = {}  # name -> (mode, child end, ours)
        try:
            for name, fd in (("stdout", 1), ("stderr", 2)):
                if not _fd_ok(fd):
                    self.modes[name] = "none"
                elif os.isatty(fd) and inherit_tty:
                    self.modes[name] = "inherit"
                elif os.isatty(fd):
                    master, slave = os.openpty()
                    _copy_terminal(fd, slave)
                    self._wiring[name] = ("pty", slave, master)
                    self.modes[name] = "pty"
                else:
                    r, w = os.pipe()
                    wide_pipe(w)
                    self._wiring[name] = ("pipe", w, r)
                    self.modes[name] = "pipe"
        except BaseException:
            self.close()
            raise

    @property
    def uses_pty(self) -> bool:
        """Whether a stream is a pty (then window size changes must be passed on)."""
        return any(mode == "pty" for mode, _c, _o in self._wiring.values())

    def child_fd(self, name: str) -> int | None:
        """The child's end for ``stdout`` or ``stderr`` (None: inherited as it is)."""
        wired = self._wiring.get(name)
        return wired[1] if wired else None

    def start_relays(self, result: LaunchResult, tail_lines: int, log: LogTee | None,
                     metrics: Sequence[tuple[str, re.Pattern[bytes]]] = ()) -> list[Relay]:
        """Close the child's ends here and start one reader thread per wired stream
        (``metrics``: the user's own, ``--metric NAME=REGEX``)."""
        relays = []
        for name, (mode, child_end, ours) in self._wiring.items():
            os.close(child_end)
            watch = StreamWatch(name, tail_lines, MetricWatch(metrics))
            result.watches[name] = watch
            relay = Relay(name, ours, 1 if name == "stdout" else 2, watch, log, mode == "pty")
            relays.append(relay)
            relay.start()
        self._wiring.clear()
        return relays

    def close(self) -> None:
        """Close both ends of every stream not handed to a relay."""
        for _mode, child_end, ours in self._wiring.values():
            os.close(child_end)
            os.close(ours)
        self._wiring.clear()


def flush_own_streams() -> None:
    """Flush what runsnap itself printed, so it comes before the child's output."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # noqa: PERF203 - a closed stream is not an error here
            pass


def wide_pipe(fd: int) -> None:
    """Let the pipe hold :data:`_PIPE` bytes (Linux ``F_SETPIPE_SZ``; where that is refused,
    as over an unprivileged user's pipe quota, the default 64 KiB stays)."""
    try:
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), _PIPE)
    except OSError:
        pass


def _fd_ok(fd: int) -> bool:
    """Whether runsnap has stream ``fd`` (not closed, nor only held since the start: see
    :func:`runsnap.base.startenv.hold_closed_streams`)."""
    if fd in CLOSED_AT_START:
        return False
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _copy_terminal(real: int, pty_fd: int) -> None:
    """Give the pty the real terminal's settings and window size, output processing off.

    Output processing (``\n`` -> ``\r\n``, tabs, ...) is the real terminal's job: done on
    the pty as well, every newline would reach the terminal as ``\r\r\n``. With ``OPOST``
    off here, the bytes the child writes reach the real terminal unchanged, which processes
    them once, as it would without runsnap (and the recorded tail holds what was written).
    """

    try:
        attrs = termios.tcgetattr(real)
        attrs[1] &= ~termios.OPOST
        termios.tcsetattr(pty_fd, termios.TCSANOW, attrs)
    except (termios.error, OSError):
        pass
    copy_size(real, pty_fd)


def copy_size(real: int, pty_fd: int) -> None:
    """Copy the window size of terminal ``real`` onto ``pty_fd``."""

    try:
        size = fcntl.ioctl(real, termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(pty_fd, termios.TIOCSWINSZ, size)
    except OSError:
        pass
