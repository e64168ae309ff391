"""``runsnap why``: from a failed launch to its proven cause in one command.

A thin click face over :func:`runsnap.commands.why.run_why` (``runsnap why [BAD]`` without
options skips click: :func:`runsnap.cli.main`)."""

from __future__ import annotations

import sys

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
from runsnap.cli.boundary import CONTEXT_SETTINGS, finish, runsnap_command
from runsnap.cli.options import click_option, dir_option, echo, format_option, yes_option

__all__ = ["why"]


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("bad", required=False)
@click.option("--against", "against", metavar="REF", default=None,
              help="The reference run: a file, @N, @LABEL, mlflow:ID or wandb:ID (default: the "
                   "newest earlier snapshot of the same launch that ended well).")
@click.option("--prove", is_flag=True,
              help="When the evidence names the cause, prove it in two launches.")
@click_option(METRIC)
@click_option(METRIC_TOLERANCE)
@click_option(TEST)
@click_option(TIMEOUT.but(help="A server: still running after S seconds is good, an earlier exit "
                               "is bad."))
@click_option(MAX_TRIALS)
@click_option(ALLOW_MISSING_SECRETS)
@format_option("text", "markdown", "json",
               help="text for people, markdown for an issue, json for programs.")
@dir_option(dest="out_dir",
            help="The snapshots' folder (@N, @LABEL, the reference); trials go under it.")
@click_option(QUIET)
@yes_option("Launch without showing what will run and asking (needed without a terminal).")
@runsnap_command
def why(bad: str | None, against: str | None, prove: bool, metric: str | None,
        metric_tolerance: tuple[str, ...], test: str | None, timeout: float | None, max_trials: int | None,
        allow_missing_secrets: bool, fmt: str, out_dir: str, quiet: bool, yes: bool) -> None:
    """Say why BAD went wrong, and prove it: one verdict with its cause.

    BAD is a file, @N, @LABEL, mlflow:ID or wandb:ID (default @1, the newest in --dir). The
    reference is found: the newest earlier snapshot of the same launch (same program and
    entry point) that ended well, in --dir or the tracker BAD was logged to; --against
    names another. It diffs them; when the evidence names the cause,
    it says so (--prove launches twice to prove it); when undecided, it runs `runsnap
    bisect` over the candidates first. Exit status: 0 a cause, 1 none, 2 trouble, 130
    interrupted.
    """
    # the journey, only once the options parse
    from runsnap.commands.why import run_why
    from runsnap.experiments.verdicts import WhySettings

    settings = WhySettings(test=test, timeout=timeout, metric=metric, max_trials=max_trials,
                           allow_missing_secrets=allow_missing_secrets,
                           metric_tolerance=tuple(metric_tolerance))
    sys.exit(finish(run_why(bad, out_dir, fmt, against=against, prove=prove, settings=settings,
                            quiet=quiet, yes=yes), echo))
