"""``runsnap why JOB/``: a job's folder (one snapshot a rank, as its launcher's ranks each ran
``runsnap capture -o JOB/{rank}.toml``) against the job that went well, rank against rank.

The verdict is the diff's, job against job (:func:`runsnap.views.compare.compare_jobs_in`): the
pair of the rank that failed first (:func:`runsnap.views.jobs.shown_rank`), the ranks' own
differences noted (and shown: ``notes``). A job's ranks are no launch of their own (its
launcher started them, with the rendezvous it made): a one-node torchrun or Open MPI job is
relaunched whole, through its launcher (:mod:`runsnap.commands.jobrelaunch`), to prove the
cause or, when the job's diff is undecided, to settle it (two launches of the relaunch's named
cause, else bisect) as for any launch; another job (several nodes, MPICH, srun) is not, and
where a launch would settle it, ``why`` says the experiment as one line (the launcher's words
and the ranks' program, with the cause put back: :mod:`runsnap.experiments.yourself`).

GOOD is ``--against JOB/``, or found: the newest other folder beside BAD's (``runs/job-7/``
beside ``runs/job-8/``) whose ranks were captured before BAD's, run the same program and all
ended well."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from runsnap.commands.jobrelaunch import as_launch, shown_rank
from runsnap.diffing import expand
from runsnap.diffing.bulkload import load_many
from runsnap.diffing.result import SnapInfo
from runsnap.diffing.rules import load_user_rules
from runsnap.errors import SnapshotError, UsageError
from runsnap.experiments.explaining import launch_identity
from runsnap.experiments.explaining import why as explain
from runsnap.experiments.moved import moved_metrics
from runsnap.experiments.verdicts import WhyResult, WhySettings, evidence
from runsnap.experiments.yourself import experiment_line
from runsnap.snapshot import Snapshot
from runsnap.views.compare import compare_jobs_in
from runsnap.views.names import resolve

__all__ = ["is_job_folder", "newest_job", "why_job"]

#: Candidates of an undecided verdict given an experiment line each.
MAX_LINES = 3


def is_job_folder(ref: str | None, folder: str) -> bool:
    """Whether ``ref`` names a folder of more than one snapshot (a job's ranks)."""
    if not ref:
        return False
    path = resolve(ref, folder)
    return os.path.isdir(path) and len(expand([path])) > 1


def _ranks(path: str) -> list[Snapshot]:
    return load_many(expand([path]))


def _captured(snaps: Sequence[Snapshot]) -> str:
    return max((str(s.records.meta.captured_at or "") for s in snaps), default="")


def _ended_well(snaps: Sequence[Snapshot]) -> bool:
    return all(s.records.outcome.exit_status == 0 and not s.records.outcome.signal for s in snaps)


def _jobs_in(folder: str) -> list[tuple[str, str]]:
    """(capture time, path) of each folder in ``folder`` that holds one job's ranks (more than
    one snapshot, each with its own rank id)."""
    out = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        if not entry.is_dir() or entry.name.startswith((".", "bisect-")):
            continue
        try:
            ranks = _ranks(entry.path)
        except (SnapshotError, OSError):
            continue
        ids = [SnapInfo.of(s).rank for s in ranks]
        if len(ranks) > 1 and None not in ids and len(set(ids)) == len(ids):
            out.append((_captured(ranks), entry.path))
    return out


def newest_job(folder: str, newest_file: str | None) -> str | None:
    """With no BAD named: the newest job folder in ``folder`` (``.runsnap/job-8/`` of a
    launcher's ranks captured there), when it was captured after ``newest_file`` (the newest
    single snapshot of ``folder``, if any); else None."""
    jobs = _jobs_in(folder)
    if not jobs:
        return None
    when, path = max(jobs)
    if newest_file is not None:
        try:
            single = str(load_many([newest_file])[0].records.meta.captured_at or "")
        except (SnapshotError, OSError):
            single = ""
        if single >= when:
            return None
    return path


def find_reference_job(bad: str, bad_ranks: Sequence[Snapshot]) -> tuple[str, str]:
    """The newest folder beside ``bad`` holding an earlier job of the same program whose ranks
    all ended well, and how it was found; UsageError when there is none."""
    parent = os.path.dirname(os.path.abspath(bad).rstrip("/"))
    when, same = _captured(bad_ranks), launch_identity(bad_ranks[0])
    found: list[tuple[str, str]] = []
    for entry in os.scandir(parent):
        if (not entry.is_dir() or entry.name.startswith(".")
                or os.path.samefile(entry.path, bad)):
            continue
        try:
            ranks = _ranks(entry.path)
        except (SnapshotError, OSError):
            continue
        if len(ranks) < 2 or launch_identity(ranks[0]) != same or not _ended_well(ranks):
            continue
        captured = _captured(ranks)
        if not when or captured < when:
            found.append((captured, entry.path))
    if not found:
        raise UsageError(f"no earlier job of the same launch ({' '.join(same) or 'no command'}) "
                         f"ended well beside {bad}: name one with --against JOB/")
    path = max(found)[1]
    return path, f"the newest earlier job beside it of the same launch ({' '.join(same)}) " \
                 f"whose ranks all exited 0"


def why_job(bad: str, against: str | None, folder: str, settings: WhySettings | None = None,
            prove: bool = False, before_launch: Any = None) -> WhyResult:
    """The verdict of job ``bad`` against job ``against`` (or the one found): a one-node
    torchrun or Open MPI job is relaunched whole where the evidence does not settle it (or
    ``prove``), another is said as an experiment (see the module's text)."""
    t0 = time.monotonic()
    bad_path = resolve(bad, folder)
    bad_ranks = _ranks(bad_path)
    if against is not None:
        good_path, reference = resolve(against, folder), "--against"
    else:
        good_path, reference = find_reference_job(bad_path, bad_ranks)
    given = settings.metric_tolerance if settings is not None else ()
    rules = load_user_rules(os.getcwd()).with_metric_tolerance(given)
    report = compare_jobs_in([good_path, bad_path], rules, static=True)
    if report is None:
        raise UsageError(f"{bad_path} and {good_path}: not two jobs whose ranks pair by id "
                         "(each folder one snapshot a rank, captured under its launcher)")
    base: dict[str, Any] = {"bad": bad_path, "good": good_path, "reference": reference,
                            "report": report, "notes": report.notes}
    good_ranks = _ranks(good_path)
    good_one, bad_one = shown_rank(good_ranks, bad_ranks)
    launches = as_launch(good_one, good_ranks), as_launch(bad_one, bad_ranks)
    relaunched = launches[0] is not None and launches[1] is not None
    # a metric that moved where the jobs ended alike: noise only if GOOD's job moves it by
    # itself, which the relaunch tells (as why does for one run: experiments/determinism.py)
    if not report.candidates and not (relaunched and moved_metrics(good_one, bad_one)):
        return WhyResult("none", report.verdict(), **base, elapsed=time.monotonic() - t0)
    confident = report.confidence == "confident"
    if relaunched and (prove or not confident):
        # the job's diff undecided: the launch settles it, even where the relaunch's own diff
        # (the launcher's values turned back into its options) would name a cause unlaunched;
        # a bisection searches the job diff's candidates first: the relaunch's own diff has
        # lost what the job's ranks said (another rank's evidence, the launcher's variables)
        searched = (settings or WhySettings()).replace(
            first=tuple(tuple(d.path) for d in report.candidates))
        result = explain(launches[1], against=launches[0], folder=folder,
                         prove=prove or not confident, options=searched,
                         before_launch=before_launch)
        world = bad_one.records.meta.launcher.world_size
        via = "torchrun --standalone" if bad_one.records.meta.launcher.name == "torchrun" \
            else "mpirun"
        how = f"{result.how} (the job relaunched: {via}, {world} ranks)" \
            if result.launches else result.how
        return result.replace(**base, how=how, elapsed=time.monotonic() - t0)
    launcher = str(bad_one.records.meta.launcher.name or "its launcher")
    cannot = () if launches[1] is not None else (
        f"a job of {len(bad_ranks)} ranks started by {launcher}: runsnap relaunches one-node "
        "torchrun and Open MPI jobs only",)
    if confident:
        top = report.candidates[0]
        line = experiment_line(top, good_one, bad_one)
        return WhyResult("confident", f"most likely cause, from the evidence: {top.where}",
                         **base, cause=(top,), how=evidence(top), elapsed=time.monotonic() - t0,
                         cannot=tuple(f"{top.where}: cannot be proven by launching ({c})"
                                      for c in cannot), experiment=(line,) if line else ())
    lines = [experiment_line(c, good_one, bad_one) for c in report.candidates[:MAX_LINES]]
    return WhyResult("undecided", f"undecided between {len(report.candidates)} candidates, and "
                     "this job is not relaunched: the experiments below decide",
                     **base, elapsed=time.monotonic() - t0, cannot=cannot,
                     experiment=tuple(x for x in lines if x))
