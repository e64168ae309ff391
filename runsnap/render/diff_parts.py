"""What the text and Markdown renderers of a diff share: the report types, the outcome fields
that are the run's own words, the consequences counted on one line, keys without repeats."""

from __future__ import annotations

from collections.abc import Sequence

from runsnap.diffing.many_result import NReport
from runsnap.diffing.result import Difference, Report

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
