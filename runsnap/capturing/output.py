"""Where snapshots go: the default file name, ``-o`` and ``--dir``, and the snapshot folder
runsnap creates (with a ``.gitignore``, so runsnap never sees its own output)."""

from __future__ import annotations

import os
import re

from runsnap._paths import path_str

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["GITIGNORE", "default_output", "ensure_snapshot_dir", "resolve_output"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def default_output(snapshot: Snapshot, cwd: str | os.PathLike[str] | None = None) -> str:
    """``.runsnap/<UTC timestamp>-<label or command name>.toml`` under ``cwd``.

    >>> from runsnap.snapshot import Snapshot
    >>> default_output(Snapshot(meta={"captured_at": "2026-11-29T16:14:35.123+00:00",
    ...     "label": "good run"}, sections={}), "/w")
    '/w/.runsnap/20261129T161435.123Z-good-run.toml'
    """
    stamp = str(snapshot.meta.get("captured_at", ""))
    stamp = stamp.replace("-", "").replace(":", "").replace("+0000", "Z")
    argv = snapshot.get("command", {}).get("argv") or []
    name = snapshot.label or (os.path.basename(argv[0]) if argv else "context")
    if not snapshot.label and len(argv) > 2 and argv[1] == "-m":
        name = argv[2]  # python -m sglang.launch_server -> sglang.launch_server
    name = _UNSAFE.sub("-", name).strip("-")[:60] or "run"
    base = os.fspath(cwd) if cwd is not None else os.getcwd()
    return path_str(os.path.join(base, ".runsnap", f"{stamp}-{name}.toml"))


def resolve_output(
    snapshot: Snapshot,
    output: str | os.PathLike[str] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
) -> str:
    """Where to write ``snapshot``: ``output`` if given, else :func:`default_output`'s name in
    ``out_dir`` (or ``./.runsnap``), that folder made ready by :func:`ensure_snapshot_dir`."""
    if output:
        return path_str(output)
    target = default_output(snapshot)
    if out_dir:
        target = path_str(os.path.join(out_dir, os.path.basename(target)))
    ensure_snapshot_dir(os.path.dirname(target), ours=not out_dir)
    return target


#: What runsnap writes into a snapshot folder it creates: git, and tools that read
#: ``.gitignore``, then never see snapshots (the convention of virtualenv and pytest's cache).
GITIGNORE = "# created by runsnap: snapshots are not part of the project\n*\n"


def ensure_snapshot_dir(folder: str, ours: bool = False) -> None:
    """Create ``folder`` with a ``.gitignore`` holding ``*`` when runsnap creates it; the
    default ``.runsnap`` folder (``ours``) gets one even when it already exists without."""
    created = not os.path.isdir(folder)
    if created:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError:
            return  # the save reports it, with the file's name
    ignore = os.path.join(folder, ".gitignore")
    if (created or ours) and not os.path.lexists(ignore):
        try:
            with open(ignore, "x", encoding="utf-8") as fh:
                fh.write(GITIGNORE)
        except OSError:
            pass  # a read-only folder still takes no snapshot; the save says why
