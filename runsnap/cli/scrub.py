"""``runsnap scrub``: today's secret rules applied to older snapshots, in place."""

from __future__ import annotations

import sys

import click

from runsnap.cli.boundary import CONTEXT_SETTINGS, finish, runsnap_command
from runsnap.cli.complete import snapshot_names
from runsnap.cli.options import dir_option, echo
from runsnap.commands import Result

__all__ = ["scrub"]


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("snapshots", nargs=-1, required=True, type=click.Path(dir_okay=False),
                shell_complete=snapshot_names)
@click.option("--redact", "redact", multiple=True, metavar="NAME_OR_GLOB",
              help="Also treat values of this name as secrets (repeatable).")
@dir_option
@runsnap_command
def scrub(snapshots: tuple[str, ...], redact: tuple[str, ...], snap_dir: str) -> None:
    """Re-apply today's secret rules to SNAPSHOTS, rewriting each in place (atomically).

    SNAPSHOTS are files, @1 (the newest in --dir), @2, ... or @LABEL.

    Values found are replaced by fingerprints under this machine's key; the file is replaced
    whole or not at all. Prints, per file, how many places changed.
    """
    # imported here: the secret rules cost every other command's start-up (diff's above all)
    from runsnap.redact.scrub import scrub_file
    from runsnap.snapshot.store import resolve

    for path in [resolve(s, snap_dir) for s in snapshots]:
        changed = scrub_file(path, redact=redact)
        finish(Result(f"{path}: {changed} place{'s' if changed != 1 else ''} redacted\n"
                      if changed else f"{path}: nothing to redact\n"), echo)
    sys.exit(0)
