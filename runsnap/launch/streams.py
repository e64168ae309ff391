"""Watching one output stream of the child as it passes (:class:`StreamWatch`): the last lines are
kept in a bounded buffer, and every line is checked for the *first error* (a Python exception
line, ``Error``, ``FATAL`` ...) and for *warnings* (``Warning``, ``WARN``), so that "a warning in
one run, an error in the other" shows up as two plain fields in a diff; tracebacks and metrics
are followed too. What a line is (error, warning, its clean text) is :mod:`runsnap.launch.lines`;
:mod:`runsnap.launch.outcome` turns the watches into the section. Nothing here runs programs or
writes files.
"""

from __future__ import annotations

import collections
import threading
import time

from runsnap.base.timestamps import without_timestamp
from runsnap.launch.lines import (
    ANSI_ESCAPES,
    CXX_REPORT,
    ERROR_PATTERN,
    ERROR_WORDS,
    MAX_LINE_BYTES,
    TRACEBACK,
    WARNING_PATTERN,
    WARNING_WORDS,
    bounded,
    clean_line,
    cut_line,
    is_error_line,
    without_launcher_prefix,
)
from runsnap.launch.metrics import MetricWatch
from runsnap.launch.tracebacks import TracebackWatch

__all__ = ["DEFAULT_TAIL_LINES", "LONG_LINE_BYTES", "MAX_BACKLOG_BYTES", "MAX_WARNINGS",
           "StreamWatch", "line_ends"]

#: Lines of each stream kept for the outcome by default (``--tail-lines``).
DEFAULT_TAIL_LINES = 200

#: Distinct warning lines kept (in order of first appearance); the rest are only counted.
MAX_WARNINGS = 50

#: Output waiting to be scanned for errors and warnings, at most (per stream). A child that
#: writes faster than the scan keeps up with is relayed at full speed; what arrives while this
#: much is still waiting is relayed and counted but not scanned (the outcome says how much).
MAX_BACKLOG_BYTES = 1 << 20

#: Lines this long or longer on average (bytes) are counted by :func:`line_ends` through
#: ``memchr``, shorter ones one byte at a time (see there).
LONG_LINE_BYTES = 48

#: The pieces :func:`line_ends` deletes line ends from: each copy is a small allocation
#: (glibc gives 128 KiB and more fresh pages from the kernel: a page fault every 4 KiB).
_PIECE = 1 << 15


def line_ends(data: bytes, long_lines: bool) -> int:
    """How many ``\\n`` ``data`` holds, exactly, by the faster way for its lines' length.

    ``bytes.count`` looks at one byte at a time (CPython 3.11-3.13: ~0.32 ns a byte on the
    shared VM, whatever the lines). ``replace(b"\\n", b"")`` goes from one line end to the next
    with ``memchr`` (C, vectorised): ~14 ns a line plus ~0.04 ns a byte, so it is ahead from
    lines of 45-50 bytes on (71: 0.24 against 0.32 ns a byte; 100: 0.18; 1,000: 0.08), and far
    behind on short ones (20 bytes: 0.68). ``long_lines`` (the caller's guess from the chunk
    before) picks ``replace``, done in pieces of :data:`_PIECE` bytes. CPython 3.14 counts
    about twice as fast (gh-120397), which moves the crossing point: measure again there
    (``benchmarks/relayloop.py --count``). Figures: benchmarks/RESULTS.md, "Growth (issue 24)".

    >>> line_ends(b"a\\nbb\\n" * 3, False), line_ends(b"a\\nbb\\n" * 3, True)
    (6, 6)
    """
    if not long_lines:
        return data.count(b"\n")
    ends = 0
    for at in range(0, len(data), _PIECE):
        piece = data[at:at + _PIECE]  # a chunk of one piece or less: itself, not a copy
        ends += len(piece) - len(piece.replace(b"\n", b""))
    return ends


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
        self._tail: collections.deque[bytes] = collections.deque(maxlen=max(tail_lines, 0))
        self._tail_chunk: bytes | None = None
        """The last chunk taken, when it alone holds the whole tail: split only when read."""
        self.lines = 0
        self.bytes = 0
        self._long_lines = False
        """Whether the lines of the last chunk averaged :data:`LONG_LINE_BYTES` or more."""
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
        looked at; a chunk holding more lines than the tail keeps is kept whole, its last
        lines split off only when :attr:`tail` is read or a later chunk needs them)."""
        with self._lock:
            when = time.monotonic() if arrived is None else arrived
            self.bytes += len(data)
            newlines = line_ends(data, self._long_lines)
            self._long_lines = newlines * LONG_LINE_BYTES <= len(data)
            self.lines += newlines
            if newlines > (self._tail.maxlen or 0):  # the tail is in this chunk alone
                self._tail_chunk = data
            else:
                self._fold_tail()
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

    @property
    def tail(self) -> collections.deque[bytes]:
        """The last lines (up to ``tail_lines``, each cut at :data:`MAX_LINE_BYTES`), without
        the line being written (a last line without a line end joins them at :meth:`close`)."""
        with self._lock:
            self._fold_tail()
            return self._tail

    def _fold_tail(self) -> None:
        """Split the chunk kept whole by :meth:`take` into the tail's lines (lock held)."""
        if self._tail_chunk is not None:
            chunk, self._tail_chunk = self._tail_chunk, None
            self._keep_tail(chunk)

    def _keep_tail(self, data: bytes) -> None:
        keep = self._tail.maxlen or 0
        cut = data.rfind(b"\n")
        if cut < 0:  # an endless line: enough of its start to cut it (see cut_line)
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
            self._tail.append(bounded(head))
        if start < cut:
            self._tail.extend(bounded(line) for line in data[start + 1:cut].split(b"\n"))
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
            piece, self._partial = cut_line(self._partial), b""
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
            self._fold_tail()
            unscanned = self._unscanned_lines if self._gap else 0
            if self._tail_partial:
                self.lines += 1
                self._tail.append(bounded(self._tail_partial))
                self._tail_partial = b""
                unscanned += self._gap
            if self._gap:
                self._partial = b""  # the start of a line whose rest went unscanned
                self._rest_dropped = self._traceback_seen = False
                self.traceback.interrupt()
                last = list(self._tail)[-unscanned:] if unscanned else []
                if last:
                    self._look(b"\n".join(last))
            elif self._partial:
                self._look(self._partial)
                self._partial = b""

    def _look(self, chunk: bytes) -> None:
        """Errors, warnings and tracebacks in ``chunk`` (whole lines joined by newlines)."""
        if b"\x1b" in chunk:
            chunk = ANSI_ESCAPES.sub(b"", chunk)
        before = self.traceback.last
        self.metrics.feed(chunk)
        if self.traceback.active or TRACEBACK in chunk:
            for raw in chunk.split(b"\n"):
                self.traceback.line(clean_line(raw))
        if self.first_error is None and any(word in chunk for word in ERROR_WORDS):
            self._find_error([raw for raw in chunk.split(b"\n")
                              if any(word in raw for word in ERROR_WORDS)])
        tb = self.traceback.last
        if self.first_error is None and tb is not None and tb is not before:
            # an exception line no error word finds ("packaging.version.InvalidVersion: ..."):
            # the traceback it ends says it is one
            # (the traceback reader writes every field of the tracebacks it makes)
            self.first_error = (f"{tb['type']}: {tb['message']}" if tb["message"]
                                else str(tb["type"]))[:MAX_LINE_BYTES]
            self.first_error_at = self._arrived
        if any(word in chunk for word in WARNING_WORDS):
            self._find_warnings(chunk)

    def _find_warnings(self, chunk: bytes) -> None:
        """The warning lines of ``chunk``. Every match holds one of :data:`WARNING_WORDS`:
        the next line holding one is found with ``bytes.find`` (C speed; each word's next
        place is kept, so the chunk is read once per word), and only that line is searched,
        so the lines without a warning (a log's many progress and metric lines) cost no
        Python step."""
        size = len(chunk)
        nexts = [chunk.find(word) for word in WARNING_WORDS]
        while True:
            at = min((n for n in nexts if n >= 0), default=-1)
            if at < 0:
                return
            start = chunk.rfind(b"\n", 0, at) + 1
            end = chunk.find(b"\n", at)
            pos = size if end < 0 else end + 1
            nexts = [chunk.find(word, pos) if 0 <= n < pos else n
                     for word, n in zip(WARNING_WORDS, nexts, strict=True)]
            raw = chunk[start:pos]
            if not WARNING_PATTERN.search(raw):
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
        """The first error line of ``lines``, seen through a launcher's mark (torchrun's
        ``[rank0]: ``, :func:`~runsnap.launch.lines.without_launcher_prefix`): the mark says
        which process printed it, the error is what follows."""
        for raw in lines:
            raw = without_launcher_prefix(raw)
            if TRACEBACK in raw:
                self._traceback_seen = True
                continue
            if self._traceback_seen and raw[:1] in (b" ", b"\t"):
                continue  # the frames of a traceback: wait for its exception line
            cxx = CXX_REPORT.match(raw)
            if cxx is not None and cxx.group(1) is not None:
                # the C++ exception's message, without libstdc++'s "what():"
                self.first_error = clean_line(raw[cxx.start(1):])[:MAX_LINE_BYTES]
                self.first_error_at = self._arrived
                return
            if cxx is None and ERROR_PATTERN.search(raw):
                self.first_error = clean_line(raw)[:MAX_LINE_BYTES]
                self.first_error_at = self._arrived
                return

    def tail_text(self) -> list[str]:
        """The kept lines, cleaned for reading."""
        with self._lock:
            self._fold_tail()
            return [clean_line(line) for line in self._tail]
