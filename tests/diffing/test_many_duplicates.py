"""N-way counts each rank once (issue 37, class 5): a file named twice, one snapshot copied
under two names, and two snapshots of the same rank are one voter, named in the notes, so the
majority and the odd one out are those of the ranks. Real captures, a real ``runsnap``."""

from __future__ import annotations

import json
import shutil

from runsnap.diffing import compare_many
from runsnap.snapshot import load
from tests.conftest import run_runsnap


def _rank(cap, tmp_path, rank: int, algo: str, name: str = ""):
    snap = cap({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "4",
                "NCCL_ALGO": algo}, label=name or f"rank{rank}")
    return snap.save(tmp_path / f"{name or f'rank{rank}'}.toml").path


def test_a_file_named_twice_is_one_voter(cap, tmp_path):
    r0, r1 = _rank(cap, tmp_path, 0, "Ring"), _rank(cap, tmp_path, 1, "Tree")
    r = run_runsnap("diff", str(r0), str(r1), str(r1), "--format", "json", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    row = next(d for d in doc["differences"] if d["key"] == "NCCL_ALGO")
    assert row["odd"] is None and row["kind"] != "odd", row  # one rank against one: no majority
    assert doc["odd_ones"] == {} and "odd one" not in doc["verdict"], doc["verdict"]
    assert f"{r1} is named 2 times (the same file): counted once" in doc["notes"], doc["notes"]


def test_a_copy_and_a_rank_captured_twice_vote_once(cap, tmp_path):
    r0 = _rank(cap, tmp_path, 0, "Ring")
    r1 = _rank(cap, tmp_path, 1, "Tree")
    again = _rank(cap, tmp_path, 1, "Tree", "rank1-again")
    r2 = _rank(cap, tmp_path, 2, "Ring")
    copy = tmp_path / "rank1-copy.toml"
    shutil.copy(r1, copy)
    # files: Ring, Tree x3, Ring; ranks: Ring (0, 2) against Tree (1): rank 1 is the odd one
    report = compare_many([load(p) for p in (r0, r1, again, copy, r2)])
    row = next(r for r in report.counted if r.key == "NCCL_ALGO")
    assert row.kind == "odd" and row.odd == 1 and row.odd_members == (1, 2, 3), row
    assert report.verdict().endswith("rank 1 (alone in 1 key)"), report.verdict()
    assert report.notes[-1] == (f"{r1}, {again}, {copy}: rank 1, counted once as a voter"), \
        report.notes
    plain = compare_many([load(p) for p in (r0, r1, r2)])
    assert [(r.key, r.odd) for r in plain.counted] == [("NCCL_ALGO", 1)]
