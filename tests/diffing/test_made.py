"""Values the launcher, the tracker or runsnap made for one run are noise across runs
(runsnap/diffing/made.py): rank 1 of one job against rank 1 of another, as torchrun and Slurm
set their variables, each pair two real traced launches."""

from __future__ import annotations

import sys
from pathlib import Path

from runsnap.diffing import compare
from tests.diffing.conftest import Capture, write_script

#: A worker that reads what torch.distributed's env:// rendezvous reads, and a setting of its
#: own, which fails in B.
WORKER = """
    import os
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    err_file = os.environ.get("TORCHELASTIC_ERROR_FILE", "")
    bucket = int(os.environ.get("TRAIN_BUCKET_MB", "25"))
    print(f"rank={os.environ['RANK']} store={addr}:{port} bucket_mb={bucket}")
    """


def _job(job: str, port: str, temp: tuple[str, str], rank: int = 1) -> dict[str, str]:
    """The variables torchrun (torch/distributed/run.py, elastic agent) gives rank ``rank``
    of a two-rank job on one node: its run id, the store's address and port, the error file
    under ``tempfile.mkdtemp(prefix="torchelastic_")`` and ``mkdtemp(prefix=f"{run_id}_")``."""
    return {"TORCHELASTIC_RUN_ID": job, "RANK": str(rank), "LOCAL_RANK": str(rank),
            "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "0",
            "GROUP_WORLD_SIZE": "1", "ROLE_RANK": str(rank), "ROLE_NAME": "default",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
            "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
            "TORCHELASTIC_USE_AGENT_STORE": "True",
            "TORCHELASTIC_ERROR_FILE": f"/tmp/torchelastic_{temp[0]}/{job}_{temp[1]}/"
                                       f"attempt_0/{rank}/error.json"}


def test_a_port_and_a_run_id_the_launcher_made_are_not_causes(launched: Capture,
                                                               tmp_path: Path) -> None:
    """Two torchrun jobs (--standalone: a port the kernel chose, a run id per job), rank 1
    against rank 1: the port the worker read on its way, the run id and the error file under
    the job's temporary folder are noise; the worker's own setting is the cause."""
    app = write_script(tmp_path, "worker.py", WORKER)
    argv = [sys.executable, str(app)]
    a = launched(env=_job("4f1c2a9e-b5d3", "45123", ("k3j_l1ab", "a9c2x_1z")), argv=argv)
    b = launched(env={**_job("77e0d1c4-29aa", "51877", ("0qpz9t4w", "b7d1kk2p")),
                      "TRAIN_BUCKET_MB": "25mb"}, argv=argv)
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    hidden = {d.key: d for d in report.hidden}
    for name in ("MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_ERROR_FILE"):
        assert name in hidden and hidden[name].reason.startswith("noise: "), name
    assert "a port the kernel chose" in hidden["MASTER_PORT"].reason
    assert "job id" in hidden["TORCHELASTIC_ERROR_FILE"].reason
    assert (report.confidence, report.candidates[0].key) == ("confident", "TRAIN_BUCKET_MB")


def test_temporary_names_whose_random_part_holds_an_underscore(launched: Capture,
                                                               tmp_path: Path) -> None:
    """The temporary folders of two real torchrun jobs (torch 2.13, ``--standalone``):
    ``tempfile`` drew ``_yrwwr1l`` for one, its random part beginning with ``_``, the same
    character that ends the prefix. The error file is still a value the launcher made."""
    app = write_script(tmp_path, "worker.py", WORKER)
    argv = [sys.executable, str(app)]
    a = launched(env=_job("8e502555-7285-4c83-8822-0d8af379b9a0", "37305",
                          ("_yrwwr1l", "xleu73cy")), argv=argv)
    b = launched(env={**_job("ae82299c-0001-4be7-adf3-3db904de351b", "33479",
                             ("ayiuqrzf", "ze789v3d")), "TRAIN_BUCKET_MB": "25mb"}, argv=argv)
    report = compare(a, b)
    hidden = {d.key: d for d in report.hidden}
    assert "job id" in hidden["TORCHELASTIC_ERROR_FILE"].reason, [
        (d.key, d.reason) for d in report.counted]
    assert (report.confidence, report.candidates[0].key) == ("confident", "TRAIN_BUCKET_MB")


def test_a_port_the_user_chose_stays_a_candidate(launched: Capture, tmp_path: Path) -> None:
    """``--master-port 29500`` against ``29501``: ports below the kernel's range were chosen,
    and the one the failing run read stays a candidate."""
    app = write_script(tmp_path, "worker.py", WORKER.rstrip() + "\n    assert port == 29500, port\n")
    argv = [sys.executable, str(app)]
    a = launched(env=_job("job-a1", "29500", ("k3j_l1ab", "a9c2x_1z")), argv=argv)
    b = launched(env=_job("job-b2", "29501", ("0qpz9t4w", "b7d1kk2p")), argv=argv)
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    assert "MASTER_PORT" in {d.key for d in report.counted}
    assert report.candidates[0].key == "MASTER_PORT", report.verdict()


def test_a_slurm_job_id_in_a_path_is_noise_and_a_port_set_by_hand_is_not(
        launched: Capture, tmp_path: Path) -> None:
    """An output folder named by the job id (``/scratch/$SLURM_JOB_ID``) differs in every
    job; outside a launcher's record, a port in the kernel's range is no launcher's."""
    app = write_script(tmp_path, "job.py", """
        import os
        print(os.environ["OUT_DIR"], os.environ["APP_PORT"])
        """)
    argv = [sys.executable, str(app)]

    def slurm(job: str) -> dict[str, str]:
        return {"SLURM_JOB_ID": job, "SLURM_JOBID": job, "SLURM_PROCID": "0",
                "SLURM_LOCALID": "0", "SLURM_NTASKS": "1", "SLURM_NODEID": "0",
                "OUT_DIR": f"/scratch/run-{job}/ckpt"}

    a = launched(env={**slurm("481516"), "APP_PORT": "40001"}, argv=argv)
    b = launched(env={**slurm("481539"), "APP_PORT": "40002"}, argv=argv)
    report = compare(a, b, show_all=True)
    hidden = {d.key: d for d in report.hidden}
    assert "job id (481516, 481539)" in hidden["OUT_DIR"].reason
    assert not hidden["APP_PORT"].reason.startswith("noise"), hidden["APP_PORT"].reason
