"""The launching half of ``runsnap why``: ``--prove`` (two launches) and the bisection that
decides an undecided verdict, or a proof that failed. Imported only when something is
launched, so a verdict the evidence settles costs what ``runsnap diff`` costs."""

from __future__ import annotations

import os
import re
import shlex
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from runsnap.base.paths import shown
from runsnap.diffing.loaded import exact_metrics
from runsnap.errors import UsageError
from runsnap.experiments.applying import Change, apply
from runsnap.experiments.bisecting import Options, bisect, new_folder, prepare
from runsnap.experiments.caches import cache_note, used_caches
from runsnap.experiments.determinism import steady_metrics
from runsnap.experiments.gittrees import searched
from runsnap.experiments.judging import OutcomeJudge
from runsnap.experiments.narrowing import venv_packages
from runsnap.experiments.replaying import restore, secret_from
from runsnap.experiments.trials import (
    BAD,
    GOOD,
    Criteria,
    Judging,
    env_keys,
    run_judged,
    tracker_notes,
    untracked,
)
from runsnap.experiments.verdicts import Proof, WhyResult, WhySettings, evidence
from runsnap.experiments.yourself import experiment_line

if TYPE_CHECKING:
    from runsnap.diffing import Report
    from runsnap.snapshot import Snapshot

__all__ = ["bisected", "options_of", "proven", "steady_metrics", "warned_only", "warnings_only"]


def options_of(given: Options | WhySettings | None) -> Options:
    """Bisect's options from ``why``'s: as given, or made from its settings."""
    if isinstance(given, Options):
        return given
    s = given or WhySettings()
    return Options(criteria=Criteria(test=s.test, timeout=s.timeout, metric=s.metric,
                                     metric_tolerance=s.metric_tolerance),
                   max_trials=s.max_trials, allow_missing_secrets=s.allow_missing_secrets,
                   progress=s.progress, on_trial=s.on_trial, first=s.first)


def warnings_only(good: Snapshot, bad: Snapshot, options: Options) -> bool:
    """Whether GOOD and BAD both ended well (exit 0, no signal) and nothing a trial is judged
    by tells them apart but the warnings one of them printed: no metric, wall time or peak
    memory beyond its noise, no ``--test`` or ``--timeout`` saying what bad means."""
    c = options.criteria
    if c.test or c.timeout is not None:
        return False
    ends = [s.records.outcome for s in (good, bad)]
    if any(o.exit_status != 0 or o.signal for o in ends):
        return False
    try:
        judge = OutcomeJudge(ends[0], ends[1], c.metric, c.metric_tolerance,
                             exact_metrics(good, bad))
    except UsageError:  # alike in every way: the bisection says so itself
        return False
    return judge.measure is None and not judge.by_exit


def warned_only(good: Snapshot, bad: Snapshot, base: dict[str, Any], t0: float) -> WhyResult:
    """Both ran well and differ only in a warning: no failure to explain, so nothing is
    launched; the bisection that finds what makes the warning is the experiment offered."""
    names = [shlex.quote(shown(s.path_text or "")) for s in (good, bad)]
    return WhyResult("none", "both runs ended well, alike in everything a launch is judged by "
                     "but the warnings one of them printed: no failure to explain", **base,
                     elapsed=time.monotonic() - t0,
                     experiment=(f"runsnap bisect {' '.join(names)}  # what makes the warning",))


def bisected(good: Snapshot, bad: Snapshot, report: Report, base: dict[str, Any],
              options: Options, t0: float, before: str = "", launched: int = 0) -> WhyResult:
    """``runsnap bisect`` over the diff's candidates first (those ``options.first`` names
    ahead of them: a job's own diff, where ``good`` and ``bad`` are its relaunches), then the
    rest; ``before``: what was tried first (a proof that failed) and ``launched`` its
    launches."""
    first = (*options.first, *(tuple(d.path) for d in report.candidates))
    answer = bisect(good, bad, options.replace(first=first, force=True))
    how = (f"experiment: runsnap bisect, {len(answer.runs)} launches in {answer.elapsed:.1f}s"
           + (f", re-checked {answer.rechecks} times" if answer.rechecks else ""))
    cannot = tuple(f"{s.where}: {s.why}" for s in answer.plan.skipped if s.blocking)
    if answer.plan.program is not None:
        cannot = (f"{answer.plan.program.where}: GOOD and BAD run different programs", *cannot)
    experiment = () if answer.cause else _first_line(
        [s for s in answer.plan.skipped if s.blocking], good, bad)
    return WhyResult(answer.status, answer.message, **base, cause=answer.cause,
                     how=before + (how if answer.runs else ""),
                     launches=launched + len(answer.runs), elapsed=time.monotonic() - t0,
                     bisect=answer, cannot=cannot, experiment=experiment)


def _first_line(causes: Sequence[Any], good: Snapshot, bad: Snapshot) -> tuple[str, ...]:
    """The experiment a person runs for the highest-ranked of ``causes`` that has one."""
    for cause in causes:
        line = experiment_line(cause, good, bad)
        if line:
            return (line,)
    return ()


def proven(good: Snapshot, bad: Snapshot, report: Report, base: dict[str, Any],
            options: Options, before_launch: Any, t0: float) -> WhyResult:
    """The evidence names the cause: prove it in two launches (``--prove``)."""
    top = report.candidates[0]
    how = evidence(top)
    named = f"most likely cause, from the evidence: {top.where}"
    try:
        the_plan, spec, (judge, secret) = prepare(good, bad, options.replace(force=True))
    except UsageError as exc:  # no launch can be judged (both ended alike in every way)
        return WhyResult("confident", named, **base, cause=(top,), how=how,
                         elapsed=time.monotonic() - t0,
                         cannot=(f"{top.where}: cannot be proven by launching ({exc})",))
    changes, via = _changes_for(top, the_plan)
    if not changes:
        return WhyResult("confident", named, **base, cause=(top,),
                         how=how, elapsed=time.monotonic() - t0,
                         cannot=(f"{top.where}: cannot be applied to prove it ({via})",),
                         experiment=_first_line([top], good, bad))
    if via:
        how = f"{how}; {top.where} {via}"
    if before_launch is not None:
        before_launch([good, bad])
    proof = _prove(good, bad, changes, spec, judge, secret, options)
    if not proof.holds:
        # the evidence was wrong, or not enough: the experiment decides, the named one first
        tried = (f"the evidence named {top.where}, which {proof.launches} launches did not "
                 f"confirm (GOOD with it applied: {proof.applied}; BAD with it reverted: "
                 f"{proof.reverted}); ")
        found = bisected(good, bad, report, base, options, t0, tried, proof.launches)
        return found.replace(proof=proof)
    how = f"{how}; proven by experiment: {proof.launches} launches in {proof.elapsed:.1f}s"
    message = f"cause proven: {top.where} ({proof.launches} launches, {proof.elapsed:.1f}s)"
    launches = proof.launches
    narrowed = venv_packages(top, good, bad) if via else ()
    if narrowed:  # another environment: which of its packages the evidence names did it
        inner = _prove(good, bad, narrowed, spec, judge, secret, options)
        launches += inner.launches
        names = ", ".join(c.where for c in narrowed)
        if inner.holds:
            how += (f"; narrowed to {names}: the other environment's copy alone, first on "
                    f"PYTHONPATH, {inner.launches} launches in {inner.elapsed:.1f}s")
            message = (f"cause proven: {names}, in {top.where} ({launches} launches, "
                       f"{proof.elapsed + inner.elapsed:.1f}s)")
            changes, proof = narrowed, inner
        else:
            how += (f"; {names} alone did not make it ({inner.launches} launches: GOOD with "
                    f"it: {inner.applied}; BAD without: {inner.reverted})")
    return WhyResult("proven", message, **base, cause=changes, how=how, launches=launches,
                     elapsed=time.monotonic() - t0, proof=proof)


def _changes_for(top: Any, the_plan: Any) -> tuple[tuple[Change, ...], str]:
    """The changes that apply ``top``: its own, those of the variable or interpreter it follows
    (another venv's packages follow ``PATH``, or the interpreter named by path), or the
    uncommitted edit a model's file is; else none, and why not."""
    def under(path: Sequence[Any]) -> tuple[Change, ...]:
        return tuple(c for c in the_plan.changes if tuple(c.path[: len(path)]) == tuple(path))

    own = under(top.path)
    if own:
        return own, ""
    why_not = next((s.why for s in the_plan.skipped if tuple(s.path) == tuple(top.path)),
                   "it is not part of the launch")
    followed = re.match(r"follows (env [A-Za-z_][A-Za-z0-9_]*|command program|packages \S+)",
                        why_not)
    if followed:
        applied = under(tuple(followed[1].split()))
        if applied:
            return applied, f"follows {followed[1]}: proven by applying it"
    edit = re.match(r"follows (git .+) \(applied with it\)$", why_not)
    if edit:  # a model's file that is an uncommitted edit in a git tree
        applied = tuple(c for c in the_plan.changes if c.where == edit[1])
        if applied:
            return applied, f"is the edit {edit[1]}: proven by applying it"
    return (), why_not


def _prove(good: Snapshot, bad: Snapshot, changes: Sequence[Change], spec: Any, judge: Any,
           secret: Any, options: Options) -> Proof:
    """GOOD's launch with ``changes`` applied (must go bad), then BAD's with them reverted
    (must go good), captured in full under a trials' folder."""
    t0 = time.monotonic()
    folder = new_folder(options.out_dir)
    stop = threading.Event()
    models, trees = searched(changes, good, bad)
    back = tuple(c.replace(a=c.b, b=c.a, path=_reverse(c.path)) for c in changes)
    restored = restore(bad).spec

    def good_secret(name: str, stored: str) -> str | None:
        return secret_from(good, name, stored)

    try:  # a package's copy gone since the plan, a model folder removed: one line, exit 2
        applied = apply(spec, changes, good=good, bad=bad, workdir=os.path.join(folder, "m1"),
                        secret=secret, models=models, trees=trees)
        reverted = apply(restored, back, good=bad, bad=good, workdir=os.path.join(folder, "m2"),
                         secret=good_secret, models=models, trees=trees)
    except (OSError, ValueError, KeyError) as exc:
        raise UsageError(f"cannot apply {', '.join(c.where for c in changes)}: {exc}") from None
    say = options.progress or (lambda _line: None)
    keep = env_keys(changes)
    caches = used_caches(good, bad, keep)  # an empty one each launch
    for note in (*tracker_notes(keep), *cache_note(caches)):
        say(note)
    out = []
    launches = 0
    for name, trial_spec, want in (("trial-01", applied, BAD), ("trial-02", reverted, GOOD)):
        say(f"{name}: {'GOOD with the cause applied' if want == BAD else 'BAD with it reverted'}"
            " ...")
        trial_spec = trial_spec.replace(env={**trial_spec.env, **untracked(folder, keep)})
        # launched once more when it ends like neither run (a launch that fails at random)
        for got in run_judged(trial_spec, name=name, folder=folder,
                              judging=Judging(options.criteria, judge, stop),
                              label=f"why {name}", caches=caches):
            launches += 1
            say(f"{name}: {got.verdict} in {got.elapsed:.1f}s: {got.why}")
        out.append((got.verdict == want, f"{got.verdict}: {got.why}"))
    return Proof(out[0][1], out[1][1], out[0][0] and out[1][0], time.monotonic() - t0,
                 launches)


def _reverse(path: tuple[Any, ...]) -> tuple[Any, ...]:
    """A list entry's locator reversed: an entry added becomes one removed."""
    if path[:1] == ("env",) and len(path) > 3 and path[2] in ("+", "-"):
        return (*path[:2], "-" if path[2] == "+" else "+", *path[3:])
    return path
