"""docs/ranking.md's table of host facts that move is the data runsnap uses."""

from __future__ import annotations

import re

from runsnap.knowledge import rule_lines
from tests.conftest import ROOT


def test_the_drift_table_is_the_data_file() -> None:
    text = (ROOT / "docs" / "ranking.md").read_text()
    section = text.split("## Host facts that move on their own", 1)[1].split("\n## ", 1)[0]
    documented = [(m[1], m[2]) for m in re.finditer(r"^\| `([^`]+)` \| ([^|]+?) \|", section, re.M)]
    assert documented == [(glob, tolerance) for glob, tolerance, _why in
                          rule_lines("host-drift.tsv")]
