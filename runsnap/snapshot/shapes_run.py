"""The sections of what a run did, declared as :class:`~typing.TypedDict`: ``[process]`` (a
running process read with ``capture --pid``), ``[outcome]`` (a launch's end) and ``[tests]`` (a
pytest session's). Part of :mod:`runsnap.snapshot.shapes`, which declares every section and
imports these; cut from it along this seam to keep each module under 500 lines.
"""

from __future__ import annotations

from typing import Annotated, TypedDict

from runsnap.snapshot.shape_marks import (
    Compare,
    Doc,
    Errors,
    NotCompared,
    Ref,
)


class ProcessChild(TypedDict, total=False):
    """A child process of a process snapshotted with ``capture --pid``."""

    argv: list[str]
    pid: int | None
    ppid: int | None
    name: str | None
    error: str | None
    """Why its details could not be read (the exception's name)."""


class ProcessLibrary(TypedDict, total=False):
    """A shared library the running process has mapped."""

    name: str | None
    path: str | None
    version: str | None


class ProcessSection(TypedDict, total=False):
    """``[process]``: what only a process already running shows (``capture --pid``)."""

    errors: Errors
    pid: Annotated[int | None, Compare()]
    ppid: Annotated[int | None, Compare()]
    name: Annotated[str | None, Compare()]
    exe: Annotated[str | None, Compare()]
    user: Annotated[str | None, Compare()]
    status: Annotated[str | None, Compare()]
    started_at: Annotated[str | None, Compare()]
    num_threads: Annotated[int | None, Compare()]
    libraries_count: Annotated[int | None, NotCompared(
        "the number of libraries, whose entries are compared one by one")]
    children: Annotated[list[ProcessChild], Compare()]
    libraries: Annotated[dict[str, ProcessLibrary], Compare()]


class Stream(TypedDict, total=False):
    """What one of the child's output streams showed (``[outcome] stdout``/``stderr``).

    Marked field by field: ``diff`` compares what the run said (its last lines), not how much
    or how runsnap read it."""

    mode: Annotated[str | None, NotCompared("how runsnap read the stream, a setting of the capture")]
    """How runsnap read it: ``pty``, ``pipe``, ``inherit``, ``none``, ``exec``."""
    lines: Annotated[int | None, NotCompared(
        "how much the run printed; what it printed last is compared through tail")]
    bytes: Annotated[int | None, NotCompared(
        "how much the run printed; what it printed last is compared through tail")]
    unscanned_bytes: Annotated[int | None, NotCompared(
        "what runsnap left unread for errors, a bound of the capture")]
    tail: Annotated[list[str], Compare()]
    """Its last lines; the outcome's comparer compares the last one printed (stderr's when
    stdout printed none), its numbers as metrics."""
    captured: Annotated[bool | None, NotCompared("whether runsnap kept the stream, a setting of the capture")]
    reason: Annotated[str | None, NotCompared("why it was not captured; captured says it")]
    """Why it was not captured."""


class Frame(TypedDict, total=False):
    """One frame of a Python traceback the child printed."""

    file: str | None
    line: int | None
    function: str | None
    code: str | None
    """The source line Python printed under it."""
    names: list[str]
    """Config keys and option names standing in that function's code (``launch.frame_names``)."""


class Traceback(TypedDict, total=False):
    """A complete Python traceback the child printed."""

    type: str | None
    message: str | None
    frames: list[Frame]


class LogFile(TypedDict, total=False):
    """The ``--log`` file the child's whole output went to."""

    path: str | None
    sha256: str | None
    bytes: int | None


class PeakRss(TypedDict, total=False):
    """How ``peak_rss_bytes`` was measured."""

    how: str | None
    samples: int | None
    interval_s: float | None


class OutcomeSection(TypedDict, total=False):
    """``[outcome]``: how the launch ended, written when the child ends."""

    errors: Errors
    status: Annotated[str | None, NotCompared("follows exit_status and signal, which are compared")]
    """``exited``, ``signalled``, ``not_found``, ``not_executable``, ``failed``."""
    exit_status: Annotated[int | None, Compare()]
    signal: Annotated[str | None, Compare()]
    signal_number: Annotated[int | None, NotCompared("the number of signal, which is compared")]
    error: Annotated[str | None, NotCompared("why the launch failed to start; status and first_error say it")]
    started_at: Annotated[str | None, Compare()]
    ended_at: Annotated[str | None, Compare()]
    duration_s: Annotated[float | None, Compare()]
    pid: Annotated[int | None, NotCompared("differs on every run")]
    peak_rss_bytes: Annotated[int | None, Compare()]
    tail_lines: Annotated[int | None, NotCompared("a setting of the capture, not of the run")]
    first_error: Annotated[str | None, Compare()]
    first_error_stream: Annotated[str | None, NotCompared("where first_error was printed, which is compared")]
    warnings: Annotated[list[str], Compare()]
    warnings_count: Annotated[int | None, NotCompared(
        "the number of warnings, whose entries are compared one by one")]
    metrics: Annotated[dict[str, float], Compare(), Doc(
        "The last value of each key=value / key: value number the run printed, and of each "
        "--metric (runsnap/launch/metrics.py).")]
    timed_out: Annotated[bool | None, Compare(75, "the run hit its time limit in one run only")]
    stdout: Annotated[Stream, Ref("stream"), Compare(fields=True)]
    stderr: Annotated[Stream, Ref("stream"), Compare(fields=True)]
    log: Annotated[LogFile, NotCompared(
        "where the output was kept; its lines are compared through stdout and stderr")]
    peak_rss: Annotated[PeakRss, NotCompared("how peak_rss_bytes was measured")]
    traceback: Annotated[Traceback, NotCompared(
        "its message is first_error, compared; its frames are the evidence")]
    earlier_tracebacks: Annotated[list[Traceback], NotCompared(
        "printed before the last one; first_error and the last traceback tell the outcome")]
    """Complete tracebacks printed before the last one (a worker's, then its launcher's)."""


class TestResult(TypedDict, total=False):
    """One test of a pytest session (``runsnap/pytestplugin``), keyed by its node id."""

    outcome: str | None
    """``passed``, ``failed``, ``error`` (in setup or teardown), ``skipped``, ``xfailed``,
    ``xpassed``."""
    error: str | None
    """The first line of its error (failed, error), or why it was skipped or expected to fail."""
    duration_s: float | None
    """Setup, call and teardown together."""


class TestsSection(TypedDict, total=False):
    """``[tests]``: each test's outcome in a pytest session run with ``--runsnap``
    (docs/pytest.md): the session's behaviour, as ``[outcome]`` is a launch's."""

    errors: Errors
    runner: Annotated[str | None, NotCompared("pytest's version and plugins; [packages] compares them")]
    """``pytest 8.3.2`` (with ``xdist, N workers`` when pytest-xdist ran it)."""
    counts: Annotated[dict[str, int], NotCompared("the tests themselves are compared one by one")]
    """Outcome -> how many tests had it."""
    cases: Annotated[dict[str, TestResult], Compare()]
    """Node id (``tests/test_x.py::test_y[param]``) -> the test's outcome."""
