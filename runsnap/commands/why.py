"""``runsnap why``'s work, free of click: the fast path of ``runsnap why [BAD]`` and the click
command (:mod:`runsnap.cli.why`) both run :func:`run_why`, which returns the command's
:class:`~runsnap.commands.Result`. A confident verdict then costs what ``runsnap diff`` costs
(benchmarks/run.py, case 12)."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from runsnap.base.terminal import fit, neutralise, say, width, wrap
from runsnap.commands import Result
from runsnap.commands.progress import wiring
from runsnap.commands.whyjob import is_job_folder, newest_job, why_job
from runsnap.errors import UsageError
from runsnap.experiments import review
from runsnap.experiments.explaining import newest_first
from runsnap.experiments.explaining import why as explain
from runsnap.experiments.verdicts import WhySettings
from runsnap.render.why import render

__all__ = ["plain_why", "run_why"]


def _say(line: str) -> None:
    say(fit(f"runsnap: {neutralise(line)}", width(sys.stderr)) + "\n")


def _asker(yes: bool) -> Any:
    """Before the first launch: refuse what cannot or must not run; show what will run and
    ask (a terminal), or refuse without ``--yes`` (no terminal)."""
    def ask(snapshots: Any) -> None:
        for snap in snapshots:
            review.check_launchable(snap)
            review.refuse_cwd(str(snap.records.command.cwd or os.getcwd()))
        if yes:
            return
        interactive = sys.stdin.isatty()
        reasons = [*review.must_ask(snapshots, False, interactive)] or ["it launches trials"]
        for reason in reasons:
            _say(reason)
        _say("this will run (GOOD's launch, with BAD's differences applied in turn):")
        for snap in snapshots[:1]:
            cmd, env = snap.records.command, snap.records.env.vars
            for line in review.what_runs([str(a) for a in cmd.argv], str(cmd.cwd or os.getcwd()),
                                         {str(k): str(v) for k, v in env.items()}):
                for part in wrap(line, width(sys.stderr), "      "):
                    say(part + "\n")
        if not interactive:
            raise UsageError("not run: review the launch above, then give --yes to run it")
        say("Run it? [y/N]: ")
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            raise UsageError("not run")

    return ask


def plain_why(args: list[str]) -> str | None | bool:
    """BAD when ``args`` (after ``why``) is at most one snapshot and no option (the fast
    path); False otherwise (click parses it).

    >>> plain_why([]), plain_why(["@1"]), plain_why(["--prove"]), plain_why(["a", "b"])
    (None, '@1', False, False)
    """
    if len(args) > 1 or any(a.startswith("-") for a in args):
        return False
    return args[0] if args else None


def run_why(bad: str | None, out_dir: str, fmt: str = "text", *, against: str | None = None,
            prove: bool = False, settings: WhySettings | None = None, quiet: bool = False,
            yes: bool = False) -> Result:
    """Explain BAD: the verdict to print, and the exit status. ``settings`` judge the launches
    (``--test``, ``--timeout``, ``--metric``, ``--max-trials``, ``--allow-missing-secrets``);
    the progress lines are added here."""
    def stop(_sig: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    progress, on_trial, line = wiring(quiet, _say)
    settings = (settings or WhySettings()).replace(progress=progress, on_trial=on_trial)
    try:
        if bad is None and os.path.isdir(out_dir):  # the newest launch may be a job's ranks
            newest = newest_first(out_dir)
            bad = newest_job(out_dir, newest[0] if newest else None)
        if bad and os.path.isdir(bad) and is_job_folder(bad, out_dir):
            # a job's ranks, folder against folder: relaunched through torchrun, or said
            result = why_job(bad, against, out_dir, settings, prove, _asker(yes))
        else:
            result = explain(bad, against=against, folder=out_dir, prove=prove,
                             options=settings, before_launch=_asker(yes))
    finally:
        if line is not None:
            line.close()
    return Result(render(result, fmt, width() if fmt == "text" else 0), result.exit_status)
