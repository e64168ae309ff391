"""Host facts the shell chose (runsnap/diffing/consequences.py ``from_shell``): a CUDA_HOME set
by ``module load cuda`` in one shell makes ``[system] toolchain cuda_home`` differ too; with the
same outcome it changed nothing, as the variable it comes from did not; nor did the CPU
affinity whoever launched the run gave it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import runsnap
from runsnap.capturing import run
from tests.conftest import RUNSNAP

ADD = "print(sum(range(10)))"


def _two(tmp_path: Path, base_env: dict[str, str], script: str) -> runsnap.Report:
    app = tmp_path / "app.py"
    app.write_text(script)
    # PATH without any nvcc: B's CUDA_HOME comes from the host or nowhere
    env = {**base_env, "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}
    run([sys.executable, str(app)], env={**env, "CUDA_HOME": "/sw/cuda/12.4.1"},
        cwd=tmp_path, output=tmp_path / "a.toml")
    run([sys.executable, str(app)], env=env, cwd=tmp_path, output=tmp_path / "b.toml")
    return runsnap.diff(runsnap.load(tmp_path / "a.toml"), runsnap.load(tmp_path / "b.toml"))


def test_a_cuda_home_from_the_shell_changes_nothing_when_the_runs_end_alike(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    report = _two(tmp_path, base_env, ADD)
    cuda = [d for d in report.differences if d.key == "toolchain.cuda_home"]
    assert cuda and all(d.hidden for d in cuda), cuda
    assert "changed nothing the runs show" in cuda[0].reason
    assert report.to_dict()["differences"] == [], report.verdict()


def test_it_still_counts_when_the_outcomes_differ(tmp_path: Path,
                                                  base_env: dict[str, str]) -> None:
    report = _two(tmp_path, base_env,
                  "import os, sys\nsys.exit(3 if 'CUDA_HOME' not in os.environ else 0)\n")
    cuda = [d for d in report.differences if d.key == "toolchain.cuda_home"]
    assert cuda and not cuda[0].hidden, cuda


def test_a_cpu_affinity_given_at_launch_changes_nothing_when_the_runs_end_alike(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    """One run launched under ``taskset -c 0`` (as mpirun binds a rank to a core), the other
    not: ``[system] cpu.affinity`` differs, and with the same outcome it changed nothing."""
    taskset = shutil.which("taskset", path="/usr/bin:/bin")
    if taskset is None or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs util-linux's taskset and two CPUs to pin one")
    app = tmp_path / "app.py"
    app.write_text(ADD)
    env = {**base_env, "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}
    for out, pin in (("a.toml", [taskset, "-c", "0"]), ("b.toml", [])):
        subprocess.run([*pin, *RUNSNAP, "capture", "-o", str(tmp_path / out), "--",
                        sys.executable, str(app)], env=env, cwd=tmp_path, check=True,
                       capture_output=True)
    report = runsnap.diff(runsnap.load(tmp_path / "a.toml"), runsnap.load(tmp_path / "b.toml"))
    affinity = [d for d in report.differences if d.key == "cpu.affinity"]
    assert affinity and all(d.hidden for d in affinity), affinity
    assert report.to_dict()["differences"] == [], report.verdict()
