"""Who reads a variable, and what they accept: families read by native libraries (a Python
trace cannot see those reads), from ``env-native.txt``.

Diagnosis (:mod:`runsnap.diffing.evidence`) asks it before calling a variable unread; check
(:mod:`runsnap.checking`) asks it what a reader accepts.
"""

from __future__ import annotations

import fnmatch
import functools
import re

from runsnap.knowledge import rule_lines

__all__ = ["read_natively"]


@functools.lru_cache(maxsize=1)
def _native_globs() -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(fnmatch.translate(row[0])) for row in rule_lines("env-native.txt"))


def read_natively(name: str) -> bool:
    """Whether ``name`` belongs to a family that native libraries read (``getenv`` in C).

    >>> read_natively("NCCL_P2P_DISABLE"), read_natively("SGLANG_ENABLE_JIT")
    (True, False)
    """
    return any(p.match(name) for p in _native_globs())
