"""``[tests]``: each test's outcome in a pytest session (``pytest --runsnap``, docs/pytest.md).

A test that ended otherwise (passed in A, failed in B) is what happened, as a launch's exit
status is: its difference is an *outcome* difference (section ``outcome``, key ``test NODE_ID``,
locator ``tests.cases.NODE_ID``), ranked below the causes and explained by them with the same
evidence as a launch's failure. Durations are left out (they differ on every run), and so are
the counts (the tests themselves say it). Self-contained: only the records of
:mod:`runsnap.diffing.result` are used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runsnap.diffing.result import Difference
from runsnap.diffing.written import record
from runsnap.snapshot.records import TestResult, Tests

__all__ = ["changed_tests", "compare"]


def _cases(section: Mapping[str, Any]) -> Mapping[str, TestResult]:
    return record(Tests, section).cases if isinstance(section, Mapping) else {}


def _outcome(case: TestResult | None) -> str | None:
    return str(case.outcome) if case is not None and case.outcome else None


def changed_tests(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """The node ids of the tests that ended otherwise in ``b`` than in ``a`` (or ran in one
    session only), in order.

    >>> changed_tests({"cases": {"t::x": {"outcome": "passed"}, "t::y": {"outcome": "passed"}}},
    ...               {"cases": {"t::x": {"outcome": "failed"}, "t::y": {"outcome": "passed"}}})
    ['t::x']
    """
    ca, cb = _cases(a), _cases(b)
    return [n for n in sorted({*ca, *cb}) if _outcome(ca.get(n)) != _outcome(cb.get(n))]


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """One outcome difference per test that ended otherwise, its errors as evidence."""
    ca, cb = _cases(a), _cases(b)
    out = []
    for nodeid in changed_tests(a, b):
        x, y = ca.get(nodeid), cb.get(nodeid)
        ox, oy = _outcome(x), _outcome(y)
        evidence = tuple(f"{side}: {case.error}" for side, case in (("A", x), ("B", y))
                         if case is not None and case.error)
        change = "changed" if ox and oy else "added" if oy else "removed"
        out.append(Difference("outcome", f"test {nodeid}", change, ox, oy, evidence=evidence,
                              path=("tests", "cases", nodeid)))
    return out
