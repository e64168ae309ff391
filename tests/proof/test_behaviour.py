"""Bisect judges behaviour, not only exit statuses: two runs that both exit 0 and differ in a
metric the diff compares are bisected without ``--test``, each trial judged by the side its
metric falls on; ``--metric NAME`` chooses among several."""

from __future__ import annotations

from pathlib import Path

import pytest

from runsnap.errors import UsageError
from runsnap.experiments.judging import BAD, GOOD, UNCLEAR, OutcomeJudge
from tests.proof.conftest import bisect, capture, child, keys, runsnap

_TRAIN = ("lr = float(os.environ.get('LR', '0.1'))\n"
          "warm = os.environ.get('WARMUP', '10')\n"
          "print(f'step 100 loss={0.5 + 4 * lr:.4f} acc=0.9{len(warm)}')\n")


def _pair(tmp_path: Path, **bad_env: str) -> tuple[Path, Path]:
    prog = child(tmp_path / "train.py", _TRAIN)
    good = capture(tmp_path / "good.toml", ["python3", str(prog)],
                   {"LR": "0.1", "WARMUP": "10", "KNOB_A": "1", "KNOB_B": "1"})
    bad = capture(tmp_path / "bad.toml", ["python3", str(prog)],
                  {"LR": "0.1", "WARMUP": "10", "KNOB_A": "2", "KNOB_B": "2", **bad_env})
    return good, bad


@pytest.mark.slow
def test_a_metric_only_difference_is_bisected_without_a_test(tmp_path: Path) -> None:
    good, bad = _pair(tmp_path, LR="0.9")
    proc, answer = bisect(good, bad, "--yes")
    assert proc.returncode == 0, proc.stderr
    assert keys(answer["cause"]) == ["env LR"]
    assert all(r["verdict"] in ("good", "bad") for r in answer["runs"])
    assert "loss" in answer["runs"][0]["why"]


@pytest.mark.slow
def test_metric_chooses_among_several(tmp_path: Path) -> None:
    """Both LR (loss) and WARMUP (acc) changed: --metric acc bisects to WARMUP alone."""
    good, bad = _pair(tmp_path, LR="0.9", WARMUP="1000")
    proc, answer = bisect(good, bad, "--yes", "--metric", "acc")
    assert proc.returncode == 0, proc.stderr
    assert keys(answer["cause"]) == ["env WARMUP"]
    proc = runsnap("bisect", str(good), str(bad), "--yes", "--metric", "nope")
    assert proc.returncode == 2 and proc.stderr == (
        "runsnap: --metric nope: GOOD and BAD did not both print it (both printed: acc, loss)\n")


def test_the_judge_takes_the_side_a_metric_falls_on() -> None:
    good = {"exit_status": 0, "metrics": {"matmul_rel_err": 2.4e-06, "tok_s": 100.0}}
    bad = {"exit_status": 0, "metrics": {"matmul_rel_err": 2.7e-04, "tok_s": 101.0}}
    judge = OutcomeJudge(good, bad)
    assert judge.basis == "metric matmul_rel_err (GOOD 2.4e-06, BAD 0.00027)"
    assert judge({"exit_status": 0, "metrics": {"matmul_rel_err": 2.6e-04}})[0] == BAD
    assert judge({"exit_status": 0, "metrics": {"matmul_rel_err": 2.5e-06}})[0] == GOOD
    assert judge({"exit_status": 0, "metrics": {}})[0] == UNCLEAR
    assert judge({"exit_status": 1, "metrics": {"matmul_rel_err": 2.6e-04}})[0] == UNCLEAR
    slow = OutcomeJudge({"exit_status": 0, "duration_s": 3.0}, {"exit_status": 0,
                                                                "duration_s": 30.0})
    assert slow.basis == "wall time (GOOD 3, BAD 30)"
    assert slow({"exit_status": 0, "duration_s": 25.0})[0] == BAD
    warned = OutcomeJudge({"exit_status": 0}, {"exit_status": 0, "warnings": [
        "WARNING: MYAPP_MODE=fast is deprecated (at 12:00:01)"]})
    assert warned({"exit_status": 0, "warnings": ["WARNING: MYAPP_MODE=fast is deprecated "
                                                  "(at 12:09:31)"]})[0] == BAD
    assert warned({"exit_status": 0, "warnings": []})[0] == GOOD
    with pytest.raises(UsageError, match="no metric, wall time, peak memory or warning"):
        OutcomeJudge({"exit_status": 0, "metrics": {"loss": 1.0}},
                     {"exit_status": 0, "metrics": {"loss": 1.001}})
