"""``runsnap diff JOB_A/ JOB_B/``: one job against another, rank against rank
(runsnap/views/jobs.py). Each rank is a real traced launch with the variables torchrun gives
it; the launchers themselves run in tests/launchers/test_jobs.py."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from runsnap.capturing import run
from tests.conftest import run_runsnap
from tests.diffing.conftest import write_script
from tests.diffing.test_made import _job

WORKER = """
    import os
    shards = int(os.environ.get("APP_SHARDS", "4"))
    prefetch = int(os.environ.get("APP_PREFETCH", "1"))
    print(f"rank={os.environ['RANK']} port={os.environ['MASTER_PORT']} shards={shards}")
    """


def _launch_job(folder: Path, job: str, port: str, ranks: int, app: Path,
                base: dict[str, str], odd: dict[int, dict[str, str]] | None = None) -> None:
    for rank in range(ranks):
        env = {**base, **_job(job, port, ("k3j_l1ab", f"{job[:4]}x_1z"), rank=rank),
               "WORLD_SIZE": str(ranks), **(odd or {}).get(rank, {})}
        run([sys.executable, str(app)], env=env, cwd=folder.parent,
            output=folder / f"{rank}.toml")


def test_two_jobs_pair_their_ranks_and_fold_like_two_runs(tmp_path: Path,
                                                          base_env: dict[str, str]) -> None:
    """In job B, rank 0 fails on one setting and rank 1 on another; rank 2 ran in B only.
    The report is rank 0's two-way diff: its cause first, the launcher's ports and ids hidden;
    rank 1's own cause and the rank of one job are named in notes."""
    app = write_script(tmp_path, "worker.py", WORKER)
    _launch_job(tmp_path / "job-a", "4f1c2a9e", "45123", 2, app, base_env)
    _launch_job(tmp_path / "job-b", "77e0d1c4", "51877", 3, app, base_env,
                {1: {"APP_SHARDS": "four"}, 0: {"APP_PREFETCH": "two"}})
    env = {**{k: v for k, v in os.environ.items() if k != "COLUMNS"}, "COLUMNS": "80"}
    res = run_runsnap("diff", "--format", "json", "job-a", "job-b", cwd=tmp_path, env=env)
    assert res.returncode == 1, res.stderr
    report = json.loads(res.stdout)
    shown = [d for d in report["differences"] if not d["hidden"]]
    assert shown[0]["key"] == "APP_PREFETCH" and report["confidence"] == "confident", shown[:3]
    assert "MASTER_PORT" not in {d["key"] for d in shown}
    assert report["a"]["rank"] == report["b"]["rank"] == 0
    notes = report["notes"]
    assert notes[0] == "job against job, 2 ranks paired by id, 2 differ; rank 0 shown"
    assert "rank 0 failed first" in notes  # the ranks ran one after another
    assert "rank 2 ran in B's job 77e0d1c4 only" in notes
    assert "env APP_SHARDS differs in rank 1 only" in notes
    text = run_runsnap("diff", "job-a", "job-b", cwd=tmp_path, env=env).stdout
    assert len(text.splitlines()) <= 40 and max(len(line) for line in text.splitlines()) <= 80


def test_folders_without_rank_ids_are_compared_n_way(tmp_path: Path,
                                                     base_env: dict[str, str]) -> None:
    """Snapshots of no launcher carry no rank to pair by: every file, N-way, as before."""
    for folder, value in (("a", "1"), ("b", "2")):
        for n in range(2):
            run([sys.executable, "-c", "pass"], env={**base_env, "APP_X": value},
                cwd=tmp_path, output=tmp_path / folder / f"{n}.toml")
    res = run_runsnap("diff", "--format", "json", "a", "b", cwd=tmp_path, env=dict(os.environ))
    report = json.loads(res.stdout)
    assert res.returncode == 1 and len(report["snapshots"]) == 4, sorted(report)


STOPPED = """
    import os, signal, sys
    if os.environ.get("APP_CACHE") == "16" and os.environ["RANK"] == "1":
        sys.exit("ValueError: APP_CACHE 16 is below what a shard needs")
    if os.environ.get("APP_STOPPED"):  # as its launcher stops it once another rank failed
        os.kill(os.getpid(), signal.SIGTERM)
    print("done")
    """


def test_the_rank_shown_is_the_one_that_failed_not_one_its_launcher_stopped(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    """Rank 0 of job B ended first, but by ``SIGTERM`` (its launcher stopping it); rank 1 failed
    on its own: rank 1's pair is shown, and the notes say why; ``why`` with no BAD named finds
    job B, the newest job of the folder."""
    app = write_script(tmp_path, "worker.py", STOPPED)
    _launch_job(tmp_path / "job-a", "4f1c2a9e", "45123", 2, app, {**base_env, "APP_CACHE": "64"})
    _launch_job(tmp_path / "job-b", "77e0d1c4", "51877", 2, app, {**base_env, "APP_CACHE": "16"},
                {0: {"APP_STOPPED": "1"}})
    env = {**{k: v for k, v in os.environ.items() if k != "COLUMNS"}, "COLUMNS": "80"}
    res = run_runsnap("diff", "--format", "json", "job-a", "job-b", cwd=tmp_path, env=env)
    report = json.loads(res.stdout)
    assert report["b"]["rank"] == 1 and report["candidates"][:1] == ["env APP_CACHE"], report
    assert report["notes"][:3] == ["job against job, 2 ranks paired by id, 2 differ; rank 1 shown",
                                   "rank 1 failed first", "rank 0 stopped by SIGTERM (a launcher "
                                   "stops the rest once one fails)"]
    # ``why`` with no BAD named: the newest job of the folder, against the job before it
    why = run_runsnap("why", "--format", "json", "--dir", str(tmp_path), cwd=tmp_path, env=env)
    out = json.loads(why.stdout)
    assert why.returncode == 0 and out["status"] == "confident", why.stderr
    assert out["bad"].endswith("job-b") and out["good"].endswith("job-a"), out
    assert [c["key"] for c in out["cause"]] == ["APP_CACHE"] and out["notes"] == report["notes"]


def test_a_snapshot_older_than_meta_launcher_is_placed_by_its_recorded_environment(
        tmp_path: Path) -> None:
    """A rank captured under torchrun, and the same snapshot as a runsnap before ``[meta]
    launcher`` wrote it: both are rank 3 of job j7, the older one read from its ``[env]``."""
    from runsnap.capturing import capture
    from runsnap.diffing.result import SnapInfo
    from runsnap.snapshot import Snapshot

    env = {"PATH": os.environ["PATH"], "TORCHELASTIC_RUN_ID": "j7", "GROUP_RANK": "0",
           "RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4"}
    snap = capture([sys.executable, "-c", "pass"], env=env, cwd=tmp_path)
    assert snap.records.meta.launcher.name == "torchrun"
    older = Snapshot(meta={k: v for k, v in snap.meta.items() if k != "launcher"},
                     sections=snap.sections, path=str(tmp_path / "old.toml"))
    for s in (snap, older):
        info = SnapInfo.of(s)
        assert (info.rank, info.local_rank, info.job) == (3, 1, "j7")


def test_a_torchrun_rank_as_one_launch_keeps_its_command_and_environment_less_torchrun_s(
        tmp_path: Path) -> None:
    """``why JOB/``'s relaunch of a one-node torchrun job (commands/jobrelaunch.py), from a
    rank captured under torchrun's variables: the rank's script under ``torch.distributed.run``
    with the job's size, and the rank's environment without what torchrun makes per rank."""
    from runsnap.capturing import capture
    from runsnap.commands.jobrelaunch import TORCHRUN_MADE, as_launch

    env = {"PATH": os.environ["PATH"], "TORCHELASTIC_RUN_ID": "j7", "GROUP_RANK": "0",
           "RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
           "MASTER_PORT": "29500", "SHARD_COUNT": "4"}
    rank = capture([sys.executable, "train.py", "--lr", "3"], env=env, cwd=tmp_path)
    launch = as_launch(rank)
    assert launch is not None
    command = launch.records.command
    assert command.argv == [sys.executable, "-m", "torch.distributed.run", "--standalone",
                            "--nproc-per-node", "2", "train.py", "--lr", "3"]
    assert command.cwd == rank.records.command.cwd
    assert dict(launch.records.env.vars) == {"PATH": os.environ["PATH"], "SHARD_COUNT": "4"}
    assert not TORCHRUN_MADE & set(launch.records.env.vars)
    assert not launch.records.meta.has("launcher")



SHARDED = """
    import os
    rank = int(os.environ["RANK"])
    scale = float(os.environ.get("APP_SCALE", "1"))
    with open(f"data/part-{rank}.csv") as f:
        values = [float(x) for x in f.read().split()]
    print(f"rank={rank} mean={scale * sum(values) / len(values):.3f}")
    """


def test_what_another_rank_read_is_evidence_for_the_job(tmp_path: Path,
                                                        base_env: dict[str, str]) -> None:
    """Each rank reads its own shard, kept in git; before job B, rank 1's shard was edited and
    not committed, and rank 0 was given another APP_SCALE. The pair shown is rank 0's (its
    metric moved; the tree differs there too), which never opened part-1.csv; rank 1 did: the
    job took the edit in, so the edit has read evidence, said with the rank that saw it, and
    is a candidate beside APP_SCALE, not "unread" for want of rank 0's trace."""
    from tests.diffing.conftest import GIT_ENV, git

    repo = tmp_path / "proj"
    (repo / "data").mkdir(parents=True)
    app = write_script(repo, "worker.py", SHARDED)
    (repo / "data" / "part-0.csv").write_text("1 2 3\n")
    (repo / "data" / "part-1.csv").write_text("4 5 6\n")
    base = {**base_env, **GIT_ENV}
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "shards")
    for job, jid, port in (("job-a", "4f1c2a9e", "45123"), ("job-b", "77e0d1c4", "51877")):
        if job == "job-b":
            (repo / "data" / "part-1.csv").write_text("40 50 60\n")
        for rank in range(2):
            env = {**base, **_job(jid, port, ("k3j_l1ab", f"{jid[:4]}x_1z"), rank=rank),
                   "WORLD_SIZE": "2", **({"APP_SCALE": "2"} if job == "job-b" else {})}
            run([sys.executable, str(app)], env=env, cwd=repo,
                output=tmp_path / job / f"{rank}.toml")
    env = {**{k: v for k, v in os.environ.items() if k != "COLUMNS"}, "COLUMNS": "80"}
    res = run_runsnap("diff", "--format", "json", "job-a", "job-b", cwd=tmp_path, env=env)
    report = json.loads(res.stdout)
    assert report["b"]["rank"] == 0, report["notes"]
    d = next(x for x in report["differences"] if x["key"].endswith("data/part-1.csv"))
    assert d["evidence_kind"] == "read" and d["reason"].startswith("in rank 1: "), d
    assert f"git {d['key']}" in report["candidates"], report["verdict"]
    assert "env APP_SCALE" in report["candidates"], report["verdict"]


def test_a_relaunched_job_is_judged_by_the_jobs_outcome_not_the_shown_ranks(
        tmp_path: Path) -> None:
    """Two jobs that both fail, each another way (fresh11 ``batch-placeholder-both-fail-job``):
    GOOD's rank 0 raises, its rank 1 ends well; BAD's rank 1 raises first and torchrun stops
    its rank 0. The pair shown is rank 1's, but a relaunch is judged by torchrun's exit (1)
    and the first error of the rank that failed first: GOOD's own relaunch, failing as GOOD's
    rank 0 did, is GOOD (before, exit 1 against rank 1's 0: bad, and why stopped at "GOOD's own
    launch goes bad here")."""
    from runsnap.capturing import run
    from runsnap.commands.jobrelaunch import as_launch, job_outcome
    from runsnap.experiments.judging import GOOD as LIKE_GOOD
    from runsnap.experiments.judging import OutcomeJudge
    from runsnap.snapshot import load

    def rank(job: str, r: int, code: str) -> Any:
        env = {"PATH": os.environ["PATH"], "TORCHELASTIC_RUN_ID": job, "GROUP_RANK": "0",
               "RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": "2",
               "LOCAL_WORLD_SIZE": "2", "MASTER_PORT": "29500"}
        out, script = tmp_path / job / f"{r}.toml", tmp_path / f"train_{job}{r}.py"
        script.write_text(code + "\n")
        run([sys.executable, script.name], env=env, cwd=tmp_path, output=out)
        return load(out)

    good = [rank("a", 0, "raise RuntimeError('Parent directory /mnt/ckpt does not exist.')"),
            rank("a", 1, "print('rank 1 done')")]
    bad = [rank("b", 1, "raise ValueError('batch_size should be a positive integer')"),
           rank("b", 0, "import os, signal; os.kill(os.getpid(), signal.SIGTERM)")]
    good_job, bad_job = job_outcome(good[1], good), job_outcome(bad[1], bad)
    assert (good_job["exit_status"], good_job["first_error"]) == (
        1, "RuntimeError: Parent directory /mnt/ckpt does not exist.")
    assert (bad_job["exit_status"], bad_job["first_error"]) == (
        1, "ValueError: batch_size should be a positive integer")
    assert "signal" not in bad_job
    launch = as_launch(good[1], good)
    assert launch is not None and launch.records.outcome.exit_status == 1
    judge = OutcomeJudge(good_job, bad_job)
    assert judge(good_job)[0] == LIKE_GOOD  # GOOD's own relaunch, failing as GOOD's job did
    assert job_outcome(good[1], [good[1]]) == good[1].sections["outcome"]  # none failed
