"""How a trial is judged by its outcome: like GOOD's or like BAD's.

:class:`OutcomeJudge` compares a trial's ``[outcome]`` (or the fields a quick trial gives)
with GOOD's and BAD's recorded ones:

* when they ended another way (exit status, signal), the trial's end decides;
* when they ended alike but with other first errors, the first error (numbers masked); when
  their first errors are alike but the last exceptions they printed are not (a launcher's
  wrapper: ``torch.multiprocessing.spawn.ProcessRaisedException:`` or torchrun's
  ``ChildFailedError:`` first, the worker's ``ValueError: ...`` last), the last exception;
* when they ended alike and the difference is their behaviour (both exit 0): the metric the
  diff compares (:func:`runsnap.diffing.sections.outcome.behaviour`, with its tolerance), else
  wall time, else peak memory, else the warnings only one of them printed. A trial is judged
  by the side its value falls on: within the diff's tolerance of one side's value, or nearer
  to it. ``metric`` (``--metric NAME``) chooses among several metrics.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Mapping
from typing import Any

from runsnap.diffing.rules import load_user_rules
from runsnap.diffing.sections.outcome import behaviour, tolerance
from runsnap.diffing.wording import short
from runsnap.errors import UsageError
from runsnap.launch.metrics import relative_change
from runsnap.snapshot.records import Outcome

__all__ = ["BAD", "GOOD", "STOPPED", "UNCLEAR", "Measure", "OutcomeJudge", "Verdict",
           "as_outcome", "describe"]


class Verdict(str, enum.Enum):
    """What a trial says about its launch. A string (``"bad"``) wherever it is written: JSON,
    text, comparisons."""

    GOOD = "good"
    BAD = "bad"
    UNCLEAR = "unclear"
    """Like neither GOOD nor BAD, or ``--test`` exited 125."""
    STOPPED = "stopped"
    """Interrupted (Ctrl-C): no verdict."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


GOOD, BAD, UNCLEAR, STOPPED = Verdict.GOOD, Verdict.BAD, Verdict.UNCLEAR, Verdict.STOPPED


def as_outcome(outcome: Outcome | Mapping[str, Any]) -> Outcome:
    """``outcome`` as its record: a loaded snapshot's already is one; the fields a quick trial
    wrote (or a test's mapping) are read through the ``[outcome]`` declaration here, once, so a
    value of the wrong type is one :class:`~runsnap.errors.SnapshotError` naming the field.

    >>> as_outcome({"exit_status": 1}).exit_status
    1
    """
    return outcome if isinstance(outcome, Outcome) else Outcome(outcome, "", "[outcome] ")


def _warned(outcome: Outcome) -> frozenset[str]:
    """The warnings an outcome holds, numbers and addresses masked."""
    return frozenset(_masked(w) for w in outcome.warnings if isinstance(w, str))


class Measure:
    """What tells GOOD's behaviour from BAD's when both ended alike: one metric, the wall time
    or the peak memory, with GOOD's and BAD's values."""

    def __init__(self, name: str, key: tuple[str, ...], good: float, bad: float) -> None:
        self.name, self.key, self.good, self.bad = name, key, good, bad

    def value(self, outcome: Outcome) -> float | None:
        """This measure's value in ``outcome`` (None: not there)."""
        first, *rest = self.key
        v: Any = getattr(outcome, first)
        for k in rest:
            v = v.get(k) if isinstance(v, Mapping) else None
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    def side(self, v: float) -> Verdict:
        """GOOD or BAD by the nearer value (relative change), UNCLEAR at equal distances.

        >>> m = Measure("loss", ("metrics", "loss"), 4.9, 6.3)
        >>> m.side(4.95), m.side(6.2), m.side(5.6)
        (<Verdict.GOOD: 'good'>, <Verdict.BAD: 'bad'>, <Verdict.BAD: 'bad'>)
        """
        dg, db = relative_change(v, self.good), relative_change(v, self.bad)
        return GOOD if dg < db else BAD if db < dg else UNCLEAR


def _measure(good: Outcome, bad: Outcome, metric: str | None,
             tolerances: tuple[str, ...] = (), exact: bool = False) -> Measure | None:
    """The behaviour that tells GOOD from BAD (see the module's docstring), None if none;
    ``exact``: the runs computed on the CPU alone with the same threads, as the diff judges
    (:func:`runsnap.diffing.loaded.exact_metrics`), so a metric that moved at all tells."""
    if metric:
        va = Measure(metric, ("metrics", metric), 0, 0).value(good)
        vb = Measure(metric, ("metrics", metric), 0, 0).value(bad)
        if va is None or vb is None:
            printed = sorted(set(good.metrics) & set(bad.metrics))
            raise UsageError(f"--metric {metric}: GOOD and BAD did not both print it (both "
                             f"printed: {', '.join(printed) or 'no metric'})")
        if va == vb:
            raise UsageError(f"--metric {metric}: GOOD and BAD printed the same value ({va:g})")
        return Measure(metric, ("metrics", metric), va, vb)
    found = behaviour(good.raw, bad.raw)
    rules = load_user_rules(os.getcwd()).with_metric_tolerance(tolerances).replace(
        exact_metrics=exact)
    for prefix, key in (("metric ", None), ("wall time", ("duration_s",)),
                        ("peak memory", ("peak_rss_bytes",))):
        for d in found:
            if d.key.startswith("metric ") and relative_change(float(d.a), float(d.b)) <= \
                    tolerance(d.key[len("metric "):], rules)[0]:
                continue  # within the metric's tolerance (the diff's, or the project's): noise
            if d.key.startswith(prefix) and isinstance(d.a, (int, float)):
                name = d.key[len("metric "):] if key is None else d.key
                return Measure(name, key or ("metrics", name), float(d.a), float(d.b))
    return None

def _first_error(outcome: Outcome) -> str:
    return _masked(outcome.first_error)


def _last_exception(outcome: Outcome) -> str:
    """The last traceback's ``Type: message``, numbers masked ("" when none was printed)."""
    tb = outcome.traceback
    return _masked(f"{tb.type}: {tb.message or ''}") if tb.type else ""


def _error_of(good: Outcome, bad: Outcome) -> Any:
    """What names a run's error for this pair: the first error line, or the last exception
    where the first lines are alike (numbers masked) and the last exceptions are not."""
    if _first_error(good) == _first_error(bad) and _last_exception(good) and \
            _last_exception(bad) and _last_exception(good) != _last_exception(bad):
        return _last_exception
    return _first_error


#: An absolute path of two parts or more: compared by its last part, since a trial reads a
#: model, or a repository, through a copy under its own folder (``.runsnap/bisect-*/m2/``).
_FOLDERS = re.compile(r"(?<![\w.])(?:/[^\s/:'\"(),]+)+/(?=[^\s/:'\"(),]+)")


def _masked(line: Any) -> str:
    """A first error line with numbers and addresses masked, and an absolute path's folders,
    to compare two runs' errors.

    >>> _masked("OOM at 0x7f3a: tried 2.5 GiB (pid 4121)")
    'OOM at #: tried #.# GiB (pid #)'
    >>> _masked("no weights in /w/.runsnap/bisect-1/m2/tiny: ok")
    'no weights in tiny: ok'
    >>> _masked("no weights in /w/models/tiny: ok")
    'no weights in tiny: ok'
    """
    return re.sub(r"0x[0-9a-fA-F]+|\d+", "#", _FOLDERS.sub("", str(line or ""))).strip()


def describe(outcome: Outcome | Mapping[str, Any]) -> str:
    """``exit 1: ValueError: ...`` for an ``[outcome]`` section (first error cut short)."""
    outcome = as_outcome(outcome)
    if not outcome:
        return "no outcome recorded"
    text = f"killed by {outcome.signal}" if outcome.signal else f"exit {outcome.exit_status}"
    err = str(outcome.first_error or "")
    if err:
        text += ": " + (err if len(err) <= 70 else err[:69] + "…")
    return text


class OutcomeJudge:
    """Good or bad by likeness to GOOD's and BAD's recorded outcomes (module docstring)."""

    def __init__(self, good: Outcome | Mapping[str, Any], bad: Outcome | Mapping[str, Any],
                 metric: str | None = None, tolerances: tuple[str, ...] = (),
                 exact: bool = False) -> None:
        good, bad = as_outcome(good), as_outcome(bad)
        if not good.has("exit_status") or not bad.has("exit_status"):
            raise UsageError("GOOD or BAD has no outcome (captured without running): say what "
                             "bad means with --test CMD or --timeout S")
        self.good, self.bad = good, bad
        self.by_exit = self._sig(good) != self._sig(bad)
        self.measure: Measure | None = None
        self.error = _error_of(good, bad)
        if self.by_exit:
            if metric:
                raise UsageError(f"--metric {metric}: GOOD and BAD ended another way "
                                 f"({describe(good)} vs {describe(bad)}): that decides")
        elif metric or self.error(good) == self.error(bad):
            self.measure = _measure(good, bad, metric, tolerances, exact)
            self.warned = _warned(good), _warned(bad)
            if self.measure is None and self.warned[0] == self.warned[1]:
                raise UsageError(f"GOOD and BAD ended the same way ({describe(bad)}) and no "
                                 "metric, wall time, peak memory or warning tells them apart: "
                                 "say what bad means with --test CMD or --timeout S")

    @staticmethod
    def _sig(outcome: Outcome) -> tuple[int | None, str | None]:
        return outcome.exit_status, outcome.signal

    @property
    def basis(self) -> str:
        """What decides, in words: ``exit status``, ``first error``, ``metric loss``."""
        if self.measure is not None:
            m = self.measure
            return (f"{'metric ' if m.key[0] == 'metrics' else ''}{m.name} (GOOD {m.good:g}, "
                    f"BAD {m.bad:g})")
        return "exit status" if self.by_exit else "first error" \
            if self.error is _first_error else "last exception"

    def _by_measure(self, outcome: Outcome, what: str) -> tuple[Verdict, str]:
        m = self.measure
        assert m is not None
        if self._sig(outcome) != self._sig(self.bad):
            return UNCLEAR, f"{what}: like neither GOOD nor BAD ({describe(self.bad)})"
        v = m.value(outcome)
        if v is None:
            return UNCLEAR, f"{what}, no {m.name} printed"
        side = m.side(v)
        like = {GOOD: "like GOOD", BAD: "like BAD"}.get(side, "halfway")
        return side, f"{m.name} {v:g}, {like} (GOOD {m.good:g}, BAD {m.bad:g})"

    def _by_warnings(self, outcome: Outcome, what: str) -> tuple[Verdict, str]:
        """By the warnings only one of GOOD and BAD printed: a trial with BAD's own and none
        of GOOD's is bad, and the other way round (none of either: like the side that printed
        none)."""
        if self._sig(outcome) != self._sig(self.bad):
            return UNCLEAR, f"{what}: like neither GOOD nor BAD ({describe(self.bad)})"
        good, bad = self.warned
        mine = _warned(outcome)
        has_good, has_bad = bool(mine & (good - bad)), bool(mine & (bad - good))
        if has_bad and not has_good:
            return BAD, f"{what}, with BAD's warnings"
        if has_good and not has_bad:
            return GOOD, f"{what}, with GOOD's warnings"
        if not has_good and not has_bad:
            if not good - bad:
                return GOOD, f"{what}, without BAD's warnings"
            if not bad - good:
                return BAD, f"{what}, without GOOD's warnings"
        return UNCLEAR, f"{what}: warnings like neither GOOD's nor BAD's"

    def __call__(self, outcome: Outcome | Mapping[str, Any]) -> tuple[Verdict, str]:
        outcome = as_outcome(outcome)
        what = describe(outcome)
        if not outcome:
            return UNCLEAR, what
        if self.measure is not None:
            return self._by_measure(outcome, what)
        if not self.by_exit and self.error(self.good) == self.error(self.bad):
            return self._by_warnings(outcome, what)
        sig, err = self._sig(outcome), self.error(outcome)
        if self.error is _last_exception and err:
            tb = outcome.traceback
            what = f"{what} ... {tb.type}: {short(str(tb.message or ''), 60)}"
        if self.by_exit:
            if sig == self._sig(self.bad):
                return BAD, f"{what}, like BAD"
            if sig == self._sig(self.good):
                return GOOD, f"{what}, like GOOD"
        elif sig == self._sig(self.bad):
            if err == self.error(self.bad):
                return BAD, f"{what}, like BAD"
            if err == self.error(self.good):
                return GOOD, f"{what}, like GOOD"
        if err and err == self.error(self.bad):
            return BAD, f"{what}, BAD's error"
        return UNCLEAR, f"{what}: like neither GOOD ({describe(self.good)}) nor BAD"
