"""From a failed launch to its proven cause in one call: ``runsnap why [BAD]``.

    result = why()                     # BAD: the newest snapshot of .runsnap/
    result = why("@1", against="@good", prove=True)
    result.cause, result.how, result.exit_status

The journey: BAD (the newest snapshot by default) -> the reference, found and not typed: the
newest earlier snapshot of the same launch (same program and entry point; options may differ)
that ended well (:func:`find_reference`), or ``against`` -> the diff, as ``runsnap diff`` makes
it -> confident: the cause with its evidence, and with ``prove`` two launches (GOOD with the
cause applied must go bad, BAD with it reverted must go good); undecided: ``runsnap bisect``
over the diff's candidates first, then the rest -> one verdict: the cause, how it was
established, and the change that restores GOOD.

It depends only on the diff's public result (:attr:`~runsnap.diffing.Report.confidence`,
:attr:`~runsnap.diffing.Report.candidates`), never on how the diff ranks.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from runsnap.base.argv import is_python_name, positionals
from runsnap.base.jsonform import json_form
from runsnap.base.records import FrozenRecord, field
from runsnap.errors import UsageError
from runsnap.snapshot import Snapshot
from runsnap.snapshot import load as load_path

if TYPE_CHECKING:
    from runsnap.diffing import Report
    from runsnap.experiments.applying import Change
    from runsnap.experiments.bisecting import BisectResult, Options

# The launching half (bisecting, trials, replaying) is imported only when something is
# launched: a confident verdict costs what `runsnap diff` costs (benchmarks/run.py, case 12).

__all__ = ["EXIT", "Proof", "WhyResult", "find_reference", "launch_identity", "newest_first",
           "restoring", "why"]

#: ``status`` -> exit status of ``runsnap why``: 0 a cause (proven, found or named by the
#: evidence), 1 none, 130 interrupted.
EXIT = {"proven": 0, "found": 0, "confident": 0, "not-proven": 1, "none": 1, "undecided": 1,
        "not-reproducible": 1, "max-trials": 1, "interrupted": 130}


class Proof(FrozenRecord):
    """The two launches of ``--prove``: GOOD with the cause applied, BAD with it reverted."""

    applied: str
    """GOOD's launch with the cause applied: its verdict (``bad`` proves) and why."""
    reverted: str
    """BAD's launch with the cause reverted: its verdict (``good`` proves) and why."""
    holds: bool
    elapsed: float

    def to_dict(self) -> dict[str, Any]:
        return json_form(self)


class WhyResult(FrozenRecord):
    """The verdict of ``runsnap why``."""

    status: str
    """``proven``, ``found`` (by bisect), ``confident`` (named by the evidence, not launched),
    ``not-proven``, ``none``, ``undecided`` (nothing could be launched), ``not-reproducible``,
    ``max-trials`` or ``interrupted``."""
    message: str
    bad: str
    good: str
    reference: str
    """How GOOD was chosen, in words."""
    report: Report
    cause: tuple[Any, ...] = ()
    """The cause: :class:`~runsnap.experiments.applying.Change` records (or the diff's
    :class:`~runsnap.diffing.Difference` when it cannot be applied)."""
    how: str = ""
    """How it was established: the evidence, or the experiment (launches, seconds)."""
    launches: int = 0
    elapsed: float = 0.0
    bisect: BisectResult | None = None
    proof: Proof | None = None
    cannot: tuple[str, ...] = field(default_factory=tuple)
    """What could not be applied by a launch, each with why."""

    @property
    def exit_status(self) -> int:
        return EXIT.get(self.status, 1)

    @property
    def restore(self) -> tuple[str, ...]:
        """The change that restores GOOD, one line per part of the cause."""
        return tuple(restoring(c) for c in self.cause)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (docs/why.md)."""
        return {
            "status": self.status, "message": self.message, "bad": self.bad, "good": self.good,
            "reference": self.reference, "verdict": self.report.verdict(),
            "confidence": self.report.confidence or None,
            "cause": [{"section": c.section, "key": c.key, "path": list(c.path), "a": c.a,
                       "b": c.b} for c in self.cause],
            "how": self.how, "restore": list(self.restore), "launches": self.launches,
            "elapsed_s": round(self.elapsed, 3), "cannot": list(self.cannot),
            "bisect": self.bisect.to_dict() if self.bisect is not None else None,
            "proof": self.proof.to_dict() if self.proof is not None else None,
        }


def restoring(c: Any) -> str:
    """The change that gives GOOD's value back, in words a person types.

    >>> from runsnap.experiments.applying import Change
    >>> restoring(Change(("env", "NCCL_ALGO"), "env", "NCCL_ALGO", None, "Ring"))
    'unset NCCL_ALGO'
    >>> restoring(Change(("command", "options", "--tp"), "command", "--tp", "4", "8"))
    'give --tp 4'
    """
    path = tuple(c.path)
    if path[:1] == ("env",) and len(path) > 2:
        entry = path[3] if len(path) > 3 else c.key
        return f"{'remove' if path[2] == '+' else 'put back'} {entry} in {path[1]}"
    if path[:1] == ("env",):
        return f"unset {c.key}" if c.a is None else f"{c.key}={c.a}"
    if path[:2] == ("command", "options"):
        if c.a is None:
            return f"drop {path[2]}"
        return f"give {path[2]}" if c.a is True else f"give {path[2]} {c.a}"
    if path[:1] == ("models",):
        return f"{c.key}: {c.a} in config.json"
    return f"{c.where}: back to {c.a}"


def launch_identity(snap: Snapshot | Sequence[str]) -> tuple[str, ...]:
    """What makes two snapshots the same launch: the program and its entry point (a Python
    interpreter's name stands for any; ``-m MODULE`` or the script), never the options.

    >>> launch_identity(["/venv/bin/python3", "-u", "train.py", "--lr", "3"])
    ('python', 'train.py')
    >>> launch_identity(["torchrun", "--nproc-per-node", "2", "-m", "pkg.train"])
    ('torchrun',)
    """
    argv = [str(a) for a in (snap.get("command") or {}).get("argv") or []] \
        if isinstance(snap, Snapshot) else [str(a) for a in snap]
    pos = positionals(argv)
    if not pos:
        return ()
    head = os.path.basename(pos[0])
    if not is_python_name(head):
        return (head,)
    for i in range(1, len(pos)):
        if pos[i] in ("-m", "-c") and i + 1 < len(pos):
            return ("python", pos[i], pos[i + 1])
        if not pos[i].startswith("-"):
            return ("python", os.path.basename(pos[i]))
    return ("python",)


_CAPTURED = re.compile(rb'^captured_at = "([^"\n]*)"', re.M)


def newest_first(folder: str) -> list[str]:
    """The snapshot files of ``folder``, newest capture first (then the newest file), as
    ``runsnap ls`` orders them; the capture time read from each file's head only (the
    ``[meta]`` table comes first), so nothing is parsed before it is needed."""
    try:
        names = [n for n in os.listdir(folder) if n.endswith(".toml") and not n.startswith(".")]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise UsageError(f"{folder}: {exc.strerror or exc}") from None
    keyed = []
    for name in names:
        path = os.path.join(folder, name)
        try:
            with open(path, "rb") as fh:
                head = fh.read(4096)
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            continue
        found = _CAPTURED.search(head)
        when = found[1].decode("utf-8", "replace").replace("Z", "+00:00") if found else ""
        keyed.append((when, mtime, path))
    return [path for _w, _m, path in sorted(keyed, reverse=True)]


def _ended_well(snap: Snapshot) -> bool:
    outcome = snap.get("outcome") or {}
    return outcome.get("exit_status") == 0 and not outcome.get("signal")


def find_reference(bad: Snapshot, folder: str, files: Sequence[str] | None = None,
                   load: Callable[[str], Snapshot] = load_path) -> tuple[Snapshot, str]:
    """The newest snapshot in ``folder`` captured before ``bad``, of the same launch, that
    ended well (exit 0, no signal), and how it was found; UsageError when there is none.
    Files are read newest first (``load``), and only until it is found."""
    from runsnap.errors import SnapshotError

    when = str(bad.meta.get("captured_at", "")).replace("Z", "+00:00")
    same = launch_identity(bad)
    bad_path = os.path.realpath(bad.path_text) if bad.path_text else ""
    for n, path in enumerate(newest_first(folder) if files is None else files, 1):
        if os.path.realpath(path) == bad_path:
            continue
        try:
            snap = load(path)
        except SnapshotError:
            continue
        captured = str(snap.meta.get("captured_at", "")).replace("Z", "+00:00")
        if when and captured and captured >= when:
            continue
        if launch_identity(snap) == same and _ended_well(snap):
            return snap, (f"@{n}, the newest earlier run of the same launch "
                          f"({' '.join(same)}) that exited 0")
    tracked = _tracked_reference(bad, same, when)
    if tracked is not None:
        return tracked
    raise UsageError(f"no earlier snapshot of the same launch ({' '.join(same) or 'no command'})"
                     f" ended well in {folder}: name one with --against REF")


def _tracked_reference(bad: Snapshot, same: tuple[str, ...], when: str
                       ) -> tuple[Snapshot, str] | None:
    """The newest earlier run of the same launch that exited 0 in the tracker BAD was logged
    to (``[meta.track]``), its experiment named as BAD's environment named it."""
    import shlex

    track = bad.meta.get("track") or {}
    name = str(track.get("tracker") or "") if isinstance(track, dict) else ""
    if name not in ("mlflow", "wandb"):
        return None
    from runsnap.track import fetch, tracked_runs

    recorded = (bad.get("env") or {}).get("vars") or {}
    env = {**os.environ, **{k: str(v) for k, v in recorded.items()
                            if k.startswith(("MLFLOW_", "WANDB_")) and "<redacted" not in str(v)}}
    own = str(track.get("run") or "")
    for run in tracked_runs(name, "", env):
        captured = run.captured_at.replace("Z", "+00:00")
        if run.ref == own or run.exit_status != 0 or (when and captured and captured >= when):
            continue
        try:
            argv = shlex.split(run.command)
        except ValueError:
            continue
        if launch_identity(argv) == same:
            return load_path(fetch(run.ref)), (f"{run.ref}, the newest earlier tracked run of "
                                               f"the same launch ({' '.join(same)}) that exited 0")
    return None


def _resolve(ref: Snapshot | str | os.PathLike[str], folder: str,
             load: Callable[[str], Snapshot] = load_path) -> Snapshot:
    if isinstance(ref, Snapshot):
        return ref
    text = os.fspath(ref)
    from runsnap.track import fetch, is_reference

    if is_reference(text) and not os.path.exists(text):
        return load(fetch(text))
    from runsnap.snapshot.store import resolve

    return load(resolve(text, folder))


def why(
    bad: Snapshot | str | os.PathLike[str] | None = None,
    *,
    against: Snapshot | str | os.PathLike[str] | None = None,
    folder: str = ".runsnap",
    prove: bool = False,
    options: Options | Callable[[], Options] | None = None,
    before_launch: Callable[[Sequence[Snapshot]], None] | None = None,
) -> WhyResult:
    """Say why ``bad`` (default: the newest snapshot of ``folder``) went wrong, against
    ``against`` (default: found by :func:`find_reference`), and prove it when the evidence
    does not (see the module's docstring). ``options``: how trials are run and judged (those
    of :func:`~runsnap.experiments.bisecting.bisect`), or a function that makes them, called
    only when something is launched. ``before_launch(snapshots)`` is called before the first
    launch (the command line shows what will run and asks there)."""
    t0 = time.monotonic()
    files = None
    if bad is None:
        files = newest_first(folder)
        if not files:
            raise UsageError(f"{folder}: no snapshot (capture a run first: runsnap capture -- "
                             "COMMAND)")
        bad = files[0]
    # the sections two snapshots of one launch share are parsed once, as `runsnap diff` loads
    from runsnap.diffing.bulkload import SectionCache

    load = SectionCache().load
    bad_snap = _resolve(bad, folder, load)
    if against is not None:
        good_snap = _resolve(against, folder, load)
        reference = "--against"
    else:
        good_snap, reference = find_reference(bad_snap, folder, files, load)
    from runsnap.diffing import compare
    from runsnap.diffing.rules import load_user_rules

    report = compare(good_snap, bad_snap, rules=load_user_rules(os.getcwd()), static=True)
    base: dict[str, Any] = {"bad": bad_snap.path_text or "BAD",
                            "good": good_snap.path_text or "GOOD",
                            "reference": reference, "report": report}
    if not report.candidates:
        return WhyResult("none", report.verdict(), **base, elapsed=time.monotonic() - t0)
    if report.confidence == "confident" and not prove:
        top = report.candidates[0]
        return WhyResult("confident", f"most likely cause, from the evidence: {top.where}",
                         **base, cause=(top,), how=_evidence(top), elapsed=time.monotonic() - t0)
    from runsnap.experiments.bisecting import Options

    made = options() if callable(options) else options
    options = (made or Options()).replace(out_dir=folder)
    if report.confidence == "confident":
        return _proven(good_snap, bad_snap, report, base, options, before_launch, t0)
    if before_launch is not None:
        before_launch([good_snap, bad_snap])
    return _bisected(good_snap, bad_snap, report, base, options, t0)


def _bisected(good: Snapshot, bad: Snapshot, report: Report, base: dict[str, Any],
              options: Options, t0: float, before: str = "", launched: int = 0) -> WhyResult:
    """``runsnap bisect`` over the diff's candidates first, then the rest; ``before``: what
    was tried first (a proof that failed) and ``launched`` its launches."""
    from runsnap.experiments.bisecting import bisect

    first = tuple(tuple(d.path) for d in report.candidates)
    answer = bisect(good, bad, options.replace(first=first, force=True))
    how = (f"experiment: runsnap bisect, {len(answer.runs)} launches in {answer.elapsed:.1f}s"
           + (f", re-checked {answer.rechecks} times" if answer.rechecks else ""))
    cannot = tuple(f"{s.where}: {s.why}" for s in answer.plan.skipped if s.blocking)
    if answer.plan.program is not None:
        cannot = (f"{answer.plan.program.where}: GOOD and BAD run different programs", *cannot)
    return WhyResult(answer.status, answer.message, **base, cause=answer.cause,
                     how=before + (how if answer.runs else ""),
                     launches=launched + len(answer.runs), elapsed=time.monotonic() - t0,
                     bisect=answer, cannot=cannot)


def _evidence(top: Any) -> str:
    return f"evidence from the runs: {top.reason or '; '.join(top.evidence[:1])}"


def _proven(good: Snapshot, bad: Snapshot, report: Report, base: dict[str, Any],
            options: Options, before_launch: Any, t0: float) -> WhyResult:
    """The evidence names the cause: prove it in two launches (``--prove``)."""
    from runsnap.experiments.bisecting import prepare

    top = report.candidates[0]
    how = _evidence(top)
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
                         cannot=(f"{top.where}: cannot be applied to prove it ({via})",))
    if via:
        how = f"{how}; {top.where} {via}"
    if before_launch is not None:
        before_launch([good, bad])
    proof = _prove(good, bad, changes, spec, judge, secret, options)
    if not proof.holds:
        # the evidence was wrong, or not enough: the experiment decides, the named one first
        tried = (f"the evidence named {top.where}, which 2 launches did not confirm (GOOD with "
                 f"it applied: {proof.applied}; BAD with it reverted: {proof.reverted}); ")
        found = _bisected(good, bad, report, base, options, t0, tried, 2)
        return found.replace(proof=proof)
    how = f"{how}; proven by experiment: 2 launches in {proof.elapsed:.1f}s"
    message = f"cause proven: {top.where} (2 launches, {proof.elapsed:.1f}s)"
    return WhyResult("proven", message, **base, cause=changes, how=how, launches=2,
                     elapsed=time.monotonic() - t0, proof=proof)


def _changes_for(top: Any, the_plan: Any) -> tuple[tuple[Change, ...], str]:
    """The changes that apply ``top``: its own, or those of the variable it follows (another
    venv's packages follow ``PATH``); else none, and why not."""
    def under(path: Sequence[Any]) -> tuple[Change, ...]:
        return tuple(c for c in the_plan.changes if tuple(c.path[: len(path)]) == tuple(path))

    own = under(top.path)
    if own:
        return own, ""
    why_not = next((s.why for s in the_plan.skipped if tuple(s.path) == tuple(top.path)),
                   "it is not part of the launch")
    followed = re.match(r"follows env ([A-Za-z_][A-Za-z0-9_]*)", why_not)
    if followed:
        applied = under(("env", followed[1]))
        if applied:
            return applied, f"follows env {followed[1]}: proven by applying it"
    return (), why_not


def _prove(good: Snapshot, bad: Snapshot, changes: Sequence[Change], spec: Any, judge: Any,
           secret: Any, options: Options) -> Proof:
    """GOOD's launch with ``changes`` applied (must go bad), then BAD's with them reverted
    (must go good), captured in full under a trials' folder."""
    from runsnap.experiments.applying import apply
    from runsnap.experiments.bisecting import new_folder
    from runsnap.experiments.replaying import restore, secret_from
    from runsnap.experiments.trials import BAD, GOOD, run_trial

    t0 = time.monotonic()
    folder = new_folder(options.out_dir)
    stop = threading.Event()
    applied = apply(spec, changes, good=good, bad=bad, workdir=os.path.join(folder, "m1"),
                    secret=secret)
    back = tuple(c.replace(a=c.b, b=c.a, path=_reverse(c.path)) for c in changes)
    restored = restore(bad).spec

    def good_secret(name: str, stored: str) -> str | None:
        return secret_from(good, name, stored)

    reverted = apply(restored, back, good=bad, bad=good, workdir=os.path.join(folder, "m2"),
                     secret=good_secret)
    say = options.progress or (lambda _line: None)
    out = []
    for name, trial_spec, want in (("trial-01", applied, BAD), ("trial-02", reverted, GOOD)):
        say(f"{name}: {'GOOD with the cause applied' if want == BAD else 'BAD with it reverted'}"
            " ...")
        got = run_trial(trial_spec, name=name, folder=folder, criteria=options.criteria,
                        judge=judge, stop=stop, label=f"why {name}")
        say(f"{name}: {got.verdict} in {got.elapsed:.1f}s: {got.why}")
        out.append((got.verdict == want, f"{got.verdict}: {got.why}"))
    return Proof(out[0][1], out[1][1], out[0][0] and out[1][0], time.monotonic() - t0)


def _reverse(path: tuple[Any, ...]) -> tuple[Any, ...]:
    """A list entry's locator reversed: an entry added becomes one removed."""
    if path[:1] == ("env",) and len(path) > 3 and path[2] in ("+", "-"):
        return (*path[:2], "-" if path[2] == "+" else "+", *path[3:])
    return path
