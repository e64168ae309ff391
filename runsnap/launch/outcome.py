"""``[outcome]``: what happened when the child ran, built from what :mod:`runsnap.launch` saw.

:func:`build` turns a finished launch (its result, and the
:class:`~runsnap.launch.streams.StreamWatch` of each stream) into plain section data; :func:`cut`
bounds its tracebacks after redaction. Nothing here runs programs or writes files.
"""

from __future__ import annotations

from runsnap.base.timestamps import without_timestamp
from runsnap.launch.lines import MAX_LINE_BYTES
from runsnap.launch.metrics import merge
from runsnap.launch.streams import DEFAULT_TAIL_LINES, MAX_WARNINGS, StreamWatch
from runsnap.launch.tracebacks import MAX_EARLIER
from runsnap.launch.tracebacks import cut as cut_traceback_text
from runsnap.snapshot.records import Outcome

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from runsnap.launch import LaunchResult
    from runsnap.snapshot.shapes import OutcomeSection, Stream, Traceback

__all__ = ["DEFAULT_TAIL_LINES", "build", "cut"]


def cut(section: dict[str, Any]) -> dict[str, Any]:
    """The outcome section with its tracebacks' messages and source lines cut to their
    lengths: called after redaction, so that a secret is hidden whole before it is cut."""
    read, out = Outcome(section), dict(section)
    if read.has("traceback"):
        out["traceback"] = cut_traceback_text(read.traceback.raw)
    if read.has("earlier_tracebacks"):
        out["earlier_tracebacks"] = [cut_traceback_text(t.raw) for t in read.earlier_tracebacks]
    return out


def build(result: LaunchResult, *, tail_lines: int = DEFAULT_TAIL_LINES) -> OutcomeSection:
    """The ``[outcome]`` section for a finished (or never started) launch.

    Keys: ``status`` (``exited``, ``signalled``, ``not_found``, ``not_executable``,
    ``failed``), ``exit_status`` (what runsnap exits with: the child's status, 128+N for a
    signal, 127/126 when it could not run), ``signal`` and ``signal_number`` when killed,
    ``timed_out`` when the run's timeout stopped it,
    ``started_at``/``ended_at`` (UTC), ``duration_s``, ``pid``, ``peak_rss_bytes`` and how it
    was measured, per stream ``stdout``/``stderr`` tables (``mode``, ``lines``, ``bytes``,
    ``unscanned_bytes``, ``tail``), ``first_error`` and ``first_error_stream``, ``traceback`` (the last Python
    traceback printed: ``type``, ``message``, ``frames``, see :mod:`runsnap.launch.tracebacks`) and
    ``earlier_tracebacks`` (complete ones printed before it),
    ``warnings`` and ``warnings_count``, ``metrics`` (the last value of each ``key=value`` /
    ``key: value`` number and of each ``--metric``, :mod:`runsnap.launch.metrics`),
    ``log`` (path, sha256, bytes) when teed, and ``errors``.
    """
    out = _how_it_ended(result)
    out["tail_lines"] = tail_lines
    _what_it_printed(out, result)
    watches = [result.watches[n].metrics for n in ("stderr", "stdout") if n in result.watches]
    if watches:
        out["metrics"] = merge(watches)
    if result.log_path is not None:
        out["log"] = {"path": result.log_path, "sha256": result.log_sha256,
                      "bytes": result.log_bytes}
    out["errors"] = list(result.errors)
    return out


def _how_it_ended(result: LaunchResult) -> OutcomeSection:
    """Status, exit status, signal, times, pid and peak memory: what :func:`build` begins with."""
    out: OutcomeSection = {
        "status": result.status,
        "exit_status": result.exit_status,
    }
    if result.signal_number is not None:
        out["signal"] = result.signal_name
        out["signal_number"] = result.signal_number
    if result.error:
        out["error"] = result.error
    if result.timed_out:
        out["timed_out"] = True
    out["started_at"] = result.started_at
    out["ended_at"] = result.ended_at
    out["duration_s"] = round(result.duration_s, 3)
    if result.pid is not None:
        out["pid"] = result.pid
    if result.tree_rss_peak is not None:
        out["peak_rss_bytes"] = result.tree_rss_peak
    out["peak_rss"] = {
        "how": "/proc (psutil where there is none): summed RSS of the child and its "
               "descendants, sampled",
        "samples": result.rss_samples,
        "interval_s": result.rss_interval,
    }
    return out


def _stream(mode: str, watch: StreamWatch | None) -> Stream:
    """One stream's table: how it was connected, and its counts and tail when it was read."""
    stream: Stream = {"mode": mode}
    if watch is None:
        stream["captured"] = False
        stream["reason"] = _NOT_CAPTURED.get(mode, "output not read")
        return stream
    stream["lines"] = watch.lines
    stream["bytes"] = watch.bytes
    if watch.unscanned_bytes:
        stream["unscanned_bytes"] = watch.unscanned_bytes
    stream["tail"] = watch.tail_text()
    return stream


def _what_it_printed(out: OutcomeSection, result: LaunchResult) -> None:
    """The streams' tables, then what both streams say together: the first error (the one
    that arrived first), the last traceback (stderr's when both printed one) and the earlier
    ones, and the warnings (one of each, the time stamps left aside)."""
    first: tuple[float, str, str] | None = None
    traceback: Traceback | None = None
    earlier: list[Traceback] = []
    warnings: list[str] = []
    warnings_count = 0
    for name in ("stdout", "stderr"):
        watch = result.watches.get(name)
        out["stdout" if name == "stdout" else "stderr"] = _stream(result.modes.get(name, "none"),
                                                                  watch)
        if watch is None:
            continue
        if watch.first_error is not None and watch.first_error_at is not None:
            if first is None or watch.first_error_at < first[0]:
                first = (watch.first_error_at, name, watch.first_error)
        seen = {without_timestamp(w) for w in warnings}
        warnings.extend(w for w in watch.warnings if without_timestamp(w) not in seen)
        if watch.traceback.last is not None and (traceback is None or name == "stderr"):
            if traceback is not None:
                earlier.append(traceback)
            traceback = watch.traceback.last
        elif watch.traceback.last is not None:
            earlier.append(watch.traceback.last)
        earlier[:0] = watch.traceback.earlier
        warnings_count += watch.warnings_count
    if first is not None:
        out["first_error"] = _carried(first[2], traceback)
        out["first_error_stream"] = first[1]
    if traceback is not None:
        out["traceback"] = traceback
    if earlier:
        out["earlier_tracebacks"] = earlier[-MAX_EARLIER:]
    out["warnings"] = warnings[:MAX_WARNINGS]
    out["warnings_count"] = warnings_count

def _carried(first: str, traceback: Any) -> str:
    """``first``, or the error it carries when it says nothing past its type: mp.spawn's
    ``torch.multiprocessing.spawn.ProcessRaisedException:`` ends its line empty and prints the
    worker's traceback below, whose last exception (``DistStoreError: wait timeout after
    15000ms``) is the error the run died of.

    >>> tb = {"type": "DistStoreError", "message": "wait timeout after 15000ms"}
    >>> _carried("torch.multiprocessing.spawn.ProcessRaisedException: ", tb)
    'torch.multiprocessing.spawn.ProcessRaisedException: DistStoreError: wait timeout after 15000ms'
    >>> _carried("ValueError: bad", tb)
    'ValueError: bad'
    """
    head = first.strip()
    if not head.endswith(":") or " " in head or not isinstance(traceback, dict):
        return first
    kind, message = traceback.get("type"), traceback.get("message")
    if not kind or not message or head[:-1] == kind:
        return first
    return f"{head} {kind}: {message}"[:MAX_LINE_BYTES]


_NOT_CAPTURED = {
    "inherit": "a terminal passed to the child as it is (--inherit-tty): nothing to read",
    "none": "the stream was closed when runsnap started",
    "exec": "--exec: runsnap replaced itself with the child",
}
