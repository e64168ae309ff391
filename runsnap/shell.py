"""The one place runsnap runs other programs (git, nvidia-smi, the package probe).

Tests swap a program for a recorded one by putting a script of the same name first on the
``PATH`` they pass; nothing else in runsnap calls :mod:`subprocess` for a collector.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Result", "run", "start", "which"]


@dataclass(frozen=True)
class Result:
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

    def __init__(self, argv: Sequence[str], proc: subprocess.Popen[bytes] | None, err: str = ""):
        self.argv = tuple(argv)
        self._proc = proc
        self._err = err

    def wait(self, timeout: float | None = 60) -> Result:
        """Wait for the program and return its result (a failed start is a result with 127)."""
        if self._proc is None:
            return Result(self.argv, 127, b"", self._err.encode())
        try:
            out, err = self._proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            out, err = self._proc.communicate()
            return Result(self.argv, 124, out, err + f"timed out after {timeout}s".encode())
        return Result(self.argv, self._proc.returncode, out, err)


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
    """Where ``name`` is found on ``path`` (default: this process's ``PATH``)."""
    return shutil.which(name, path=path if path is not None else os.environ.get("PATH"))
