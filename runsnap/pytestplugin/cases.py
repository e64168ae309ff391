"""Each test's outcome from pytest's reports (setup, call, teardown), as ``[tests]`` holds it,
and the failing tests' tracebacks as ``[outcome]`` holds a launch's.

Only what a report carries across pytest-xdist's wire is read (``outcome``, ``when``,
``duration``, ``wasxfail``, ``longrepr``), so the reports of workers and of the controller's own
process read alike.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = ["Cases", "first_line", "traceback_of"]

#: The longest error line kept for a test (the whole message is in the test's own output).
ERROR_CHARS = 500


def first_line(text: object) -> str:
    """The first line of ``text`` that says something, cut to :data:`ERROR_CHARS`.

    >>> first_line("\\n  AssertionError: assert 1 == 2\\n + where 1 = f()")
    'AssertionError: assert 1 == 2'
    """
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()[:ERROR_CHARS]
    return ""


def _message(report: Any) -> str:
    """The error of a failed report (pytest's crash line), or a skip's reason."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (file, line, reason)
        return first_line(longrepr[2]).removeprefix("Skipped: ")
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return first_line(crash.message)
    return first_line(longrepr) if longrepr is not None else ""


def _entries(report: Any) -> list[Any]:
    tb = getattr(report.longrepr, "reprtraceback", None)
    if tb is None:  # a chained exception: the last one raised
        chain = getattr(report.longrepr, "chain", None) or []
        tb = chain[-1][0] if chain else None
    return list(getattr(tb, "reprentries", None) or [])


def traceback_of(report: Any, root: str) -> dict[str, Any] | None:
    """``[outcome] traceback`` (type, message, frames: file, line, function, code) of a failed
    report; files made absolute against ``root`` (pytest writes them relative)."""
    message = _message(report)
    kind, _, said = message.partition(": ")
    frames = []
    for entry in _entries(report):
        loc = getattr(entry, "reprfileloc", None)
        if loc is None:
            continue
        code = next((ln[1:].strip() for ln in getattr(entry, "lines", []) if ln.startswith(">")),
                    "")
        path = str(loc.path)
        frames.append({"file": path if os.path.isabs(path) else os.path.join(root, path),
                       "line": int(loc.lineno), "function": _function(entry), "code": code})
    if not frames and not message:
        return None
    return {"type": kind if said else "", "message": said if said else message,
            "frames": frames}


def _function(entry: Any) -> str:
    """The function of a traceback entry: pytest's long form names it in the source lines
    (``def test_x(...)``); failing that, the empty string."""
    for line in getattr(entry, "lines", []):
        text = line.lstrip(" >")
        if text.startswith(("def ", "async def ")):
            return text.split("def ", 1)[1].split("(", 1)[0]
    return ""


class Cases:
    """The tests of one session, as their reports arrive (in any order, from any worker)."""

    def __init__(self) -> None:
        self.cases: dict[str, dict[str, Any]] = {}
        self.failures: list[tuple[str, Any]] = []  # (node id, report), in the order they came

    def add(self, report: Any) -> None:
        """One report: a phase (setup, call, teardown) of one test."""
        case = self.cases.setdefault(report.nodeid, {"outcome": None, "duration_s": 0.0})
        case["duration_s"] = round(case["duration_s"] + float(report.duration or 0.0), 6)
        when, outcome = report.when, report.outcome
        xfail = getattr(report, "wasxfail", None)
        if outcome == "failed":
            failed = "failed" if when == "call" else "error"
            if case["outcome"] not in ("failed", "error"):
                case["outcome"] = failed
                case["error"] = _message(report)
                self.failures.append((report.nodeid, report))
        elif outcome == "skipped" and case["outcome"] is None:
            case["outcome"] = "xfailed" if xfail is not None else "skipped"
            case["error"] = str(xfail) if xfail else _message(report)
        elif outcome == "passed" and when == "call":
            case["outcome"] = "xpassed" if xfail is not None else "passed"
        elif outcome == "passed" and when == "teardown" and case["outcome"] is None:
            case["outcome"] = "passed"  # a test with no call phase recorded

    def section(self, runner: str) -> dict[str, Any]:
        """``[tests]``: the runner, the counts and each test's outcome, by node id."""
        cases: dict[str, Mapping[str, Any]] = {}
        counts: dict[str, int] = {}
        for nodeid in sorted(self.cases):
            case = {k: v for k, v in self.cases[nodeid].items() if v not in (None, "")}
            case.setdefault("outcome", "error")
            cases[nodeid] = case
            counts[case["outcome"]] = counts.get(case["outcome"], 0) + 1
        return {"errors": [], "runner": runner, "counts": dict(sorted(counts.items())),
                "cases": cases}
