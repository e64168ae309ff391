"""The one place runsnap runs other programs (git, nvidia-smi, the package probe).

Tests swap a program for a recorded one by putting a script of the same name first on the
``PATH`` they pass; nothing else in runsnap starts a program for a collector.

Programs are started with :mod:`subprocess`. Each program's standard output goes into a pipe
enlarged to 1 MiB where Linux allows (``pipesize``), so that ``git diff`` can write a whole
diff of that size and exit while runsnap is busy elsewhere, instead of stopping at the first 64
KiB until runsnap reads. (A hand-written ``posix_spawn`` path that avoided importing subprocess
was dropped: the same-run measurement in benchmarks/RESULTS.md shows what it saved.)
"""

from __future__ import annotations

import errno
import os

from runsnap._plain import FrozenRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Mapping, Sequence

__all__ = ["Pending", "Result", "run", "start", "which"]

#: What standard output's pipe is enlarged to (Linux ``F_SETPIPE_SZ``; the unprivileged limit,
#: ``/proc/sys/fs/pipe-max-size``, is 1 MiB by default).
PIPE_SIZE = 1024 * 1024

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

    def error_line(self) -> str:
        """A one-line account of a failure, for a section's ``errors``."""
        msg = self.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = msg[-1] if msg else f"exit status {self.returncode}"
        return f"{' '.join(self.argv[:3])}: {detail}"


class Pending:
    """A started program; :meth:`wait` collects it. Lets collectors run programs side by side."""

    def __init__(self, argv: Sequence[str], proc: subprocess.Popen[bytes] | None = None, *,
                 failed: str = "") -> None:
        self.argv = tuple(argv)
        self._proc = proc
        self.pid = proc.pid if proc is not None else None
        """The program's process id (None when it could not be started)."""
        self._failed = failed
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
        if self._proc is None:
            return Result(self.argv, 127, b"", self._failed.encode())
        import subprocess

        try:
            out, err = self._proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            out, err = self._proc.communicate()
            return Result(self.argv, 124, out, err + f"timed out after {timeout}s".encode())
        return Result(self.argv, self._proc.returncode, out, err)

    def cancel(self) -> None:
        """Stop the program if it still runs and reap it; its output is not wanted."""
        if self._proc is None or self._result is not None:
            return
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.communicate()
        self._result = Result(self.argv, self._proc.returncode, b"", b"cancelled")


def start(
    argv: Sequence[str],
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Pending:
    """Start ``argv`` with its output captured; never raises for a missing program.

    A name without a slash is looked for on ``env``'s ``PATH`` (this process's when no ``env``
    is given); standard input is ``/dev/null``. Standard output's pipe is enlarged to
    :data:`PIPE_SIZE` where the system allows, so ``git diff`` can write a whole large diff and
    exit while runsnap is busy elsewhere.
    """
    import subprocess

    environ = os.environ if env is None else env
    program = argv[0]
    if os.sep not in program:
        found = which(program, path=environ.get("PATH", os.defpath))
        if found is None:
            return Pending(argv, failed=f"{program}: No such file or directory")
        program = found
    for pipesize in (PIPE_SIZE, -1):
        try:
            proc = subprocess.Popen(list(argv), executable=program, cwd=cwd, env=dict(environ),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, pipesize=pipesize)
        except PermissionError as exc:
            if pipesize > 0 and exc.errno == errno.EPERM:
                continue  # over the user's pipe-buffer allowance: a pipe of the usual size
            return Pending(argv, failed=f"{argv[0]}: {exc.strerror or exc}")
        except OSError as exc:
            return Pending(argv, failed=f"{argv[0]}: {exc.strerror or exc}")
        return Pending(argv, proc)
    raise AssertionError("unreachable")  # pragma: no cover


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
