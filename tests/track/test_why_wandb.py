"""``runsnap why`` finds GOOD in the W&B project BAD was logged to, with W&B's real client in
offline mode (real run folders, no network), and its trials leave no run folder behind.

What is not searched, and so not tested: runs that exist only on a W&B server (logged from
another machine); ``why`` reads the run folders on this machine (``offline-run-*``, and the
``run-*`` an online run leaves too), and a W&B server cannot run in the suite."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from runsnap import load
from tests.track.conftest import base_env, runsnap

pytestmark = pytest.mark.slow

pytest.importorskip("wandb", reason="wandb is not installed (pip install -e '.[test]' brings it)")

_TRAIN = """\
import os, sys
import wandb

run = wandb.init(project="demo", config={"mode": os.environ.get("MODE", "")})
if os.environ.get("MODE") == "x":
    sys.exit("ValueError: mode x is not supported")
run.log({"loss": 0.5})
run.finish()
print("trained")
"""


def _runs(project: Path) -> int:
    return len(list((project / "wandb").glob("offline-run-*")))


def test_why_finds_the_reference_in_the_wandb_project_bad_was_logged_to(
        tmp_path: Path) -> None:
    """BAD named as ``wandb:RUN_ID``, no snapshot in any folder here: the reference is the
    newest earlier run of the same launch that exited 0, read from the offline run folders;
    an earlier good run of another program and a later failure are passed over."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(_TRAIN)
    (project / "other.py").write_text(_TRAIN)
    env = base_env(tmp_path, WANDB_MODE="offline")
    refs = {}
    for name, script, mode in (("other", "other.py", "y"), ("good", "train.py", "y"),
                               ("bad", "train.py", "x")):
        out = tmp_path / "elsewhere" / f"{name}.toml"
        res = runsnap(["capture", "--track", "wandb", "-o", str(out), "--", sys.executable,
                       script], project, {**env, "MODE": mode})
        assert out.exists(), res.stderr
        refs[name] = load(out).meta["track"]["run"]
    before = _runs(project)
    res = runsnap(["why", refs["bad"], "--prove", "--yes", "--format", "json"], project, env)
    assert res.returncode == 0, res.stderr
    answer = json.loads(res.stdout)
    good_id = refs["good"].removeprefix("wandb:")
    assert answer["reference"].startswith("wandb:wandb/offline-run-")
    assert answer["reference"].split(",")[0].endswith(f"-{good_id}")
    assert "the newest earlier tracked run of the same launch" in answer["reference"]
    assert answer["status"] in ("proven", "found") and answer["launches"] >= 2
    assert [c["key"] for c in answer["cause"]] == ["MODE"]
    assert _runs(project) == before  # the trials ran with W&B disabled: no run folder


def test_why_says_when_the_wandb_project_holds_no_good_run(tmp_path: Path) -> None:
    """Only failures of the launch in the run folders: one clear line, exit 2."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(_TRAIN)
    env = base_env(tmp_path, WANDB_MODE="offline")
    out = tmp_path / "elsewhere" / "bad.toml"
    res = runsnap(["capture", "--track", "wandb", "-o", str(out), "--", sys.executable,
                   "train.py"], project, {**env, "MODE": "x"})
    assert out.exists(), res.stderr
    res = runsnap(["why", load(out).meta["track"]["run"], "--yes"], project, env)
    assert res.returncode == 2
    assert res.stderr.startswith("runsnap: no earlier snapshot of the same launch") \
        and "nor in the wandb runs BAD was logged to: name one with --against REF" in res.stderr \
        and "Traceback" not in res.stderr and len(res.stderr.splitlines()) == 1
