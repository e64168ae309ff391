"""A file grown in place past its last line: the second write of a rank in a shared folder.

:func:`runsnap.base.atomic.atomic_write` creates a new file and renames it over the old one:
readers never see a part, but every write is a file created and a rename, two operations on
the folder's metadata server. A rank of a job among thousands writing into one folder writes
its snapshot twice when its command runs long (before the launch, then with the outcome), and
the second text is the first with sections added before its last line (the end marker). So
the second write keeps the file and writes only what changes, from the start of that last
line on: one open, no file created, no rename.

What it costs: for the time of that one write (one ``pwrite``), the file holds the first text
without its last line and part of the rest; a process killed just then leaves it so, and
readers report it cut short (its end marker missing). A write that fails (a full disk, an I/O
error) puts the last line back, so the file is whole again as it was.
"""

from __future__ import annotations

import errno
import os
import stat

from runsnap.base.faults import reached

__all__ = ["extend_in_place"]


def extend_in_place(path: str, data: bytes, *, durable: bool = True, points: str = "") -> bool:
    """Make the regular file ``path`` hold ``data`` by rewriting it from the start of its last
    line, when everything before that line is where ``data`` starts; returns whether it did
    (``False``: the file is not such, or not a regular file: nothing was written, replace it
    instead). With ``durable`` the file is fsynced. ``points``: the fault point
    ``{points}.extending`` between the two halves of the write (:mod:`runsnap.base.faults`).
    Raises :class:`OSError` after putting the file back as it was.

        >>> import pathlib, tempfile; fd, name = tempfile.mkstemp(); os.close(fd)
        >>> p = pathlib.Path(name); _ = p.write_bytes(b"a = 1\\n# end\\n")
        >>> extend_in_place(name, b"a = 1\\nb = 2\\n# end\\n"), p.read_bytes()
        (True, b'a = 1\\nb = 2\\n# end\\n')
        >>> extend_in_place(name, b"a = 9\\n# end\\n"), p.read_bytes()
        (False, b'a = 1\\nb = 2\\n# end\\n')
        >>> p.unlink()
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
                     | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NONBLOCK", 0))
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        return False  # gone, or not ours to write in place: replaced instead
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symbolic link now stands there
            return False
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > len(data):
            return False
        old = _read_all(fd, st.st_size)
        keep = old.rstrip(b"\n").rfind(b"\n") + 1  # where the last line starts
        if keep == 0 or not data.startswith(old[:keep]):
            return False
        try:
            _write_at(fd, data, keep, points)
            if durable:
                os.fsync(fd)
        except BaseException:
            _put_back(fd, old, keep)
            raise
        return True
    finally:
        os.close(fd)


def _read_all(fd: int, size: int) -> bytes:
    parts, at = [], 0
    while at < size:
        got = os.pread(fd, size - at, at)
        if not got:
            break
        parts.append(got)
        at += len(got)
    return b"".join(parts)


def _write_at(fd: int, data: bytes, at: int, points: str) -> None:
    view = memoryview(data)[at:]
    if points:
        half = len(view) // 2
        _pwrite_all(fd, view[:half], at)
        reached(f"{points}.extending")
        view, at = view[half:], at + half
    _pwrite_all(fd, view, at)


def _pwrite_all(fd: int, view: memoryview, at: int) -> None:
    while view:
        done = os.pwrite(fd, view, at)
        view, at = view[done:], at + done


def _put_back(fd: int, old: bytes, keep: int) -> None:
    """The file as it was before a failed write (best effort: the old bytes' blocks are
    already the file's, so writing them again needs no new space)."""
    try:
        _pwrite_all(fd, memoryview(old)[keep:], keep)
        os.ftruncate(fd, len(old))
    except OSError:
        pass
