"""HTML pages kept with tracked runs, against a real MLflow tracking server: a failed
``capture --track mlflow`` run gets ``runsnap/diff.html`` (its diff against the last run of the
same command that ended well) without asking, one that ended well only with ``--track-html``;
``report --format html --log-to mlflow:RUN_ID`` adds ``runsnap/report.html``. The pages are
read back from the server as the MLflow UI would fetch them."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import pytest

import runsnap
from tests.render.htmlcheck import assert_inert
from tests.track.conftest import MLflowServer, base_env
from tests.track.conftest import runsnap as run_runsnap

pytestmark = pytest.mark.slow


def artifacts(server: MLflowServer, run_id: str) -> list[str]:
    url = f"{server.url}/api/2.0/mlflow/artifacts/list?run_id={run_id}&path=runsnap"
    with urllib.request.urlopen(url, timeout=60) as answer:
        return sorted(f["path"] for f in json.load(answer).get("files", []))


def artifact(server: MLflowServer, run_id: str, path: str) -> str:
    url = f"{server.url}/get-artifact?path={path}&run_uuid={run_id}"
    with urllib.request.urlopen(url, timeout=60) as answer:
        return str(answer.read().decode("utf-8"))


def capture(server: MLflowServer, project: Path, tmp: Path, folder: Path, algo: str,
            status: int, *extra: str) -> tuple[str, str]:
    env = base_env(tmp, MLFLOW_TRACKING_URI=server.url, MLFLOW_EXPERIMENT_NAME="pages",
                   NCCL_ALGO=algo)
    # the same command each time; the variable decides how it ends
    code = ("import os, sys; sys.exit(0 if os.environ.get('NCCL_ALGO') == 'Ring' else "
            f"{status or 3})")
    res = run_runsnap(["capture", "--track", "mlflow", *extra, "--dir", str(folder), "--",
                       sys.executable, "-c", code], project, env)
    newest = max(folder.glob("*.toml"), key=lambda p: p.stat().st_mtime_ns)
    snap = runsnap.load(newest)
    assert snap.meta["track"]["errors"] == [], res.stderr
    return snap.meta["track"]["run"].removeprefix("mlflow:"), res.stderr


def test_a_failed_run_keeps_its_diff_page_and_a_report_can_join_it(
        mlflow_server: MLflowServer, project: Path, tmp_path: Path) -> None:
    folder = tmp_path / "snaps"
    good, _ = capture(mlflow_server, project, tmp_path, folder, "Ring", 0)
    assert artifacts(mlflow_server, good) == ["runsnap/snapshot.toml"]  # ended well: not asked
    bad, said = capture(mlflow_server, project, tmp_path, folder, "<b>Tree</b>", 3)
    assert artifacts(mlflow_server, bad) == ["runsnap/diff.html", "runsnap/snapshot.toml"], said
    page = assert_inert(artifact(mlflow_server, bad, "runsnap/diff.html"))
    words = " ".join(page.text)
    assert "runsnap diff:" in words and "<b>Tree</b>" in words
    assert "env.NCCL_ALGO" in page.ids
    # asked for: a run that ended well gets one too
    again, _ = capture(mlflow_server, project, tmp_path, folder, "Ring", 0, "--track-html")
    assert "runsnap/diff.html" in artifacts(mlflow_server, again)

    env = base_env(tmp_path, MLFLOW_TRACKING_URI=mlflow_server.url)
    r = run_runsnap(["report", f"mlflow:{good}", f"mlflow:{bad}", "--format", "html",
                     "--log-to", f"mlflow:{bad}", "-o", str(tmp_path / "r.html")], project, env)
    assert r.returncode == 0, r.stderr
    assert "runsnap/report.html" in r.stderr
    kept = artifact(mlflow_server, bad, "runsnap/report.html")
    assert kept == (tmp_path / "r.html").read_text()
    assert_inert(kept)


def test_log_to_what_is_not_a_tracked_run(project: Path, tmp_path: Path) -> None:
    snap = tmp_path / "a.toml"
    env = base_env(tmp_path)
    assert run_runsnap(["capture", "-o", str(snap)], project, env).returncode == 0
    r = run_runsnap(["report", str(snap), "--format", "html", "--log-to", "nowhere"],
                    project, env)
    assert r.returncode == 2 and "not a tracked run" in r.stderr and "Traceback" not in r.stderr


def test_a_failed_wandb_run_gets_no_page_and_no_noise(project: Path, tmp_path: Path) -> None:
    env = base_env(tmp_path, WANDB_MODE="offline")
    fail = ["--", sys.executable, "-c", "raise SystemExit(3)"]
    quiet = run_runsnap(["capture", "--track", "wandb", "-o", str(tmp_path / "a.toml"), *fail],
                        project, env)
    assert quiet.returncode == 3 and "diff.html" not in quiet.stderr, quiet.stderr
    asked = run_runsnap(["capture", "--track", "wandb", "--track-html", "-o",
                         str(tmp_path / "b.toml"), *fail], project, env)
    assert asked.returncode == 3
    assert "no diff.html: runsnap cannot add files to wandb runs yet" in asked.stderr
