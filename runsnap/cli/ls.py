"""``runsnap ls``: the snapshots of a folder, or the tracked runs holding one."""

from __future__ import annotations

import sys

import click

from runsnap.base.terminal import width, wrap
from runsnap.cli.boundary import CONTEXT_SETTINGS, finish, runsnap_command
from runsnap.cli.options import dir_option, echo, format_option
from runsnap.commands import Result
from runsnap.errors import UsageError

__all__ = ["ls"]


@click.command(name="ls", context_settings=CONTEXT_SETTINGS)
@format_option("text", "json")
@click.option("--track", "track", type=click.Choice(("mlflow", "wandb")), default=None,
              help="List the runs of this experiment tracker that hold a snapshot instead.")
@click.option("--experiment", "experiment", metavar="NAME", default="",
              help="With --track: the MLflow experiment (default: MLFLOW_EXPERIMENT_NAME, else "
                   "Default), or the W&B ENTITY/PROJECT (default: the offline runs in ./wandb).")
@dir_option
@runsnap_command
def ls(fmt: str, track: str | None, experiment: str, snap_dir: str) -> None:
    """List the snapshots of --dir, newest first: @N, time, label, exit status, host, command.

    Name them @1 (the newest), @2, ... or @LABEL wherever a snapshot is taken. With --track,
    the tracked runs holding a snapshot, named mlflow:RUN_ID or wandb:... the same way.
    """
    # only when this command runs, not for --help or the other commands (~44 ms measured under load)
    from runsnap.render.listing import render_listing
    from runsnap.snapshot.store import list_snapshots
    from runsnap.views.housekeeping import usage
    from runsnap.views.names import tracked_entries

    if track:
        entries = tracked_entries(track, experiment)
    else:
        if experiment:
            raise UsageError("--experiment goes with --track")
        entries = list_snapshots(snap_dir)
    text = render_listing(entries, fmt, width())
    # wrapped, not cut: its end says how to free the folder
    notes = tuple(wrap(usage(snap_dir).line(snap_dir), width(sys.stderr), "  ")) \
        if fmt == "text" and not track else ()
    sys.exit(finish(Result(text, notes=notes), echo))
