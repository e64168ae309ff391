"""capture --track mlflow against a real MLflow tracking server on 127.0.0.1: the run the child
attaches to holds the snapshot and the tags, and ``mlflow:RUN_ID`` names it wherever a
snapshot is named."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import runsnap
from runsnap.snapshot import loads
from tests.conftest import git
from tests.track.conftest import MLflowServer, base_env
from tests.track.conftest import runsnap as run_runsnap

#: Real servers, real clients, real launches: seconds each.
pytestmark = pytest.mark.slow

#: Reads runs back with MLflow's own client, in a process of its own: what a person sees. One
#: process for the file (importing MLflow's client costs seconds of CPU): a line ``URL RUN_ID``
#: in, a line ``RUN {json}`` out.
_READ = """
import json, sys, tempfile
from mlflow.tracking import MlflowClient
for line in sys.stdin:
    url, run_id = line.split()
    client = MlflowClient(tracking_uri=url)
    run = client.get_run(run_id)
    names = [a.path for a in client.list_artifacts(run_id, "runsnap")]
    data = None
    if names:
        with tempfile.TemporaryDirectory() as tmp:
            path = client.download_artifacts(run_id, "runsnap/snapshot.toml", tmp)
            data = open(path, encoding="utf-8").read()
    print("RUN " + json.dumps({
        "status": run.info.status, "params": run.data.params, "tags": run.data.tags,
        "metrics": run.data.metrics, "experiment": client.get_experiment(
            run.info.experiment_id).name, "artifacts": names, "snapshot": data}), flush=True)
"""


@pytest.fixture(scope="module")
def reader() -> Iterator[subprocess.Popen[str]]:
    """The process that reads runs back (:data:`_READ`)."""
    pytest.importorskip("mlflow")
    proc = subprocess.Popen([sys.executable, "-W", "ignore", "-c", _READ], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    yield proc
    proc.communicate(timeout=120)  # stdin closed: the loop ends


@pytest.fixture
def read_run(reader: subprocess.Popen[str]) -> Callable[[MLflowServer, str], dict]:
    """``read_run(server, run_id)``: the run as MLflow's client reads it."""
    def read(server: MLflowServer, run_id: str) -> dict:
        assert reader.stdin is not None and reader.stdout is not None
        reader.stdin.write(f"{server.url} {run_id}\n")
        reader.stdin.flush()
        for line in reader.stdout:
            if line.startswith("RUN "):
                return json.loads(line[4:])
        raise AssertionError(f"the reader ended: status {reader.wait()}")
    return read


def tracked(server: MLflowServer, project: Path, tmp: Path, out: Path, *command: str,
            experiment: str = "train", extra: tuple[str, ...] = ()) -> tuple[runsnap.Snapshot, str]:
    env = base_env(tmp, MLFLOW_TRACKING_URI=server.url, MLFLOW_EXPERIMENT_NAME=experiment)
    res = run_runsnap(["capture", "--track", "mlflow", *extra, "-o", str(out), "--", *command],
                      project, env)
    snap = runsnap.load(out)
    assert snap.meta["track"]["errors"] == [], res.stderr
    return snap, snap.meta["track"]["run"].removeprefix("mlflow:")


def test_the_training_run_holds_the_snapshot_and_the_tags(
        mlflow_server: MLflowServer, project: Path, tmp_path: Path,
        read_run: Callable[[MLflowServer, str], dict]) -> None:
    out = tmp_path / "a.toml"
    snap, run_id = tracked(mlflow_server, project, tmp_path, out,
                           sys.executable, "train.py", "mlflow", "0.1")
    run = read_run(mlflow_server, run_id)
    # the child's own logging went to the run runsnap created
    assert run["params"] == {"lr": "0.1"} and set(run["metrics"]) == {"loss"}
    assert run["experiment"] == "train" and run["status"] == "FINISHED"
    assert run["snapshot"] == out.read_text()
    commit = git(project, "rev-parse", "HEAD").strip()
    tags = run["tags"]
    assert tags["runsnap.commit"] == commit and tags["runsnap.dirty"] == "false"
    assert tags["runsnap.host"] == snap.meta["host"] and tags["runsnap.id"] == snap.id
    assert tags["runsnap.gpu"] == "none"
    assert tags["runsnap.outcome"] == "exited" and tags["runsnap.exit_status"] == "0"
    assert "runsnap.engine" not in tags  # no serving or training engine in this venv
    assert tags["runsnap.snapshot"] == "runsnap/snapshot.toml"
    assert tags["mlflow.source.git.commit"] == commit
    assert tags["mlflow.source.name"] == "train.py"
    # the id went to the launch, never into the recorded environment
    assert "MLFLOW_RUN_ID" not in snap["env"]["vars"]
    assert snap["env"]["vars"]["MLFLOW_EXPERIMENT_NAME"] == "train"


def test_a_command_that_makes_no_run_still_has_one_holding_the_snapshot(
        mlflow_server: MLflowServer, project: Path, tmp_path: Path,
        read_run: Callable[[MLflowServer, str], dict]) -> None:
    out = tmp_path / "b.toml"
    snap, run_id = tracked(mlflow_server, project, tmp_path, out,
                           sys.executable, "-c", "import sys; sys.exit(3)")
    run = read_run(mlflow_server, run_id)
    assert run["status"] == "FAILED" and run["snapshot"] == out.read_text()
    assert run["tags"]["runsnap.exit_status"] == "3"
    assert snap["outcome"]["exit_status"] == 3


def test_the_context_alone_goes_to_a_run_of_its_own(
        mlflow_server: MLflowServer, project: Path, tmp_path: Path,
        read_run: Callable[[MLflowServer, str], dict]) -> None:
    out = tmp_path / "c.toml"
    env = base_env(tmp_path, MLFLOW_TRACKING_URI=mlflow_server.url)
    res = run_runsnap(["capture", "--track", "mlflow", "--track-experiment", "ctx", "--no-run",
                       "-o", str(out)], project, env)
    assert res.returncode == 0, res.stderr
    snap = runsnap.load(out)
    run = read_run(mlflow_server, snap.meta["track"]["run"].removeprefix("mlflow:"))
    assert run["status"] == "FINISHED" and run["experiment"] == "ctx"
    assert run["snapshot"] == out.read_text()
    assert run["tags"]["runsnap.outcome"] == "not run"


def _normalised(text: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        text = text.replace(old, new)
    return text


def test_diff_of_two_tracked_runs_is_the_diff_of_their_files(
        mlflow_server: MLflowServer, project: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    _, run_a = tracked(mlflow_server, project, tmp_path, a, sys.executable, "train.py", "mlflow",
                       "0.1", experiment="pair")
    (project / "train.py").write_text((project / "train.py").read_text() + "# tuned\n")
    _, run_b = tracked(mlflow_server, project, tmp_path, b, sys.executable, "train.py", "mlflow",
                       "0.2", experiment="pair")
    env = base_env(tmp_path, MLFLOW_TRACKING_URI=mlflow_server.url)
    for fmt in ("text", "json"):
        files = run_runsnap(["diff", "--format", fmt, str(a), str(b)], tmp_path, env)
        tracked_runs = run_runsnap(["diff", "--format", fmt, f"mlflow:{run_a}", f"mlflow:{run_b}"],
                                   tmp_path, env)
        assert files.returncode == tracked_runs.returncode == 1, tracked_runs.stderr
        cache = Path(env["RUNSNAP_CACHE_DIR"])
        fetched = sorted(cache.glob("tracked/mlflow/*/*.toml"))
        assert {p.stem for p in fetched} == {run_a, run_b}
        by_id = {p.stem: str(p) for p in fetched}
        # the same report, but for the runs' names: the fetched copies are RUN_ID.toml
        assert _normalised(tracked_runs.stdout, (by_id[run_a], "A"), (by_id[run_b], "B"),
                           (f"{run_a}.toml", "A"), (f"{run_b}.toml", "B")) == \
            _normalised(files.stdout, (str(a), "A"), (str(b), "B"), ("a.toml", "A"),
                        ("b.toml", "B"))
        assert "commit" in files.stdout or "git" in files.stdout

    # show and report take the reference too; the fetched copy is reused, not fetched again
    for artifact in mlflow_server.artifacts.rglob("snapshot.toml"):
        artifact.unlink()
    show = run_runsnap(["show", f"mlflow:{run_a}"], tmp_path, env)
    assert show.returncode == 0 and "train.py" in show.stdout, show.stderr
    report = run_runsnap(["report", f"mlflow:{run_a}", f"mlflow:{run_b}"], tmp_path, env)
    assert report.returncode == 0, report.stderr
    # with its cache emptied, a run without the snapshot is one line and status 2
    fresh = {**env, "RUNSNAP_CACHE_DIR": str(tmp_path / "empty-cache")}
    gone = run_runsnap(["show", f"mlflow:{run_a}"], tmp_path, fresh)
    assert gone.returncode == 2 and gone.stdout == ""
    assert gone.stderr == (f"runsnap: mlflow:{run_a}: no such run, or it holds no runsnap "
                           f"snapshot (runsnap/snapshot.toml) on {mlflow_server.url}\n")

    listed = run_runsnap(["ls", "--track", "mlflow", "--experiment", "pair", "--format", "json"],
                         tmp_path, env)
    assert listed.returncode == 0, listed.stderr
    entries = json.loads(listed.stdout)
    assert [e["ref"] for e in entries] == [f"mlflow:{run_b}", f"mlflow:{run_a}"]
    assert entries[0]["exit_status"] == 0 and "train.py" in entries[0]["command"]


def test_a_program_logs_its_own_snapshot_to_its_run(
        mlflow_server: MLflowServer, project: Path, tmp_path: Path,
        read_run: Callable[[MLflowServer, str], dict]) -> None:
    script = project / "own.py"
    script.write_text(
        "import mlflow, runsnap.track\n"
        "with mlflow.start_run() as run:\n"
        "    mlflow.log_param('lr', 0.3)\n"
        "    print(runsnap.track.log_snapshot(label='inside'))\n")
    env = base_env(tmp_path, MLFLOW_TRACKING_URI=mlflow_server.url)
    done = subprocess.run([sys.executable, "-W", "ignore", str(script)], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    refs = [line for line in done.stdout.splitlines() if line.startswith("mlflow:")]
    assert len(refs) == 1, done.stdout
    ref = refs[0]
    run = read_run(mlflow_server, ref.removeprefix("mlflow:"))
    assert run["params"] == {"lr": "0.3"} and run["tags"]["runsnap.label"] == "inside"
    assert run["tags"]["runsnap.outcome"] == "running"
    snap = loads(run["snapshot"])
    assert snap.meta["launch"] == "pid" and snap["process"]["pid"]


def test_artifacts_served_by_the_server(mlflow_server: MLflowServer, project: Path,
                                        tmp_path: Path) -> None:
    """MLflow's default layout: artifacts served by the server (``mlflow-artifacts:``)."""
    mlflow_server.served_experiment("served")
    out = tmp_path / "p.toml"
    _, run_id = tracked(mlflow_server, project, tmp_path, out, sys.executable, "-c", "pass",
                        experiment="served")
    stored = list(mlflow_server.served.rglob("snapshot.toml"))
    assert [p.read_text() for p in stored] == [out.read_text()]
    assert not any(run_id in str(p) for p in mlflow_server.artifacts.rglob("*"))
    env = base_env(tmp_path, MLFLOW_TRACKING_URI=mlflow_server.url)
    same = run_runsnap(["diff", str(out), f"mlflow:{run_id}"], tmp_path, env)
    assert same.returncode == 0, same.stdout + same.stderr
