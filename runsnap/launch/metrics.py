"""Numbers a run printed about itself: ``loss=4.96``, ``accuracy: 0.91``, ``throughput=812.5``.

A :class:`MetricWatch` sees each chunk of one output stream as :class:`~runsnap.launch.streams.
StreamWatch` passes it on, and keeps the *last* value of each ``key=value`` or ``key: value``
number (the end of a run is what a comparison of two runs wants), plus the user's own metrics
(``--metric NAME=REGEX``: the regular expression's first group, or its whole match, is the
number). Memory is bounded whatever the run prints: at most :data:`MAX_METRICS` keys, each one
float and one count; no per-line Python loop.

Only the first and the last occurrence of each key in a chunk matter (the first decides the
order keys are kept in, the last their value), and a log repeats a few line shapes: so the
expression runs only over the first and last line of each *shape* (the line with every digit
read as ``0``; see :func:`_pairs`), which finds exactly what a search of every line finds.
"""

from __future__ import annotations

import re

from runsnap.base.patterns import on_use

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

__all__ = ["MAX_METRICS", "MetricWatch", "merge", "parse_metric", "scan"]

#: Distinct keys kept per stream; later new keys are counted in ``dropped`` only.
MAX_METRICS = 64

#: ``key=value`` / ``key: value`` with a number: a key of letters, digits, ``_ . / -`` that
#: starts with a letter (and is not the end of a longer word or path, nor a URL's query
#: parameter: ``GET /generate?ids=5``), an optional closing quote (``"loss": 0.5``), ``=`` or
#: ``:``, and a number, quoted or not (HF Trainer 5 logs ``{'loss': '4.854'}``), that is not
#: part of a time (12:30:05), a version (1.2.3) or a word, nor a progress bar's percent
#: (tqdm's ``Loading weights: 100%|███|``, rich's ``45% ━━━``). The key is matched inside a
#: lookahead and taken whole (an atomic group, as Python 3.10 has none): no backtracking
#: through every word of the log.
_KEY_VALUE = on_use(
    rb"(?<![\w./?&-])(?=([A-Za-z][\w./-]{0,47}))\1[\"']?[ \t]?[=:][ \t]?[\"']?"
    rb"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
    rb"(?![\w:]|\.\d|%[ \t]?(?:\||\xe2[\x94-\x96]))")

#: Keys that name the run rather than measure it: they differ between any two runs (process
#: ids, ports, ranks, clocks) and are never kept; nor is an exception's class name, whose
#: message may start with a number (pydantic's ``ValidationError: 1 validation error``), nor a
#: source file's name before its line number (``Utils.hpp:137``).
_IDENTITY = on_use(
    r"(?:^|[_./-])(?:pid|ppid|tid|port|rank|local_rank|world_size|node_rank|job|jobid|job_id|"
    r"id|uuid|host|addr|address|time_?stamp|date|year|month|day|hour|minute|line|lineno|"
    r"version|seed|device|gpu|cuda|errno|code|status|http|https|tcp|udp)$"
    # an exception's class before its message (``ValidationError: 1 validation error``)
    r"|(?-i:(?:^|\.)[A-Z]\w*(?:Error|Exception|Warning))$"
    # a source file before its line: a log's place, not a measure (c10d's
    # ``[W1205 16:28:27.846 Utils.hpp:137] Warning: ...``, glog's ``trainer.cc:88]``)
    r"|\.(?:py|pyx|pxd|c|cc|cpp|cxx|h|hh|hpp|hxx|cu|cuh|rs|go|java|scala|js|ts|rb)$",
    re.IGNORECASE)


#: Every ASCII digit read as ``0``: two lines with the same *shape* differ only in digits.
_SHAPE = bytes.maketrans(b"0123456789", b"0000000000")
_DIGIT = on_use(rb"\d")


def _pairs(text: bytes) -> list[tuple[bytes, bytes]]:
    """The ``(key, number)`` matches of :data:`_KEY_VALUE` in ``text`` that decide its result:
    the first and the last of each key, in order (what ``dict()`` of them keeps is what it
    keeps of every match).

    :data:`_KEY_VALUE` has no digit in it: it tells digits from other bytes, never one digit
    from another, and no match crosses a line end. So in lines of the same shape (the same
    bytes with digits read as ``0``) it matches at the same places, and the keys found there
    are the same wherever they hold no digit; only the first and the last line of each shape
    need a search. Where a key holds a digit (``top1``, ``layer3.loss``), every line of that
    shape is searched. A chunk of lines that barely repeat is searched whole.

    >>> log = b"\\n".join(b"step=%d loss=%.1f" % (i, i / 10) for i in range(10, 30))
    >>> pairs = _pairs(log + b"\\ntop1=0.5\\ntop5=0.9")  # 20 lines of one shape: 2 searched
    >>> pairs[:4]
    [(b'step', b'10'), (b'loss', b'1.0'), (b'step', b'29'), (b'loss', b'2.9')]
    >>> pairs[4:]
    [(b'top1', b'0.5'), (b'top5', b'0.9')]
    """
    lines = text.split(b"\n")
    n = len(lines)
    if n < 16:
        return _KEY_VALUE.findall(text)
    shapes = text.translate(_SHAPE).split(b"\n")
    last = dict(zip(shapes, range(n), strict=True))  # later lines win: the last line of each shape
    if len(last) * 3 > n:  # few repeats: picking lines would cost more than it saves
        return _KEY_VALUE.findall(text)
    first = dict(zip(reversed(shapes), range(n - 1, -1, -1), strict=True))
    picked = sorted({*first.values(), *last.values()})
    found = _KEY_VALUE.findall(b"\n".join([lines[i] for i in picked]))
    if not _DIGIT.search(b" ".join([key for key, _raw in found])):
        return found
    # keys with digits: which shapes hold them, and every line of those shapes searched
    whole = {shapes[i] for i in picked
             if any(_DIGIT.search(key) for key, _raw in _KEY_VALUE.findall(lines[i]))}
    picked = sorted({*picked, *(i for i, shape in enumerate(shapes) if shape in whole)})
    return _KEY_VALUE.findall(b"\n".join([lines[i] for i in picked]))


def parse_metric(spec: str) -> tuple[str, re.Pattern[bytes]]:
    """``NAME=REGEX`` of ``--metric`` as (name, compiled pattern); ValueError when malformed.

    >>> name, pattern = parse_metric(r"tps=([\\d.]+) tok/s")
    >>> name, pattern.pattern
    ('tps', b'([\\\\d.]+) tok/s')
    >>> parse_metric("nothing")
    Traceback (most recent call last):
    ...
    ValueError: --metric nothing: expected NAME=REGEX (e.g. tps=([0-9.]+) tok/s)
    """
    name, eq, regex = spec.partition("=")
    name = name.strip()
    if not eq or not name or not regex or not re.fullmatch(r"[A-Za-z][\w./-]*", name):
        raise ValueError(f"--metric {spec}: expected NAME=REGEX (e.g. tps=([0-9.]+) tok/s)")
    try:
        pattern = re.compile(regex.encode())
    except re.error as exc:
        raise ValueError(f"--metric {spec}: not a regular expression: {exc}") from None
    return name, pattern


def _number(raw: bytes) -> float | None:
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


class MetricWatch:
    """The last value of each metric one stream printed (see the module's docstring)."""

    __slots__ = ("values", "dropped", "_user")

    def __init__(self, user: Sequence[tuple[str, re.Pattern[bytes]]] = ()) -> None:
        self.values: dict[str, float] = {}
        self.dropped = 0
        self._user = tuple(user)

    def feed(self, chunk: bytes) -> None:
        """Take complete lines (joined by ``\\n``, colours already removed)."""
        if b"=" in chunk or b":" in chunk:
            # the dict keeps the last value of each key, in the order keys first appeared
            for key, raw in dict(_pairs(chunk)).items():
                self._keep(key.decode("ascii", "replace"), raw)
        for name, pattern in self._user:
            last = None
            for last in pattern.finditer(chunk):  # noqa: B007 - the last match is wanted
                pass
            if last is not None:
                value = _number(last.group(1) if pattern.groups else last.group(0))
                if value is not None:
                    self.values[name] = value

    def _keep(self, key: str, raw: bytes) -> None:
        if key not in self.values:
            if _IDENTITY.search(key):
                return
            if len(self.values) >= MAX_METRICS:
                self.dropped += 1
                return
        value = _number(raw)
        if value is not None:
            self.values[key] = value


def scan(lines: Iterable[bytes], user: Sequence[tuple[str, re.Pattern[bytes]]] = ()
         ) -> dict[str, float]:
    """The metrics of some output, fed in chunks of lines as a stream would be.

    >>> scan([b"step=1 loss=4.96 lr=0.001", b"step=2 loss: 4.12 pid=31337",
    ...       b'{"accuracy": 0.91, "time": "12:30:05"}'])
    {'step': 2.0, 'loss': 4.12, 'lr': 0.001, 'accuracy': 0.91}
    >>> scan([b"{'loss': '4.854', 'grad_norm': '1.23', 'learning_rate': '5e-05'}",
    ...       "Loading weights: 100%|██████████| 3/3 [00:00<00:00, 12.1it/s]".encode(),
    ...       b'"GET /generate?ids=5,6&top_k=3 HTTP/1.1" 200 OK'])
    {'loss': 4.854, 'grad_norm': 1.23, 'learning_rate': 5e-05}
    """
    watch = MetricWatch(user)
    for line in lines:
        watch.feed(line)
    return dict(watch.values)


def merge(watches: Iterable[MetricWatch]) -> dict[str, float]:
    """One table from several streams (later streams win a key both printed).

    >>> a, b = MetricWatch(), MetricWatch()
    >>> a.feed(b"loss=1.5 acc=0.2"); b.feed(b"loss=1.25")
    >>> merge([a, b])
    {'acc': 0.2, 'loss': 1.25}
    """
    out: dict[str, float] = {}
    for w in watches:
        out.update(w.values)
    return dict(sorted(out.items()))


def relative_change(a: float, b: float) -> float:
    """How far apart two values are, relative to the larger magnitude (0 when equal).

    >>> relative_change(4.96, 6.25) > 0.2, relative_change(0.0, 0.0)
    (True, 0.0)
    """
    top = max(abs(a), abs(b))
    return 0.0 if top == 0 else abs(a - b) / top


def same_keys(a: Mapping[str, float], b: Mapping[str, float]) -> list[str]:
    """The keys both tables hold, in order."""
    return [k for k in a if k in b]
