"""Real launchers: OpenMPI's mpirun and a private single-node Slurm cluster, started and stopped
by the project's own scripts (.ci/launchers-install.sh, .ci/slurm-up.sh, .ci/slurm-down.sh).
Tests that need one skip with the reason when it cannot be had here."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RUNSNAP

CI = Path(__file__).resolve().parents[2] / ".ci"

#: OpenMPI refuses to run as root unless told twice.
MPI_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def _install() -> str | None:
    """None when the launchers are installed (installing them if this may), else why not."""
    if shutil.which("mpirun") and shutil.which("srun") and shutil.which("slurmctld"):
        return None
    if os.environ.get("RUNSNAP_NO_INSTALL"):
        return "launchers not installed and RUNSNAP_NO_INSTALL is set"
    done = subprocess.run(["bash", str(CI / "launchers-install.sh")], capture_output=True,
                          text=True, timeout=600)
    if done.returncode != 0:
        return f"cannot install openmpi-bin and slurm: {done.stderr.strip()[-300:]}"
    return None


@pytest.fixture(scope="session")
def mpirun() -> list[str]:
    """The mpirun command line to start ranks on this machine (as root too, oversubscribed)."""
    why = _install()
    if why or not shutil.which("mpirun"):
        pytest.skip(why or "mpirun not found")
    return ["mpirun", "--oversubscribe", "--bind-to", "none"]


@pytest.fixture(scope="session")
def slurm() -> Iterator[dict[str, str]]:
    """A running private Slurm cluster: the environment its clients need (SLURM_CONF)."""
    why = _install()
    if why:
        pytest.skip(why)
    up = subprocess.run(["bash", str(CI / "slurm-up.sh")], capture_output=True, text=True,
                        timeout=300)
    if up.returncode != 0:
        pytest.skip(f"the local Slurm cluster did not start: {up.stderr.strip()[-300:]}")
    conf = next(line.split("=", 1)[1] for line in up.stdout.splitlines()
                if line.startswith("export SLURM_CONF="))
    try:
        yield {"SLURM_CONF": conf}
    finally:
        subprocess.run(["bash", str(CI / "slurm-down.sh")], capture_output=True, timeout=120)


def runsnap_argv() -> list[str]:
    """runsnap as the ranks start it."""
    return list(RUNSNAP)
