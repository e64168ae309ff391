"""Before a launch from a snapshot (``replay``, ``bisect``): what will run is shown and asked
about, and runsnap's own lines are told on stderr without ever stopping the launch."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from runsnap.base.terminal import clean, fit, neutralise, say, width, wrap
from runsnap.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["progress", "recorded", "review", "say_line"]


def say_line(line: str) -> None:
    """One line of runsnap's own before or during a launch: a stderr that cannot be written
    loses it, never the launch (:func:`runsnap.base.terminal.say`)."""

    say(fit(f"runsnap: {clean(line)}", width(sys.stderr)) + "\n")


def review(snapshots: list[Any], launches: list[tuple[Any, str, Any]], yes: bool) -> None:
    """Refuse what cannot or must not run; show what will run and ask when a snapshot is not
    this machine's and user's, or stdin is a terminal (``--yes``: go on without asking)."""
    # only when this command runs, not for --help or the other commands (~17 ms measured under load)
    from runsnap.experiments import review

    for snap in snapshots:
        review.check_launchable(snap)
    for _argv, cwd, _env in launches:
        review.refuse_cwd(cwd)
    interactive = sys.stdin.isatty()
    reasons = review.must_ask(snapshots, yes, interactive)
    if not reasons:
        return
    for reason in reasons:
        say_line(reason)
    say_line("this will run:")

    cols = width(sys.stderr)  # wrapped, never cut: every character of what runs is shown
    for argv, cwd, env in launches:
        for line in review.what_runs(argv, cwd, env):
            for part in wrap(line, cols, "      "):
                click.echo(part, err=True)
    if not interactive:
        raise UsageError("not run: review the launch above (runsnap show SNAPSHOT), then give "
                         "--yes to run it")
    if not click.confirm("Run it?", default=False, err=True):
        raise UsageError("not run")


def recorded(snap: Snapshot) -> tuple[list[str], str, dict[str, str]]:
    """The argv, working directory and environment a snapshot recorded (what its trials run,
    secrets still redacted)."""
    cmd, env = snap.records.command, snap.records.env.vars
    return ([str(a) for a in cmd.argv], cmd.cwd or os.getcwd(),
            {str(k): str(v) for k, v in env.items()})


def progress(line: str) -> None:
    """A trial's progress line, cut to the terminal's width (the whole is in the trials'
    folder)."""

    say(fit(f"runsnap: {neutralise(line)}", width(sys.stderr)) + "\n")
