"""What the text and Markdown renderers of a diff share: the report types, the outcome fields
that are the run's own words, the consequences counted on one line, keys without repeats."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runsnap.diffing.grouprecord import echoes
from runsnap.diffing.many_result import NReport
from runsnap.diffing.result import LISTED, Difference, Report, short
from runsnap.render.style import LIKELY

#: A report of two snapshots or of N.
AnyReport = Report | NReport

#: Outcome values that are the run's own words: never cut shorter than the terminal allows.
WORDS = ("first_error", "error")


def consequence_line(report: Report) -> str:
    """The consequences folded under the outcome, counted on one line.

    >>> from runsnap.diffing.result import SnapInfo
    >>> i = SnapInfo(None, "a", "", "")
    >>> c = (Difference("runtime", "env X", "added", None, "1", path=("runtime", "env", "X")),
    ...      Difference("runtime", "module m", "removed", {}, None,
    ...                 path=("runtime", "modules", "m")))
    >>> consequence_line(Report(i, i, (), consequences=c))
    'Consequences, not causes: 1 variable read and 1 module imported in one run only (--all lists them)'
    """
    reads = sum(1 for d in report.consequences if d.path[1:2] == ("env",) and len(d.path) <= 3)
    mods = sum(1 for d in report.consequences if d.path[1:2] == ("modules",))
    other = len(report.consequences) - reads - mods
    parts = ([f"{reads} variable{'s' if reads != 1 else ''} read"] if reads else []) + (
        [f"{mods} module{'s' if mods != 1 else ''} imported"] if mods else [])
    text = " and ".join(parts) + " in one run only" if parts else ""
    if other:
        text += f"{'; ' if text else ''}{other} other run-time difference{'s' if other != 1 else ''}"
    more = "" if report.show_all else " (--all lists them)"
    return f"Consequences, not causes: {text}{more}"


def dedupe_keys(diffs: Sequence[Difference]) -> list[str]:
    """The differences' keys, each once, in order (linear: a dict keeps the order)."""
    return list(dict.fromkeys(d.key for d in diffs))


#: How many differences the text report details before listing the rest one line each.
DETAILED = 10

def change_words(d: Difference) -> str:
    """A few words for the change, as the text report titles it.

    >>> change_words(Difference("env", "X", "removed", "1", None))
    'set in A only'
    >>> change_words(Difference("packages", "torch", "upgraded", "1", "2"))
    'upgraded'
    """
    if d.change == "removed":
        return "set in A only" if d.section == "env" else "in A only"
    if d.change == "added":
        return "set in B only" if d.section == "env" else "in B only"
    return d.change


def only_differing(a: Any, b: Any) -> tuple[Any, Any]:
    """Two lists as what differs between them: the entries only one side has, with a count
    of those both have; other values as they are.

    >>> only_differing(["/usr/lib", "/a/site"], ["/usr/lib", "/b/site"])
    ('/a/site (+1 shared)', '/b/site (+1 shared)')
    >>> only_differing(["x", "y"], ["y", "x"])
    (['x', 'y'], ['y', 'x'])
    >>> only_differing({"file": "/a", "dist": "d"}, {"file": "/b", "dist": "d"})
    ({'file': '/a'}, {'file': '/b'})
    """
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        keys = [k for k in {**a, **b} if a.get(k) != b.get(k)]
        return ({k: a.get(k) for k in keys}, {k: b.get(k) for k in keys}) if keys else (a, b)
    if not (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))):
        return a, b
    only_a = [x for x in a if x not in b]
    only_b = [x for x in b if x not in a]
    if not only_a and not only_b:
        return a, b  # another order: the order is what differs
    shared = len(a) - len(only_a)

    def side(only: list[Any]) -> str:
        text = ", ".join(short(x, 400) for x in only) or "(nothing of its own)"
        return f"{text} (+{shared} shared)" if shared else text

    return side(only_a), side(only_b)


def news(cause: Difference, show_all: bool = False) -> list[Difference]:
    """The differences grouped under ``cause`` that a reader is shown: not hidden (unless
    ``--all``), and not an echo of the cause (:func:`echoes`; JSON and ``--all`` keep them)."""
    return [r for r in cause.related
            if show_all or not (r.hidden or echoes(cause, r))]


#: Candidates of an undecided verdict shown in detail: those the verdict names (the others a
#: line each below).
CANDIDATES_DETAILED = LISTED
#: Differences the runs show unread listed one a line up to this many; more are one line.
UNREAD_LISTED = 3
#: How the line of those begins.
UNREAD_HEAD = "Read by no process: "


def detailed(report: Report, shown: Sequence[Difference]) -> list[Difference]:
    """The differences shown in detail: the cause when the verdict is confident, the
    candidates when it is undecided (at most :data:`DETAILED`), else those scored
    :data:`LIKELY` or more."""
    counted = [d for d in shown if not d.hidden and d.section != "outcome"]
    if report.candidates and report.outcome != "same":
        named = _among(counted, report.candidates)
        if named:  # many candidates: the first few in detail, the others a line each below
            return named[:CANDIDATES_DETAILED]
    return [d for d in counted if d.score >= LIKELY][:DETAILED]


def _among(items: Sequence[Difference], pool: Sequence[Difference]) -> list[Difference]:
    """The items equal to one of ``pool``, compared only with those of the same section, key
    and change (``d in pool`` compared every pair: 12.5M comparisons for 5,000 variables)."""
    by_key: dict[tuple[str, str, str], list[Difference]] = {}
    for c in pool:
        by_key.setdefault((c.section, c.key, c.change), []).append(c)
    return [d for d in items
            if any(c is d or c == d for c in by_key.get((d.section, d.key, d.change), ()))]
