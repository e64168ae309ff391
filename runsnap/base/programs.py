"""The one place runsnap runs other programs (git, nvidia-smi, the package probe).

Tests swap a program for a recorded one by putting a script of the same name first on the
``PATH`` they pass; nothing else in runsnap starts a program for a collector.

Programs are started with :func:`os.posix_spawn` and read with :func:`select.poll`, not with
:mod:`subprocess`: a capture starts its programs before most of runsnap is imported, and the
same-run measurement in benchmarks/RESULTS.md (issue 9) shows what subprocess would cost it. Each
program's standard output goes into a pipe enlarged to 1 MiB where Linux allows, so that ``git
diff`` can write a whole diff of that size and exit while runsnap is busy elsewhere, instead of
stopping at the first 64 KiB until runsnap reads. Only a program that must run in another
directory (the package probe) goes through subprocess, which has ``cwd``.

A program whose answer runsnap needs only later (git's, started first thing in a capture) can be
started in the *background*: at the lowest priority while this machine has a core to spare, so
that it never takes CPU from runsnap's own work, which is what a capture waits for (the
measurement is in benchmarks/RESULTS.md).
"""

from __future__ import annotations

import fcntl
import functools
import os
import select
import time

from runsnap.base.records import FrozenRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Mapping, Sequence
    from typing import Any

__all__ = ["Pending", "Result", "run", "start", "which"]

#: What standard output's pipe is enlarged to (Linux ``F_SETPIPE_SZ``; the unprivileged limit,
#: ``/proc/sys/fs/pipe-max-size``, is 1 MiB by default).
PIPE_SIZE = 1024 * 1024

try:  # the signal numbers without the enum classes that importing ``signal`` builds
    import _signal as _sig  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - another Python implementation
    import signal as _sig
_SIGKILL: int = _sig.SIGKILL
_SIGPIPE: int = _sig.SIGPIPE
_SIGXFSZ: int = _sig.SIGXFSZ


class Result(FrozenRecord):
    """What a finished program said."""

    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes


    @property
    def ok(self) -> bool:
        """Whether the program exited 0."""
        return self.returncode == 0

    def text(self) -> str:
        """Standard output as text (undecodable bytes kept with ``surrogateescape``)."""
        return self.stdout.decode("utf-8", "surrogateescape")

    def error_text(self, limit: int = 2000) -> str:
        """The whole of a failure's message on one line (its lines joined by `` / ``, cut at
        ``limit`` characters): git's safe.directory refusal needs its first line to say what
        happened and its last to say what to do."""
        msg = [ln.strip() for ln in self.stderr.decode("utf-8", "replace").splitlines()
               if ln.strip()]
        detail = " / ".join(msg) if msg else f"exit status {self.returncode}"
        if len(detail) > limit:
            detail = detail[:limit - 1] + "…"
        return f"{' '.join(self.argv[:3])}: {detail}"

    def error_line(self) -> str:
        """A one-line account of a failure, for a section's ``errors``."""
        msg = self.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = msg[-1] if msg else f"exit status {self.returncode}"
        return f"{' '.join(self.argv[:3])}: {detail}"


class Pending:
    """A started program; :meth:`wait` collects it. Lets collectors run programs side by side."""

    def __init__(self, argv: Sequence[str], pid: int | None = None, out: int = -1, err: int = -1,
                 *, failed: str = "", proc: subprocess.Popen[bytes] | None = None) -> None:
        self.argv = tuple(argv)
        self.pid = pid if proc is None else proc.pid
        """The program's process id (None when it could not be started)."""
        self._out, self._err = out, err
        self._failed = failed
        self._proc = proc
        self._result: Result | None = None

    def wait(self, timeout: float | None = 60) -> Result:
        """Wait for the program and return its result (a failed start is a result with 127).

        Waiting again returns the same result. A program still running after ``timeout``
        seconds is killed; its result has status 124 and says so on stderr.
        """
        if self._result is None:
            self._result = self._wait(timeout)
        return self._result

    def _wait(self, timeout: float | None) -> Result:
        if self.pid is None:
            return Result(self.argv, 127, b"", self._failed.encode())
        if self._proc is not None:
            return self._wait_popen(self._proc, timeout)
        out, err, finished = _drain(self._out, self._err, timeout)
        if not finished:
            _kill(self.pid)
            more_out, more_err, _ = _drain(self._out, self._err, None)
            self._reap()
            return Result(self.argv, 124, out + more_out,
                          err + more_err + f"timed out after {timeout}s".encode())
        return Result(self.argv, self._reap(), out, err)

    def _wait_popen(self, proc: subprocess.Popen[bytes], timeout: float | None) -> Result:
        subprocess = _subprocess()
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            return Result(self.argv, 124, out, err + f"timed out after {timeout}s".encode())
        return Result(self.argv, proc.returncode, out, err)

    def _reap(self) -> int:
        """Wait for the process to end; its exit status (-N when killed by signal N)."""
        assert self.pid is not None
        for fd in (self._out, self._err):
            if fd >= 0:
                os.close(fd)
        self._out = self._err = -1
        _, status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(status)

    def cancel(self) -> None:
        """Stop the program if it still runs and reap it; its output is not wanted."""
        if self.pid is None or self._result is not None:
            return
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.communicate()
        else:
            _kill(self.pid)
            self._reap()
        self._result = Result(self.argv, -_SIGKILL, b"", b"cancelled")


def _kill(pid: int) -> None:
    try:
        os.kill(pid, _SIGKILL)
    except ProcessLookupError:  # already gone (not yet reaped: waitpid follows)
        pass


def _drain(out_fd: int, err_fd: int, timeout: float | None) -> tuple[bytes, bytes, bool]:
    """Read both pipes to their end: (stdout, stderr, whether both ended before ``timeout``)."""

    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    poller = select.poll()
    open_fds = {fd for fd in (out_fd, err_fd) if fd >= 0}
    for fd in open_fds:
        poller.register(fd, select.POLLIN)
    deadline = None if timeout is None else time.monotonic() + timeout
    while open_fds:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        events = poller.poll(None if left is None else left * 1000)
        if not events:
            break  # timed out
        for fd, _mask in events:
            data = os.read(fd, 1 << 20)
            if data:
                chunks[fd].append(data)
            else:
                poller.unregister(fd)
                open_fds.discard(fd)
    return b"".join(chunks[out_fd]), b"".join(chunks[err_fd]), not open_fds


def start(
    argv: Sequence[str],
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    background: bool = False,
) -> Pending:
    """Start ``argv`` with its output captured; never raises for a missing program.

    A name without a slash is looked for on ``env``'s ``PATH`` (this process's when no ``env``
    is given), as :mod:`subprocess` does; standard input is ``/dev/null``. ``background``: the
    answer is wanted only after other work, so the program runs at the lowest priority (nice
    :data:`BACKGROUND_NICE`) when :func:`spare_core` says the machine has a core for it. On a
    busy machine it keeps runsnap's priority: there a niced program would wait behind every
    other one, and runsnap with it.
    """
    environ = os.environ if env is None else env
    if cwd is not None:
        return _start_popen(argv, cwd, env)
    program = argv[0]
    if os.sep not in program:
        found = which(program, path=environ.get("PATH", os.defpath))
        if found is None:
            return Pending(argv, failed=f"{program}: No such file or directory")
        program = found
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    _enlarge(out_w)
    try:
        pid = os.posix_spawn(program, list(argv), dict(environ), file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, out_w, 1),
            (os.POSIX_SPAWN_DUP2, err_w, 2),
        ], setsigdef=(_SIGPIPE, _SIGXFSZ))  # Python ignores them; the program must not (as
        # subprocess's restore_signals does)
    except OSError as exc:
        for fd in (out_r, err_r):
            os.close(fd)
        return Pending(argv, failed=f"{argv[0]}: {exc.strerror or exc}")
    finally:
        os.close(out_w)
        os.close(err_w)
    if background and spare_core():
        try:
            os.setpriority(os.PRIO_PROCESS, pid, BACKGROUND_NICE)
        except OSError:  # already exited, or not allowed: it runs as it is
            pass
    return Pending(argv, pid, out_r, err_r)


#: The niceness of a program started in the background (the lowest priority).
BACKGROUND_NICE = 19

def spare_core(load: float | None = None, cpus: int | None = None) -> bool:
    """Whether this machine has a core to spare: fewer programs wanting a CPU over the last
    minute (``load``, default :func:`os.getloadavg`) than CPUs this process may run on (``cpus``,
    default its affinity). Asked of the machine once per process.

    >>> spare_core(load=0.3, cpus=2), spare_core(load=1.9, cpus=2), spare_core(load=2.5, cpus=2)
    (True, True, False)
    >>> spare_core(load=64.0, cpus=128), spare_core(load=8.0, cpus=8)
    (True, False)
    """
    if load is None and cpus is None:
        return _machine_spare_core()
    return _spare_core(load, cpus)


@functools.lru_cache(maxsize=1)
def _machine_spare_core() -> bool:
    return _spare_core(None, None)


def _spare_core(load: float | None, cpus: int | None) -> bool:
    try:
        if load is None:
            load = os.getloadavg()[0]
        if cpus is None:
            cpus = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                    else os.cpu_count() or 1)
    except OSError:  # no load average to read: assume a busy machine
        return False
    return load < cpus


def _enlarge(fd: int) -> None:
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    except (AttributeError, OSError):  # not Linux, or over the allowed size
        pass


def _subprocess() -> Any:
    """:mod:`subprocess`, only where ``posix_spawn`` cannot start the program (it costs a capture
    ~2-3 ms of imports: selectors, signal, threading's parts)."""
    # deferred: subprocess, ~21 ms measured under load; only _subprocess() needs it
    import subprocess

    return subprocess


def _start_popen(argv: Sequence[str], cwd: str, env: Mapping[str, str] | None) -> Pending:
    subprocess = _subprocess()
    try:
        proc = subprocess.Popen(list(argv), cwd=cwd, env=None if env is None else dict(env),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    except OSError as exc:
        return Pending(argv, failed=f"{argv[0]}: {exc.strerror or exc}")
    return Pending(argv, proc=proc)


def run(
    argv: Sequence[str],
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = 60,
) -> Result:
    """Run ``argv`` to completion and return what it said."""
    return start(argv, cwd=cwd, env=env).wait(timeout)


def which(name: str, path: str | None = None) -> str | None:
    """Where ``name`` is found on ``path`` (default: this process's ``PATH``).

    :func:`shutil.which` for POSIX (an executable regular file, first on ``PATH``; a name with a
    slash is checked as it is), without importing :mod:`shutil` and its compression modules.
    """
    if os.name != "posix":  # pragma: no cover - PATHEXT and friends
        # deferred: shutil, ~12 ms measured under load; only which() needs it
        import shutil

        return shutil.which(name, path=path if path is not None else os.environ.get("PATH"))
    if os.sep in name:
        return name if _is_executable(name) else None
    search = path if path is not None else os.environ.get("PATH", os.defpath)
    seen = set()
    for entry in search.split(os.pathsep):
        if entry in seen:
            continue
        seen.add(entry)
        candidate = os.path.join(entry, name)  # an empty entry: the current directory
        if _is_executable(candidate):
            return candidate
    return None


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)
