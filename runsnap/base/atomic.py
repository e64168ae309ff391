"""Atomic writes: readers see the old file or the new one, never a part."""

from __future__ import annotations

import errno
import os
import stat
import zlib

from runsnap.base.faults import reached
from runsnap.base.paths import path_str
from runsnap.base.patterns import on_use

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

__all__ = ["atomic_build", "atomic_write", "exclusive_write", "host_tag", "refuse_non_regular",
           "sweep_temporaries"]


def atomic_write(path: str | os.PathLike[str], data: bytes, *, durable: bool = True,
                 points: str = "", sweep: bool = True) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never a part.

    A temporary file in the same directory is written, then renamed over ``path``. With
    ``durable`` (the default; a cache passes False) the file is fsynced before the rename and
    the directory after it, so the rename survives a crash. ``points`` names the fault points
    this write passes (``"snapshot"``: ``snapshot.partial``, ``.written``, ``.renamed``; see
    :mod:`runsnap.base.faults`); by default none. A character device or one of the process's
    own open files (``/dev/null``, ``/dev/stdout``) is written through instead
    (:func:`write_through`). ``sweep``: remove the temporaries that writers killed on this
    host left in the folder first (:func:`sweep_temporaries`, which lists the folder); a
    writer among thousands in one folder (the ranks of a job) passes False. Raises
    :class:`OSError`; the old file, if any, is left whole.
    """

    def write(tmp: str, fd: int) -> None:
        nonlocal data
        with os.fdopen(fd, "wb") as fh:
            if points:
                half = len(data) // 2
                fh.write(data[:half])
                fh.flush()
                reached(f"{points}.partial")
                data = data[half:]
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o644 & ~_umask())  # as open() would make it; the temporary is 0600

    path = path_str(path)
    if write_through(path, data):
        return
    _replace(path, write, durable, points, sweep)


def atomic_build(path: str | os.PathLike[str], build: Callable[[str], None]) -> None:
    """Make the file ``path`` with ``build(tmp)``, a program that writes a new file at the path
    ``tmp`` beside it (a compiler's ``-o``): ``path`` appears only when ``build`` returns, whole.
    What ``build`` raises is raised, and its temporary file removed."""

    def write(tmp: str, fd: int) -> None:
        os.close(fd)
        build(tmp)

    _replace(path_str(path), write, False, "")


def _replace(path: str, write: Callable[[str, int], None], durable: bool, points: str,
             sweep: bool = True) -> None:
    """The one way runsnap replaces a file: a new temporary file beside ``path`` (swept by the
    next writer when its process died), written by ``write(tmp, fd)``, renamed over ``path``."""
    refuse_non_regular(path)
    parent = os.path.dirname(path) or "."
    os.makedirs(parent, exist_ok=True)
    if sweep:
        sweep_temporaries(parent)
    fd, tmp = _create_temporary(path)
    try:
        write(tmp, fd)
        if points:
            reached(f"{points}.written")
        os.replace(tmp, path)
        if points:
            reached(f"{points}.renamed")
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if not durable:
        return
    try:
        dir_fd = os.open(parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def exclusive_write(candidates: Iterable[str], data: bytes, *, points: str = "",
                    sweep: bool = True) -> str:
    """Write ``data`` under the first of ``candidates`` that does not exist yet; return it.

    The data is written to a hidden temporary file and synced first, then hard-linked to the
    name (``link`` fails when the name exists, so two writers never share one): the name
    appears with its whole content or not at all. A full disk or a kill at any point leaves no
    empty file under a visible name, only a hidden temporary the next writer sweeps.
    ``points`` and ``sweep``: as for :func:`atomic_write`, with ``.claimed`` after the link.
    """
    names = iter(candidates)
    first = next(names)
    parent = os.path.dirname(first) or "."
    os.makedirs(parent, exist_ok=True)
    if sweep:
        sweep_temporaries(parent)
    fd, tmp = _create_temporary(first)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644 & ~_umask())
        if points:
            reached(f"{points}.written")
        for name in _then(first, names):  # not (first, *names): 10,000 names made each time
            try:
                os.link(tmp, name)
            except FileExistsError:
                continue
            if points:
                try:
                    reached(f"{points}.claimed")
                except OSError:  # reported as not written: so it is not
                    os.unlink(name)
                    raise
            return name
        raise FileExistsError(f"{first}: every name of that kind already exists")
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _then(first: str, rest: Iterator[str]) -> Iterator[str]:
    yield first
    yield from rest


#: The names of a process's own open files: ``/dev/stdout``, ``/dev/fd/3``, ``/proc/self/fd/1``.
_OWN_FD = on_use(r"^/(?:dev/(?:std(?P<std>in|out|err)|fd/(?P<fd>[0-9]+))"
                 r"|proc/self/fd/(?P<pfd>[0-9]+))$")


def write_through(path: str, data: bytes) -> bool:
    """Write ``data`` into ``path`` in place when it is not a file to replace: one of the
    process's own open files (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``), whatever it
    is (a terminal, a pipe, a file), or a character device (``/dev/null``, a terminal), as
    any Unix tool does; returns whether it did. The device itself is never replaced.

        >>> write_through("/dev/null", b"gone")
        True
        >>> write_through("snapshot.toml", b"")
        False
    """
    m = _OWN_FD.match(path)
    if m:
        fd = {"in": 0, "out": 1, "err": 2}[m.group("std")] if m.group("std") else \
            int(m.group("fd") or m.group("pfd"))
        _write_all(fd, data)
        return True
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISCHR(st.st_mode):
        return False
    fd = os.open(path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)
    return True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def refuse_non_regular(path: str) -> None:
    """Raise :class:`OSError` unless ``path`` is missing or a regular file: runsnap never
    replaces a device (``-o /dev/null`` as root), a symlink, a FIFO or a socket (a character
    device and the process's own ``/dev/stdout`` are written through instead:
    :func:`write_through`)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode):
        return
    kind = ("a symbolic link" if stat.S_ISLNK(st.st_mode) else
            "a directory" if stat.S_ISDIR(st.st_mode) else
            "a character device" if stat.S_ISCHR(st.st_mode) else
            "a block device" if stat.S_ISBLK(st.st_mode) else
            "a FIFO" if stat.S_ISFIFO(st.st_mode) else "not a regular file")
    raise OSError(errno.EEXIST, f"it is {kind}; runsnap replaces only regular files "
                                f"(give a new path, or -o - for standard output)")


#: Temporary files are named ``.<name>.<pid>-<host><random>.tmp`` (4 + 8 hex digits): hidden
#: from ``ls`` and from ``diff`` (which reads ``*.toml``), and removed by the next write on the
#: same host in the same folder once the process that made them is gone (killed mid-write). A
#: pid says nothing about a process on another host of a shared file system: their
#: temporaries are left alone.
_TMP = on_use(r"^\..+\.(\d+)-([0-9a-f]{4})[0-9a-f]{8}\.tmp$")


def host_tag() -> str:
    """4 hex digits of this host's name, in its temporary files' names."""

    return f"{zlib.crc32(os.uname().nodename.encode()) & 0xFFFF:04x}"


def sweep_temporaries(folder: str) -> int:
    """Remove the temporary files that writers on this host killed mid-write left in
    ``folder``; returns how many. A temporary file whose process still runs, or that another
    host made, is left alone."""
    removed = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    here = host_tag()
    for name in names:
        m = _TMP.match(name)
        if m is None or m.group(2) != here or _alive(int(m.group(1))):
            continue
        try:
            os.unlink(os.path.join(folder, name))
            removed += 1
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process: alive
    return True


def _create_temporary(path: str) -> tuple[int, str]:
    """Create a new file beside ``path``, only for us (what ``tempfile.mkstemp`` does, without
    importing :mod:`tempfile` and :mod:`random` on every capture)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        name = f".{os.path.basename(path)}.{os.getpid()}-{host_tag()}{os.urandom(4).hex()}.tmp"
        tmp = os.path.join(os.path.dirname(path), name)
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
