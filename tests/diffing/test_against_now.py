"""``runsnap diff A`` against now: what only a run has (its outcome, the facts of a running
process, run-time evidence, timings) is not a difference, so an unchanged context says "same"."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import run_runsnap


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RUNSNAP_DIR", "NO_COLOR")}
    return {**env, "RUNSNAP_KEY_FILE": str(tmp_path / "key"), **extra}


@pytest.mark.slow
def test_a_failed_run_against_an_unchanged_context_is_the_same(tmp_path: Path) -> None:
    env = _env(tmp_path)
    done = run_runsnap("capture", "-o", "run2.toml", "--", sys.executable, "-c",
                       "import sys; print('x'); sys.exit(3)", cwd=tmp_path, env=env)
    assert done.returncode == 3
    same = run_runsnap("diff", "run2.toml", cwd=tmp_path, env=env)
    assert same.returncode == 0, same.stdout
    assert same.stdout.startswith("runsnap diff: no differences")
    assert "exit_status" not in same.stdout
    # what now can have still counts
    other = run_runsnap("diff", "run2.toml", cwd=tmp_path, env=_env(tmp_path, NCCL_ALGO="Ring"))
    assert other.returncode == 1
    assert "NCCL_ALGO" in other.stdout and "exit_status" not in other.stdout


def test_a_running_process_against_now_leaves_its_process_facts_out(tmp_path: Path) -> None:
    env = _env(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                             cwd=tmp_path, env=env)
    try:
        time.sleep(0.3)
        done = run_runsnap("capture", "--pid", str(child.pid), "-o", "pid.toml", cwd=tmp_path,
                           env=env)
        assert done.returncode == 0, done.stderr
    finally:
        child.kill()
        child.wait()
    from runsnap import load

    assert load(tmp_path / "pid.toml").sections.get("process")
    report = run_runsnap("diff", "pid.toml", "--all", "--format", "json", cwd=tmp_path, env=env)
    import json

    data = json.loads(report.stdout)
    assert {d["section"] for d in data["differences"]} <= {"env"}, data["differences"]


def test_against_now_when_the_python_given_then_is_gone(tmp_path: Path) -> None:
    """A's ``--python`` no longer exists: now is captured with the interpreter the command
    would run today, and the switch is the difference (not a usage error)."""
    import shutil

    env = _env(tmp_path)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "old")],
                   check=True)
    done = run_runsnap("capture", "--python", str(tmp_path / "old" / "bin" / "python"),
                       "--no-run", "-o", "a.toml", "--", "python3", "serve.py", cwd=tmp_path,
                       env=env)
    assert done.returncode == 0, done.stderr
    shutil.rmtree(tmp_path / "old")
    now = run_runsnap("diff", "a.toml", cwd=tmp_path, env=env)
    assert now.returncode == 1, now.stderr
    assert "packages" in now.stdout and "--python" not in now.stderr.replace(
        "comparing", "")
