"""Time stamps as snapshots write them (UTC ISO 8601 with milliseconds), without :mod:`datetime`:
a capture writes two of them and importing datetime (with math) costs more than the rest of a
small collector (benchmarks/RESULTS.md); and the time stamp a logger put in front of a line,
taken off (:func:`without_timestamp`: the launch reads output with it, the diff compares
warnings through it, and renderers show lines without it)."""

from __future__ import annotations

import time

from runsnap.base.patterns import on_use

__all__ = ["utc_timestamp", "without_timestamp"]


def utc_timestamp(seconds: float) -> str:
    """``seconds`` since the epoch as UTC ISO 8601 with milliseconds, as
    ``datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds")`` writes
    it; :mod:`datetime` is not imported for one line of a capture.

    >>> utc_timestamp(1796056475.1239)
    '2026-11-30T16:34:35.123+00:00'
    """
    whole = int(seconds)
    micros = round((seconds - whole) * 1e6)  # datetime rounds to microseconds, then cuts
    if micros >= 1_000_000:
        whole, micros = whole + 1, micros - 1_000_000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{micros // 1000:03d}+00:00"


# A time stamp that opens a log line, after an optional bracket and level word: ISO dates
# ("2026-11-29 17:02:12,004", "2026-11-29T17:02:12.004Z"), vLLM's "11-29 17:02:12", glog's
# "W1129 17:02:12.004123 12345", and a bare "17:02:12".
_LEADING_STAMP = on_use(
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
