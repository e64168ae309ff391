"""runsnap under real launchers: each rank captures itself, names its file from the launcher's
variables, and the N-way diff of the job's folder names the odd rank by host and rank."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import runsnap

from .conftest import MPI_ROOT, runsnap_argv

HOST = os.uname().nodename.split(".")[0]

# Rank 2 runs with another NCCL_IB_HCA, as a node with a different network card would.
ODD_RANK = ('if [ "${OMPI_COMM_WORLD_RANK:-$SLURM_PROCID}" = 2 ]; then export NCCL_IB_HCA=mlx5_1; '
            'fi; exec "$@"')


# Slurm sets TMPDIR=/tmp in task 0 only when the caller has none (seen with Slurm 22.05: the
# N-way diff finds it as an odd one out); the tests give every rank the same.
SAME_TMPDIR = {"TMPDIR": "/tmp"}


def _ranks(launcher: list[str], out: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    capture = [*runsnap_argv(), "capture", "-o", str(out / "{job}" / "{host}-{rank}.toml"),
               "--", sys.executable, "-c", "pass"]
    return subprocess.run([*launcher, "sh", "-c", ODD_RANK, "sh", *capture],
                          env={**os.environ, "NCCL_IB_HCA": "mlx5_0", **env, **SAME_TMPDIR},
                          capture_output=True, text=True, timeout=300)


def _check_job(out: Path, name: str) -> None:
    (folder,) = out.iterdir()
    files = sorted(folder.iterdir())
    assert [f.name for f in files] == [f"{HOST}-{r}.toml" for r in range(4)]
    snaps = [runsnap.load(f) for f in files]
    assert [(s.meta["launcher"]["name"], s.meta["launcher"]["rank"],
             s.meta["launcher"]["world_size"], s.meta["launcher"]["job"]) for s in snaps] == [
        (name, r, 4, folder.name) for r in range(4)]
    whole_lines = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    diff = subprocess.run([*runsnap_argv(), "diff", str(folder)], capture_output=True, text=True,
                          timeout=120, env=whole_lines)
    assert diff.returncode == 1, diff.stdout + diff.stderr
    lines = diff.stdout.splitlines()
    assert lines[0].startswith(
        "runsnap diff: 4 snapshots, 1 key not the same everywhere (")
    assert lines[0].endswith(f"odd one out: {HOST} rank 2 (alone in 1 key)")
    assert lines[1].startswith(f"  set: 4 snapshots from 1 host ({HOST}), ranks 0-3, job {folder.name}")
    assert f"        {HOST} rank 2 has mlx5_1\n        the other 3 have mlx5_0\n" in diff.stdout


@pytest.mark.slow
def test_mpirun_ranks(mpirun, tmp_path):
    done = _ranks([*mpirun, "-np", "4"], tmp_path / "snaps", MPI_ROOT)
    assert done.returncode == 0, done.stderr
    _check_job(tmp_path / "snaps", "openmpi")


@pytest.mark.slow
def test_srun_ranks(slurm, tmp_path):
    done = _ranks(["srun", "-n", "4", "--overcommit", "-t", "5"], tmp_path / "snaps", slurm)
    assert done.returncode == 0, done.stderr
    _check_job(tmp_path / "snaps", "slurm")


def test_sbatch_job(slurm, tmp_path):
    """A batch job whose steps capture each rank: the same job id names the folder."""
    capture = [*runsnap_argv(), "capture", "-o", str(tmp_path / "snaps" / "{job}" / "{host}-{rank}.toml"),
               "--", sys.executable, "-c", "pass"]
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\nsrun -n 2 --overcommit " + shlex.join(capture) + "\n")
    done = subprocess.run(["sbatch", "--wait", "-n", "2", "--overcommit", "-t", "5",
                           "-o", str(tmp_path / "job.out"), str(script)],
                          env={**os.environ, **slurm}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr + (tmp_path / "job.out").read_text()
    job = done.stdout.split()[-1]
    files = sorted((tmp_path / "snaps" / job).iterdir())
    assert [f.name for f in files] == [f"{HOST}-0.toml", f"{HOST}-1.toml"]
    assert {runsnap.load(f).meta["launcher"]["job"] for f in files} == {job}


# torchrun (torch 2.13) on one node, with no --rdzv-endpoint and no --master-port, replaces
# --rdzv-id with a fresh UUID (as --standalone does); it keeps the id where the rendezvous is
# named (c10d with an endpoint, or static with a --master-port), and says "none" where no id
# was given. torch is not installed in CI for this: torchrun is covered through its variables in
# test_naming there.
def _torchrun(out: Path, *args: str) -> list[Path]:
    """Run a 2-worker torchrun job whose workers capture into ``out/{job}/{rank}.toml``; the
    job's folder."""
    pytest.importorskip("torch", reason="torch is not installed here")
    before = set(out.iterdir()) if out.exists() else set()
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", *args,
         "--no-python", *runsnap_argv()[:1], "-m", "runsnap", "capture", "--no-run", "-o",
         str(out / "{job}" / "{rank}.toml")],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (folder,) = set(out.iterdir()) - before
    assert sorted(p.name for p in folder.iterdir()) == ["0.toml", "1.toml"]
    return sorted(folder.iterdir())


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return str(s.getsockname()[1])


def test_torchrun_when_torch_is_here(tmp_path):
    """A named rendezvous: the folder is the --rdzv-id, for either backend."""
    assert _torchrun(tmp_path, "--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:0",
                     "--rdzv-id", "t1")[0].parent.name == "t1"
    assert _torchrun(tmp_path, "--master-port", _free_port(), "--rdzv-id", "t2"
                     )[0].parent.name == "t2"


def test_torchrun_jobs_without_their_own_id_when_torch_is_here(tmp_path):
    """The id torchrun made (its UUID), or, for torchrun's "none", a folder per job: two jobs
    started alike never share one."""
    files = _torchrun(tmp_path, "--rdzv-id", "ignored-by-torchrun")
    ids = {runsnap.load(f).meta["launcher"]["vars"]["TORCHELASTIC_RUN_ID"] for f in files}
    assert ids == {files[0].parent.name} and len(files[0].parent.name) == 36  # a UUID
    port = _free_port()
    first, second = (_torchrun(tmp_path, "--master-port", port)[0] for _ in range(2))
    assert first.parent != second.parent
    for f in (first, second):
        launcher = runsnap.load(f).meta["launcher"]
        assert launcher["vars"]["TORCHELASTIC_RUN_ID"] == "none"
        assert launcher["job"] == f.parent.name and f.parent.name.startswith("none_")


# diff JOB_A/ JOB_B/ on real mpirun and srun jobs (runsnap/views/jobs.py, runsnap/diffing/made.py):
# in this file, not one of its own, because every file that starts the private Slurm cluster
# runs on its own xdist worker, and one worker's slurm-down stopped the other's jobs.
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
         broken: str = "", args: tuple[str, ...] = ()) -> Path:
    capture = [*runsnap_argv(), "capture", "-o", str(out / "{job}" / "{rank}.toml"), "--",
               sys.executable, str(app), *args]
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
    assert report["notes"][0] == "job against job, 2 ranks paired by id, 1 differs; rank 1 shown"
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


#: Reads its MPI settings in a scan of the environment (as MPI bindings do), then an option.
SCANS_OMPI = """
import os, sys
mpi = {k: v for k, v in os.environ.items() if k.startswith("OMPI_")}
chunk = int(sys.argv[sys.argv.index("--chunk") + 1])
if chunk > 100:
    raise ValueError(f"chunk {chunk} larger than the buffer ({len(mpi)} MPI settings)")
"""


@pytest.mark.slow
def test_mpiruns_copy_of_the_command_line_is_not_a_second_cause(mpirun, tmp_path):
    """mpirun gives each rank its arguments joined as OMPI_ARGV, and the program reads every
    OMPI_* variable: the option whose value the error quotes is the one cause, decided, and
    the launcher's copy is hidden as made from the command line."""
    app = tmp_path / "worker.py"
    app.write_text(SCANS_OMPI)
    good = _job([*mpirun, "-np", "2"], tmp_path / "jobs", MPI_ROOT, app, args=("--chunk", "64"))
    bad = _job([*mpirun, "-np", "2"], tmp_path / "jobs", MPI_ROOT, app, args=("--chunk", "640"))
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run([*runsnap_argv(), "diff", "--all", "--format", "json", str(good),
                           str(bad)], capture_output=True, text=True, timeout=120, env=env)
    report = json.loads(done.stdout)
    shown = [d for d in report["differences"] if not d["hidden"] and d["section"] != "outcome"]
    assert [d["key"] for d in shown] == ["--chunk"], [d["key"] for d in shown]
    assert report["confidence"] == "confident"
    (argv,) = [d for d in report["differences"] if d["key"] == "OMPI_ARGV"]
    assert argv["hidden"] and "copy of each run's command line" in argv["reason"]


@pytest.mark.slow
def test_two_srun_jobs_rank_against_rank(slurm, tmp_path):
    app = tmp_path / "worker.py"
    app.write_text(WORKER)
    srun = ["srun", "-n", "2", "--overcommit", "-t", "5"]
    good = _job(srun, tmp_path / "jobs", slurm, app)
    bad = _job(srun, tmp_path / "jobs", slurm, app, broken="sixty")
    _check(good, bad)


# A whole job captured from outside its launcher: each line of the ranks' output carries the
# launcher's mark (mpirun --tag-output, srun --label); the traceback is read through it.
FAILING = """
def load(path):
    raise FileNotFoundError(f"no shard at {path}")

load("/data/shard-7")
"""


def _job_traceback(launcher: list[str], tmp_path: Path, env: dict[str, str]) -> dict:
    app = tmp_path / "fail.py"
    app.write_text(FAILING)
    out = tmp_path / "job.toml"
    done = subprocess.run([*runsnap_argv(), "capture", "-o", str(out), "--", *launcher,
                           sys.executable, str(app)], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0, done.stderr
    return runsnap.load(out)["outcome"]


@pytest.mark.slow
def test_mpirun_tag_output_traceback(mpirun, tmp_path):
    outcome = _job_traceback([*mpirun, "-np", "2", "--tag-output"], tmp_path, MPI_ROOT)
    assert "[1,0]<stderr>:FileNotFoundError" in "\n".join(outcome["stderr"]["tail"])
    tb = outcome["traceback"]
    assert (tb["type"], tb["message"]) == ("FileNotFoundError", "no shard at /data/shard-7")
    assert [f["function"] for f in tb["frames"]] == ["<module>", "load"]
    assert outcome["first_error"] == "FileNotFoundError: no shard at /data/shard-7"


@pytest.mark.slow
def test_srun_label_traceback(slurm, tmp_path):
    outcome = _job_traceback(["srun", "-n", "2", "--overcommit", "-t", "5", "--label"],
                             tmp_path, slurm)
    assert "0: FileNotFoundError" in "\n".join(outcome["stderr"]["tail"])
    tb = outcome["traceback"]
    assert (tb["type"], tb["message"]) == ("FileNotFoundError", "no shard at /data/shard-7")
    assert [f["function"] for f in tb["frames"]] == ["<module>", "load"]
    assert outcome["first_error"] == "FileNotFoundError: no shard at /data/shard-7"
