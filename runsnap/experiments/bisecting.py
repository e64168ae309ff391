"""Find the minimal set of differences that turns GOOD's launch into BAD's: ``runsnap bisect``.

    result = bisect(load("good.toml"), load("bad.toml"), Options(timeout=60))
    result.cause            # the Change records that together make the launch go bad
    result.exit_status      # 0 cause found, 1 none reproduces, 130 interrupted

The journey: diff GOOD and BAD (ranked) -> :func:`runsnap.experiments.applying.plan` (what can be applied,
what is skipped and why) -> trials, each GOOD's launch with a subset applied
(:func:`runsnap.experiments.applying.apply`) and captured under ``.runsnap/bisect-<id>/``
(:func:`runsnap.experiments.trials.run_trial`) -> delta debugging (Zeller's ddmin) over the changes in the
diff's ranked order -> the answer re-checked.

The search, trial by trial: every change applied (it must reproduce BAD, else the cause is among
what was skipped); the top-ranked change alone when the ranking singles it out; the changes
searched first (``first``: ``why``'s diff candidates) together, when they are fewer than all,
and ddmin within them when they go bad; ddmin, which finds a cause made of several changes
that act only together; then the answer is run again (bad) and GOOD's launch with nothing
applied (good). A launch that does not give the same verdict twice is reported as not
reproducible, never as a cause. A single cause among n
changes takes about 2*log2(n) trials.
"""

from __future__ import annotations

import concurrent.futures
import datetime as _dt
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from runsnap.base.options import DEFAULT_DIR
from runsnap.base.records import FrozenRecord, field
from runsnap.diffing import compare
from runsnap.diffing.loaded import exact_metrics
from runsnap.errors import UsageError
from runsnap.experiments import trials, varying
from runsnap.experiments.applying import Change, Plan, apply, plan
from runsnap.experiments.caches import cache_note, used_caches
from runsnap.experiments.gittrees import searched
from runsnap.experiments.progress import TrialProgress, expected_trials
from runsnap.experiments.refusals import code_skipped, not_good_here, refusals, unclear
from runsnap.experiments.replaying import restore, secret_from, unknown_secrets
from runsnap.experiments.trials import BAD, STOPPED, UNCLEAR, Criteria, OutcomeJudge, Verdict, run_judged
from runsnap.snapshot.store import bisect_folder_name, claim_bisect_folder, release_bisect_folder

if TYPE_CHECKING:
    from runsnap.launch import LaunchSpec
    from runsnap.snapshot import Snapshot

__all__ = ["BisectResult", "Options", "Run", "TrialProgress", "bisect", "first_ordered",
           "new_folder", "prepare"]


class Options(FrozenRecord):
    """How to bisect (the command's options)."""

    criteria: Criteria = field(default_factory=Criteria)
    max_trials: int | None = None
    jobs: int = 1
    dry_run: bool = False
    force: bool = False
    """Go on when the programs differ or unapplicable differences exist (they stay as GOOD's)."""
    include_hidden: bool = False
    recheck: int = 2
    """How many times the answer, then GOOD's launch, are run again before a cause is claimed."""
    full_trials: bool = False
    """Capture every trial in full. By default the search trials judged by their outcome run
    with only what the verdict needs (:mod:`runsnap.experiments.quicktrial`, no snapshot),
    and the re-checks, on which the answer rests, are captured in full."""
    allow_missing_secrets: bool = False
    out_dir: str = DEFAULT_DIR
    progress: Callable[[str], None] | None = None
    on_trial: Callable[[TrialProgress], None] | None = None
    """Called as each trial starts and ends (a terminal's status line: trial k of about N,
    elapsed time, an estimate of what is left)."""
    first: tuple[tuple[Any, ...], ...] = ()
    """Locators of the differences to search first (``runsnap why``: the diff's candidates),
    the rest after them in ranked order."""


class Run(FrozenRecord):
    """One trial: what it applied, its verdict and its snapshot."""

    trial: int
    applied: tuple[Change, ...]
    verdict: Verdict
    why: str
    snapshot: str | None
    elapsed: float

    def to_dict(self) -> dict[str, Any]:
        return {"trial": self.trial, "applied": [list(c.path) for c in self.applied],
                "verdict": self.verdict, "why": self.why, "snapshot": self.snapshot,
                "elapsed_s": round(self.elapsed, 3)}


#: ``status`` -> exit status of ``runsnap bisect``.
EXIT = {"found": 0, "dry-run": 0, "none": 1, "not-reproducible": 1, "max-trials": 1,
        "interrupted": 130}


class BisectResult(FrozenRecord):
    """The answer of a bisection."""

    status: str
    """``found``, ``none`` (applying everything does not reproduce BAD), ``not-reproducible``
    (the same trial went both ways), ``max-trials``, ``interrupted`` or ``dry-run``."""
    message: str
    cause: tuple[Change, ...]
    best: tuple[Change, ...]
    """The smallest set seen to go bad so far (the cause once re-checked)."""
    plan: Plan
    runs: tuple[Run, ...]
    folder: str | None
    elapsed: float
    first_trials: tuple[str, ...] = ()
    """``--dry-run``: the trials it would start with."""
    rechecks: int = 0
    """How many times the answer and GOOD's launch were each run again."""

    @property
    def exit_status(self) -> int:
        return EXIT[self.status]

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status, "message": self.message,
            "cause": [c.to_dict() for c in self.cause],
            "best_so_far": [c.to_dict() for c in self.best],
            "trials": len(self.runs),
            "changes": [c.to_dict() for c in self.plan.changes],
            "skipped": [s.to_dict() for s in self.plan.skipped],
            "runs": [r.to_dict() for r in self.runs],
            "folder": self.folder, "elapsed_s": round(self.elapsed, 3),
            "first_trials": list(self.first_trials),
        }


class _Halt(Exception):
    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class _Search:
    """The trials of one bisection, memoised by the set of changes applied."""

    def __init__(self, good: Snapshot, bad: Snapshot, the_plan: Plan, base: LaunchSpec,
                 options: Options, judge: OutcomeJudge | None, folder: str,
                 secret: Callable[[str, str], str | None]) -> None:
        self.good, self.bad, self.plan, self.base = good, bad, the_plan, base
        self.options, self.judge, self.folder, self.secret = options, judge, folder, secret
        self.changes = the_plan.changes
        self.keep = trials.env_keys(self.changes)  # tracker variables under test stay unmasked
        # read through copies, every trial
        self.models, self.trees = searched(self.changes, self.good, self.bad)
        self.caches = used_caches(good, bad, self.keep)  # an empty one each launch
        self.runs: list[Run] = []  # one a launch: a trial launched again has two
        self.numbered = 0
        self.memo: dict[frozenset[int], Verdict] = {}
        self.best: frozenset[int] = frozenset(range(len(self.changes)))
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.t0 = time.monotonic()
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, options.jobs))
        self.runs_done: list[Run] = []
        self.expected = expected_trials(len(self.changes), baseline_first(the_plan), options.recheck)

    def say(self, line: str) -> None:
        if self.options.progress is not None:
            self.options.progress(line)

    def tell(self, number: int, applied: int, verdict: str = "") -> None:
        """A :class:`TrialProgress` to ``on_trial``."""
        if self.options.on_trial is None:
            return
        with self.lock:
            ended = [r.elapsed for r in self.runs_done]
        self.options.on_trial(TrialProgress(
            number, max(self.expected, number + (0 if verdict else 1)),
            time.monotonic() - self.t0, sum(ended) / len(ended) if ended else 0.0, applied,
            len(self.changes), verdict))

    def _one(self, number: int, subset: frozenset[int], full: bool = True) -> list[Run]:
        """The trial's launches (two when the first ended like neither run): the last decides."""
        applied = tuple(self.changes[i] for i in sorted(subset))
        name = f"trial-{number:02d}"
        self.say(f"trial {number}: {len(applied)} of {len(self.changes)} applied ...")
        self.tell(number, len(applied))
        try:
            spec = apply(self.base, applied, good=self.good, bad=self.bad,
                         workdir=os.path.join(self.folder, f"{name}-models"), secret=self.secret,
                         models=self.models, trees=self.trees)
        except (OSError, ValueError, KeyError) as exc:
            raise UsageError(f"{name}: cannot apply the changes: {exc}") from None
        spec = spec.replace(env={**spec.env, **trials.untracked(self.folder, self.keep)})
        outs = run_judged(spec, name=name, folder=self.folder, judging=trials.Judging(
                              self.options.criteria, self.judge, self.stop), label=f"bisect {name}",
                          quick=not (full or self.options.full_trials), caches=self.caches)
        for k, out in enumerate(outs):  # the timing before the reason: a cut line keeps it
            self.say(f"trial {number}{' again' if k else ''}: {len(applied)} of "
                     f"{len(self.changes)} applied: {out.verdict} in {out.elapsed:.1f}s "
                     f"({time.monotonic() - self.t0:.1f}s elapsed): {out.why}")
        runs = [Run(number, applied, o.verdict, o.why, o.snapshot, o.elapsed) for o in outs]
        with self.lock:
            self.runs_done += runs
        self.tell(number, len(applied), str(outs[-1].verdict))
        return runs

    def verdicts(self, subsets: Sequence[frozenset[int]], fresh: bool = False) -> list[Verdict]:
        """The verdict of each subset, running those not known yet (all of them when
        ``fresh``), ``jobs`` at a time."""
        todo = [s for s in dict.fromkeys(subsets) if fresh or s not in self.memo]
        limit = self.options.max_trials
        if limit is not None and len(self.runs) + len(todo) > limit:
            todo = todo[: max(0, limit - len(self.runs))]
        # the re-checks (fresh) are what the answer rests on: captured in full
        futures = {self.pool.submit(self._one, self.numbered + k + 1, s, fresh): s
                   for k, s in enumerate(todo)}
        self.numbered += len(todo)
        interrupted = False
        pending = set(futures)
        while pending:
            try:
                _done, pending = concurrent.futures.wait(pending, timeout=0.2)
            except KeyboardInterrupt:  # noqa: PERF203 - Ctrl-C stops the running trials
                interrupted = True
                self.stop.set()
        got: dict[frozenset[int], Verdict] = {}
        for f, s in sorted(futures.items(), key=lambda fs: fs[0].result()[0].trial):
            self.runs += f.result()
            run = self.runs[-1]
            if run.verdict == STOPPED:
                continue
            self.memo[s] = got[s] = run.verdict
            if run.verdict == BAD and len(s) < len(self.best):
                self.best = s
        if interrupted or self.stop.is_set():
            raise _Halt("interrupted", "interrupted: the running trial was stopped")
        out = []
        for s in subsets:
            verdict = got.get(s) if fresh else self.memo.get(s)
            if verdict is None:
                raise _Halt("max-trials", f"stopped after --max-trials {limit} trials")
            out.append(verdict)
        return out

    def first_bad(self, subsets: Sequence[frozenset[int]],
                  bad: Callable[[frozenset[int]], bool] | None = None) -> frozenset[int] | None:
        """The first subset, in order, whose trial goes bad (``jobs`` tried side by side), or
        for which ``bad(subset)`` holds when given."""
        if bad is not None:
            return next((s for s in subsets if bad(s)), None)
        step = max(1, self.options.jobs)
        for i in range(0, len(subsets), step):
            batch = subsets[i: i + step]
            for s, v in zip(batch, self.verdicts(batch), strict=True):
                if v == BAD:
                    return s
        return None

    def ddmin(self, start: Sequence[int],
              bad: Callable[[frozenset[int]], bool] | None = None) -> frozenset[int]:
        """Zeller's ddmin over ``start`` (indices in ranked order): a 1-minimal bad subset
        (bad as :meth:`first_bad` judges)."""
        current = list(start)
        n = 2
        while len(current) >= 2:
            size = len(current)
            bounds = [size * k // n for k in range(n + 1)]
            chunks = [current[bounds[k]: bounds[k + 1]] for k in range(n)]
            chunks = [c for c in chunks if c]
            found = self.first_bad([frozenset(c) for c in chunks], bad)
            if found is not None:
                current, n = [i for i in current if i in found], 2
                continue
            if n > 2:
                rest = [frozenset(current) - frozenset(c) for c in chunks]
                found = self.first_bad(rest, bad)
                if found is not None:
                    current, n = [i for i in current if i in found], max(n - 1, 2)
                    continue
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
        return frozenset(current)


def _launch_value(search: _Search, subset: frozenset[int]) -> float | None:
    """GOOD's launch with ``subset`` applied, captured in full: its judged metric's value."""
    search.verdicts([subset], fresh=True)
    return varying.value(search.judge, search.runs[-1].snapshot)


def _by_variance(search: _Search, within: Sequence[int], metric: str) -> tuple[frozenset[int], str]:
    """The changes among ``within`` that make ``metric`` vary from launch to launch, and the
    evidence (:mod:`runsnap.experiments.varying`); raises :class:`_Halt` where none does."""
    try:
        return varying.search(lambda s: _launch_value(search, s), search.ddmin, within, metric)
    except varying.NotVarying as exc:
        raise _Halt("not-reproducible", f"not reproducible: the same trial went both ways "
                    f"(a flaky launch), and {exc}; no cause is claimed") from None


def _searched(search: _Search, the_plan: Plan, options: Options) -> tuple[frozenset[int], str]:
    """The answer, re-checked, and the evidence beyond the re-checks ("" when none)."""
    every = frozenset(range(len(the_plan.changes)))
    if baseline_first(the_plan):
        [base_v] = search.verdicts([frozenset()])
        if base_v == BAD:
            raise _Halt("none", not_good_here(the_plan, search.numbered))
    metric = varying.judged_metric(search.judge)
    [v] = search.verdicts([every], fresh=metric is not None)
    # judged by a printed metric: launched twice, every change applied, it must give one value
    if metric and varying.value(search.judge, search.runs[-1].snapshot) != _launch_value(
            search, every):
        return _by_variance(search, range(len(every)), metric)
    if v == UNCLEAR:
        raise _Halt("none", unclear(search.runs))
    if v != BAD:
        code = code_skipped(the_plan)
        where = (f"most likely the code, not applied: {', '.join(s.where for s in code[:3])}"
                 if code else "the cause is among what was skipped, or BAD's failure does "
                 "not reproduce here")
        raise _Halt("none", f"applying all {len(every)} changes did not reproduce BAD "
                    f"(trial {search.numbered} went {v}): {where}")
    ch = the_plan.changes
    candidate = None
    if len(ch) > 1 and ch[0].score > ch[1].score:
        candidate = search.first_bad([frozenset({0})])
    lead = sum(1 for c in ch if _leads(c, options.first))  # ordered ahead by prepare
    if candidate is None and 1 < lead < len(ch) and search.first_bad(
            [frozenset(range(lead))]) is not None:  # the diff's candidates hold it
        candidate = search.ddmin(range(lead))
    if candidate is None:
        candidate = search.ddmin(range(len(ch)))
    # Twice each, the answer first: a launch that fails one run in two (or at random) then
    # gives two verdicts for one trial, where alternating checks could be fooled.
    for _ in range(options.recheck):
        [again] = search.verdicts([candidate], fresh=True)
        if again != BAD:
            if metric:
                return _by_variance(search, sorted(candidate), metric)
            raise _Halt("not-reproducible", "not reproducible: the same trial went bad, "
                        f"then {again} (a flaky launch); no cause is claimed")
    for _ in range(options.recheck):
        [base_v] = search.verdicts([frozenset()], fresh=True)
        if base_v == BAD:
            raise _Halt("not-reproducible", "not reproducible: GOOD's own launch, with "
                        "nothing applied, goes bad here; no cause is claimed")
    return candidate, ""


def _leads(c: Change, first: Sequence[Sequence[Any]]) -> bool:
    return any(tuple(c.path[: len(p)]) == tuple(p) for p in first)


def first_ordered(changes: Sequence[Change], first: Sequence[Sequence[Any]]
                  ) -> tuple[Change, ...]:
    """``changes`` with those under a locator of ``first`` ahead, each group in its order."""
    return tuple([c for c in changes if _leads(c, first)]
                 + [c for c in changes if not _leads(c, first)])


def new_folder(out_dir: str) -> str:
    """A new trials' folder ``OUT_DIR/bisect-<time>-<tag>/`` (``OUT_DIR`` git-ignored)."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    if not os.path.isdir(out_dir):
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, ".gitignore"), "w", encoding="utf-8") as fh:
            fh.write("# written by runsnap: nothing here belongs in the repository\n*\n")
    folder = os.path.join(out_dir, bisect_folder_name(stamp, os.urandom(2).hex()))
    os.makedirs(folder)
    claim_bisect_folder(folder)  # gc leaves it alone while this runs
    return os.path.abspath(folder)


def prepare(good: Snapshot, bad: Snapshot, options: Options) -> tuple[Plan, Any, Any]:
    """The plan, GOOD's launch and the judge; raises UsageError when bisect must refuse."""
    report = compare(good, bad, git_log=False)

    def secret(name: str, stored: str) -> str | None:
        return secret_from(bad, name, stored)

    the_plan = plan(good, bad, report.differences, secret=secret,
                    include_hidden=options.include_hidden)
    if options.first:
        the_plan = the_plan.replace(changes=first_ordered(the_plan.changes, options.first))
    restored = restore(good)  # GOOD's secrets BAD ran without are run without, and said
    the_plan, missing = unknown_secrets(the_plan, restored.missing, bad)
    refused = refusals(the_plan)
    if refused and not options.force:
        raise UsageError("; ".join(refused) + ": give --force to bisect the rest with GOOD's "
                         "values for those")
    if missing and not options.allow_missing_secrets:
        raise UsageError("cannot restore GOOD's secrets: " + "; ".join(missing)
                         + " (set them here, or give --allow-missing-secrets)")
    c = options.criteria
    judge = None
    if c.timeout is None and not c.test:
        judge = OutcomeJudge(good.records.outcome, bad.records.outcome, c.metric,
                             c.metric_tolerance, exact_metrics(good, bad))
    return the_plan, restored.spec, (judge, secret)


def baseline_first(the_plan: Plan) -> bool:
    """Whether GOOD's launch, with nothing applied, is tried first: when differences are
    skipped (other than noise), GOOD's launch here may not be GOOD's any more (another
    commit, an uncommitted edit, other packages), and that answers in one trial."""
    return the_plan.program is not None or any(
        not s.why.startswith(("noise", "follows ", "the model's config.json"))
        for s in the_plan.skipped)


def _first_trials(the_plan: Plan) -> tuple[str, ...]:
    ch = the_plan.changes
    lines: list[str] = []
    if baseline_first(the_plan):
        lines.append(f"trial {len(lines) + 1}: nothing applied (GOOD's launch here must go "
                     "good, as differences are skipped)")
    lines.append(f"trial {len(lines) + 1}: all {len(ch)} changes applied (must go bad, as BAD "
                 "did)")
    if len(ch) > 1 and ch[0].score > ch[1].score:
        lines.append(f"trial {len(lines) + 1}: {ch[0].where} alone (ranked first)")
    if len(ch) > 1:
        half = ch[: len(ch) // 2]
        lines.append(f"trial {len(lines) + 1} on: the first {len(half)} in ranked order ("
                     + ", ".join(c.where for c in half[:6]) + (", ..." if len(half) > 6 else "")
                     + "), or else the others; halving down to the cause")
    return tuple(lines)


def bisect(good: Snapshot, bad: Snapshot, options: Options | None = None) -> BisectResult:
    """Search the minimal set of GOOD -> BAD changes that makes GOOD's launch go bad."""
    options = options or Options()
    t0 = time.monotonic()
    the_plan, base, (judge, secret) = prepare(good, bad, options)
    if options.dry_run:
        return BisectResult("dry-run", f"{len(the_plan.changes)} changes to search, "
                            f"{len(the_plan.skipped)} skipped", (), (), the_plan, (), None, 0.0,
                            _first_trials(the_plan))
    if not the_plan.changes:
        return BisectResult("none", "nothing to apply: every difference was skipped", (), (),
                            the_plan, (), None, 0.0)
    folder = new_folder(options.out_dir)
    search = _Search(good, bad, the_plan, base, options, judge, folder, secret)
    for note in (*trials.tracker_notes(search.keep), *cache_note(search.caches)):
        search.say(note)
    status, message, cause = "found", "", frozenset[int]()
    varies = ""  # the answer makes the result vary (runsnap.experiments.varying)
    try:
        cause, varies = _searched(search, the_plan, options)
        n = len(cause)
        message = (f"cause found: {n} change{'s' if n != 1 else ''} "
                   f"{'acting together ' if n > 1 else ''}in {len(search.runs)} trials"
                   + (f": {varies}" if varies else ""))
    except _Halt as halt:
        status, message = halt.status, halt.message
    finally:
        search.pool.shutdown(wait=True)
    best = tuple(the_plan.changes[i] for i in sorted(search.best)) \
        if status in ("max-trials", "interrupted") else ()
    result = BisectResult(status, message, tuple(the_plan.changes[i] for i in sorted(cause)),
                          best, the_plan, tuple(search.runs), folder, time.monotonic() - t0,
                          rechecks=options.recheck if status == "found" and not varies else 0)
    _save(result)
    return result


def _save(result: BisectResult) -> None:
    if result.folder is None:
        return
    try:
        with open(os.path.join(result.folder, "bisect.json"), "w", encoding="utf-8") as fh:
            json.dump(result.to_dict(), fh, indent=2, default=str)
    except OSError:
        pass
    release_bisect_folder(result.folder)
