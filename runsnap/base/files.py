"""Opening a file runsnap reads, safely: only a regular file, never blocking, never unbounded.

A path where a file is expected can hold anything: a FIFO (opening it for reading waits for a
writer forever), a character device (``/dev/zero`` never ends), a directory, a symbolic link
loop, a socket. runsnap sits in front of a launch and must never wait on, or read without end
from, such a thing. :func:`open_regular` checks the type with :func:`os.stat` before opening,
opens with ``O_NONBLOCK`` (so a FIFO swapped in between cannot block the open) and checks
again on the open file; :func:`read_regular` also caps what is read.
"""

from __future__ import annotations

import errno
import io
import os
import stat

__all__ = ["NotRegularFile", "TooLarge", "file_kind", "open_regular", "open_regular_text", "read_head",
           "read_regular"]

_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
          | getattr(os, "O_CLOEXEC", 0))


class NotRegularFile(OSError):
    """The path holds something other than a regular file (its ``strerror`` says what)."""

    def __init__(self, path: str, mode: int) -> None:
        super().__init__(errno.EINVAL, f"{file_kind(mode)}, not a regular file", path)


class TooLarge(OSError):
    """The file holds more than the caller reads."""

    def __init__(self, path: str, limit: int) -> None:
        super().__init__(errno.EFBIG, f"larger than the {_size(limit)} runsnap reads", path)


def file_kind(mode: int) -> str:
    """What a ``st_mode`` says the file is, in words.

    >>> file_kind(stat.S_IFIFO), file_kind(stat.S_IFDIR), file_kind(stat.S_IFREG)
    ('a FIFO', 'a directory', 'a regular file')
    """
    for test, name in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a plain file"


def open_regular(path: str | os.PathLike[str]) -> io.BufferedReader:
    """``open(path, "rb")`` for a regular file only (symbolic links followed); anything else
    raises :class:`NotRegularFile`, a link loop or a missing file the usual :class:`OSError`."""
    name = os.fspath(path)
    st = os.stat(name)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(name, st.st_mode)
    fd = os.open(name, _FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # replaced between the stat and the open
            raise NotRegularFile(name, mode)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of a regular file holding at most ``limit`` bytes; :class:`TooLarge` past
    that (``/proc`` files say size 0, so what is read counts, not the size)."""
    with open_regular(path) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(os.fspath(path), limit)
    return data


def read_head(path: str | os.PathLike[str], size: int) -> bytes:
    """The first ``size`` bytes of a regular file (any size)."""
    with open_regular(path) as fh:
        return fh.read(size)


def _size(n: int) -> str:
    """
    >>> _size(1 << 20), _size(4096), _size(100)
    ('1 MiB', '4 KiB', '100 bytes')
    """
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n >= 1024 and n % 1024 == 0:
        return f"{n >> 10} KiB"
    return f"{n} bytes"


def open_regular_text(path: str | os.PathLike[str], encoding: str = "utf-8",
                      errors: str = "replace") -> io.TextIOWrapper:
    """:func:`open_regular`, read as text."""
    return io.TextIOWrapper(open_regular(path), encoding=encoding, errors=errors)
