"""``runsnap pin`` and ``runsnap unpin``: baselines that ``gc`` keeps and ``@pinned`` names."""

from __future__ import annotations

import click

from runsnap.cli.boundary import CONTEXT_SETTINGS, runsnap_command
from runsnap.cli.complete import snapshot_names
from runsnap.cli.options import dir_option

__all__ = ["pin", "unpin"]


def _one(snapshot: str, snap_dir: str, pinning: bool) -> None:
    from runsnap.snapshot import load
    from runsnap.snapshot import pins as pinning_file
    from runsnap.views.names import resolve

    path = resolve(snapshot, snap_dir)
    load(path)  # a pin names a snapshot: a file that is none is an input error (exit 2)
    changed = (pinning_file.pin if pinning else pinning_file.unpin)(path, snap_dir)
    if pinning:
        click.echo(f"pinned {path}" if changed else f"{path}: already pinned")
    else:
        click.echo(f"unpinned {path}" if changed else f"{path}: was not pinned")


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("snapshots", nargs=-1, required=True, metavar="SNAPSHOT...",
                shell_complete=snapshot_names)
@dir_option
@runsnap_command
def pin(snapshots: tuple[str, ...], snap_dir: str) -> None:
    """Pin SNAPSHOT as a baseline: `gc` never removes it, `ls` marks it, and @pinned names
    the newest pinned snapshot wherever a snapshot is taken (runsnap diff @pinned @1).

    SNAPSHOT is @1 (the newest in --dir), @2, ..., @LABEL or a file in --dir.
    """
    for snapshot in snapshots:
        _one(snapshot, snap_dir, True)


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("snapshots", nargs=-1, required=True, metavar="SNAPSHOT...",
                shell_complete=snapshot_names)
@dir_option
@runsnap_command
def unpin(snapshots: tuple[str, ...], snap_dir: str) -> None:
    """Unpin SNAPSHOT: `gc` may remove it again. The snapshot itself is not touched."""
    for snapshot in snapshots:
        _one(snapshot, snap_dir, False)
