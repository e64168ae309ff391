"""``runsnap check``: what is wrong inside one snapshot."""

from __future__ import annotations

import sys

import click

from runsnap.base.terminal import width
from runsnap.cli.boundary import CONTEXT_SETTINGS, finish, runsnap_command
from runsnap.cli.complete import snapshot_names
from runsnap.cli.options import dir_option, echo, format_option
from runsnap.cli.preflight import AfterDashes
from runsnap.errors import UsageError

__all__ = ["check"]


@click.command(cls=AfterDashes, context_settings=CONTEXT_SETTINGS)
@click.argument("snapshot", required=False, shell_complete=snapshot_names)
@format_option("text", "json", "markdown")
@click.option("--strict", is_flag=True,
              help="With no SNAPSHOT: exit 2 where `capture --strict` would refuse the launch.")
@dir_option
@click.pass_context
@runsnap_command
def check(ctx: click.Context, snapshot: str | None, fmt: str, strict: bool,
          snap_dir: str) -> None:
    """Find what is wrong inside SNAPSHOT, or in the context a launch from here would get.

    A misspelt variable (against the names the run read by name, the installed packages and
    runsnap's lists), a draft and a target model that disagree where speculative decoding
    needs agreement, a context length longer than the target's own, an unknown key in
    PYTORCH_CUDA_ALLOC_CONF, a package imported from somewhere other than where it is
    installed, unmet requirements as pip check finds them, a variable set to a value its
    reader cannot accept.

    SNAPSHOT is a file, @1 (the newest in --dir), @2, ... or @LABEL. With none, the
    pre-launch guard's rules check the current context (what `capture --no-run` would
    record); `check -- COMMAND` checks the context COMMAND would get. Nothing is written.
    Exit status: 0 no findings, 1 findings, 2 error (with no SNAPSHOT, also where
    `capture --strict` would refuse to launch).
    """
    # the capture's journey (collectors, redaction) or the snapshot loader: only when check runs
    from runsnap.commands.check import check_context, check_file, refuse_both

    command = ctx.meta["runsnap.command"]
    refuse_both(snapshot, command)
    if snapshot is None:
        sys.exit(finish(check_context(command or [], fmt, strict, width()), echo))
    if strict:
        raise UsageError("check: --strict goes with the current context (no SNAPSHOT)")
    sys.exit(finish(check_file(snapshot, snap_dir, fmt, width()), echo))
