"""Libraries' notices that a variable is deprecated, renamed or ignored
(runsnap/knowledge/deprecation-notices.tsv): each row's provenance, each notice found about the
variable it names and not about its replacement, and, with real torch, the variable a notice
names kept out of the verdict's way (incidental) while the planted cause leads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks import thirdparty, tune_warnings
from benchmarks.diagnosis import diff, rank_of, run_incident
from runsnap.knowledge.notices import notice_about, rows


def test_every_row_says_where_the_notice_is_and_which_half_it_is_in() -> None:
    assert len(rows()) >= 8
    for row in rows():
        assert "{name}" in row.notice, row
        assert row.effect in ("none", "renamed"), row
        assert row.half in ("tune", "held-out"), row
        assert re.search(r"[\w.-]+/[\w.-]+ [\w./-]+", row.source), row


def test_a_line_that_prints_the_notice_finds_it_about_the_variable_it_names() -> None:
    for row in rows():
        filled = row.notice.replace("{name}", "`OLD_KNOB`").replace("{}", "NEW_KNOB")
        filled = re.sub(r"%[sdr]", "'x'", filled)
        line = f"/site/lib/mod.py:12: FutureWarning: {filled}"
        assert notice_about(line, "OLD_KNOB") is not None, row
        assert notice_about(line, "NEW_KNOB") is None, row  # the replacement is no subject
        assert notice_about(line, "KNOB") is None, row  # a word inside the name is not it


def test_a_notice_is_not_read_into_an_ordinary_warning() -> None:
    assert notice_about("UserWarning: TORCH_HOME points to a full disk", "TORCH_HOME") is None
    assert notice_about("argument use_libuv is deprecated and ignored. Set USE_LIBUV "
                        "environment variable", "USE_LIBUV") is None
    # what torch's C++ warning really looks like (TORCH_WARN_ONCE from c10d's Utils.hpp)
    line = ("[W1204 22:02:41.775000 Utils.hpp:110] Warning: Environment variable "
            "NCCL_ASYNC_ERROR_HANDLING is deprecated; use TORCH_NCCL_ASYNC_ERROR_HANDLING "
            "instead (function getCvarInt)")
    assert notice_about(line, "NCCL_ASYNC_ERROR_HANDLING").library == "torch"
    assert notice_about(line, "TORCH_NCCL_ASYNC_ERROR_HANDLING") is None


@pytest.mark.slow
@pytest.mark.parametrize("build", tune_warnings.TUNE_WARNINGS, ids=lambda b: b.__name__)
def test_the_variable_a_notice_names_is_incidental(build, tmp_path: Path) -> None:
    """Real torch prints the notice in B only; the variable it names is never the cause, and
    the planted one comes first."""
    try:
        incident = build(tmp_path)
    except thirdparty.Unavailable as exc:
        pytest.skip(str(exc))
    report = diff(*run_incident(incident, tmp_path))
    counted = [d for d in report["differences"] if not d["hidden"]]
    top = [(d["section"], d["key"], d["evidence_kind"], d["reason"]) for d in counted[:3]]
    noticed = [d for d in counted
               if d["key"] in ("TORCH_HUB", "TORCH_MODEL_ZOO", "TORCH_NCCL_TRACE_CPP_STACK")]
    assert noticed and all(d["evidence_kind"] == "incidental" for d in noticed), top
    assert "deprecated" in noticed[0]["reason"], noticed[0]["reason"]
    assert rank_of(report, incident.cause) == 1, top
    if report.get("confidence") == "confident":
        assert (counted[0]["section"], counted[0]["key"]) in incident.cause, top
