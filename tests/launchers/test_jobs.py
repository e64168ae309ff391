"""``runsnap diff JOB_A/ JOB_B/`` on real mpirun and srun jobs: the ranks pair by their id, the
launcher's job ids are noise, and the rank that failed in B shows its cause as a two-way diff
would (runsnap/views/jobs.py, runsnap/diffing/made.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import MPI_ROOT, runsnap_argv

#: Rank 1 of the broken job is given another value of a setting its program reads.
WORKER = """
import os, sys
rank = os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("SLURM_PROCID")
chunk = int(os.environ.get("APP_CHUNK", "64"))
print(f"rank={rank} chunk={chunk}")
"""
BREAK_RANK_1 = ('if [ "${OMPI_COMM_WORLD_RANK:-$SLURM_PROCID}" = 1 ]; then '
                'export APP_CHUNK="$BROKEN_CHUNK"; fi; exec "$@"')


def _job(launcher: list[str], out: Path, env: dict[str, str], app: Path,
         broken: str = "") -> Path:
    capture = [*runsnap_argv(), "capture", "-o", str(out / "{job}" / "{rank}.toml"), "--",
               sys.executable, str(app)]
    env = {**os.environ, **env, "TMPDIR": "/tmp", "BROKEN_CHUNK": broken or "64"}
    before = set(out.iterdir()) if out.exists() else set()
    subprocess.run([*launcher, "sh", "-c", BREAK_RANK_1, "sh", *capture], env=env,
                   capture_output=True, text=True, timeout=300)
    (folder,) = set(out.iterdir()) - before  # one command line for both jobs: their own ids
    return folder


def _check(good: Path, bad: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run([*runsnap_argv(), "diff", "--format", "json", str(good), str(bad)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    shown = [d for d in report["differences"] if not d["hidden"] and d["section"] != "outcome"]
    assert [d["key"] for d in shown][:1] == ["APP_CHUNK"], [d["key"] for d in shown]
    assert report["confidence"] == "confident" and report["a"]["rank"] == 1
    assert report["notes"][0] == "job against job, 2 ranks paired by id; rank 1 shown (1 differ)"
    # two jobs: their ids, and the ports the launcher was given for each, are noise
    assert good.name != bad.name
    assert [d["key"] for d in shown if d["section"] == "env"
            and d["key"] != "BROKEN_CHUNK"] == ["APP_CHUNK"], shown


@pytest.mark.slow
def test_two_mpirun_jobs_rank_against_rank(mpirun, tmp_path):
    app = tmp_path / "worker.py"
    app.write_text(WORKER)
    good = _job([*mpirun, "-np", "2"], tmp_path / "jobs", MPI_ROOT, app)
    bad = _job([*mpirun, "-np", "2"], tmp_path / "jobs", MPI_ROOT, app, broken="sixty")
    _check(good, bad)


@pytest.mark.slow
def test_two_srun_jobs_rank_against_rank(slurm, tmp_path):
    app = tmp_path / "worker.py"
    app.write_text(WORKER)
    srun = ["srun", "-n", "2", "--overcommit", "-t", "5"]
    good = _job(srun, tmp_path / "jobs", slurm, app)
    bad = _job(srun, tmp_path / "jobs", slurm, app, broken="sixty")
    _check(good, bad)
