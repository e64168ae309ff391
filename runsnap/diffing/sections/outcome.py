"""``[outcome]``: what happened (an effect, ranked below the causes); timings are noise.

Beyond the exit status: when both runs ended alike (the same exit status), what they printed
and cost is compared too, and a difference beyond noise is an outcome difference the diff
explains like a failure (key ``metric NAME``, ``last line``, ``wall time``, ``peak memory``;
:func:`behaviour_differs` lists them for the evidence rules). Thresholds (docs/ranking.md):

- a metric (``[outcome] metrics``, :mod:`runsnap.launch.metrics`) printed by both runs differs
  beyond noise when the values differ by more than its tolerance, relative to the larger one:
  the user's (``--metric-tolerance NAME=TOL``, ``[tool.runsnap.diff] metric-tolerance``; 0 for
  bit-exact runs), else :data:`METRIC_NOISE` (1%), or :data:`TIMING_NOISE` (50%) for a metric
  of speed or time (throughput, ``*_per_second``, ``*time*``, latency, ...), which varies
  between any two runs on a shared machine (:func:`tolerance`; a metric within it is a hidden
  difference, noise);
- the last line each run printed on stdout (stderr when stdout printed nothing), its numbers
  masked (the metrics compare those), differs in words;
- wall time differs by a factor of :data:`WALL_FACTOR` (2) and at least 5 seconds;
- peak memory differs by more than 25% and at least 256 MiB.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from typing import Any

from runsnap.base.timestamps import without_timestamp
from runsnap.diffing.result import Difference
from runsnap.diffing.rules import RankContext, Verdict
from runsnap.diffing.written import record
from runsnap.launch.metrics import relative_change
from runsnap.snapshot.records import Outcome

__all__ = ["METRIC_NOISE", "TIMING_NOISE", "WALL_FACTOR", "behaviour", "behaviour_differs",
           "compare", "score"]

#: A metric differs beyond noise above this relative change (of the larger magnitude).
METRIC_NOISE = 0.01
#: The same for metrics of speed and time.
TIMING_NOISE = 0.5
#: Whose tolerance 0 is, where both runs computed on the CPU alone with the same threads.
EXACT = "the tolerance of CPU runs, which give their metrics exactly again"
#: Wall time differs beyond noise at this factor (and at least :data:`WALL_MIN_S`).
WALL_FACTOR, WALL_MIN_S = 2.0, 5.0
#: Peak memory differs beyond noise above this relative change and this many bytes.
MEMORY_NOISE, MEMORY_MIN_BYTES = 0.25, 256 * 2**20

_TIMING = re.compile(r"time|duration|elapsed|latency|throughput|per_?sec|per_?s$|/s$|_s$|_ms$|"
                     r"speed|rate$|tps|qps|fps|it_?s|tok(?:en)?s_?per|samples_per|wall",
                     re.IGNORECASE)
_NUMBER = re.compile(r"[-+]?\d+(?:[.,:]\d+)*(?:[eE][-+]?\d+)?")

#: Keys of the behaviour differences (beside ``metric NAME``).
BEHAVIOUR_KEYS = ("last line", "wall time", "peak memory")


def _last_line(o: Outcome) -> str | None:
    for stream in (o.stdout, o.stderr):
        for line in reversed(stream.tail):
            if isinstance(line, str) and line.strip():
                return line.strip()
    return None


def _num(x: object) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def behaviour(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """What two runs that ended alike did differently beyond noise (module docstring); every
    metric that moved at all, which :func:`score` hides within its tolerance.

    >>> out = behaviour({"exit_status": 0, "metrics": {"loss": 4.96, "tok_per_s": 100.0}},
    ...                 {"exit_status": 0, "metrics": {"loss": 6.25, "tok_per_s": 100.0}})
    >>> [(d.key, d.a, d.b) for d in out]
    [('metric loss', 4.96, 6.25)]
    """
    oa, ob = record(Outcome, a), record(Outcome, b)
    if oa.exit_status != ob.exit_status or oa.signal != ob.signal:
        return []  # the outcomes differ already: what one run printed after is a consequence
    out: list[Difference] = []
    ma, mb = oa.metrics, ob.metrics
    if ma and mb:
        for name, x in ma.items():
            va, vb = _num(x), _num(mb.get(name))
            if va is None or vb is None:
                continue
            if va != vb:  # within its tolerance, :func:`score` hides it as noise
                out.append(Difference(
                    "outcome", f"metric {name}", "changed", va, vb,
                    evidence=(f"{name} printed by both runs: {va:g} vs {vb:g}, a change of "
                              f"{_percent(relative_change(va, vb))}",),
                    path=("outcome", "metrics", name)))
    la, lb = _last_line(oa), _last_line(ob)
    if la is not None and lb is not None and la != lb \
            and _NUMBER.sub("#", without_timestamp(la)) != _NUMBER.sub("#", without_timestamp(lb)):
        out.append(Difference("outcome", "last line", "changed", la, lb,
                              evidence=("the last line each run printed differs in words",),
                              path=("outcome", "last_line")))
    da, db = _num(oa.duration_s), _num(ob.duration_s)
    if da is not None and db is not None and abs(da - db) >= WALL_MIN_S \
            and max(da, db) >= WALL_FACTOR * max(min(da, db), 1e-9):
        out.append(Difference("outcome", "wall time", "changed", da, db,
                              evidence=(f"{da:g} s vs {db:g} s",), path=("outcome", "duration_s")))
    pa, pb = _num(oa.peak_rss_bytes), _num(ob.peak_rss_bytes)
    if pa is not None and pb is not None and abs(pa - pb) >= MEMORY_MIN_BYTES \
            and relative_change(pa, pb) > MEMORY_NOISE:
        out.append(Difference("outcome", "peak memory", "changed", int(pa), int(pb),
                              evidence=(f"{pa / 2**20:.0f} MiB vs {pb / 2**20:.0f} MiB",),
                              path=("outcome", "peak_rss_bytes")))
    return out


def behaviour_differs(diffs: Sequence[Difference]) -> list[Difference]:
    """The outcome differences among ``diffs`` that are behaviour beyond the exit status
    (metrics, last line, wall time, peak memory, a test of a pytest session that ended
    otherwise: :mod:`runsnap.diffing.sections.tests`): for the evidence rules, "the outcomes
    differ in metric X" when the exit statuses are the same."""
    return [d for d in diffs if d.section == "outcome"
            and (d.key.startswith(("metric ", "test ")) or d.key in BEHAVIOUR_KEYS)]


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Exit status, signal, the first error line and the warnings of each run; timings last.
    Lines are compared without the time stamps loggers put in front of them."""
    out: list[Difference] = []
    oa, ob = record(Outcome, a), record(Outcome, b)
    for key in ("exit_status", "signal", "first_error"):
        x, y = getattr(oa, key), getattr(ob, key)
        if key == "first_error" and isinstance(x, str) and isinstance(y, str) \
                and without_timestamp(x) == without_timestamp(y):
            continue
        if x != y:
            out.append(Difference("outcome", key, "changed" if x is not None and y is not None
                                  else "added" if x is None else "removed", x, y,
                                  path=("outcome", key)))
    wa, wb = list(oa.warnings), list(ob.warnings)
    # each message once (a snapshot from before runsnap kept one line per time stamp)
    ka, kb = (list(dict.fromkeys(without_timestamp(str(w)) for w in ws)) for ws in (wa, wb))
    if set(ka) != set(kb):
        ev = tuple([f"A only: {w}" for w in ka if w not in kb]
                   + [f"B only: {w}" for w in kb if w not in ka])
        out.append(Difference("outcome", "warnings", "changed", wa, wb, evidence=ev,
                              path=("outcome", "warnings")))
    out.extend(behaviour(a, b))
    for key in ("duration_s", "started_at", "ended_at"):
        x, y = getattr(oa, key), getattr(ob, key)
        if x != y:
            out.append(Difference("outcome", key, "changed", x, y, path=("outcome", key)))
    return out


def _percent(x: float) -> str:
    """A relative change for people: whole percents, else two significant digits.

    >>> _percent(0.25), _percent(0.0004), _percent(0.0)
    ('25%', '0.04%', '0%')
    """
    return f"{x:.0%}" if x >= 0.01 or x == 0 else f"{x * 100:.2g}%"


def tolerance(name: str, rules: RankContext) -> tuple[float, str]:
    """How far metric ``name`` may move between two runs and still be noise, and where that
    comes from: the user's (``--metric-tolerance``, ``[tool.runsnap.diff] metric-tolerance``;
    the first glob that matches), else :data:`TIMING_NOISE` for speed and time, else 0 where
    both runs computed on the CPU alone with the same threads (``rules.exact_metrics``: such
    runs give their metrics exactly again), else :data:`METRIC_NOISE`.

    >>> tolerance("loss", RankContext(metric_tolerance=(("loss", 0.0),)))
    (0.0, 'your tolerance for loss')
    >>> tolerance("tok_per_s", RankContext()), tolerance("loss", RankContext())
    ((0.5, 'noise threshold'), (0.01, 'noise threshold'))
    >>> tolerance("loss", RankContext(exact_metrics=True))[0]
    0.0
    """
    for glob, value in rules.metric_tolerance:
        if fnmatch.fnmatchcase(name, glob):
            return value, "your tolerance" + ("" if glob == "*" else f" for {glob}")
    if _TIMING.search(name):
        return TIMING_NOISE, "noise threshold"
    if rules.exact_metrics:
        return 0.0, EXACT
    return METRIC_NOISE, "noise threshold"


def score(d: Difference, rules: RankContext) -> Verdict:
    """What happened (50): an effect, not a cause, so causes rank above it (the renderers show
    it in a block of its own); timings are noise, they differ on every run, and so is a metric
    that moved within its :func:`tolerance`."""
    if d.key in ("duration_s", "started_at", "ended_at"):
        return 2, "noise: timings differ on every run", True
    va, vb = _num(d.a), _num(d.b)
    if d.key.startswith("metric ") and va is not None and vb is not None:
        limit, whose = tolerance(d.key[len("metric "):], rules)
        change = relative_change(va, vb)
        if change <= limit:
            return 2, (f"noise: a change of {_percent(change)}, within {whose} "
                       f"({_percent(limit)})"), True
        return 50, (f"what happened differs: a change of {_percent(change)}, beyond {whose} "
                    f"({_percent(limit)}) (an effect; the causes rank above)"), False
    return 50, "what happened differs (an effect; the causes rank above)", False
