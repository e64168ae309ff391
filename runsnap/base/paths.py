"""Paths as text, written the way :mod:`pathlib` writes them, without importing it.

Importing pathlib would cost every capture its import (with ``urllib.parse`` and
``ipaddress``; measured in benchmarks/RESULTS.md), so the capture path works on ``str`` paths
with :mod:`os.path`. Wherever a path
used to pass through ``pathlib.Path`` on its way into a snapshot, an error message or the
command's output, :func:`path_str` gives the same text ``str(Path(...))`` gave, so nothing a
capture writes changes.
"""

from __future__ import annotations

import os

__all__ = ["child_cwd", "current_dir", "expand_user", "path_str", "resolve_path", "shown",
           "zip_refusal"]


def current_dir() -> str:
    """The current directory, also when it was deleted while a shell stood in it: then the path
    the shell gives in ``PWD`` (or ``/``), where :func:`os.getcwd` would raise. A program
    launched from there still runs, as it would from the shell (see :func:`child_cwd`)."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        pwd = os.environ.get("PWD", "")
        return pwd if os.path.isabs(pwd) else "/"


def child_cwd(cwd: str) -> str | None:
    """The ``cwd`` to start a child in: ``None`` (inherit runsnap's own) when ``cwd`` is the
    current directory and that was deleted, since no path reaches it any more."""
    if os.path.isdir(cwd):
        return cwd
    try:
        os.getcwd()
    except FileNotFoundError:
        return None if cwd == current_dir() else cwd
    return cwd


def path_str(path: str | os.PathLike[str]) -> str:
    """``str(pathlib.Path(path))``: no empty or ``.`` parts, no trailing slash, ``.`` for ``""``.

    Unlike :func:`os.path.normpath`, ``..`` is kept as it is (so is a leading ``//``, which
    POSIX leaves to the system to interpret). A property test compares the two.

    >>> path_str("./a//b/./c/"), path_str("a/../b"), path_str(""), path_str("///x")
    ('a/b/c', 'a/../b', '.', '/x')
    """
    text = os.fspath(path)
    if os.name != "posix":  # pragma: no cover - drives and backslashes: let pathlib do it
        # deferred: pathlib, ~62 ms measured under load; only path_str() needs it
        from pathlib import Path

        return str(Path(text))
    rest = text.lstrip("/")
    slashes = len(text) - len(rest)
    root = "//" if slashes == 2 else "/" if slashes else ""
    return root + "/".join(p for p in rest.split("/") if p and p != ".") or "."


def expand_user(path: str) -> str:
    """``str(pathlib.Path(path).expanduser())``: a leading ``~`` or ``~user`` replaced by that
    home directory, and :class:`RuntimeError` when it cannot be found, as pathlib does."""
    text = path_str(path)
    if not text.startswith("~"):
        return text
    first, slash, rest = text.partition("/")
    home = os.path.expanduser(first)
    if home.startswith("~"):
        raise RuntimeError("Could not determine home directory.")
    return path_str(home + slash + rest)


def resolve_path(value: str, cwd: str) -> str:
    """``value`` as an absolute path, relative paths taken from ``cwd`` (``~`` expanded), written
    as ``pathlib`` writes it (see :func:`runsnap.base.paths.path_str`)."""
    path = expand_user(value)
    return path if os.path.isabs(path) else path_str(os.path.join(cwd, path))


def shown(path: str | None, cwd: str | None = None) -> str:
    """A path as runsnap prints it: relative to the working directory when it lies under it
    (``.runsnap/good.toml``, as ``git`` prints paths), else as it is.

    >>> shown("/work/proj/.runsnap/a.toml", "/work/proj"), shown("/etc/x", "/work/proj")
    ('.runsnap/a.toml', '/etc/x')
    """
    if not path or not os.path.isabs(path):
        return path or ""
    try:
        base = cwd if cwd is not None else os.getcwd()
    except OSError:
        return path
    rel = os.path.relpath(path, base)
    return path if rel == ".." or rel.startswith(".." + os.sep) else rel


def zip_refusal(package: str) -> str:
    """Why runsnap cannot run from ``package`` (its folder), or ``""`` when it can: imported
    from a zip archive (``python -m zipapp``), its data files, probe and tracing hook are not
    files, and the probe and hook run in the program's own interpreter.

    >>> zip_refusal(os.path.dirname(os.__file__))
    ''
    """
    if os.path.isdir(package):
        return ""
    archive = package
    while archive != os.path.dirname(archive) and not os.path.exists(archive):
        archive = os.path.dirname(archive)
    return (f"runsnap is imported from the zip archive {archive!r}; its data, probe and tracing "
            "hook must be files the program's interpreter reads: unpack it (shiv's layout, see "
            "docs/bisect.md) or install it")
