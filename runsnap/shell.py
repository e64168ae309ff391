"""The one place runsnap runs other programs (git, nvidia-smi, the package probe).

Tests swap a program for a recorded one by putting a script of the same name first on the
``PATH`` they pass; nothing else in runsnap calls :mod:`subprocess` for a collector.
"""

from __future__ import annotations

import os
import subprocess

from runsnap._plain import FrozenRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["Result", "run", "start", "which"]


class Result(FrozenRecord):
    """What a finished program said."""

    __slots__ = ("argv", "returncode", "stdout", "stderr")
    _repr_fields = _eq_fields = __slots__

    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes

    def __init__(self, argv: tuple[str, ...], returncode: int, stdout: bytes, stderr: bytes) -> None:
        object.__setattr__(self, "argv", argv)
        object.__setattr__(self, "returncode", returncode)
        object.__setattr__(self, "stdout", stdout)
        object.__setattr__(self, "stderr", stderr)

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

    def __init__(self, argv: Sequence[str], proc: subprocess.Popen[bytes] | None, err: str = ""):
        self.argv = tuple(argv)
        self._proc = proc
        self._err = err
        self._result: Result | None = None

    def wait(self, timeout: float | None = 60) -> Result:
        """Wait for the program and return its result (a failed start is a result with 127).

        Waiting again returns the same result.
        """
        if self._result is None:
            self._result = self._wait(timeout)
        return self._result

    def _wait(self, timeout: float | None) -> Result:
        if self._proc is None:
            return Result(self.argv, 127, b"", self._err.encode())
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


def start(
    argv: Sequence[str],
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
) -> Pending:
    """Start ``argv`` with its output captured; never raises for a missing program."""
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        return Pending(argv, None, f"{argv[0]}: {exc.strerror or exc}")
    return Pending(argv, proc)


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
