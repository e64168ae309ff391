"""A config file's key that the runs printed with other values: ``mixed_precision=no`` in one
run's last lines, ``mixed_precision=bf16`` in the other's, and a config file that one run alone
read holds the key ``mixed_precision`` (``[runtime.data_files] keys``: names, never values).
The runs' own words show the setting the file carries took another value: evidence that the
file is why (:func:`runsnap.diffing.datafiles.file_evidence`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from runsnap.diffing.result import Difference
from runsnap.diffing.runfacts import RunFacts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["key_printed"]


def _distinctive(key: str) -> bool:
    """A key that is no plain word (``mixed_precision``, ``lr_warmup``; not ``debug``)."""
    return len(key) >= 4 and bool(re.fullmatch(r"[A-Za-z][\w.-]*", key)) and (
        not key.isalpha() or len(key) >= 12)


def _printed(key: str, lines: Sequence[str]) -> str | None:
    """The last value a run printed for ``key`` (``key=value`` or ``key: value``)."""
    pattern = re.compile(r"(?<![\w.-])" + re.escape(key) + r"\s*[=:]\s*([^\s,;]+)")
    found = [m.group(1) for line in lines for m in pattern.finditer(line)]
    return found[-1].strip("'\"") if found else None


def key_printed(d: Difference, a: Snapshot, b: Snapshot, runs: Sequence[RunFacts]
                ) -> str | None:
    """The sentence when ``d`` is a config file one run alone read and both runs printed one
    of its keys with other values; else None."""
    if d.path[:2] != ("runtime", "data_files") or len(d.path) < 3 or d.change not in (
            "added", "removed") or len(runs) != 2:
        return None
    mine, side = (b, "B") if d.change == "added" else (a, "A")
    got = mine.records.runtime.data_files.get(str(d.path[2]))
    keys = sorted((str(k) for k in (got.keys or ()) if _distinctive(str(k))),
                  key=lambda k: (-len(k), k)) if got is not None else []
    for key in keys:
        va, vb = (_printed(key, (*f.tail, *f.errors)) for f in runs)
        if va is not None and vb is not None and va != vb:
            return (f"both runs printed {key}, a key of this file only {side} read, with other "
                    f"values (A: {va}, B: {vb})")
    return None
