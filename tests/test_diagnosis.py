"""The diagnosis corpus (benchmarks/incidents.py): real launches of small real programs, each
with a planted cause among the noise of two real shells; diff must rank the cause first."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import thirdparty
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


#: A few incidents of the third-party corpus (benchmarks/thirdparty.py) whose causes act through
#: real libraries installed by the ``test`` extra. The whole corpus (46 incidents, both halves,
#: torch and transformers included) runs in benchmarks only: ``python benchmarks/diagnosis.py``.
SUBSET = [thirdparty.click_auto_envvar, thirdparty.requests_ca_bundle, thirdparty.hf_home_moved,
          thirdparty.rich_markup_from_env]


@pytest.mark.parametrize("build", SUBSET, ids=lambda b: b.__name__)
def test_third_party_causes_rank_first(build, tmp_path: Path) -> None:
    try:
        incident = build(tmp_path)
    except thirdparty.Unavailable as exc:  # only without the test extra
        pytest.skip(str(exc))
    report = diff(*run_incident(incident, tmp_path))
    counted = [d for d in report["differences"] if not d["hidden"]]
    top = [(d["section"], d["key"], d["evidence_kind"], d["reason"]) for d in counted[:3]]
    assert rank_of(report, incident.cause) == 1, top
    assert counted[0]["evidence_kind"] in ("failing-path", "named", "read"), top
