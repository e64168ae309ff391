"""Behaviour beyond the exit status: the numbers a run printed (``[outcome] metrics``), recorded
as the output streams by, and compared by diff when both runs ended alike."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from runsnap.launch.metrics import MAX_METRICS, MetricWatch, parse_metric, scan
from runsnap.snapshot import load
from tests.conftest import run_runsnap

TRAIN = """
import sys
lr = float(sys.argv[1])
loss = 6.0
for step in range(5):
    loss -= lr * loss
    print(f"step={step} loss={loss:.4f} tokens_per_s={800 + step}", flush=True)
print(f"eval: accuracy: {1 - loss / 10:.4f}")
print("done")
"""


def _env(tmp: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(tmp)}


def _capture(tmp: Path, name: str, *args: str, options: tuple[str, ...] = ()) -> Path:
    prog = tmp / "train.py"
    prog.write_text(TRAIN)
    out = tmp / f"{name}.toml"
    res = run_runsnap("capture", *options, "-o", str(out), "--", sys.executable, str(prog),
                      *args, cwd=tmp, env=_env(tmp))
    assert res.returncode == 0, res.stderr
    return out


def test_the_last_value_of_each_metric_is_recorded(tmp_path: Path) -> None:
    snap = load(_capture(tmp_path, "a", "0.1", options=("--metric", r"acc=accuracy: ([\d.]+)")))
    metrics = snap["outcome"]["metrics"]
    assert metrics["loss"] == 3.5429 and metrics["step"] == 4.0
    assert metrics["tokens_per_s"] == 804.0 and metrics["acc"] == metrics["accuracy"] == 0.6457


def test_a_malformed_metric_is_one_line_and_status_2(tmp_path: Path) -> None:
    res = run_runsnap("capture", "--metric", "loss", "--", sys.executable, "-c", "pass",
                      cwd=tmp_path, env=_env(tmp_path))
    assert res.returncode == 2
    assert res.stderr == ("runsnap: --metric loss: expected NAME=REGEX "
                          "(e.g. tps=([0-9.]+) tok/s)\n")


def test_the_projects_own_metrics_come_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.runsnap]\nmetrics = ["final=^done()$", "first_loss=loss=([0-9.]+)"]\n')
    metrics = load(_capture(tmp_path, "a", "0.1"))["outcome"]["metrics"]
    assert metrics["first_loss"] == 3.5429  # the last match of the user's pattern
    assert "final" not in metrics  # a match that is no number records nothing


def _diff(a: Path, b: Path) -> dict:
    res = run_runsnap("diff", "--format", "json", str(a), str(b), cwd=a.parent,
                      env=_env(a.parent))
    assert res.returncode in (0, 1), res.stderr
    return json.loads(res.stdout)


def test_both_exit_0_and_the_loss_differs(tmp_path: Path) -> None:
    report = _diff(_capture(tmp_path, "a", "0.1"), _capture(tmp_path, "b", "0.02"))
    outcome = {d["key"]: d for d in report["differences"] if d["section"] == "outcome"
               and not d["hidden"]}
    assert report["differ"] is True
    assert outcome["metric loss"]["a"] == 3.5429 and outcome["metric loss"]["b"] == 5.4235
    assert "noise threshold 1%" in outcome["metric loss"]["evidence"][0]
    # throughput moved by far less than its noise threshold: not a difference
    assert "metric tokens_per_s" not in outcome
    text = run_runsnap("diff", str(tmp_path / "a.toml"), str(tmp_path / "b.toml"),
                       cwd=tmp_path, env={**_env(tmp_path), "COLUMNS": "80"}).stdout
    block = text.split("Outcome (what happened)")[1].split("\n\n")[0]
    assert "metric loss" in block and "metric accuracy" in block


def test_within_noise_no_metric_differs(tmp_path: Path) -> None:
    report = _diff(_capture(tmp_path, "a", "0.1"), _capture(tmp_path, "b", "0.1001"))
    assert not [d for d in report["differences"] if d["key"].startswith("metric ")]


def test_memory_stays_bounded_whatever_the_run_prints() -> None:
    watch = MetricWatch()
    for i in range(50):
        watch.feed(b"\n".join(b"k%d_%d=%d" % (i, j, j) for j in range(100)))
    assert len(watch.values) == MAX_METRICS and watch.dropped > 0


def test_identities_and_clocks_are_not_metrics() -> None:
    found = scan([b"pid=4242 port: 8000 rank=3 seed=7 at 12:30:05 loss=1.5",
                  b"version: 1.2.3 Uvicorn running on http://127.0.0.1:30000 lr: 3e-4"])
    assert found == {"loss": 1.5, "lr": 3e-4}


def test_a_user_metric_needs_a_name_and_a_pattern() -> None:
    name, pattern = parse_metric(r"ttft=TTFT ([\d.]+) ms")
    assert scan([b"TTFT 12.5 ms", b"TTFT 13.25 ms"], [(name, pattern)])["ttft"] == 13.25
