"""Which rank of which job a capture is, from the launcher's own variables; output names with
placeholders; many ranks writing at once without clobbering."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import runsnap
from runsnap.capturing.naming import claim, fill, values_for
from runsnap.knowledge.launchers import detect
from tests.conftest import RUNSNAP, run_runsnap

# What torchrun (torch 2.9, --nnodes 2 --nproc-per-node 4) sets in the environment of worker
# 5, as printed by the worker; torchrun is covered through these without installing torch.
TORCHRUN = {"RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4",
            "GROUP_RANK": "1", "GROUP_WORLD_SIZE": "2", "ROLE_RANK": "5", "ROLE_NAME": "default",
            "ROLE_WORLD_SIZE": "8", "MASTER_ADDR": "node-0", "MASTER_PORT": "29500",
            "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
            "TORCHELASTIC_RUN_ID": "job-42", "TORCHELASTIC_USE_AGENT_STORE": "True",
            "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "OMP_NUM_THREADS": "1"}
SLURM = {"SLURM_JOB_ID": "77", "SLURM_JOBID": "77", "SLURM_PROCID": "1", "SLURM_LOCALID": "0",
         "SLURM_NTASKS": "2", "SLURM_NODEID": "1", "SLURM_STEP_ID": "0",
         "SLURM_NODELIST": "node-[0-1]"}
OPENMPI = {"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
           "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
           "OMPI_COMM_WORLD_NODE_RANK": "1", "OMPI_MCA_ess_base_jobid": "3145729"}
# What torchrun (torch 2.13, --nproc-per-node 2 --master-port 29655, no --rdzv-id) sets for
# worker 1, as printed by the worker: "none" is torchrun's default run id, the same for every job.
TORCHRUN_NO_ID = {
    "RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "0",
    "GROUP_WORLD_SIZE": "1", "ROLE_RANK": "1", "ROLE_NAME": "default", "ROLE_WORLD_SIZE": "2",
    "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29655",
    "TORCHELASTIC_ERROR_FILE": "/tmp/torchelastic_psk9koz8/none_36dd8zuv/attempt_0/1/error.json",
    "TORCHELASTIC_MAX_RESTARTS": "0", "TORCHELASTIC_RESTART_COUNT": "0",
    "TORCHELASTIC_RUN_ID": "none", "TORCHELASTIC_SIGNALS_TO_HANDLE": "SIGTERM,SIGINT,SIGHUP,SIGQUIT",
    "TORCHELASTIC_USE_AGENT_STORE": "True", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    "OMP_NUM_THREADS": "1"}
MPICH = {"PMI_RANK": "2", "PMI_SIZE": "4", "MPI_LOCALRANKID": "0", "MPI_LOCALNRANKS": "2"}


@pytest.mark.parametrize("env, expected", [
    (TORCHRUN, {"name": "torchrun", "rank": 5, "local_rank": 1, "world_size": 8,
                "local_world_size": 4, "node_rank": 1, "job": "job-42", "also": []}),
    (SLURM, {"name": "slurm", "rank": 1, "local_rank": 0, "world_size": 2, "node_rank": 1,
             "job": "77", "also": []}),
    (OPENMPI, {"name": "openmpi", "rank": 3, "local_rank": 1, "world_size": 4,
               "local_world_size": 2, "node_rank": 1, "job": "3145729", "also": []}),
    (MPICH, {"name": "mpich", "rank": 2, "local_rank": 0, "world_size": 4,
             "local_world_size": 2, "also": []}),
    # torchrun given no --rdzv-id, on one node: the agent's own run folder, made for this job
    (TORCHRUN_NO_ID, {"name": "torchrun", "rank": 1, "local_rank": 1, "world_size": 2,
                      "local_world_size": 2, "node_rank": 0, "job": "none_36dd8zuv",
                      "also": []}),
    # ... on several nodes each agent has its own folder: torchrun's "none" is all there is
    ({**TORCHRUN_NO_ID, "GROUP_WORLD_SIZE": "2"}, {
        "name": "torchrun", "rank": 1, "local_rank": 1, "world_size": 2, "local_world_size": 2,
        "node_rank": 0, "job": "none", "also": []}),
    # srun starting torchrun: the worker's rank is torchrun's, the job is Slurm's allocation
    ({**SLURM, **TORCHRUN}, {"name": "torchrun", "rank": 5, "local_rank": 1, "world_size": 8,
                             "local_world_size": 4, "node_rank": 1, "job": "77",
                             "also": ["slurm"]}),
    # mpirun inside an sbatch job
    ({**SLURM, **OPENMPI}, {"name": "openmpi", "rank": 3, "local_rank": 1, "world_size": 4,
                            "local_world_size": 2, "node_rank": 1, "job": "77",
                            "also": ["slurm"]}),
])
def test_detect(env, expected):
    found = detect({"PATH": "/bin", **env})
    assert found is not None
    assert {k: v for k, v in found.items() if k != "vars"} == expected
    assert set(found["vars"]) <= set(env) and "PATH" not in found["vars"]


def test_no_launcher():
    assert detect({"PATH": "/bin", "LOCAL_RANK": "0"}) is None
    assert values_for(None, host="gpu7.cluster", time="2026-11-30T16:14:35.123+00:00",
                      label="x") | {"pid": ""} == {
        "host": "gpu7", "rank": "0", "local_rank": "0", "world_size": "1", "node_rank": "0",
        "job": "local", "time": "20261130T161435.123Z", "label": "x", "pid": ""}


def test_fill():
    values = {"job": "77", "host": "n1", "rank": "3", "label": "a/b"}
    assert fill("snaps/{job}/{host}-{rank:04d}.toml", values) == "snaps/77/n1-0003.toml"
    assert fill("{label}.toml", values) == "a_b.toml"  # a value never adds a folder
    assert fill("{{literal}}-{rank}.toml", values) == "{literal}-3.toml"
    with pytest.raises(ValueError, match=r"unknown placeholder \{nodename\}"):
        fill("{nodename}.toml", values)
    with pytest.raises(ValueError, match="bad placeholder"):
        fill("{rank.toml", values)


def test_claim_gives_each_writer_its_own_file(tmp_path):
    target = str(tmp_path / "snaps" / "n1.toml")
    got = [claim(target, f"s{i}".encode()) for i in range(3)]
    assert got == [target, str(tmp_path / "snaps" / "n1.1.toml"),
                   str(tmp_path / "snaps" / "n1.2.toml")]
    assert [Path(p).read_bytes() for p in got] == [b"s0", b"s1", b"s2"]
    assert sorted(os.listdir(tmp_path / "snaps")) == ["n1.1.toml", "n1.2.toml", "n1.toml"]


def test_capture_records_the_launcher_and_fills_the_name(tmp_path):
    env = {**os.environ, **SLURM, **TORCHRUN}
    out = run_runsnap("capture", "-o", str(tmp_path / "{job}" / "{host}-{rank}.toml"),
                      "--", sys.executable, "-c", "pass", env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    host = os.uname().nodename.split(".")[0]
    path = tmp_path / "77" / f"{host}-5.toml"
    assert out.stderr.splitlines()[0] == f"runsnap: snapshot {path}"
    launcher = runsnap.load(path).meta["launcher"]
    assert (launcher["name"], launcher["rank"], launcher["job"], launcher["also"]) == (
        "torchrun", 5, "77", ["slurm"])
    assert launcher["vars"]["TORCHELASTIC_RUN_ID"] == "job-42"


def test_unknown_placeholder_is_a_usage_error(tmp_path):
    out = run_runsnap("capture", "-o", str(tmp_path / "{node}.toml"), "--", sys.executable, "-c",
                      "pass", timeout=120)
    assert out.returncode == 2 and len(out.stderr.splitlines()) == 1
    assert "unknown placeholder {node}" in out.stderr and "Traceback" not in out.stderr


def test_ranks_of_one_node_starting_at_once_never_clobber(tmp_path):
    """Eight ranks of a node, started together, with a name that forgot {rank}: eight files."""
    procs = []
    for r in range(8):
        env = {**os.environ, **TORCHRUN, "RANK": str(r), "LOCAL_RANK": str(r)}
        procs.append(subprocess.Popen(
            [*RUNSNAP, "capture", "--no-run", "-o",
             str(tmp_path / "{job}" / "{host}.toml")], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    files = sorted((tmp_path / "job-42").iterdir())
    assert len(files) == 8
    ranks = sorted(runsnap.load(f).meta["launcher"]["rank"] for f in files)
    assert ranks == list(range(8))
    assert sorted(Path(o.strip()).name for o, _ in outs) == sorted(f.name for f in files)
