"""``runsnap bisect``: which differences between two snapshots make the launch fail, found by
launching it (the work: :mod:`runsnap.experiments.bisecting`)."""

from __future__ import annotations

import signal
import sys
from typing import Any

import click

from runsnap.base.options import (
    ALLOW_MISSING_SECRETS,
    MAX_TRIALS,
    METRIC,
    METRIC_TOLERANCE,
    QUIET,
    TEST,
    TIMEOUT,
)
from runsnap.base.terminal import width
from runsnap.cli.asking import progress, recorded, review
from runsnap.cli.boundary import CONTEXT_SETTINGS, finish, runsnap_command
from runsnap.cli.complete import snapshot_names
from runsnap.cli.options import click_option, dir_option, echo, format_option, yes_option
from runsnap.commands import Result
from runsnap.commands.progress import wiring
from runsnap.render import render

__all__ = ["bisect"]


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("good", type=click.Path(), shell_complete=snapshot_names)
@click.argument("bad", type=click.Path(), shell_complete=snapshot_names)
@click_option(TIMEOUT)
@click.option("--ready-line", metavar="REGEX", default=None,
              help="With --timeout: good once a line of output matches REGEX.")
@click.option("--ready-url", metavar="URL", default=None,
              help="With --timeout: good once URL answers.")
@click_option(TEST)
@click_option(METRIC)
@click_option(METRIC_TOLERANCE)
@click_option(MAX_TRIALS)
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Trials side by side (only for launches that can share the machine).")
@click.option("--recheck", type=click.IntRange(min=1), default=2, show_default=True,
              help="Run the answer, then GOOD's launch, this many times again before "
                   "claiming a cause (a flaky launch then shows).")
@click.option("--dry-run", is_flag=True, help="Print the plan and the first trials; run nothing.")
@click.option("--force", is_flag=True,
              help="Go on despite differences that cannot be applied or another program "
                   "(they stay as in GOOD).")
@click.option("--all", "include_hidden", is_flag=True, help="Also try noise differences.")
@click_option(ALLOW_MISSING_SECRETS)
@click.option("--kill-after", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="Seconds a stopped trial gets between SIGTERM and SIGKILL.")
@format_option("text", "markdown", "json",
               help="text for people, markdown for an issue, json for programs (one object).")
@dir_option(dest="out_dir",
            help="Trials are kept in DIR/bisect-<id>/; @N, @LABEL name DIR's snapshots.")
@yes_option(help="Run the trials without showing what will run and asking (needed without a "
                 "terminal for snapshots from another host or user).")
@click_option(QUIET)
@runsnap_command
def bisect(good: str, bad: str, timeout: float | None, ready_line: str | None,
           ready_url: str | None, test: str | None, metric: str | None,
           metric_tolerance: tuple[str, ...],
           max_trials: int | None, jobs: int, recheck: int, dry_run: bool, force: bool,
           include_hidden: bool, allow_missing_secrets: bool, kill_after: float, fmt: str,
           out_dir: str, yes: bool, quiet: bool) -> None:
    """Find which differences between GOOD and BAD make the launch fail, by launching it.

    GOOD and BAD are files, @N (@1 the newest in --dir) or @LABEL.

    Each trial is GOOD's launch with some of the differences applied (variables, command-line
    options, model config.json fields through a linked copy of the model), captured under
    DIR/bisect-<id>/. Delta debugging finds a single cause in about 2*log2(n) trials and a
    cause made of several differences acting together; the answer is checked again.

    By default a trial is bad when its outcome looks like BAD's (exit status, signal, first
    error line; when both ended alike, the metric, wall time or peak memory that differs).
    Exit status: 0 cause found, 1 none reproduces, 2 trouble, 130 interrupted.
    """

    # only when this command runs, not for --help or the other commands (~135 ms measured under load)
    from runsnap.experiments.bisecting import Options
    from runsnap.experiments.bisecting import bisect as do_bisect
    from runsnap.experiments.trials import Criteria
    from runsnap.views.names import load

    def stop(_sig: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)  # a scheduler's stop: end the running trial cleanly
    criteria = Criteria(timeout=timeout, ready_line=ready_line, ready_url=ready_url, test=test,
                        kill_grace=kill_after, metric=metric,
                        metric_tolerance=tuple(metric_tolerance))
    snaps = [load(good, out_dir), load(bad, out_dir)]
    if not dry_run:
        review(snaps, [recorded(s) for s in snaps], yes)

    lines, on_trial, status = wiring(quiet, progress)
    options = Options(criteria=criteria, max_trials=max_trials, jobs=jobs, recheck=recheck,
                      dry_run=dry_run,
                      force=force, include_hidden=include_hidden,
                      allow_missing_secrets=allow_missing_secrets, out_dir=out_dir,
                      progress=lines, on_trial=on_trial)
    try:
        result = do_bisect(snaps[0], snaps[1], options)
    finally:
        if status is not None:
            status.close()
    sys.exit(finish(Result(render(result, fmt, width=width()), result.exit_status), echo))
