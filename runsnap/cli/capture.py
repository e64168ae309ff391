"""``runsnap capture``: the click command (a plainly well formed command line is read without
click, by :func:`runsnap.cli.main`); the work is :func:`runsnap.commands.capture.run_capture`."""

from __future__ import annotations

import sys
from typing import Any

import click

from runsnap.cli.boundary import CONTEXT_SETTINGS, runsnap_command
from runsnap.cli.options import capture_options

__all__ = ["capture"]


@click.command(context_settings={**CONTEXT_SETTINGS, "ignore_unknown_options": False})
@capture_options
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@runsnap_command
def capture(**params: Any) -> None:
    """Snapshot COMMAND, run it, and record its outcome in the same TOML file.

    Put the command after `--`. The snapshot (command line, environment with secrets replaced
    by fingerprints, git state, the child's packages, model configs, host and GPU facts) is
    written before the command starts; when it ends, [outcome] is added: exit status, times,
    peak memory, the last lines of its output, its first error and its warnings. runsnap
    exits with the command's status (128+N when killed by signal N, 127 not found, 126 not
    executable) and prints the snapshot's path on stderr.

    With --no-run, or with no command (the current context), nothing is run and the path is
    printed on stdout. --pid PID snapshots a process that is already running.
    """
    # imported here: the other commands (diff above all) never need the capture journey
    from runsnap.commands.capture import CaptureRequest, run_capture

    sys.exit(run_capture(CaptureRequest.from_params(params)))
