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
established, and the change that restores GOOD. Where the runs ended alike and a metric
moved within the diff's noise threshold, GOOD's launch is run once more first
(:mod:`runsnap.experiments.determinism`): a metric it gives exactly again is no noise.

It depends only on the diff's public result (:attr:`~runsnap.diffing.Report.confidence`,
:attr:`~runsnap.diffing.Report.candidates`), never on how the diff ranks.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from runsnap.base.argv import is_python_name, positionals
from runsnap.diffing import compare
from runsnap.diffing.bulkload import SectionCache
from runsnap.diffing.rules import load_user_rules
from runsnap.errors import SnapshotError, UsageError
from runsnap.experiments.moved import Steady, moved_metrics
from runsnap.experiments.verdicts import (
    EXIT,
    Proof,
    WhyResult,
    WhySettings,
    evidence,
    restoring,
)
from runsnap.snapshot import Snapshot
from runsnap.snapshot import load as load_path
from runsnap.snapshot.folders import snapshot_paths
from runsnap.snapshot.store import resolve
from runsnap.track import fetch, is_reference, tracked_runs

if TYPE_CHECKING:
    from types import ModuleType

    from runsnap.experiments.bisecting import Options

# The launching half (runsnap.experiments.proving: bisect, trials, replay) is imported only
# when something is launched: a confident verdict costs what `runsnap diff` costs
# (benchmarks/run.py, case 12).

__all__ = ["EXIT", "Proof", "WhyResult", "WhySettings", "find_reference", "launch_identity",
           "newest_first", "restoring", "why"]

def launch_identity(snap: Snapshot | Sequence[str]) -> tuple[str, ...]:
    """What makes two snapshots the same launch: the program and its entry point (a Python
    interpreter's name stands for any; ``-m MODULE`` or the script), never the options.

    >>> launch_identity(["/venv/bin/python3", "-u", "train.py", "--lr", "3"])
    ('python', 'train.py')
    >>> launch_identity(["torchrun", "--nproc-per-node", "2", "-m", "pkg.train"])
    ('torchrun',)
    """
    argv = [str(a) for a in (snap.records.command.argv if isinstance(snap, Snapshot) else snap)]
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
        paths = snapshot_paths(folder)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise UsageError(f"{folder}: {exc.strerror or exc}") from None
    keyed = []
    for path in paths:
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
    outcome = snap.records.outcome
    return outcome.exit_status == 0 and not outcome.signal


def find_reference(bad: Snapshot, folder: str, files: Sequence[str] | None = None,
                   load: Callable[[str], Snapshot] = load_path) -> tuple[Snapshot, str]:
    """The newest snapshot in ``folder`` captured before ``bad``, of the same launch, that
    ended well (exit 0, no signal), and how it was found; UsageError when there is none.
    Files are read newest first (``load``), and only until it is found."""
    when = str(bad.records.meta.captured_at or "").replace("Z", "+00:00")
    same = launch_identity(bad)
    bad_path = os.path.realpath(bad.path_text) if bad.path_text else ""
    for n, path in enumerate(newest_first(folder) if files is None else files, 1):
        if os.path.realpath(path) == bad_path:
            continue
        try:
            snap = load(path)
        except SnapshotError:
            continue
        captured = str(snap.records.meta.captured_at or "").replace("Z", "+00:00")
        if when and captured and captured >= when:
            continue
        if launch_identity(snap) == same and _ended_well(snap):
            return snap, (f"@{n}, the newest earlier run of the same launch "
                          f"({' '.join(same)}) that exited 0")
    tracked = _tracked_reference(bad, same, when)
    if tracked is not None:
        return tracked
    name = str(bad.records.meta.track.tracker or "")
    also = f" nor in the {name} runs BAD was logged to" if name in ("mlflow", "wandb") else ""
    raise UsageError(f"no earlier snapshot of the same launch ({' '.join(same) or 'no command'})"
                     f" ended well in {folder}{also}: name one with --against REF")


def _tracked_reference(bad: Snapshot, same: tuple[str, ...], when: str
                       ) -> tuple[Snapshot, str] | None:
    """The newest earlier run of the same launch that exited 0 in the tracker BAD was logged
    to (``[meta.track]``), its experiment named as BAD's environment named it."""
    track = bad.records.meta.track
    name = str(track.tracker or "")
    if name not in ("mlflow", "wandb"):
        return None
    recorded = bad.records.env.vars
    env = {**os.environ, **{k: str(v) for k, v in recorded.items()
                            if k.startswith(("MLFLOW_", "WANDB_")) and "<redacted" not in str(v)}}
    own = str(track.run or "")
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
    if is_reference(text) and not os.path.exists(text):
        return load(fetch(text))
    return load(resolve(text, folder))


def why(
    bad: Snapshot | str | os.PathLike[str] | None = None,
    *,
    against: Snapshot | str | os.PathLike[str] | None = None,
    folder: str = ".runsnap",
    prove: bool = False,
    options: Options | WhySettings | None = None,
    before_launch: Callable[[Sequence[Snapshot]], None] | None = None,
) -> WhyResult:
    """Say why ``bad`` (default: the newest snapshot of ``folder``) went wrong, against
    ``against`` (default: found by :func:`find_reference`), and prove it when the evidence
    does not (see the module's docstring). ``options``: how trials are run and judged (those
    of :func:`~runsnap.experiments.bisecting.bisect`), or a
    :class:`~runsnap.experiments.verdicts.WhySettings` turned into them only when something
    is launched. ``before_launch(snapshots)`` is called before the first
    launch (the command line shows what will run and asks there)."""
    t0 = time.monotonic()
    files = None
    if bad is None:
        files = newest_first(folder)
        if not files:
            raise UsageError(f"{folder}: no snapshot (capture a run first: runsnap capture -- "
                             "COMMAND)")
        bad = files[0]
    load = SectionCache().load  # what two snapshots of one launch share is parsed once
    bad_snap = _resolve(bad, folder, load)
    if against is not None:
        good_snap = _resolve(against, folder, load)
        reference = "--against"
    else:
        good_snap, reference = find_reference(bad_snap, folder, files, load)
    given = (options.metric_tolerance if isinstance(options, WhySettings) else
             options.criteria.metric_tolerance if options is not None else ())
    rules = load_user_rules(os.getcwd()).with_metric_tolerance(given)
    report = compare(good_snap, bad_snap, rules=rules, static=True)
    steady = None
    if not report.candidates and moved_metrics(good_snap, bad_snap):
        # alike within the noise threshold: noise only if GOOD's own metrics move by themselves
        steady = _steady(good_snap, bad_snap, folder, before_launch)
        before_launch = None  # asked once
        if steady.exact:
            zero = tuple(f"{name}=0" for name in steady.exact)
            report = compare(good_snap, bad_snap, rules=rules.with_metric_tolerance(zero),
                             static=True)
            options = _with_tolerance(options, zero)
    base: dict[str, Any] = {"bad": bad_snap.path_text or "BAD",
                            "good": good_snap.path_text or "GOOD",
                            "reference": reference, "report": report}
    result = _verdict(good_snap, bad_snap, base, prove, options, before_launch, folder, t0)
    if steady is None:
        return result
    return result.replace(notes=(*result.notes, steady.said),
                          launches=result.launches + steady.launches)


def _steady(good: Snapshot, bad: Snapshot, folder: str,
            before_launch: Callable[[Sequence[Snapshot]], None] | None) -> Steady:
    """GOOD's launch run once more (:func:`steady_metrics`), once allowed; not allowed (no
    ``--yes`` without a terminal, or the user said no), what it would have told."""
    if before_launch is not None:
        try:
            before_launch([good, bad])
        except UsageError as exc:
            moved = ", ".join(moved_metrics(good, bad)[:3])
            return Steady((), f"{moved} moved within the noise threshold; GOOD's launch run "
                          f"again tells whether that is noise ({exc})")
    return _launching().steady_metrics(good, bad, folder)


def _launching() -> ModuleType:
    """The launching half (bisect, trials, replay, GOOD's launch run again)."""
    # deferred: runsnap.experiments.proving (bisect, trials, replay), imported only when
    # something is launched: a confident verdict costs what `runsnap diff` costs
    from runsnap.experiments import proving

    return proving


def _with_tolerance(options: Options | WhySettings | None, specs: Sequence[str]
                    ) -> Options | WhySettings:
    """``options`` with ``--metric-tolerance`` ``specs`` ahead of those given."""
    if options is None or isinstance(options, WhySettings):
        s = options or WhySettings()
        return s.replace(metric_tolerance=(*specs, *s.metric_tolerance))
    c = options.criteria
    return options.replace(criteria=c.replace(metric_tolerance=(*specs, *c.metric_tolerance)))


def _verdict(good_snap: Snapshot, bad_snap: Snapshot, base: dict[str, Any],
             prove: bool, options: Options | WhySettings | None,
             before_launch: Callable[[Sequence[Snapshot]], None] | None, folder: str,
             t0: float) -> WhyResult:
    """The verdict from the diff (``base["report"]``): none, confident (proven with
    ``prove``), or bisected."""
    report = base["report"]
    if not report.candidates:
        return WhyResult("none", report.verdict(), **base, elapsed=time.monotonic() - t0)
    if report.confidence == "confident" and not prove:
        top = report.candidates[0]
        return WhyResult("confident", f"most likely cause, from the evidence: {top.where}",
                         **base, cause=(top,), how=evidence(top), elapsed=time.monotonic() - t0)
    # something is launched from here on: the launching half, and the options made only now
    proving = _launching()
    options = proving.options_of(options).replace(out_dir=folder)
    if report.confidence == "confident":
        return proving.proven(good_snap, bad_snap, report, base, options, before_launch, t0)
    if proving.warnings_only(good_snap, bad_snap, options):
        return proving.warned_only(good_snap, bad_snap, base, t0)
    if before_launch is not None:
        before_launch([good_snap, bad_snap])
    return proving.bisected(good_snap, bad_snap, report, base, options, t0)


