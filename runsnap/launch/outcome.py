"""``[outcome]``: what happened when the child ran, built from what :mod:`runsnap.launch` saw.

Output is watched as it streams by (:class:`StreamWatch`): the last lines of each stream are
kept in a bounded buffer, and every line is checked for the *first error* (a Python exception
line, ``Error``, ``FATAL`` ...) and for *warnings* (``Warning``, ``WARN``), so that "a warning in
one run, an error in the other" shows up as two plain fields in a diff. Nothing here runs
programs or writes files; :func:`build` turns a finished launch into plain section data.
"""

from __future__ import annotations

import collections
import re
import threading
import time

from runsnap.launch.metrics import MetricWatch, merge
from runsnap.launch.tracebacks import MAX_EARLIER, TracebackWatch
from runsnap.launch.tracebacks import cut as cut_traceback_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from runsnap.launch import LaunchResult
    from runsnap.snapshot.shapes import OutcomeSection, Stream, Traceback

__all__ = [
    "DEFAULT_TAIL_LINES",
    "MAX_WARNINGS",
    "StreamWatch",
    "build",
    "clean_line",
    "cut",
    "is_error_line",
    "is_warning_line",
    "without_timestamp",
]

#: Lines of each stream kept for the outcome by default (``--tail-lines``).
DEFAULT_TAIL_LINES = 200

#: Distinct warning lines kept (in order of first appearance); the rest are only counted.
MAX_WARNINGS = 50

#: A line longer than this is cut, so one endless line cannot exhaust memory.
MAX_LINE_BYTES = 4096

# ANSI escape sequences (colours, cursor moves) and OSC titles: stripped from kept lines, since a
# coloured "WARNING" in a terminal run must compare equal to a plain one in a piped run.
_ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

# The first line that looks like an error. Python exception lines ("ValueError: ...",
# "torch.OutOfMemoryError: ..."), log levels, and what shells and the C runtime print.
_ERROR = re.compile(
    rb"(?:^|[\s\]\[:(])(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)(?::|$)"
    rb"|\b(?:ERROR|FATAL|CRITICAL|PANIC|Error|Fatal|fatal)\b"
    rb"|\berror:"
    rb"|Segmentation fault|core dumped|Traceback \(most recent call last\)"
    # a dotted exception class that opens the line, whatever its name ends with
    # ("packaging.version.InvalidVersion: ...", "yaml.scanner.ScannerError: ...")
    rb"|^(?:[A-Za-z_]\w*\.)+[A-Z]\w*[a-z]\w*:(?=\s|$)",
    re.MULTILINE,
)
# "Traceback (most recent call last)" is matched above only to let a chunk through the fast
# check; the line recorded is the exception line that ends the traceback when one follows.
_TRACEBACK = b"Traceback (most recent call last)"

_WARNING = re.compile(rb"\b(?:WARNING|WARN|Warning|warning|[A-Z]\w*Warning)\b")


def clean_line(raw: bytes) -> str:
    """One output line as a terminal would show it: no colours, no line end, last ``\\r`` part.

    >>> clean_line(b"\\x1b[33mWARNING\\x1b[0m  almost done\\r\\n")
    'WARNING  almost done'
    >>> clean_line(b" 10%|#   \\r 50%|#####   \\r")
    ' 50%|#####   '
    """
    line = raw.rstrip(b"\r\n")
    if b"\x1b" in line:
        line = _ANSI.sub(b"", line)
    if b"\r" in line:
        line = line.rsplit(b"\r", 1)[-1]
    return line.decode("utf-8", "replace")


# A time stamp that opens a log line, after an optional bracket and level word: ISO dates
# ("2026-11-29 17:02:12,004", "2026-11-29T17:02:12.004Z"), vLLM's "11-29 17:02:12", glog's
# "W1129 17:02:12.004123 12345", and a bare "17:02:12".
_LEADING_STAMP = re.compile(
    r"^(?P<pre>[\[(]?[ \t]*(?:(?:TRACE|DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|CRITICAL|FATAL)"
    r"[ \t:]+)?(?:[IWEF](?=\d{4} ))?)"
    r"(?:\d{4}[-/]\d{2}[-/]\d{2}[T ]|\d{4} +|\d{2}[-/]\d{2} +)?"
    r"\d{1,2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2}| ?UTC)?(?: +\d{2,7}(?= ))?[ \t]*")


def without_timestamp(line: str) -> str:
    """``line`` without the time stamp a logger put in front of it: the same warning logged by
    two runs at other times is the same warning, and the message, not the clock, is what fits
    on a terminal line. Time stamps inside the message are kept.

    >>> without_timestamp("[2026-11-29 17:02:12,004] WARNING model_config: Overwriting ...")
    'WARNING model_config: Overwriting ...'
    >>> without_timestamp("[2026-11-29 17:02:12 TP0] Warning: Target model's context_length")
    "[TP0] Warning: Target model's context_length"
    >>> without_timestamp("WARNING 11-29 17:02:12 [config.py:123] Casting torch.bfloat16")
    'WARNING [config.py:123] Casting torch.bfloat16'
    >>> without_timestamp("W1129 17:02:12.004123 12345 nccl.cc:12] NCCL_IB_HCA unset")
    'W nccl.cc:12] NCCL_IB_HCA unset'
    >>> without_timestamp("2026-11-29 17:02:12 - vllm - WARNING - low memory")
    'vllm - WARNING - low memory'
    >>> without_timestamp("/x/y.py:12: UserWarning: stopped after 00:10:00")
    '/x/y.py:12: UserWarning: stopped after 00:10:00'
    """
    m = _LEADING_STAMP.match(line)
    if m is None:
        return line
    pre, rest = m.group("pre"), line[m.end():]
    if pre and pre[0] in "[(":
        close, inner = ("]" if pre[0] == "[" else ")"), pre[1:].strip()
        if rest.startswith(close):  # the bracket held only the stamp (and maybe the level)
            rest = rest[1:].lstrip()
            return f"{inner} {rest}" if inner else rest
        return f"{pre[0]}{inner + ' ' if inner else ''}{rest}"
    if not pre:
        return rest.lstrip(" \t-|:,")
    return f"{pre} {rest}" if pre[-1].isalpha() else pre + rest


def is_error_line(line: str) -> bool:
    """Whether ``line`` looks like an error.

    >>> is_error_line("ValueError: Warning: Target model's context_length (262144) ...")
    True
    >>> is_error_line("[2026-01-01 10:00:00] ERROR scheduler.py:120: NCCL timeout")
    True
    >>> is_error_line("loaded 61 layers (0 errors)")
    False
    """
    data = line.encode("utf-8", "replace")
    if not any(word in data for word in _ERROR_WORDS) and not (b"." in data and b":" in data):
        return False  # no branch of _ERROR can match: every one needs a word or a dotted name
    return bool(_ERROR.search(data)) and _TRACEBACK not in data


def is_warning_line(line: str) -> bool:
    """Whether ``line`` looks like a warning (and not an error).

    >>> is_warning_line("[2026-01-01 10:00:00] WARNING model_config.py:1: Warning: ...")
    True
    >>> is_warning_line("ValueError: Warning: Target model's context_length ...")
    False
    """
    data = line.encode("utf-8", "replace")
    return bool(_WARNING.search(data)) and not is_error_line(line)


#: Output waiting to be scanned for errors and warnings, at most (per stream). A child that
#: writes faster than the scan keeps up with is relayed at full speed; what arrives while this
#: much is still waiting is relayed and counted but not scanned (the outcome says how much).
MAX_BACKLOG_BYTES = 1 << 20

# Words without which neither pattern can match: ``in`` checks (C speed) decide whether a chunk
# needs the regular expressions at all, and which of its lines do.
_ERROR_WORDS = (b"Error", b"Exception", b"ERROR", b"FATAL", b"Fatal", b"fatal", b"CRITICAL",
                b"PANIC", b"error:", b"Segmentation fault", b"core dumped", _TRACEBACK)
_WARNING_WORDS = (b"WARN", b"Warning", b"warning")


class StreamWatch:
    """Watches one output stream as it passes: last lines, first error, warnings, counts.

    Two steps, so that relaying never waits on scanning: :meth:`take` (the relaying thread,
    for every chunk) keeps the counts and the tail exactly and queues the chunk;
    :meth:`scan` looks for errors, warnings and tracebacks in what is queued (the relay calls
    it while the child is quiet, and at the end). A queue over :data:`MAX_BACKLOG_BYTES` is not
    grown: such output is counted in :attr:`unscanned_bytes`. :meth:`feed` does both at once.
    """

    def __init__(self, name: str, tail_lines: int = DEFAULT_TAIL_LINES,
                 metrics: MetricWatch | None = None) -> None:
        self.name = name
        self.metrics = MetricWatch() if metrics is None else metrics
        self.tail: collections.deque[bytes] = collections.deque(maxlen=max(tail_lines, 0))
        self.lines = 0
        self.bytes = 0
        self.unscanned_bytes = 0
        self.first_error: str | None = None
        self.first_error_at: float | None = None
        self._arrived = 0.0
        self.warnings: list[str] = []
        self.warnings_count = 0
        self._warning_keys: set[str] = set()
        self._partial = b""
        self._tail_partial = b""
        self._rest_dropped = False
        """True while the rest of a line cut at :data:`MAX_LINE_BYTES` is being dropped."""
        self._backlog: collections.deque[tuple[bytes, float, bool]] = collections.deque()
        """(chunk, when it arrived, whether output was dropped just before it)."""
        self._backlog_bytes = 0
        self._gap = False
        self._unscanned_lines = 0
        """Lines ended in output counted but not queued since the last queued chunk."""
        self._traceback_seen = False
        self.traceback = TracebackWatch()
        self._lock = threading.Lock()

    def feed(self, data: bytes, arrived: float | None = None) -> None:
        """Take one chunk of output and scan it now (any size, lines may be split across
        chunks); ``arrived`` is when it was read (:func:`time.monotonic`), so that the first
        error of two streams is the one that arrived first, not the one processed first."""
        self.take(data, arrived)
        self.scan()

    def take(self, data: bytes, arrived: float | None = None) -> None:
        """Count ``data``, keep the tail, and queue it for :meth:`scan` (cheap: no line is
        looked at, only the chunk's last :attr:`tail` lines are split off)."""
        with self._lock:
            when = time.monotonic() if arrived is None else arrived
            self.bytes += len(data)
            newlines = data.count(b"\n")
            self.lines += newlines
            self._keep_tail(data)
            if self._backlog_bytes + len(data) > MAX_BACKLOG_BYTES:
                self.unscanned_bytes += len(data)
                self._gap = True
                self._unscanned_lines += newlines
                return
            self._backlog.append((data, when, self._gap))
            self._backlog_bytes += len(data)
            self._gap = False  # from now on: whether output was dropped after the last queued
            self._unscanned_lines = 0

    def _keep_tail(self, data: bytes) -> None:
        keep = self.tail.maxlen or 0
        cut = data.rfind(b"\n")
        if cut < 0:  # an endless line: enough of its start to cut it (see _cut_line)
            if len(self._tail_partial) <= MAX_LINE_BYTES:
                self._tail_partial += data[:MAX_LINE_BYTES + 1 - len(self._tail_partial)]
            return
        first = data.find(b"\n")
        head = self._tail_partial + data[:min(first, MAX_LINE_BYTES + 1)]
        start, found = cut, 0
        while found < keep and start > first:  # the last ``keep`` line ends, from the right
            start = data.rfind(b"\n", first, start)
            found += 1
        if found < keep:
            self.tail.append(_bounded(head))
        if start < cut:
            self.tail.extend(_bounded(line) for line in data[start + 1:cut].split(b"\n"))
        self._tail_partial = data[cut + 1:cut + 2 + MAX_LINE_BYTES]

    @property
    def pending(self) -> int:
        """Bytes taken and not scanned yet."""
        return self._backlog_bytes

    def scan(self, limit: int | None = None) -> None:
        """Scan queued output, oldest first (about ``limit`` bytes, or all of it)."""
        done = 0
        while limit is None or done < limit:
            with self._lock:
                if not self._backlog:
                    return
                data, self._arrived, after_gap = self._backlog.popleft()
                self._backlog_bytes -= len(data)
                if after_gap:  # output was skipped before this chunk: its first line is a part
                    self._rest_dropped = False
                    self._partial = b""
                    self._traceback_seen = False
                    self.traceback.interrupt()
                    cut = data.find(b"\n")
                    data = data[cut + 1:] if cut >= 0 else b""
                done += len(data)
                self._scan_chunk(data)

    def _scan_chunk(self, data: bytes) -> None:
        if self._rest_dropped:  # the rest of a line already cut
            end = data.find(b"\n")
            if end < 0:
                return
            data, self._rest_dropped = data[end + 1:], False
        buf = self._partial + data if self._partial else data
        cut = buf.rfind(b"\n")
        block = buf[:cut] if cut >= 0 else None
        self._partial = buf[cut + 1:]
        if len(self._partial) > MAX_LINE_BYTES:  # an endless line: cut, the rest dropped
            piece, self._partial = _cut_line(self._partial), b""
            self._rest_dropped = True
            block = piece if block is None else block + b"\n" + piece
        if block is not None:
            self._look(block)

    def close(self) -> None:
        """The stream ended: scan what is queued; a last line without a line end counts.

        When the end of the output went unscanned (the child outran the scan to its last
        write), the lines of the tail that were not scanned are scanned now: the last values
        of the metrics and the traceback a run ends with are in them."""
        self.scan()
        with self._lock:
            unscanned = self._unscanned_lines if self._gap else 0
            if self._tail_partial:
                self.lines += 1
                self.tail.append(_bounded(self._tail_partial))
                self._tail_partial = b""
                unscanned += self._gap
            if self._gap:
                self._partial = b""  # the start of a line whose rest went unscanned
                self._rest_dropped = self._traceback_seen = False
                self.traceback.interrupt()
                last = list(self.tail)[-unscanned:] if unscanned else []
                if last:
                    self._look(b"\n".join(last))
            elif self._partial:
                self._look(self._partial)
                self._partial = b""

    def _look(self, chunk: bytes) -> None:
        """Errors, warnings and tracebacks in ``chunk`` (whole lines joined by newlines)."""
        if b"\x1b" in chunk:
            chunk = _ANSI.sub(b"", chunk)
        before = self.traceback.last
        self.metrics.feed(chunk)
        if self.traceback.active or _TRACEBACK in chunk:
            for raw in chunk.split(b"\n"):
                self.traceback.line(clean_line(raw))
        if self.first_error is None and any(word in chunk for word in _ERROR_WORDS):
            self._find_error([raw for raw in chunk.split(b"\n")
                              if any(word in raw for word in _ERROR_WORDS)])
        tb = self.traceback.last
        if self.first_error is None and tb is not None and tb is not before:
            # an exception line no error word finds ("packaging.version.InvalidVersion: ..."):
            # the traceback it ends says it is one
            self.first_error = (f"{tb['type']}: {tb['message']}" if tb.get("message")
                                else str(tb["type"]))[:MAX_LINE_BYTES]
            self.first_error_at = self._arrived
        if any(word in chunk for word in _WARNING_WORDS):
            self._find_warnings(chunk)

    def _find_warnings(self, chunk: bytes) -> None:
        """The warning lines of ``chunk``. Every match holds one of :data:`_WARNING_WORDS`:
        the next line holding one is found with ``bytes.find`` (C speed; each word's next
        place is kept, so the chunk is read once per word), and only that line is searched,
        so the lines without a warning (a log's many progress and metric lines) cost no
        Python step."""
        size = len(chunk)
        nexts = [chunk.find(word) for word in _WARNING_WORDS]
        while True:
            at = min((n for n in nexts if n >= 0), default=-1)
            if at < 0:
                return
            start = chunk.rfind(b"\n", 0, at) + 1
            end = chunk.find(b"\n", at)
            pos = size if end < 0 else end + 1
            nexts = [chunk.find(word, pos) if 0 <= n < pos else n
                     for word, n in zip(_WARNING_WORDS, nexts, strict=True)]
            raw = chunk[start:pos]
            if not _WARNING.search(raw):
                continue
            line = clean_line(raw)
            if is_error_line(line):
                continue
            self.warnings_count += 1
            if len(self.warnings) < MAX_WARNINGS:
                key = without_timestamp(line)
                if key not in self._warning_keys:
                    self._warning_keys.add(key)
                    self.warnings.append(line)

    def _find_error(self, lines: list[bytes]) -> None:
        for raw in lines:
            if _TRACEBACK in raw:
                self._traceback_seen = True
                continue
            if self._traceback_seen and raw[:1] in (b" ", b"\t"):
                continue  # the frames of a traceback: wait for its exception line
            if _ERROR.search(raw):
                self.first_error = clean_line(raw)[:MAX_LINE_BYTES]
                self.first_error_at = self._arrived
                return

    def tail_text(self) -> list[str]:
        """The kept lines, cleaned for reading."""
        with self._lock:
            return [clean_line(line) for line in self.tail]


_TOKEN_END = re.compile(rb"[^\s\"'`,;()<>\[\]{}]+$")


def _bounded(line: bytes) -> bytes:
    """``line`` as the tail keeps it: cut by :func:`_cut_line` when too long."""
    return _cut_line(line) if len(line) > MAX_LINE_BYTES else line


def _cut_line(line: bytes) -> bytes:
    """A line longer than :data:`MAX_LINE_BYTES` cut to it, less the word the cut went through
    when that word could be a token (up to :data:`_LONGEST_TOKEN` bytes): a part of a token is
    no token any rule knows, and must not be kept in clear.

    >>> _cut_line(b"x " * 2046 + b"ghp_" + b"a" * 36) == b"x " * 2046
    True
    >>> len(_cut_line(b"x" * 10_000))  # one endless word: no token shape, kept as it is
    4096
    """
    head = line[:MAX_LINE_BYTES]
    if not line[MAX_LINE_BYTES:MAX_LINE_BYTES + 1].isspace():
        word = _TOKEN_END.search(head)
        if word is not None and len(word.group()) <= _LONGEST_TOKEN:
            head = head[:word.start()]
    return head


#: The longest token shape the rules know (1Password service account tokens, ~1,100 bytes).
_LONGEST_TOKEN = 1200


def cut(section: dict[str, Any]) -> dict[str, Any]:
    """The outcome section with its tracebacks' messages and source lines cut to their
    lengths: called after redaction, so that a secret is hidden whole before it is cut."""
    out = dict(section)
    if isinstance(out.get("traceback"), dict):
        out["traceback"] = cut_traceback_text(out["traceback"])
    if isinstance(out.get("earlier_tracebacks"), list):
        out["earlier_tracebacks"] = [cut_traceback_text(t) if isinstance(t, dict) else t
                                     for t in out["earlier_tracebacks"]]
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
    out["tail_lines"] = tail_lines
    first: tuple[float, str, str] | None = None
    traceback: Traceback | None = None
    earlier: list[Traceback] = []
    warnings: list[str] = []
    warnings_count = 0
    for name in ("stdout", "stderr"):
        mode = result.modes.get(name, "none")
        watch = result.watches.get(name)
        stream: Stream = {"mode": mode}
        if watch is None:
            stream["captured"] = False
            stream["reason"] = _NOT_CAPTURED.get(mode, "output not read")
        else:
            stream["lines"] = watch.lines
            stream["bytes"] = watch.bytes
            if watch.unscanned_bytes:
                stream["unscanned_bytes"] = watch.unscanned_bytes
            stream["tail"] = watch.tail_text()
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
        out["stdout" if name == "stdout" else "stderr"] = stream
    if first is not None:
        out["first_error"] = first[2]
        out["first_error_stream"] = first[1]
    if traceback is not None:
        out["traceback"] = traceback
    if earlier:
        out["earlier_tracebacks"] = earlier[-MAX_EARLIER:]
    out["warnings"] = warnings[:MAX_WARNINGS]
    out["warnings_count"] = warnings_count
    watches = [result.watches[n].metrics for n in ("stderr", "stdout") if n in result.watches]
    if watches:
        out["metrics"] = merge(watches)
    if result.log_path is not None:
        out["log"] = {"path": result.log_path, "sha256": result.log_sha256,
                      "bytes": result.log_bytes}
    out["errors"] = list(result.errors)
    return out


_NOT_CAPTURED = {
    "inherit": "a terminal passed to the child as it is (--inherit-tty): nothing to read",
    "none": "the stream was closed when runsnap started",
    "exec": "--exec: runsnap replaced itself with the child",
}
