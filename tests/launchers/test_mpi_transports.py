"""An Open MPI job whose ``OMPI_MCA_btl`` leaves its ranks no way to reach each other: a real
``MPI_Init`` (libmpi through ctypes, as mpi4py calls it) fails, and ``mpirun``, not the rank,
prints why, so the rank's own snapshot holds no error at all.

Seen in the diagnosis corpus (fresh6 ``mpi-btl-self-job``, benchmarks/RESULTS.md): the
verdict was undecided between five ``OMPI_MCA_*`` variables every rank read natively. ``check``
knows what the BTL list leaves (``runsnap/knowledge/mpi.py``), and a finding of the failing
side only whose message the launcher prints backs the variable when the rank failed silently.
"""

from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import runsnap_argv

#: MPI_Init and MPI_Finalize through the system's libmpi, as an MPI binding calls them.
INIT = """
import ctypes, ctypes.util
lib = ctypes.CDLL(ctypes.util.find_library("mpi") or "libmpi.so.40", mode=ctypes.RTLD_GLOBAL)
lib.MPI_Init(None, None)
lib.MPI_Finalize()
print("initialised")
"""


def _job(mpirun: list[str], folder: Path, app: Path, env: dict[str, str]) -> None:
    capture = [*runsnap_argv(), "capture", "-o", str(folder / "{rank}.toml"), "--",
               sys.executable, str(app)]
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_MCA_"))}
    subprocess.run([mpirun[0], *root, *mpirun[1:], "-np", "2", *capture],
                   env={**clean, **env, "TMPDIR": "/tmp"}, cwd=app.parent, capture_output=True,
                   text=True, timeout=300, check=False)
    assert len(list(folder.glob("*.toml"))) == 2


def _runsnap(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run([*runsnap_argv(), *args], capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """The program that calls MPI_Init, where a libmpi is there to call."""
    if ctypes.util.find_library("mpi") is None:
        pytest.skip("no libmpi to call MPI_Init")
    path = tmp_path / "init.py"
    path.write_text(INIT)
    return path


@pytest.mark.slow
def test_a_btl_list_that_reaches_no_other_rank_is_the_confident_cause(mpirun: list[str],
                                                                     tmp_path: Path,
                                                                     app: Path) -> None:
    # both shells carry Open MPI tuning; the bad one also the unit tests' "self only" list
    _job(mpirun, tmp_path / "good", app, {"OMPI_MCA_mpi_warn_on_fork": "0"})
    _job(mpirun, tmp_path / "bad", app, {"OMPI_MCA_btl": "self",
                                         "OMPI_MCA_hwloc_base_binding_policy": "none"})
    bad = json.loads((_runsnap("check", "--format", "json", str(tmp_path / "bad" / "0.toml"))
                      ).stdout)
    kinds = {f["kind"]: f for f in bad["findings"]}
    assert "reach only a process itself" in kinds["mpi-unreachable"]["message"], bad
    good = _runsnap("check", "--format", "json", str(tmp_path / "good" / "0.toml"))
    assert "mpi-unreachable" not in good.stdout
    done = _runsnap("diff", "--format", "json", str(tmp_path / "good"), str(tmp_path / "bad"))
    report = json.loads(done.stdout)
    shown = [d["key"] for d in report["differences"]
             if not d["hidden"] and d["section"] == "env"]
    assert report["confidence"] == "confident" and shown[:1] == ["OMPI_MCA_btl"], (
        report["confidence"], shown)


@pytest.mark.slow
def test_a_btl_list_that_reaches_the_node_is_no_finding(mpirun: list[str], tmp_path: Path,
                                                        app: Path) -> None:
    _job(mpirun, tmp_path / "job", app, {"OMPI_MCA_btl": "self,vader"})
    snap = tmp_path / "job" / "0.toml"
    assert "initialised" in snap.read_text()  # the job ran: no false alarm on a good list
    assert "mpi-unreachable" not in _runsnap("check", "--format", "json", str(snap)).stdout
