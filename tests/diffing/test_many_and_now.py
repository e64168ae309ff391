"""N snapshots (ranks of one job), one snapshot against the current context, and the two
newest snapshots of a folder."""

from __future__ import annotations

import os
import sys
import time

import pytest

import runsnap
from runsnap.diffing import NReport, compare_many, newest
from runsnap.errors import UsageError

from .conftest import counted


def test_n_way_odd_one_out(cap):
    ranks = [cap({"RANK": str(i), "LOCAL_RANK": str(i), "NCCL_IB_HCA": "mlx5_0,mlx5_1"},
                 label=f"rank{i}") for i in range(3)]
    ranks.append(cap({"RANK": "3", "LOCAL_RANK": "3", "NCCL_IB_HCA": "mlx5_1,mlx5_0",
                      "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}, label="rank3"))
    report = compare_many(ranks)
    assert isinstance(report, NReport) and report
    rows = [(r.section, r.key, r.odd) for r in report.counted]
    assert rows == [("env", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", 3),
                    ("env", "NCCL_IB_HCA", 3)]
    assert report.counted[1].groups() == [("mlx5_0,mlx5_1", [0, 1, 2]), ("mlx5_1,mlx5_0", [3])]
    assert sorted(r.key for r in report.hidden) == ["LOCAL_RANK", "RANK"]
    assert report.odd_ones() == {3: 2}
    assert report.verdict() == ("4 snapshots, 2 keys not the same everywhere (2 noise hidden); "
                                "odd one out: rank3 (alone in 2 keys)")
    doc = report.to_dict()
    assert doc["differences"][0]["groups"] == [{"value": None, "snapshots": [0, 1, 2]},
                                               {"value": "1", "snapshots": [3]}]


def test_n_way_no_odd_one_when_split_evenly(cap):
    snaps = [cap({"NCCL_ALGO": v}) for v in ("Ring", "Ring", "Tree", "Tree")]
    report = compare_many(snaps)
    assert [(r.key, r.odd) for r in report.counted] == [("NCCL_ALGO", None)]
    same = compare_many([cap(), cap(), cap()])
    assert not same and same.verdict() == "3 snapshots, no differences that count"


def test_diff_one_snapshot_against_now(cap, tmp_path, monkeypatch):
    """A was captured with a flag this shell lacks: "will my next launch match?" says no."""
    work = tmp_path / "work"
    monkeypatch.setenv("RUNSNAP_KEY_FILE", str(tmp_path / "fingerprint.key"))
    monkeypatch.delenv("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", raising=False)
    a = runsnap.capture([sys.executable, "-c", "pass"], cwd=work,
                        env={**os.environ, "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"},
                        label="good").save(tmp_path / "good.toml")
    report = runsnap.diff(a.path)
    assert counted(report) == [("env", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "removed")]
    assert report.b.label == "now" and report.b.path is None
    assert report.notes[0].startswith("B is the current context")
    monkeypatch.setenv("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "1")
    assert not runsnap.diff(a.path)


def test_context_args_repeat_the_capture(cap, repo, tmp_path):
    from runsnap.capturing.like import context_args

    snap = cap(argv=[sys.executable, "-c", "pass"], cwd=tmp_path, repos=[str(repo)],
               models=[str(tmp_path)], python=sys.executable)
    args = context_args(snap)
    assert args["repos"] == [str(repo)]
    assert args["python"] == sys.executable
    assert args["cwd"] == str(tmp_path)
    assert args["argv"] == [sys.executable, "-c", "pass"]


def test_newest_two_in_a_folder(cap, tmp_path):
    folder = tmp_path / "snaps"
    paths = []
    for i in range(3):
        p = cap(label=f"run{i}").save(folder / f"run{i}.toml").path
        os.utime(p, ns=(time.time_ns(), 1_000_000_000 * (i + 1)))
        paths.append(str(p))
    assert newest(folder) == paths[1:]
    with pytest.raises(UsageError, match="no such directory"):
        newest(tmp_path / "missing")
    with pytest.raises(UsageError, match="3 snapshots found, 4 needed"):
        newest(folder, 4)


def test_diff_with_now_through_a_real_process(tmp_path):
    """``runsnap diff A``: "will my next launch match?", answered by a fresh in-memory capture."""
    import os
    import sys

    from tests.conftest import run_runsnap

    def runsnap(*args, **env):
        return run_runsnap(*args, cwd=tmp_path, env={**os.environ, **env})

    argv = ["--", sys.executable, "serve.py", "--tp", "8"]
    assert runsnap("capture", "--no-run", "-o", "last-good.toml", *argv).returncode == 0
    same = runsnap("diff", "last-good.toml")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "note: B is the current context" in same.stdout
    changed = runsnap("diff", "last-good.toml", SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN="1")
    assert changed.returncode == 1
    assert ("the only candidate, without evidence from the runs: env "
            "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN (set to 1 in B only)") in changed.stdout
    assert (tmp_path / ".runsnap").exists() is False  # nothing written for "now"


def _cut_short(path) -> None:
    """The file as a rank killed while writing it, or a copy stopped half-way, leaves it."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_n_way_leaves_out_a_rank_that_cannot_be_read_and_says_so(cap, tmp_path):
    """One rank of a job cut short must not hide the others: it is left out, named in a note
    and in the JSON, and the exit status says the set is not what was given (1)."""
    import json
    import subprocess

    folder = tmp_path / "job"
    for i in range(4):
        cap({"RANK": str(i), "WORLD_SIZE": "4"}).save(folder / f"rank-{i}.toml")
    _cut_short(folder / "rank-2.toml")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8", "COLUMNS": "80"}
    argv = [sys.executable, "-m", "runsnap", "diff", str(folder)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    head = done.stdout.splitlines()[0]
    assert head.startswith("runsnap diff: 3 snapshots (1 unreadable, left out), "), done.stdout
    assert "note: 1 of 4 snapshots left out, not readable: " in done.stdout
    doc = json.loads(subprocess.run([*argv, "--format", "json"], env=env, capture_output=True,
                                    text=True, timeout=120).stdout)
    [bad] = doc["unreadable"]
    assert bad.startswith(str(folder / "rank-2.toml") + ": ") and doc["differ"] is True
    assert len(doc["snapshots"]) == 3
    # fewer than two readable: nothing to compare, one clear line and status 2
    _cut_short(folder / "rank-0.toml")
    _cut_short(folder / "rank-1.toml")
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("runsnap: 3 of 4 snapshots cannot be read; the first: ") and \
        "rank-0.toml" in line, line
