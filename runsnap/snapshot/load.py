"""Loading snapshots: TOML parsed, markers decoded, the document validated."""

from __future__ import annotations

import os
import sys

from runsnap._paths import path_str
from runsnap.errors import SnapshotError
from runsnap.snapshot.codec import decode
from runsnap.snapshot.model import END_MARKER, SCHEMA_VERSION, Snapshot

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["load", "loads", "toml_parser"]


def toml_parser() -> Any:
    """The TOML parser: :mod:`tomllib`, or :mod:`tomli` before Python 3.11."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib


def loads(text: str, path: str | os.PathLike[str] | None = None) -> Snapshot:
    """Parse and validate snapshot TOML text."""
    tomllib = toml_parser()
    where = f"{path_str(path)}: " if path is not None else ""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SnapshotError(f"{where}not valid TOML ({exc}); is the file truncated?") from exc
    newer = isinstance(raw.get("schema"), int) and raw["schema"] > SCHEMA_VERSION
    if "schema" in raw and not newer and text.rstrip().rpartition("\n")[2].strip() != END_MARKER:
        raise SnapshotError(f"{where}the snapshot is truncated (its last line is not "
                            f"'{END_MARKER}')")
    return Snapshot.from_document(decode(raw), path=path)


def load(path: str | os.PathLike[str]) -> Snapshot:
    """Read and validate the snapshot at ``path``; raise :class:`SnapshotError` if it is not one."""
    p = path_str(path)
    try:
        with open(p, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise SnapshotError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise SnapshotError(f"{p}: is a directory, not a snapshot file") from None
    except OSError as exc:
        raise SnapshotError(f"{p}: cannot read ({exc.strerror or exc})") from None
    if not data.strip():
        raise SnapshotError(f"{p}: empty file, not a runsnap snapshot")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SnapshotError(f"{p}: not a text file, not a runsnap snapshot") from None
    return loads(text, path=p)
