"""What a tracked run is tagged with, and how a project turns tracking on: the pyproject settings,
``--track none``, and the usage errors (one line, status 2)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from runsnap.snapshot import Snapshot
from runsnap.track import is_reference, project_settings
from runsnap.track.base import clean_url, summary_tags
from tests.track.conftest import base_env, free_port
from tests.track.conftest import runsnap as run_runsnap


def test_tags_say_what_a_person_filters_by() -> None:
    snap = Snapshot(meta={"id": "abc", "captured_at": "2026-12-01T10:00:00.000+00:00",
                          "label": "good", "host": "gpu-7", "runsnap_version": "0.9"},
                    sections={
                        "command": {"argv": ["python", "-m", "vllm.entrypoints", "--tp", "2"]},
                        "git": {"repos": {
                            "dep": {"commit": "1" * 40, "dirty": False, "roles": ["--repo"]},
                            "app": {"commit": "2" * 40, "dirty": True, "branch": "main",
                                    "roles": ["cwd"]}}},
                        "packages": {"distributions": {
                            "torch": {"version": "2.5.1"}, "vLLM": {"version": "0.6.3"}}},
                        "system": {"gpu": {"devices": [{"name": "NVIDIA H100"}] * 2
                                           + [{"name": "NVIDIA A10G"}]}},
                        "outcome": {"status": "signalled", "exit_status": 137},
                    })
    assert summary_tags(snap) == {
        "snapshot": "runsnap/snapshot.toml", "id": "abc",
        "captured_at": "2026-12-01T10:00:00.000+00:00", "label": "good", "host": "gpu-7",
        "commit": "2" * 40, "dirty": "true", "branch": "main",
        "gpu": "2x NVIDIA H100, NVIDIA A10G", "engine": "vllm 0.6.3",
        "outcome": "signalled", "exit_status": "137",
        "command": "python -m vllm.entrypoints --tp 2", "version": "0.9"}
    timed_out = snap.replace(sections={**snap.sections, "outcome": {
        "status": "exited", "exit_status": 124, "timed_out": True}})
    assert summary_tags(timed_out)["outcome"] == "timed out"
    bare = Snapshot(meta={"id": "x", "captured_at": "t"}, sections={})
    assert summary_tags(bare) == {"snapshot": "runsnap/snapshot.toml", "id": "x",
                                  "captured_at": "t", "gpu": "none", "outcome": "not run"}


def test_no_credentials_leave_in_a_url() -> None:
    assert clean_url("http://me:s3cret@host:5000/x?token=abc#f") == "http://host:5000/x"


@pytest.mark.parametrize(("text", "ok"), [
    ("mlflow:0123abcd", True), ("wandb:me/p/r1", True), ("wandb:wandb/offline-run-x", True),
    ("mlflow:", False), ("s3:bucket", False), ("@1", False), ("runs/mlflow:x.toml", False)])
def test_tracked_references(text: str, ok: bool) -> None:
    assert is_reference(text) is ok


def test_project_settings_from_the_nearest_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.runsnap.capture]\ntrack = "wandb"\ntrack_timeout = 2\n'
        'track_experiment = "demo"\nredact = ["X"]\n')
    below = tmp_path / "a" / "b"
    below.mkdir(parents=True)
    assert project_settings(str(below)) == {"track": "wandb", "track_timeout": 2.0,
                                            "track_experiment": "demo"}
    (below / ".runsnap.toml").write_text('[capture]\ntrack = "mlflow"\ntrack_timeout = true\n')
    assert project_settings(str(below)) == {"track": "mlflow"}
    (below / ".runsnap.toml").write_text("[capture\n")  # not TOML: nothing from it
    assert project_settings(str(below))["track"] == "wandb"


@pytest.mark.slow
def test_the_project_turns_tracking_on_and_the_command_line_off(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.runsnap.capture]\ntrack = "mlflow"\ntrack_timeout = 2\n')
    env = base_env(tmp_path, MLFLOW_TRACKING_URI=f"http://127.0.0.1:{free_port()}")
    on = run_runsnap(["capture", "-o", "on.toml", "--", sys.executable, "-c", "pass"], tmp_path,
                     env)
    assert on.returncode == 0 and "runsnap: mlflow: " in on.stderr
    off = run_runsnap(["capture", "--track", "none", "-o", "off.toml", "--", sys.executable, "-c",
                       "pass"], tmp_path, env)
    assert off.returncode == 0 and "mlflow" not in off.stderr
    assert "track = " not in (tmp_path / "off.toml").read_text()


@pytest.mark.slow
@pytest.mark.parametrize(("args", "message"), [
    (["--track", "neptune", "--", "true"],
     "runsnap: --track neptune: not a tracker runsnap knows (mlflow, wandb, none)\n"),
    (["--track", "mlflow", "--exec", "--", "true"],
     "runsnap: --track logs the snapshot when the command ends: it needs a COMMAND run by "
     "runsnap (not --pid or --exec; from inside a program: runsnap.track.log_snapshot())\n"),
])
def test_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    res = run_runsnap(["capture", "-o", "s.toml", *args], tmp_path, base_env(tmp_path))
    assert (res.returncode, res.stderr, res.stdout) == (2, message, "")


@pytest.mark.slow
def test_a_tracked_reference_with_no_server_is_one_line(tmp_path: Path) -> None:
    res = run_runsnap(["show", "mlflow:" + "0123abcd" * 4], tmp_path, base_env(tmp_path))
    assert (res.returncode, res.stdout) == (2, "")
    assert res.stderr == ("runsnap: MLFLOW_TRACKING_URI is not set (runsnap logs to a tracking "
                          "server: http://HOST:PORT)\n")
    bad = run_runsnap(["diff", "mlflow:../../etc", "mlflow:x"], tmp_path,
                      base_env(tmp_path, MLFLOW_TRACKING_URI="http://127.0.0.1:9"))
    assert (bad.returncode, bad.stderr) == (2, "runsnap: mlflow:../../etc: not a run id "
                                            "(MLflow's are 32 hexadecimal digits)\n")
