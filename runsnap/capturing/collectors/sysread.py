"""Small reads of ``/proc`` and ``/sys`` files under a root, for the host-fact collectors.

Every function takes ``root`` (``"/"`` on a real capture; a fixture folder holding a recorded
``/sys`` or ``/proc`` tree in the tests) and never raises: a missing or unreadable file is
``None`` (or an empty listing), and the caller decides whether that is worth an ``errors`` entry.
"""

from __future__ import annotations

import os

from runsnap.base.files import open_regular

__all__ = ["cpu_list_count", "listdir", "read", "read_int", "read_keyed", "under"]


def under(root: str, path: str) -> str:
    """``path`` (absolute) inside ``root``.

    >>> under("/", "/proc/meminfo"), under("/tmp/fx", "/sys/class/net")
    ('/proc/meminfo', '/tmp/fx/sys/class/net')
    """
    return path if root in ("", "/") else os.path.join(root, path.lstrip("/"))


def read(root: str, path: str, limit: int = 1 << 20) -> str | None:
    """The text of a file (stripped), or None when it cannot be read."""
    try:
        with open_regular(under(root, path)) as fh:
            return fh.read(limit).decode("utf-8", "replace").strip()
    except OSError:
        return None


def read_int(root: str, path: str) -> int | None:
    """A file holding one integer, or None."""
    text = read(root, path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def listdir(root: str, path: str) -> list[str]:
    """Sorted entries of a folder ([] when absent or unreadable)."""
    try:
        return sorted(os.listdir(under(root, path)))
    except OSError:
        return []


def read_keyed(root: str, path: str, sep: str = ":") -> dict[str, str]:
    """``key<sep>value`` lines of a file (``/proc/meminfo``, ``/proc/cpuinfo``'s first block)."""
    out: dict[str, str] = {}
    text = read(root, path)
    for line in (text or "").splitlines():
        if not line.strip():
            if out:
                break  # the first block only (the first processor of /proc/cpuinfo)
            continue
        key, found, value = line.partition(sep)
        if found:
            out.setdefault(key.strip(), value.strip())
    return out


def cpu_list_count(text: str | None) -> int:
    """How many CPUs a kernel CPU list names.

    >>> cpu_list_count("0-3,8,10-11"), cpu_list_count(""), cpu_list_count(None)
    (7, 0, 0)
    """
    count = 0
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            count += int(hi) - int(lo) + 1 if hi else 1
        except ValueError:
            continue
    return count
