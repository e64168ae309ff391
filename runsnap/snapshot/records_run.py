"""The run's sections (``[process]``, ``[outcome]``, ``[tests]``) as frozen records: GENERATED from
the declarations of ``runsnap/snapshot/shapes*.py`` by ``python -m runsnap.snapshot.shapes``;
do not edit (``tests/test_shapes.py`` fails when it differs from them). The fields' meanings
are documented in the declarations; how a record is read from its mapping, in
:mod:`runsnap.snapshot.sectionrecord`. Read through ``snap.records``.
"""

from __future__ import annotations

from runsnap.snapshot.sectionrecord import SectionRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["Frame", "LogFile", "Outcome", "PeakRss", "Process", "ProcessChild", "ProcessLibrary",
           "Stream", "TestResult", "Tests", "Traceback"]


class ProcessChild(SectionRecord):
    """A child process of a process snapshotted with ``capture --pid``."""

    argv: Sequence[str]
    pid: int | None
    ppid: int | None
    name: str | None
    error: str | None


class ProcessLibrary(SectionRecord):
    """A shared library the running process has mapped."""

    name: str | None
    path: str | None
    version: str | None


class Process(SectionRecord):
    """``[process]``: what only a process already running shows (``capture --pid``)."""

    errors: Sequence[str]
    pid: int | None
    ppid: int | None
    name: str | None
    exe: str | None
    user: str | None
    status: str | None
    started_at: str | None
    num_threads: int | None
    libraries_count: int | None
    children: tuple[ProcessChild, ...]
    libraries: Mapping[str, ProcessLibrary]


class Stream(SectionRecord):
    """What one of the child's output streams showed (``[outcome] stdout``/``stderr``)."""

    mode: str | None
    lines: int | None
    bytes: int | None
    unscanned_bytes: int | None
    tail: Sequence[str]
    captured: bool | None
    reason: str | None


class LogFile(SectionRecord):
    """The ``--log`` file the child's whole output went to."""

    path: str | None
    sha256: str | None
    bytes: int | None


class PeakRss(SectionRecord):
    """How ``peak_rss_bytes`` was measured."""

    how: str | None
    samples: int | None
    interval_s: float | None


class Frame(SectionRecord):
    """One frame of a Python traceback the child printed."""

    file: str | None
    line: int | None
    function: str | None
    code: str | None
    names: Sequence[str]


class Traceback(SectionRecord):
    """A complete Python traceback the child printed."""

    type: str | None
    message: str | None
    frames: tuple[Frame, ...]


class Outcome(SectionRecord):
    """``[outcome]``: how the launch ended, written when the child ends."""

    errors: Sequence[str]
    status: str | None
    exit_status: int | None
    signal: str | None
    signal_number: int | None
    error: str | None
    started_at: str | None
    ended_at: str | None
    duration_s: float | None
    pid: int | None
    peak_rss_bytes: int | None
    tail_lines: int | None
    first_error: str | None
    first_error_stream: str | None
    warnings: Sequence[str]
    warnings_count: int | None
    metrics: Mapping[str, float]
    timed_out: bool | None
    stdout: Stream
    stderr: Stream
    log: LogFile
    peak_rss: PeakRss
    traceback: Traceback
    earlier_tracebacks: tuple[Traceback, ...]


class TestResult(SectionRecord):
    """One test of a pytest session (``runsnap/pytestplugin``), keyed by its node id."""

    outcome: str | None
    error: str | None
    duration_s: float | None


class Tests(SectionRecord):
    """``[tests]``: each test's outcome in a pytest session run with ``--runsnap``
    (docs/pytest.md): the session's behaviour, as ``[outcome]`` is a launch's."""

    errors: Sequence[str]
    runner: str | None
    counts: Mapping[str, int]
    cases: Mapping[str, TestResult]
