"""Two runs tracked by runsnap (capture --track mlflow): the run id runsnap gave each launch
and the ids the tracker's library made for its process differ in every run; the diff says
so, and names none of them as a cause (runsnap/diffing/made.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.track.conftest import MLflowServer, base_env
from tests.track.conftest import runsnap as run_runsnap
from tests.track.test_mlflow import tracked


def test_the_ids_of_two_tracked_runs_are_noise(mlflow_server: MLflowServer, project: Path,
                                               tmp_path: Path) -> None:
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    _, run_a = tracked(mlflow_server, project, tmp_path, a, sys.executable, "train.py", "mlflow",
                       "0.1", experiment="ids")
    _, run_b = tracked(mlflow_server, project, tmp_path, b, sys.executable, "train.py", "mlflow",
                       "0.1", experiment="ids")
    env = base_env(tmp_path, MLFLOW_TRACKING_URI=mlflow_server.url)
    res = run_runsnap(["diff", "--all", "--format", "json", str(a), str(b)], tmp_path, env)
    report = json.loads(res.stdout)
    rows = {d["key"]: d for d in report["differences"]}
    ids = rows["env MLFLOW_RUN_ID"]
    assert (ids["a"], ids["b"]) == (run_a, run_b)
    assert ids["hidden"] and "tracked run" in ids["reason"], ids
    made_here = [d for k, d in rows.items() if k.startswith("env ") and not d["hidden"]]
    assert made_here == [], made_here
    assert res.returncode == 0, [d["key"] for d in report["differences"] if not d["hidden"]]
