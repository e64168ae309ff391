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

__all__ = ["exec_environment", "restore_exec_environment"]

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
