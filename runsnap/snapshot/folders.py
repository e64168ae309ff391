"""The snapshot files of a folder, found without leaving it.

Every walk of a snapshot folder goes through :func:`snapshot_paths`: ``ls``, ``gc``, ``@N`` and
``@LABEL``, ``diff DIR/`` and the folders of an N-way or job diff. The folder named is followed
where it leads (``.runsnap`` may be a link to a scratch disk), but nothing in it is followed
out of it: a link to a folder is never entered (what it holds inside the folder is reached
anyway; what it holds outside belongs to someone else), and a link to a file outside the folder
is left out. Each walk that leaves links out says so in one line on stderr. A folder that is a
link to a folder holding the link itself (``.runsnap -> /``, ``.runsnap -> ..``) is a loop:
walking it would walk everything around it (the whole file system), so it is refused.

    >>> inside("/a/b/c.toml", "/a/b"), inside("/a/bc.toml", "/a/b"), inside("/x", "/")
    (True, False, True)
"""

from __future__ import annotations

import os
from collections.abc import Callable

from runsnap.base.terminal import neutralise, say
from runsnap.errors import UsageError

__all__ = ["inside", "root_of", "snapshot_paths"]

# The lines already said in this process: a command that resolves @1 and @2 walks its folder
# twice and says each once.
_SAID: set[str] = set()


def inside(path: str, root: str) -> bool:
    """Whether the resolved ``path`` is ``root`` or lies below it (both absolute, resolved)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def root_of(folder: str) -> str:
    """Where ``folder`` really is (its links resolved). UsageError when ``folder`` is a link to
    a folder that holds the link itself: a loop that would walk everything around it."""
    name = folder.rstrip("/") or folder
    real = os.path.realpath(folder)
    if os.path.islink(name):
        holder = os.path.realpath(os.path.dirname(os.path.abspath(name)))
        if inside(holder, real):
            raise UsageError(f"{neutralise(folder)}: a link to {neutralise(real)}, which holds "
                             f"the link itself: not followed (a loop; name the folder you mean)")
    return real


def snapshot_paths(folder: str, recursive: bool = False,
                   skip_dir: Callable[[str], bool] | None = None) -> list[str]:
    """The snapshot files (``*.toml``, not hidden) in ``folder``, and, ``recursive``, in its
    sub-folders (hidden ones and those ``skip_dir(name)`` names left out), in walk order.
    Links out of the folder are left out and said in one line (see the module's docstring).
    OSError when ``folder`` cannot be listed."""
    root = root_of(folder)
    out: list[str] = []
    left: list[tuple[str, str]] = []
    pending = [folder]
    while pending:
        top = pending.pop()
        with os.scandir(top) as it:
            entries = sorted(it, key=lambda e: e.name)
        below = []
        for e in entries:
            if e.name.startswith("."):
                continue
            link = e.is_symlink()
            target = os.path.realpath(e.path) if link else ""
            if link and not inside(target, root):
                if e.name.endswith(".toml") or (recursive and os.path.isdir(e.path)):
                    left.append((e.path, target))
                continue
            if e.is_dir():  # follows a link inside the folder: reached by its own name too
                if recursive and not link and not (skip_dir and skip_dir(e.name)):
                    below.append(e.path)
            elif e.name.endswith(".toml"):
                out.append(e.path)
        pending += reversed(below)
    if left:
        _say_left(folder, left)
    return out


def _say_left(folder: str, left: list[tuple[str, str]]) -> None:
    path, target = left[0]
    more = f" and {len(left) - 1} more" if len(left) > 1 else ""
    line = (f"runsnap: {neutralise(path)} -> {neutralise(target)}{more}: "
            f"link{'s' if more else ''} out of {neutralise(folder)}, not followed\n")
    if line not in _SAID:
        _SAID.add(line)
        say(line)
