"""A tracker that is down, never answers or refuses costs the launch at most ``--track-timeout``
seconds: the command runs, the snapshot is written locally, and the problem is one line on
stderr and an entry in ``[meta.track] errors``. Every server here is on 127.0.0.1."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

import runsnap
from tests.track.conftest import base_env
from tests.track.conftest import runsnap as run_runsnap

#: Real servers, real clients, real launches: seconds each.
pytestmark = pytest.mark.slow

#: The child notes when it started and which run it was given.
CHILD = ("import os, sys, time; open(sys.argv[1], 'w').write('%r %s' % (time.time(), "
         "os.environ.get('MLFLOW_RUN_ID', '-')))")
#: What the machine may add to the timeout (the capture itself, a loaded machine): generous,
#: since a launch that waited on the tracker would wait minutes (urllib has no deadline of its
#: own, and mlflow's client retries seven times).
SLACK = 25.0


def launch(tmp: Path, tracker: str, env: dict[str, str], timeout: float
           ) -> tuple[float, str, str, runsnap.Snapshot]:
    out, mark = tmp / "s.toml", tmp / "started"
    t0 = time.time()
    res = run_runsnap(["capture", "--track", tracker, "--track-timeout", str(timeout), "-o",
                       str(out), "--", sys.executable, "-c", CHILD, str(mark)], tmp, env)
    assert res.returncode == 0, res.stderr
    started, run_id = mark.read_text().split()
    return float(started) - t0, run_id, res.stderr, runsnap.load(out)


@pytest.mark.parametrize("server", ["closed_port", "never_answers", "refuses"])
def test_mlflow_that_cannot_take_the_run(server: str, request: pytest.FixtureRequest,
                                         tmp_path: Path) -> None:
    url = request.getfixturevalue(server)
    env = base_env(tmp_path, MLFLOW_TRACKING_URI=url)
    delay, run_id, stderr, snap = launch(tmp_path, "mlflow", env, timeout=3)
    assert delay < 3 + SLACK
    assert run_id == "-"  # the child was given no run
    expected = {
        "closed_port": f"runsnap: mlflow: {url}/api/2.0/mlflow/runs/create: cannot connect: "
                       f"Connection refused; the run is not tracked",
        "never_answers": f"runsnap: mlflow: {url}: no answer within 3 s; the run is not tracked",
        "refuses": f"runsnap: mlflow: {url}/api/2.0/mlflow/runs/create refused: HTTP 403 "
                   f"Forbidden: Permission denied; the run is not tracked",
    }[server]
    lines = [line for line in stderr.splitlines() if line.startswith("runsnap: mlflow")]
    if server == "never_answers" and lines and "no complete answer within 3 s" in lines[0]:
        # on a loaded machine the exchange's one deadline (all requests together) can run
        # out before the socket's own timeout fires: the same timeout, in the deadline's words
        expected = (f"runsnap: mlflow: {url}/api/2.0/mlflow/runs/create: no complete answer "
                    f"within 3 s (--track-timeout, all requests together); the run is not "
                    f"tracked")
    assert lines == [expected]
    assert snap.meta["track"] == {"tracker": "mlflow", "errors": [expected.removeprefix(
        "runsnap: ")]}
    assert snap["outcome"]["exit_status"] == 0
    shown = run_runsnap(["show", str(tmp_path / "s.toml")], tmp_path, env)
    assert expected.removeprefix("runsnap: mlflow: ") in shown.stdout


def test_mlflow_without_a_server_named(tmp_path: Path) -> None:
    env = base_env(tmp_path, MLFLOW_TRACKING_URI="sqlite:///runs.db")
    delay, run_id, stderr, snap = launch(tmp_path, "mlflow", env, timeout=3)
    assert run_id == "-" and delay < 3 + SLACK
    assert [line for line in stderr.splitlines() if line.startswith("runsnap: mlflow")] == [
        "runsnap: mlflow: MLFLOW_TRACKING_URI=sqlite:///runs.db: runsnap logs to a tracking "
        "server (http:// or https://), not to a local store; the run is not tracked"]


@pytest.mark.parametrize("server", ["never_answers", "refuses"])
def test_wandb_that_cannot_take_the_snapshot(server: str, request: pytest.FixtureRequest,
                                             tmp_path: Path) -> None:
    pytest.importorskip("wandb")
    url = request.getfixturevalue(server)
    # W&B's client gives up on the run within --track-timeout, then, on its way out, would send
    # its own error report to the same server (14 s more against one that never answers):
    # runsnap's helper turns that off (WANDB_ERROR_REPORTING), so the capture ends soon after.
    env = base_env(tmp_path, WANDB_MODE="online", WANDB_BASE_URL=url, WANDB_API_KEY="k" * 40)
    t0 = time.time()
    delay, _, stderr, snap = launch(tmp_path, "wandb", env, timeout=3)
    assert delay < SLACK  # W&B's run is named here: the launch never waits for it
    # the timeout, W&B's start and giving up: 4.5 s here quiet, 18 s with W&B's error report
    assert time.time() - t0 < 3 + 10
    [line] = [line for line in stderr.splitlines() if line.startswith("runsnap: wandb")]
    run = snap.meta["track"]["run"]
    assert line.startswith("runsnap: wandb: ") and line.endswith(f"; the snapshot is not in {run}")
    assert snap.meta["track"]["errors"] == [line.removeprefix("runsnap: ")]
    assert snap["outcome"]["exit_status"] == 0
