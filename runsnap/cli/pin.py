"""``runsnap pin``: baselines that ``gc`` keeps and ``@pinned`` names (``runsnap unpin`` undoes it)."""

from __future__ import annotations

import sys

import click

from runsnap.cli.boundary import CONTEXT_SETTINGS, finish, runsnap_command
from runsnap.cli.complete import snapshot_names
from runsnap.cli.options import dir_option, echo

__all__ = ["pin"]


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
    # the snapshot loader and the folder's names: only when a pin changes
    from runsnap.commands.pin import pin_snapshots

    sys.exit(finish(pin_snapshots(snapshots, snap_dir, True), echo))
