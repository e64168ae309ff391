"""The environment runsnap was started with, before its own interpreter changed it.

CPython changes its own ``os.environ`` while it starts: with the C or POSIX locale it coerces
the locale (PEP 538) and sets ``LC_CTYPE=C.UTF-8`` (or ``C.utf8``, ``UTF-8``), and a
``sitecustomize`` or ``.pth`` file of runsnap's own environment may set more. Those are
runsnap's doing, not the user's: recorded, they would say the user set them; launched, the
child would run with them. The kernel keeps the environment the process was executed with
(``/proc/self/environ``), which :func:`restore_exec_environment` puts back in ``os.environ``.
"""

from __future__ import annotations

import os
import sys

__all__ = ["CLOSED_AT_START", "exec_environment", "hold_closed_streams", "restore_exec_environment"]

#: The standard streams (0, 1, 2) runsnap was started without (``2>&-``), held by
#: :func:`hold_closed_streams`: a command runsnap launches gets them closed, as without runsnap.
CLOSED_AT_START: set[int] = set()

#: An exec-time environment larger than this is not read (the kernel's own limit on argv and
#: environment together is far lower by default; this only bounds a strange /proc).
_MAX_BYTES = 64 << 20


def exec_environment(path: str = "/proc/self/environ") -> dict[bytes, bytes] | None:
    """The environment this process was executed with, as CPython would have read it (an entry
    without ``=`` is skipped; the first of two equal names wins); None where there is no
    ``/proc`` to read it from.

    >>> exec_environment("/nonexistent") is None
    True
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        parts = []
        size = 0
        while size <= _MAX_BYTES:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
        else:
            return None
    except OSError:
        return None
    finally:
        os.close(fd)
    env: dict[bytes, bytes] = {}
    for entry in b"".join(parts).split(b"\0"):
        eq = entry.find(b"=", 1)  # as CPython: a name may start with "="
        if eq > 0:
            env.setdefault(entry[:eq], entry[eq + 1:])
    return env


def restore_exec_environment() -> list[str]:
    """Make ``os.environ`` the environment the process was executed with; return the names
    that were changed back (for tests and diagnostics). Nothing is done where that environment
    cannot be read."""
    given = exec_environment()
    if given is None or not hasattr(os, "environb"):
        return []
    now = os.environb
    changed = []
    for name in [name for name in now if name not in given]:
        del now[name]
        changed.append(name)
    for name, value in given.items():
        if now.get(name) != value:
            now[name] = value
            changed.append(name)
    return [os.fsdecode(name) for name in changed]


def hold_closed_streams() -> None:
    """Hold each standard stream runsnap was started without (``2>&-``, ``<&-``) on
    ``/dev/null``, opened the wrong way round and close-on-exec, before anything else is
    opened. Else the next file runsnap opens takes the free number: a snapshot written as
    stderr, runsnap's own lines written into it, a command launched with it as its stderr.
    Opened the wrong way round (stdin for writing, stdout and stderr for reading), a read or a
    write there fails as it did on the closed stream (``EBADF``); close-on-exec, a command
    runsnap launches or replaces itself with (``--exec``) gets the stream closed. The numbers
    are kept in :data:`CLOSED_AT_START`."""

    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:  # noqa: PERF203 - three numbers, once
            got = os.open(os.devnull, (os.O_WRONLY if fd == 0 else os.O_RDONLY) | os.O_CLOEXEC)
            if got != fd:  # the lowest free number is this one (the lower ones are open by
                os.dup2(got, fd, inheritable=False)  # now), unless another thread opened one
                os.close(got)
            CLOSED_AT_START.add(fd)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        if fd in CLOSED_AT_START and getattr(sys, name) is None:  # CPython's for a closed one
            setattr(sys, name, open(fd, "w", encoding="utf-8", errors="backslashreplace",
                                    closefd=False))
