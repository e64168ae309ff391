"""``runsnap unpin``: a pinned baseline that ``gc`` may remove again."""

from __future__ import annotations

import sys

import click

from runsnap.cli.boundary import CONTEXT_SETTINGS, finish, runsnap_command
from runsnap.cli.complete import snapshot_names
from runsnap.cli.options import dir_option, echo

__all__ = ["unpin"]


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("snapshots", nargs=-1, required=True, metavar="SNAPSHOT...",
                shell_complete=snapshot_names)
@dir_option
@runsnap_command
def unpin(snapshots: tuple[str, ...], snap_dir: str) -> None:
    """Unpin SNAPSHOT: `gc` may remove it again. The snapshot itself is not touched."""
    # the snapshot loader and the folder's names: only when a pin changes
    from runsnap.commands.pin import pin_snapshots

    sys.exit(finish(pin_snapshots(snapshots, snap_dir, False), echo))
