"""``[process]`` of ``capture --pid``: every field compared; mapped libraries and the
executable count, process ids and times are noise."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from runsnap.diffing.result import Difference
from runsnap.diffing.rules import RankContext, Verdict
from runsnap.diffing.walk import generic

__all__ = ["compare", "score"]


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Every leaf of ``[process]`` that differs."""
    return generic("process", a, b)


_PROCESS_NOISE = re.compile(
    r"^(?:pid|ppid|started_at|num_threads|status|children\[\d+\]\.(?:pid|ppid))$")


def score(d: Difference, rules: RankContext) -> Verdict:
    """A running process (``--pid``): the shared libraries it has mapped (72: another NCCL or
    CUDA runtime file is another library, whatever the packages say), its executable (70),
    its user and children (30); process ids, start times, thread counts and status are noise:
    they differ between any two processes."""
    if _PROCESS_NOISE.match(d.key):
        return 2, "noise: differs between any two processes", True
    if d.key.startswith("libraries"):
        return 72, "another shared library mapped into the running process", False
    if d.key in ("exe", "name"):
        return 70, "another executable runs", False
    return 30, f"differs in [{d.section}]", False
