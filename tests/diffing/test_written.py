"""The comparers' reading helpers (runsnap/diffing/written.py): a field written as nothing is
told from one not written, and the records kept for the N-way diff's reference are the
records of that very mapping."""

from __future__ import annotations

from runsnap.diffing import sections
from runsnap.diffing.written import record, written
from runsnap.snapshot.records import GitRepo, Outcome


def test_written_tells_nothing_from_absent() -> None:
    assert written(GitRepo({"describe": None}), "describe") is None
    assert written(GitRepo({}), "describe") == ""
    assert written(GitRepo({}), "describe", "?") == "?"
    assert written(GitRepo({"describe": "v1"}), "describe", "?") == "v1"


def test_record_is_kept_for_the_same_mapping_only() -> None:
    ref = {"exit_status": 0}
    first = record(Outcome, ref)
    assert record(Outcome, ref) is first
    # an equal mapping is another section: its own record
    other = {"exit_status": 0}
    assert record(Outcome, other) is not first
    assert record(Outcome, other) == first


def test_reference_survives_many_ranks() -> None:
    """The reference compared with more sections than are kept is still read right (and is
    the least recently used only when it is not being compared)."""
    ref = {"exit_status": 0, "metrics": {"loss": 1.0}}
    ranks = [{"exit_status": 0, "metrics": {"loss": 1.0 + i}} for i in range(200)]
    keys = [[d.key for d in sections.compare_section("outcome", ref, r)] for r in ranks]
    assert keys[0] == []
    assert all(k == ["metric loss"] for k in keys[1:])
    assert record(Outcome, ref).metrics == {"loss": 1.0}
