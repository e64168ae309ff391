"""Pinned snapshots: baselines a folder keeps whatever ``gc`` is asked to remove.

``runsnap pin @good`` writes the snapshot's file name into ``DIR/pins`` (one name a line,
replaced atomically), ``runsnap unpin`` takes it out; ``ls`` marks pinned snapshots, ``gc``
never removes them, and ``@pinned`` names the newest of them wherever a snapshot is taken.
The file holds names, not paths: a folder moved or copied keeps its pins.

    >>> parse_pins("a.toml\\n\\n# note\\nb.toml\\n")
    ['a.toml', 'b.toml']
"""

from __future__ import annotations

import os

from runsnap.base.atomic import atomic_write
from runsnap.errors import UsageError

__all__ = ["PINS_FILE", "parse_pins", "pin", "pinned_names", "unpin"]

#: The file in a snapshot folder that lists its pinned snapshots.
PINS_FILE = "pins"


def parse_pins(text: str) -> list[str]:
    """The file names ``pins`` lists, in order: blank lines, ``#`` comments and anything that
    is not a plain ``*.toml`` name in the folder are left out."""
    out: list[str] = []
    for line in text.splitlines():
        name = line.strip()
        if (name and not name.startswith("#") and name.endswith(".toml") and "/" not in name
                and name not in out):
            out.append(name)
    return out


def pinned_names(folder: str | os.PathLike[str]) -> list[str]:
    """The file names pinned in ``folder`` (none when it has no ``pins`` file)."""
    try:
        with open(os.path.join(os.fspath(folder), PINS_FILE), encoding="utf-8",
                  errors="replace") as f:
            return parse_pins(f.read(1 << 20))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return []
    except OSError as exc:
        raise UsageError(f"{os.path.join(os.fspath(folder), PINS_FILE)}: "
                         f"{exc.strerror or exc}") from None


def _member(path: str, folder: str | os.PathLike[str]) -> str:
    """The name of ``path`` in ``folder``; UsageError when the file lies elsewhere (a pin
    belongs to the folder ``gc`` cleans)."""
    here = os.path.realpath(os.fspath(folder))
    if os.path.dirname(os.path.realpath(path)) != here:
        raise UsageError(f"{path}: not in {os.fspath(folder)} (pins belong to the snapshot "
                         f"folder: copy it there, or give --dir)")
    return os.path.basename(path)


def _write(folder: str | os.PathLike[str], names: list[str]) -> None:
    body = "".join(f"{n}\n" for n in names)
    atomic_write(os.path.join(os.fspath(folder), PINS_FILE),
                 ("# pinned by runsnap pin: gc keeps these snapshots\n" + body).encode())


def pin(path: str, folder: str | os.PathLike[str]) -> bool:
    """Pin the snapshot file ``path`` of ``folder``; False when it already was."""
    name = _member(path, folder)
    names = pinned_names(folder)
    if name in names:
        return False
    _write(folder, [*names, name])
    return True


def unpin(path: str, folder: str | os.PathLike[str]) -> bool:
    """Unpin the snapshot file ``path`` of ``folder``; False when it was not pinned."""
    name = _member(path, folder)
    names = pinned_names(folder)
    if name not in names:
        return False
    _write(folder, [n for n in names if n != name])
    return True
