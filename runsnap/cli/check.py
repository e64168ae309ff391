"""``runsnap check``: what is wrong inside one snapshot."""

from __future__ import annotations

import sys

import click

from runsnap.base.terminal import width
from runsnap.cli.boundary import CONTEXT_SETTINGS, finish, runsnap_command
from runsnap.cli.options import dir_option, echo, format_option
from runsnap.commands import Result
from runsnap.errors import NO, OK

__all__ = ["check"]


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("snapshot", required=False)
@format_option("text", "json", "markdown")
@dir_option
@runsnap_command
def check(snapshot: str | None, fmt: str, snap_dir: str) -> None:
    """Find what is wrong inside SNAPSHOT, most important first.

    A misspelt variable (against the names the run read by name, the installed packages and
    runsnap's lists), a draft and a target model that disagree where speculative decoding
    needs agreement, a context length longer than the target's own, an unknown key in
    PYTORCH_CUDA_ALLOC_CONF, a package imported from somewhere other than where it is
    installed, unmet requirements as pip check finds them, a variable set to a value its
    reader cannot accept.

    SNAPSHOT is a file, @1 (the newest in --dir), @2, ... or @LABEL; default @1.
    Exit status: 0 no findings, 1 findings, 2 error.
    """
    # only when this command runs, not for --help or the other commands (~111 ms measured under load)
    from runsnap.checks import check as check_snapshot
    from runsnap.diffing.static import readers_of
    from runsnap.render.check import render
    from runsnap.views.names import load

    snap = load(snapshot or "@1", snap_dir)
    report = check_snapshot(snap, who_reads=readers_of(snap), installed=True)
    sys.exit(finish(Result(render(report, fmt, width=width()), NO if report else OK), echo))
