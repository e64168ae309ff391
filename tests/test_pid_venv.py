"""``capture --pid`` of a process running in a virtual environment records that environment's
interpreter and packages, not the base interpreter's (issue 27, item 2): ``/proc/PID/exe`` is
the base binary, so the venv is found as Python found it (argv[0], its maps, VIRTUAL_ENV)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runsnap.snapshot import load
from tests.conftest import run_runsnap

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")


def _running(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


@pytest.mark.parametrize("how", ["by-path", "on-PATH"])
def test_pid_of_a_venv_process_records_the_venv(tmp_path: Path, stack_venv: Path,
                                                how: str) -> None:
    python = stack_venv / "bin" / "python"
    code = "import sglang, time; print('ready', flush=True); time.sleep(60)"
    env = {"PATH": f"{stack_venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path),
           "RUNSNAP_KEY_FILE": os.environ["RUNSNAP_KEY_FILE"],
           "RUNSNAP_CACHE_DIR": os.environ["RUNSNAP_CACHE_DIR"]}
    argv = [str(python) if how == "by-path" else "python", "-c", code]
    proc = _running(argv, tmp_path, env)
    try:
        snap = tmp_path / "pid.toml"
        r = run_runsnap("capture", "--pid", str(proc.pid), "-o", str(snap), cwd=tmp_path,
                        env={**os.environ, "PATH": f"/usr/bin:/bin:{Path(sys.executable).parent}"})
        assert r.returncode == 0, r.stderr
    finally:
        proc.kill()
        proc.communicate()
    pk = load(snap)["packages"]
    assert Path(pk["interpreter"]).parent.parent == stack_venv, pk["interpreter"]
    assert "--python" not in pk["reason"], pk["reason"]
    assert str(stack_venv) in pk["reason"], pk["reason"]
    dists = pk["distributions"]
    assert dists["sglang"]["version"] == "0.5.23", sorted(dists)
    assert dists["triton"]["version"] == "3.8.0"


def test_pid_of_a_base_interpreter_process_says_so(tmp_path: Path) -> None:
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    proc = _running([base, "-I", "-c", "import time; print('ready', flush=True); "
                     "time.sleep(60)"], tmp_path, {"PATH": "/usr/bin:/bin"})
    try:
        snap = tmp_path / "pid.toml"
        r = run_runsnap("capture", "--pid", str(proc.pid), "-o", str(snap), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    finally:
        proc.kill()
        proc.communicate()
    pk = load(snap)["packages"]
    assert "--python" not in pk["reason"], pk["reason"]
    assert os.path.realpath(pk["interpreter"]) == base
