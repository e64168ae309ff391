"""``runsnap replay`` and ``runsnap bisect``: prove a cause by launching again.

Thin click faces over :mod:`runsnap.experiments.replaying` and :mod:`runsnap.experiments.bisecting`.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from runsnap.base.paths import shown
from runsnap.cli.boundary import CONTEXT_SETTINGS, runsnap_command
from runsnap.errors import UsageError
from runsnap.render import render

__all__ = ["bisect", "replay"]


def _say(line: str) -> None:
    """One line of runsnap's own before or during a launch: a stderr that cannot be written
    loses it, never the launch (:func:`runsnap.base.terminal.say`)."""
    from runsnap.base.terminal import clean, fit, say, width  # lines quote the snapshots' values

    say(fit(f"runsnap: {clean(line)}", width(sys.stderr)) + "\n")


def _review(snapshots: list[Any], launches: list[tuple[Any, str, Any]], yes: bool) -> None:
    """Refuse what cannot or must not run; show what will run and ask when a snapshot is not
    this machine's and user's, or stdin is a terminal (``--yes``: go on without asking)."""
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
        _say(reason)
    _say("this will run:")
    from runsnap.base.terminal import width, wrap

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


def _recorded(snap: Any) -> tuple[list[str], str, dict[str, str]]:
    """The argv, working directory and environment a snapshot recorded (what its trials run,
    secrets still redacted)."""
    cmd = snap.get("command") or {}
    env = (snap.get("env") or {}).get("vars") or {}
    return ([str(a) for a in cmd.get("argv") or []], str(cmd.get("cwd") or os.getcwd()),
            {str(k): str(v) for k, v in env.items()})


def _progress(line: str) -> None:
    """A trial's progress line, cut to the terminal's width (the whole is in the trials'
    folder)."""
    from runsnap.base.terminal import fit, neutralise, say, width

    say(fit(f"runsnap: {neutralise(line)}", width(sys.stderr)) + "\n")


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("snapshot", type=click.Path())
@click.argument("extra", nargs=-1, type=click.UNPROCESSED)
@click.option("--strict", is_flag=True,
              help="Refuse when something cannot be restored (commit, packages, model, host).")
@click.option("--allow-missing-secrets", is_flag=True,
              help="Launch without a secret whose value is not here (its variable is unset).")
@click.option("--label", default=None, help="The replay's label (default: replay-<label>).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Where to write the replay's snapshot.")
@click.option("--dir", "out_dir", envvar="RUNSNAP_DIR", type=click.Path(file_okay=False),
              default=None, show_envvar=True,
              help="Folder for the replay's snapshot, and of the snapshots named @N, @LABEL.")
@click.option("-y", "--yes", is_flag=True,
              help="Run without showing what will run and asking (needed without a terminal "
                   "for a snapshot from another host or user).")
@runsnap_command
def replay(snapshot: str, extra: tuple[str, ...], strict: bool, allow_missing_secrets: bool,
           label: str | None, output: str | None, out_dir: str | None, yes: bool) -> None:
    """Launch again what SNAPSHOT recorded, captured like `runsnap capture`.

    SNAPSHOT is a file, @1 (the newest in --dir), @2, ... or @LABEL.

    Same argv (EXTRA arguments after `--` are appended), working directory and environment:
    variables absent from the snapshot are removed, and a secret is taken from this
    environment when its fingerprint matches. Before launching, says what it cannot restore
    (another commit or dirty state, other packages, another model, another host or GPU).
    A snapshot from another host or user, or any snapshot when stdin is a terminal, is shown
    (argv, working directory, variables that run code at start-up) and asked about first;
    without a terminal it needs --yes. Exits with the command's status.
    """
    from runsnap.diffing.result import describe_change
    from runsnap.experiments.replaying import prepare
    from runsnap.experiments.replaying import replay as do_replay
    from runsnap.views.names import load

    snap = load(snapshot, out_dir)
    from runsnap.experiments.review import check_launchable

    check_launchable(snap)
    plan = prepare(snap, extra, allow_missing_secrets=allow_missing_secrets, strict=strict)
    _review([snap], [(plan.spec.argv, plan.spec.cwd, plan.spec.env)], yes)
    for where in plan.restored.taken:
        _say(f"{where}: secret taken from this environment (its fingerprint matches)")
    for where in plan.restored.missing:
        _say(f"{where}: secret not restored ({where.split(': ', 1)[-1]}), launching without it")
    if plan.cannot:
        _say(f"cannot restore {len(plan.cannot)} difference"
             f"{'s' if len(plan.cannot) != 1 else ''} with now:")
        for d in plan.cannot[:12]:
            _say(f"  {d.where} {describe_change(d)}")
        if len(plan.cannot) > 12:
            _say(f"  ... and {len(plan.cannot) - 12} more (runsnap diff {snapshot})")

    def announce(s: Any) -> None:
        _say(f"snapshot {shown(s.path_text)}")

    record = do_replay(plan, label=label, output=output, out_dir=out_dir, on_saved=announce)
    if record.result.error:
        _say(record.result.error)
    sys.exit(int(record.exit_status))


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("good", type=click.Path())
@click.argument("bad", type=click.Path())
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="S", help="A server: still running (or ready) after S seconds is good, "
                                "an earlier exit is bad.")
@click.option("--ready-line", metavar="REGEX", default=None,
              help="With --timeout: good once a line of output matches REGEX.")
@click.option("--ready-url", metavar="URL", default=None,
              help="With --timeout: good once URL answers.")
@click.option("--test", "test", metavar="CMD", default=None,
              help="A shell command whose exit status decides: 0 good, 125 cannot tell, "
                   "else bad.")
@click.option("--metric", "metric", metavar="NAME", default=None,
              help="When GOOD and BAD end alike: the metric whose value decides (default: the "
                   "first the diff finds beyond noise, else wall time, else peak memory).")
@click.option("--max-trials", type=click.IntRange(min=1), default=None,
              help="Stop after this many trials, with the best answer so far.")
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
@click.option("--allow-missing-secrets", is_flag=True,
              help="Launch without GOOD's secrets that are not in this environment.")
@click.option("--kill-after", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="Seconds a stopped trial gets between SIGTERM and SIGKILL.")
@click.option("--format", "fmt", type=click.Choice(("text", "markdown", "json")),
              default="text", show_default=True,
              help="text for people, markdown for an issue, json for programs (one object).")
@click.option("--dir", "out_dir", envvar="RUNSNAP_DIR", type=click.Path(file_okay=False),
              default=".runsnap", show_envvar=True,
              help="Trials are kept in DIR/bisect-<id>/; @N, @LABEL name DIR's snapshots.")
@click.option("-y", "--yes", is_flag=True,
              help="Run the trials without showing what will run and asking (needed without a "
                   "terminal for snapshots from another host or user).")
@click.option("-q", "--quiet", is_flag=True,
              help="No progress (on a terminal a status line, else one line a trial).")
@runsnap_command
def bisect(good: str, bad: str, timeout: float | None, ready_line: str | None,
           ready_url: str | None, test: str | None, metric: str | None,
           max_trials: int | None, jobs: int,
           recheck: int, dry_run: bool, force: bool, include_hidden: bool, allow_missing_secrets: bool,
           kill_after: float, fmt: str, out_dir: str, yes: bool, quiet: bool) -> None:
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
    import signal

    from runsnap.base.terminal import width
    from runsnap.experiments.bisecting import Options
    from runsnap.experiments.bisecting import bisect as do_bisect
    from runsnap.experiments.trials import Criteria
    from runsnap.views.names import load

    def stop(_sig: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)  # a scheduler's stop: end the running trial cleanly
    criteria = Criteria(timeout=timeout, ready_line=ready_line, ready_url=ready_url, test=test,
                        kill_grace=kill_after, metric=metric)
    from runsnap.cli.progress import wiring

    snaps = [load(good, out_dir), load(bad, out_dir)]
    if not dry_run:
        _review(snaps, [_recorded(s) for s in snaps], yes)
    progress, on_trial, status = wiring(quiet, _progress)
    options = Options(criteria=criteria, max_trials=max_trials, jobs=jobs, recheck=recheck,
                      dry_run=dry_run,
                      force=force, include_hidden=include_hidden,
                      allow_missing_secrets=allow_missing_secrets, out_dir=out_dir,
                      progress=progress, on_trial=on_trial)
    try:
        result = do_bisect(snaps[0], snaps[1], options)
    finally:
        if status is not None:
            status.close()
    click.echo(render(result, fmt, width=width()), nl=False)
    sys.exit(result.exit_status)
