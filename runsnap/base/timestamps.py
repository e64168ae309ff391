"""Time stamps as snapshots write them (UTC ISO 8601 with milliseconds), without :mod:`datetime`:
a capture writes two of them and importing datetime (with math) costs more than the rest of a
small collector (benchmarks/RESULTS.md)."""

from __future__ import annotations

import time

__all__ = ["utc_timestamp"]


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
