"""Atomic writes: readers see the old file or the new one, never a part."""

from __future__ import annotations

import os

from runsnap._paths import path_str

__all__ = ["atomic_write"]


def atomic_write(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never a part.

    A temporary file in the same directory is written, flushed and fsynced, then renamed over
    ``path``; the directory is fsynced so the rename survives a crash.
    """
    path = path_str(path)
    parent = os.path.dirname(path) or "."
    os.makedirs(parent, exist_ok=True)
    fd, tmp = _create_temporary(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
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


def _create_temporary(path: str) -> tuple[int, str]:
    """Create a new file beside ``path``, only for us (what ``tempfile.mkstemp`` does, without
    importing :mod:`tempfile` and :mod:`random` on every capture)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
