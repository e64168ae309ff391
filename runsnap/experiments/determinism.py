"""A metric that moved less than the diff's tolerance, in a program that gives its metrics
exactly again: no noise, so ``why`` explains it.

The diff calls two runs "the same outcome" when a metric moved within its noise threshold
(1 % by default): an evaluation's perplexity 11.299 -> 11.326 after a model's ``rope_theta``
was edited is 0.24 %. Most evaluations are deterministic, though: run again, the same program
on the same inputs prints the same number to the last digit. So where the runs ended alike and
a metric moved at all, GOOD's launch is run once more: every moved metric it gives exactly as
GOOD recorded is judged at tolerance 0 (``NAME=0``, as ``--metric-tolerance`` says it), and the
diff and the experiment go on with that; a metric that comes back otherwise moves by itself,
and the verdict stays "the same outcome", now with the launch that showed it.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from runsnap.errors import SnapshotError, UsageError
from runsnap.experiments.applying import apply
from runsnap.experiments.bisecting import Options, new_folder, prepare
from runsnap.experiments.caches import fresh_caches, used_caches
from runsnap.experiments.gittrees import searched
from runsnap.experiments.moved import Steady, moved_metrics, number
from runsnap.experiments.trials import Criteria, run_trial, untracked
from runsnap.snapshot import load

if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["steady_metrics"]


def steady_metrics(good: Snapshot, bad: Snapshot, out_dir: str) -> Steady:
    """Run GOOD's launch once more (captured under a trials' folder of ``out_dir``), as a
    bisection's trial with nothing applied runs it (models read through copies with GOOD's
    recorded config, repositories whose edits are searched copied, GOOD's secrets BAD ran
    without left out), and say which of the moved metrics it gives exactly again."""
    names = moved_metrics(good, bad)
    zero = tuple(f"{n}=0" for n in names)
    options = Options(criteria=Criteria(metric_tolerance=zero), force=True, out_dir=out_dir)
    try:
        the_plan, spec, (_judge, secret) = prepare(good, bad, options)
    except UsageError as exc:
        return Steady((), f"GOOD's launch cannot be run again here ({exc})")
    folder = new_folder(out_dir)
    models, trees = searched(the_plan.changes, good, bad)
    spec = apply(spec, (), good=good, bad=bad, workdir=os.path.join(folder, "trial-01-models"),
                 secret=secret, models=models, trees=trees)
    env = fresh_caches({**spec.env, **untracked(folder)}, used_caches(good, bad), folder,
                       "trial-01")
    got = run_trial(spec.replace(env=env), name="trial-01", folder=folder, criteria=Criteria(),
                    judge=None, stop=threading.Event(), label="why GOOD again")
    try:
        again = load(got.snapshot).records.outcome if got.snapshot else None
    except SnapshotError:
        again = None
    recorded = good.records.outcome
    if again is None or (again.exit_status, again.signal) != (recorded.exit_status,
                                                              recorded.signal):
        return Steady((), "GOOD's launch, run again, did not end as GOOD did", 1)
    exact = tuple(n for n in names if number(again.metrics.get(n)) == number(
        recorded.metrics.get(n)))
    shown = "; ".join(f"{n} {recorded.metrics[n]:g} -> {bad.records.outcome.metrics[n]:g}, "
                      f"GOOD again {_shown(again.metrics.get(n))}" for n in names[:3])
    if exact:
        them = "them" if len(exact) > 1 else "it"
        return Steady(exact, f"the runs' {', '.join(exact)} moved less than the noise "
                      f"threshold, but GOOD's launch run again gave {them} exactly again "
                      f"({shown}): no noise, judged at tolerance 0", 1)
    return Steady((), f"GOOD's launch run again moved by itself ({shown}): the metrics' "
                  "difference is within what the program does from run to run", 1)


def _shown(value: Any) -> str:
    found = number(value)
    return "none" if found is None else f"{found:g}"
