"""The cache of which distribution in a ``site-packages`` folder provides which top-level module.

Building that index reads every ``*.dist-info`` folder's ``top_level.txt`` or ``RECORD`` (a
torch venv: a dozen files, thousands of lines): a few milliseconds a capture, for the same
answer each time. It is kept in runsnap's cache folder (:func:`runsnap.base.cache.cache_dir`;
none with ``RUNSNAP_NO_CACHE``), one small text file per folder, and used while the folder
keeps its modification and change times and inode: installing, upgrading or removing a
distribution adds or removes an entry there, the signal the package probe's cache trusts too
(:mod:`runsnap.base.cache`). An index read while the folder changed is not kept.

File: a first line ``runsnap-distindex 1``, the folder and its stamp (tab-separated), then one
``module<TAB>distribution<TAB>version`` line per module, in the order they were found.
"""

from __future__ import annotations

import os

from runsnap.base.atomic import atomic_write
from runsnap.base.cache import cache_dir, file_stamp
from runsnap.base.digest import sha256

__all__ = ["load", "stamp", "store"]

_HEAD = "runsnap-distindex 1"


def stamp(folder: str) -> str | None:
    """What must stay the same for a folder's index to hold; None: no such folder."""
    got = file_stamp(folder)
    return None if got is None else " ".join(map(str, got))


def _path(folder: str) -> str | None:
    base = cache_dir()
    if base is None:
        return None
    key = sha256(os.fsencode(folder)).hexdigest()[:32]
    return os.path.join(base, "distindex", f"{key}.txt")


def load(folder: str, folder_stamp: str) -> dict[str, tuple[str, str]] | None:
    """The index kept for ``folder`` when it was made at ``folder_stamp``, else None."""
    path = _path(folder)
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            text = fh.read()
    except OSError:
        return None
    lines = text.split("\n")
    if lines[0] != f"{_HEAD}\t{folder}\t{folder_stamp}" or lines[-1] != "":
        return None
    out: dict[str, tuple[str, str]] = {}
    for line in lines[1:-1]:
        parts = line.split("\t")
        if len(parts) != 3:
            return None
        out[parts[0]] = (parts[1], parts[2])
    return out


def store(folder: str, folder_stamp: str, index: dict[str, tuple[str, str]]) -> None:
    """Keep ``index`` for ``folder`` at ``folder_stamp``; nothing when a name cannot be written
    on one line, or the cache is off or cannot be written."""
    path = _path(folder)
    fields = [folder, *(x for top, (dist, version) in index.items() for x in (top, dist, version))]
    if path is None or any("\t" in x or "\n" in x or "\r" in x for x in fields):
        return
    rows = [f"{_HEAD}\t{folder}\t{folder_stamp}"]
    rows += [f"{top}\t{dist}\t{version}" for top, (dist, version) in index.items()]
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        atomic_write(path, ("\n".join(rows) + "\n").encode("utf-8", "surrogateescape"),
                     durable=False)
    except (OSError, UnicodeError):
        pass
