"""The fault points of a shared-folder rank whose command outlives the deferred first save
(saved from the timer's thread while it runs, then extended in place: capturing/firstsave.py),
each failed as in test_fault_points; and that the kinds of capture together reach every point.
A file of its own: each of its runs outlives the first save's delay (shortened for the tests to
test_fault_points.LONG_DELAY), and a file is a unit of the suite's two processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from runsnap.base.faults import POINTS

from .test_fault_points import LONG_KINDS, fail_everywhere, reached_points


@pytest.mark.slow
def test_every_point_fails_cleanly_and_the_kinds_reach_every_point(tmp_path: Path) -> None:
    """A new point is tried as soon as it exists: the short kinds and the long one together
    pass every named point."""
    seen: set[str] = set()
    for kind in LONG_KINDS:
        folder = tmp_path / kind
        folder.mkdir()
        seen |= fail_everywhere(folder, kind)
    for kind in ("file", "chosen name"):  # failed at each of them in test_fault_points
        folder = tmp_path / kind
        folder.mkdir()
        seen |= {p.partition("#")[0] for p in reached_points(folder, kind)}
    assert seen == set(POINTS)
