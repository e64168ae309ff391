"""Trials leave no trace in trackers: bisecting two MLflow-tracked runs (captured with
``--track mlflow`` against a real tracking server, the program logging into its run) creates no
run in the team's experiment, whatever the program does in each trial."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import pytest

from runsnap import load
from tests.track.conftest import MLflowServer, base_env, runsnap

pytestmark = pytest.mark.slow

_TRAIN = """\
import os, sys
import mlflow

with mlflow.start_run():
    mlflow.log_param("mode", os.environ.get("MODE", ""))
    if os.environ.get("MODE") == "x":
        sys.exit("ValueError: mode x is not supported")
print("trained")
"""


def _runs(server: MLflowServer, experiment: str) -> int:
    with urllib.request.urlopen(f"{server.url}/api/2.0/mlflow/experiments/get-by-name?"
                                f"experiment_name={experiment}", timeout=60) as answer:
        exp_id = json.load(answer)["experiment"]["experiment_id"]
    body = json.dumps({"experiment_ids": [exp_id], "max_results": 1000}).encode()
    request = urllib.request.Request(f"{server.url}/api/2.0/mlflow/runs/search", data=body,
                                     method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return len(json.load(answer).get("runs", []))


def test_bisecting_tracked_runs_creates_no_run(mlflow_server: MLflowServer,
                                                tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(_TRAIN)
    env = base_env(tmp_path, MLFLOW_TRACKING_URI=mlflow_server.url,
                   MLFLOW_EXPERIMENT_NAME="team")
    for name, mode in (("good", "y"), ("bad", "x")):
        res = runsnap(["capture", "--track", "mlflow", "-o", f"{name}.toml", "--",
                       sys.executable, "train.py"], tmp_path, {**env, "MODE": mode, "K": name})
        assert (tmp_path / f"{name}.toml").exists(), res.stderr
    before = _runs(mlflow_server, "team")
    assert before == 2  # the two tracked launches, each the program's own run
    res = runsnap(["bisect", "good.toml", "bad.toml", "--yes", "--format", "json"], tmp_path,
                  env)
    answer = json.loads(res.stdout)
    assert answer["status"] == "found", res.stderr
    assert [c["key"] for c in answer["cause"]] == ["MODE"]
    assert len(answer["runs"]) >= 4
    assert _runs(mlflow_server, "team") == before
    # the program's own runs went to the trials' folder, where nobody else looks
    assert (Path(answer["folder"]) / "mlruns").is_dir()


def test_why_finds_the_reference_in_the_tracker_bad_was_logged_to(
        mlflow_server: MLflowServer, tmp_path: Path) -> None:
    """BAD named as ``mlflow:RUN_ID``, no snapshot in any folder here: the reference is the
    newest earlier run of the same launch in that experiment that exited 0."""
    (tmp_path / "train.py").write_text(_TRAIN)
    env = base_env(tmp_path, MLFLOW_TRACKING_URI=mlflow_server.url,
                   MLFLOW_EXPERIMENT_NAME="whyteam")
    ids = {}
    for name, mode in (("good", "y"), ("bad", "x")):
        out = tmp_path / "elsewhere" / f"{name}.toml"
        res = runsnap(["capture", "--track", "mlflow", "-o", str(out), "--", sys.executable,
                       "train.py"], tmp_path, {**env, "MODE": mode})
        assert out.exists(), res.stderr
        ids[name] = load(out).meta["track"]["run"]
    res = runsnap(["why", ids["bad"], "--yes", "--format", "json"], tmp_path, env)
    assert res.returncode == 0, res.stderr
    answer = json.loads(res.stdout)
    assert answer["reference"].startswith(f"{ids['good']}, the newest earlier tracked run")
    assert [c["key"] for c in answer["cause"]] == ["MODE"]
