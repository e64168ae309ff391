"""``runsnap why``: from a failed launch to its proven cause in one command.

A thin click face over :func:`runsnap.experiments.explaining.why`."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from runsnap.cli.boundary import CONTEXT_SETTINGS, runsnap_command
from runsnap.errors import UsageError
from runsnap.render import render

__all__ = ["why"]


def _say(line: str) -> None:
    from runsnap.base.terminal import fit, neutralise, say, width

    say(fit(f"runsnap: {neutralise(line)}", width(sys.stderr)) + "\n")


def _asker(yes: bool) -> Any:
    """Before the first launch: refuse what cannot or must not run; show what will run and
    ask (a terminal), or refuse without ``--yes`` (no terminal)."""
    from runsnap.experiments import review

    def ask(snapshots: Any) -> None:
        for snap in snapshots:
            review.check_launchable(snap)
            review.refuse_cwd(str((snap.get("command") or {}).get("cwd") or os.getcwd()))
        if yes:
            return
        interactive = sys.stdin.isatty()
        reasons = [*review.must_ask(snapshots, False, interactive)] or ["it launches trials"]
        for reason in reasons:
            _say(reason)
        _say("this will run (GOOD's launch, with BAD's differences applied in turn):")
        from runsnap.base.terminal import width, wrap

        for snap in snapshots[:1]:
            cmd = snap.get("command") or {}
            env = (snap.get("env") or {}).get("vars") or {}
            for line in review.what_runs([str(a) for a in cmd.get("argv") or []],
                                         str(cmd.get("cwd") or os.getcwd()),
                                         {str(k): str(v) for k, v in env.items()}):
                for part in wrap(line, width(sys.stderr), "      "):
                    click.echo(part, err=True)
        if not interactive:
            raise UsageError("not run: review the launch above, then give --yes to run it")
        if not click.confirm("Run it?", default=False, err=True):
            raise UsageError("not run")

    return ask


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("bad", required=False)
@click.option("--against", "against", metavar="REF", default=None,
              help="The reference run: a file, @N, @LABEL, mlflow:ID or wandb:ID (default: the "
                   "newest earlier snapshot of the same launch that ended well).")
@click.option("--prove", is_flag=True,
              help="When the evidence names the cause, prove it in two launches.")
@click.option("--metric", metavar="NAME", default=None,
              help="When both runs end alike: the metric whose value decides.")
@click.option("--test", "test", metavar="CMD", default=None,
              help="A shell command whose exit status judges each launch: 0 good, 125 cannot "
                   "tell, else bad.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="S", help="A server: still running after S seconds is good.")
@click.option("--max-trials", type=click.IntRange(min=1), default=None,
              help="Stop after this many launches, with the best answer so far.")
@click.option("--allow-missing-secrets", is_flag=True,
              help="Launch without GOOD's secrets that are not in this environment.")
@click.option("--format", "fmt", type=click.Choice(("text", "markdown", "json")),
              default="text", show_default=True,
              help="text for people, markdown for an issue, json for programs.")
@click.option("--dir", "out_dir", envvar="RUNSNAP_DIR", type=click.Path(file_okay=False),
              default=".runsnap", show_envvar=True,
              help="The snapshots' folder (@N, @LABEL, the reference); trials go under it.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines.")
@click.option("-y", "--yes", is_flag=True,
              help="Launch without showing what will run and asking (needed without a "
                   "terminal).")
@runsnap_command
def why(bad: str | None, against: str | None, prove: bool, metric: str | None,
        test: str | None, timeout: float | None, max_trials: int | None,
        allow_missing_secrets: bool, fmt: str, out_dir: str, quiet: bool, yes: bool) -> None:
    """Say why BAD went wrong, and prove it: one verdict with its cause.

    BAD is a file, @N or @LABEL (default @1, the newest in --dir). The reference is found:
    the newest earlier snapshot of the same launch (same program and entry point) that
    ended well; --against names another. It diffs them; when the evidence names the cause,
    it says so (--prove launches twice to prove it); when undecided, it runs `runsnap
    bisect` over the candidates first. Exit status: 0 a cause, 1 none, 2 trouble, 130
    interrupted.
    """
    import signal

    from runsnap.base.terminal import width
    from runsnap.experiments.bisecting import Options
    from runsnap.experiments.explaining import why as explain
    from runsnap.experiments.trials import Criteria

    def stop(_sig: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    from runsnap.cli.progress import wiring

    progress, on_trial, status = wiring(quiet, _say)
    options = Options(criteria=Criteria(test=test, timeout=timeout, metric=metric),
                      max_trials=max_trials, allow_missing_secrets=allow_missing_secrets,
                      progress=progress, on_trial=on_trial)
    try:
        result = explain(bad, against=against, folder=out_dir, prove=prove, options=options,
                         before_launch=_asker(yes))
    finally:
        if status is not None:
            status.close()
    click.echo(render(result, fmt, width=width()), nl=False)
    sys.exit(result.exit_status)
