"""``runsnap why`` where no launch of its own can apply the cause: another commit, an edit GOOD
did not have that the tree no longer holds as BAD ran it, a job's ranks (and an edit it can
apply, in copies of the tree). It says the experiment as one shell line, and the line, run for
real, goes as GOOD went and leaves the user's checkout alone; real git repositories, real
launches, real torchrun with gloo (CPU torch) for the job."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runsnap.diffing import compare
from runsnap.experiments.yourself import experiment_line
from runsnap.snapshot import load
from tests.proof.conftest import capture, child
from tests.proof.conftest import runsnap as run_runsnap

_RUN = "import engine.sched\nprint('planned', engine.sched.plan(8))\n"
_GOOD_SCHED = "def plan(n):\n    return n // 2\n"
_BAD_SCHED = "def plan(n):\n    return n // (n - n)\n"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@x",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


def _project(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    (repo / "engine").mkdir(parents=True)
    (repo / "engine" / "__init__.py").write_text("")
    (repo / "engine" / "sched.py").write_text(_GOOD_SCHED)
    (repo / "run.py").write_text(_RUN)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "good")
    return repo


def _capture(out: Path, repo: Path) -> None:
    """``runsnap capture -o OUT -- python run.py`` in the repository, as its user runs it."""
    run_runsnap("capture", "-o", str(out), "--", sys.executable, "run.py", cwd=repo)
    assert out.exists()
    time.sleep(0.01)


def _why(cwd: Path, *args: str) -> dict[str, object]:
    proc = run_runsnap("why", "--prove", "--yes", "--format", "json", *args, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return dict(json.loads(proc.stdout))


def _run_line(line: str, tmp_path: Path, path: str | None = None, tmp: str = "tmp"
              ) -> subprocess.CompletedProcess[str]:
    """The experiment line as a user pastes it into bash, ``$TMPDIR`` their own."""
    (tmp_path / tmp).mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp_path / tmp)}
    if path:
        env["PATH"] = path + os.pathsep + env.get("PATH", "")
    return subprocess.run(["bash", "-c", line], env=env, capture_output=True, text=True,
                          timeout=240, cwd=tmp_path)


def test_another_commit_is_said_as_a_worktree_experiment_that_goes_good(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    store = tmp_path / ".runsnap"
    good_commit = _git(repo, "rev-parse", "HEAD")
    _capture(store / "good.toml", repo)
    (repo / "engine" / "sched.py").write_text(_BAD_SCHED)
    _git(repo, "commit", "-qam", "bad")
    _capture(store / "bad.toml", repo)
    out = _why(tmp_path, "--dir", str(store))
    assert out["status"] == "confident", out
    assert [c["section"] for c in out["cause"]] == ["git"]  # type: ignore[attr-defined]
    assert not any("__pycache__" in c for c in out["cannot"])  # type: ignore[attr-defined]
    lines = out["experiment"]
    assert isinstance(lines, list) and len(lines) == 1 and "\n" not in lines[0]
    assert f"worktree add --detach \"${{TMPDIR:-/tmp}}/runsnap-good-{good_commit[:12]}\"" in lines[0]
    ran = _run_line(lines[0], tmp_path)
    assert ran.returncode == 0 and "planned 4" in ran.stdout, ran.stderr
    assert _git(repo, "rev-parse", "HEAD") != good_commit  # the user's checkout is left alone
    assert (repo / "engine" / "sched.py").read_text() == _BAD_SCHED
    # the text at 80 columns: the line broken with backslashes, pasted as it is shown
    text = run_runsnap("why", "--prove", "--yes", "--dir", str(store), cwd=tmp_path,
                       env={**os.environ, "COLUMNS": "80"}).stdout.splitlines()
    assert max(len(x) for x in text) <= 80 and len(text) <= 40
    block = text[text.index("Experiment (run it yourself):") + 1:]
    # a deep path, longer than a line, is broken inside with the backslash the shell removes
    assert block[0].startswith("  git -C") and all(x.endswith("\\") for x in block[:-1]), text
    pasted = _run_line("\n".join(block), tmp_path, tmp="tmp2")
    assert pasted.returncode == 0 and "planned 4" in pasted.stdout, pasted.stderr


def test_an_edit_good_did_not_have_is_proven_in_copies_of_the_tree(tmp_path: Path) -> None:
    """GOOD ran the clean commit, BAD the same commit with an uncommitted edit: both launches
    of ``--prove`` run in copies of the repository (the edit applied, then reverted); the
    user's edit is never touched."""
    repo = _project(tmp_path)
    store = tmp_path / ".runsnap"
    _capture(store / "good.toml", repo)
    (repo / "engine" / "sched.py").write_text(_BAD_SCHED)  # not committed
    _capture(store / "bad.toml", repo)
    out = _why(tmp_path, "--dir", str(store))
    assert out["status"] == "proven" and out["launches"] == 2, out
    assert [c["key"] for c in out["cause"]] == ["proj: engine/sched.py"]  # type: ignore[attr-defined]
    assert out["restore"] == ["in proj: git stash push -u -- engine/sched.py (the edit kept "
                              "in the stash)"]
    assert (repo / "engine" / "sched.py").read_text() == _BAD_SCHED  # the edit is kept
    status = _git(repo, "status", "--short").splitlines()
    assert [x for x in status if "__pycache__" not in x] == ["M engine/sched.py"], status
    # the restore line, run, gives GOOD back
    _git(repo, "stash", "push", "-u", "--", "engine/sched.py")
    assert "planned 4" in subprocess.run([sys.executable, "run.py"], cwd=repo, text=True,
                                         capture_output=True, check=True).stdout


def test_an_edit_changed_again_since_bad_ran_is_said_as_the_committed_tree(
        tmp_path: Path) -> None:
    """The tree is no longer as BAD ran it (the file edited again): no copy holds BAD's state,
    so nothing is launched and the experiment is said as the committed tree."""
    repo = _project(tmp_path)
    store = tmp_path / ".runsnap"
    _capture(store / "good.toml", repo)
    (repo / "engine" / "sched.py").write_text(_BAD_SCHED)  # not committed
    _capture(store / "bad.toml", repo)
    (repo / "engine" / "sched.py").write_text(_BAD_SCHED + "# again\n")
    out = _why(tmp_path, "--dir", str(store))
    assert out["status"] == "confident" and out["launches"] == 0, out
    lines = out["experiment"]
    assert isinstance(lines, list) and len(lines) == 1, out
    assert " && cd \"${TMPDIR:-/tmp}/runsnap-good-" in lines[0] and " run.py" in lines[0]
    ran = _run_line(lines[0], tmp_path)
    assert ran.returncode == 0 and "planned 4" in ran.stdout, ran.stderr
    assert (repo / "engine" / "sched.py").read_text() == _BAD_SCHED + "# again\n"


def test_a_secret_value_is_never_written_into_an_experiment(tmp_path: Path) -> None:
    prog = child(tmp_path / "launch.py", "sys.exit(os.environ['HF_TOKEN'].endswith('2'))\n")
    good = capture(tmp_path / "g.toml", ["python3", str(prog)],
                   {"HF_TOKEN": "hf_" + "q" * 30 + "1"})
    bad = capture(tmp_path / "b.toml", ["python3", str(prog)],
                  {"HF_TOKEN": "hf_" + "q" * 30 + "2"})
    g, b = load(good), load(bad)
    report = compare(g, b)
    token = next(d for d in report.counted if d.key == "HF_TOKEN")
    assert experiment_line(token, g, b) is None
    other = next(d for d in report.counted if d.section == "outcome")
    assert experiment_line(other, g, b) is None  # an effect: nothing to put back


_SHARD = """
import os
import torch.distributed as dist

def plan_shards():
    shards = int(os.environ.get("SHARD_COUNT", "2"))
    world = dist.get_world_size()
    if shards % world:
        raise ValueError(f"SHARD_COUNT {shards} does not divide the world size {world}")
    return shards

dist.init_process_group("gloo")
print("rank", dist.get_rank(), "shards", plan_shards())
dist.barrier()
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_a_job_folder_against_the_job_beside_it_names_the_cause_and_its_experiment(
        tmp_path: Path) -> None:
    """Real torchrun, two gloo ranks each captured into the job's folder; BAD's job raises on
    every rank. ``why JOB/`` finds the earlier job beside it, launches nothing, names the
    variable and the torchrun line that puts it back; that line, run, goes good; ``--prove``
    relaunches the job whole, twice, and proves it."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip(f"torch is not installed for {sys.executable}")
    prog = tmp_path / "shard.py"
    prog.write_text(_SHARD)
    bindir = os.path.dirname(sys.executable)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    for job, shards in (("job-1", "4"), ("job-2", "3")):
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                        "--no-python", sys.executable, "-m", "runsnap", "capture", "-o",
                        f"runs/{job}/{{rank}}.toml", "--", "python", "shard.py"],
                       env={**env, "SHARD_COUNT": shards}, cwd=tmp_path, capture_output=True,
                       timeout=240, check=False)
        time.sleep(0.01)
    assert len(list((tmp_path / "runs" / "job-2").glob("*.toml"))) == 2
    proc = run_runsnap("why", "--format", "json", "runs/job-2", cwd=tmp_path, env=env)
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and out["status"] == "confident", proc.stderr
    assert out["good"].endswith("job-1") and out["launches"] == 0
    assert [c["key"] for c in out["cause"]] == ["SHARD_COUNT"]
    assert out["cannot"] == []  # a one-node torchrun job can be relaunched: --prove
    line = out["experiment"][0]
    assert "env SHARD_COUNT=4 torchrun --standalone --nproc-per-node 2 shard.py" in line
    assert shutil.which("torchrun", path=bindir)
    ran = _run_line(line, tmp_path, bindir)
    assert ran.returncode == 0, ran.stderr
    text = run_runsnap("why", "runs/job-2", cwd=tmp_path, env={**env, "COLUMNS": "80"}).stdout
    assert max(len(x) for x in text.splitlines()) <= 80 and len(text.splitlines()) <= 40
    assert "Prove it in two launches: runsnap why --prove runs/job-2" in text
    # --prove: the job relaunched whole through torchrun, twice
    proc = run_runsnap("why", "--prove", "--yes", "--format", "json", "runs/job-2",
                       "--against", "runs/job-1", cwd=tmp_path, env=env)
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and out["status"] == "proven", proc.stderr
    assert out["launches"] == 2 and "the job relaunched: torchrun --standalone, 2 ranks" in out["how"]
    assert out["proof"]["applied"].startswith("bad: exit 1: ValueError: SHARD_COUNT 3")


_CACHE = """
import os
import torch.distributed as dist

dist.init_process_group("gloo")
if dist.get_rank() == 1 and int(os.environ.get("CACHE_MB", "64")) < 32:
    raise ValueError("CACHE_MB is below the 32 MB a shard needs")
dist.barrier()
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_a_job_whose_launcher_stopped_the_others_is_read_at_the_rank_that_failed_first(
        tmp_path: Path) -> None:
    """Real torchrun: GOOD's job of 2 gloo ranks, BAD's of 3 where rank 1 alone raises and
    torchrun stops the others (``SIGTERM``, or their barrier broken). The rank shown is rank
    1, where the variable is read on the failing path (rank 0 holds only the consequence: no
    evidence there), and the rank BAD's job alone ran is named with its job. The world size
    changed too, but the error names the variable read where it raised: the diff is
    confident, ``why`` says so without a launch, and ``--prove`` relaunches the job to prove
    it; one screen at 80 columns."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip(f"torch is not installed for {sys.executable}")
    (tmp_path / "cache.py").write_text(_CACHE)
    bindir = os.path.dirname(sys.executable)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    for job, ranks, cache in (("job-1", "2", "64"), ("job-2", "3", "16")):
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", ranks,
                        "--no-python", sys.executable, "-m", "runsnap", "capture", "-o",
                        f"runs/{job}/{{rank}}.toml", "--", "python", "cache.py"],
                       env={**env, "CACHE_MB": cache}, cwd=tmp_path,
                       capture_output=True, timeout=240, check=False)
        time.sleep(0.01)
    assert len(list((tmp_path / "runs" / "job-2").glob("*.toml"))) == 3
    diff = run_runsnap("diff", "--format", "json", "runs/job-1", "runs/job-2", cwd=tmp_path)
    report = json.loads(diff.stdout)
    assert report["b"]["rank"] == 1 and report["candidates"][0] == "env CACHE_MB", report
    notes = report["notes"]
    assert notes[0] == "job against job, 2 ranks paired by id, 2 differ; rank 1 shown", notes
    assert "rank 1 failed first" in notes
    assert any(n.startswith("rank 2 ran in B's job ") and n.endswith(" only") for n in notes)
    # the world size changed too, yet the error names the variable read where it raised
    assert report["confidence"] == "confident", report
    proc = run_runsnap("why", "--yes", "--format", "json", "runs/job-2", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "confident" and out["launches"] == 0, out
    assert [c["key"] for c in out["cause"]] == ["CACHE_MB"] and out["notes"] == notes
    proc = run_runsnap("why", "--prove", "--yes", "--format", "json", "runs/job-2",
                       cwd=tmp_path, env=env)
    out = json.loads(proc.stdout)
    assert out["status"] == "proven" and out["launches"] == 2, out
    text = run_runsnap("why", "--prove", "--yes", "-q", "runs/job-2", cwd=tmp_path,
                       env={**env, "COLUMNS": "80"}).stdout.splitlines()
    assert max(len(x) for x in text) <= 80 and len(text) <= 40, text
    assert "  note: job against job, 2 ranks paired by id, 2 differ; rank 1 shown" in text


def test_two_runs_that_ended_well_and_differ_in_a_warning_only_launch_nothing(
        tmp_path: Path) -> None:
    """Both exit 0 and print the same numbers; one prints a warning (a real ``warnings.warn``)
    the other does not: no failure to explain, so no bisection claims a cause; the bisection
    that finds what makes the warning is offered as the experiment."""
    prog = child(tmp_path / "launch.py",
                 "import warnings\n"
                 "knobs = [os.environ.get('KNOB_A'), os.environ.get('KNOB_B')]\n"
                 "if all(knobs):\n"
                 "    warnings.warn('the old knobs are deprecated', FutureWarning)\n"
                 "print('done')\n")
    store = tmp_path / ".runsnap"
    capture(store / "good.toml", ["python3", str(prog)], {"KNOB_A": "1", "KNOB_B": "1"})
    time.sleep(0.01)
    capture(store / "bad.toml", ["python3", str(prog)], {"KNOB_A": "2", "KNOB_B": None})
    proc = run_runsnap("why", "--yes", "--format", "json", cwd=tmp_path)
    out = json.loads(proc.stdout)
    assert out["confidence"] == "undecided", out  # two knobs read in one place: no evidence
    assert proc.returncode == 1 and out["status"] == "none" and out["launches"] == 0, out
    assert out["cause"] == [] and not list(store.glob("bisect-*"))
    assert out["experiment"][0].startswith("runsnap bisect ")
