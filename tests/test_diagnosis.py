"""The diagnosis corpus (benchmarks/incidents.py): real launches of small real programs, each
with a planted cause among the noise of two real shells; diff must rank the cause first."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.diagnosis import diff, rank_of, run_incident
from benchmarks.incidents import INCIDENTS


@pytest.mark.slow
@pytest.mark.parametrize("build", INCIDENTS, ids=lambda b: b.__name__)
def test_the_planted_cause_ranks_first(build, tmp_path: Path) -> None:
    incident = build(tmp_path)
    good, bad = run_incident(incident, tmp_path)
    report = diff(good, bad)
    counted = [d for d in report["differences"] if not d["hidden"]]
    where = rank_of(report, incident.cause)
    top = [(d["section"], d["key"], d["evidence_kind"], d["reason"]) for d in counted[:3]]
    if incident.cause:
        assert where == 1, top
        # The run's own evidence put it there, not the name rules.
        assert counted[0]["evidence_kind"] in ("failing-path", "named", "read"), top
    else:
        assert where == 0 and report["differ"] is False, top
