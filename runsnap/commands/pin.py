"""``runsnap pin`` / ``unpin``: a snapshot of the folder kept as a baseline
(:mod:`runsnap.snapshot.pins`), or let go."""

from __future__ import annotations

from runsnap.commands import Result
from runsnap.snapshot import load
from runsnap.snapshot import pins as pinning
from runsnap.views.names import resolve

__all__ = ["pin_snapshots"]


def pin_snapshots(snapshots: tuple[str, ...], snap_dir: str, pinned: bool) -> Result:
    """Pin (``pinned``) or unpin each of ``snapshots`` in ``snap_dir``: a line each, saying
    what changed. A name that is no snapshot of the folder is an input error (exit 2)."""
    lines = []
    for snapshot in snapshots:
        path = resolve(snapshot, snap_dir)
        load(path)  # a pin names a snapshot: a file that is none is an input error
        changed = (pinning.pin if pinned else pinning.unpin)(path, snap_dir)
        if pinned:
            lines.append(f"pinned {path}" if changed else f"{path}: already pinned")
        else:
            lines.append(f"unpinned {path}" if changed else f"{path}: was not pinned")
    return Result("".join(f"{line}\n" for line in lines))
