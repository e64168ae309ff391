"""Real trackers for the tests: an MLflow tracking server (SQLite backend, local artifacts) on
127.0.0.1, W&B's real client in offline mode, and three bad trackers on 127.0.0.1 (a closed
port, a socket that accepts and never answers, a server that answers HTTP 403).

Both clients come with the ``test`` extra; without them these tests skip, saying so.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.conftest import ROOT, make_repo

VENV_BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def base_env(tmp: Path, **extra: str) -> dict[str, str]:
    """A hermetic environment for a runsnap (and its child) of these tests: this venv's tools,
    git and the shell's basics on PATH, a home of its own, no proxy, nothing of the caller's."""
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": os.pathsep.join([str(VENV_BIN), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(home), "USER": "tester", "LANG": "C.UTF-8",
        "RUNSNAP_KEY_FILE": os.environ.get("RUNSNAP_KEY_FILE", str(tmp / "key")),
        "RUNSNAP_CACHE_DIR": os.environ.get("RUNSNAP_CACHE_DIR", str(tmp / "cache")),
        "WANDB_SILENT": "true", "WANDB_DISABLE_GIT": "false",
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        "PYTHONPATH": str(ROOT),
    }
    env.update(extra)
    return env


def runsnap(args: list[str], cwd: Path, env: Mapping[str, str],
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m runsnap ARGS`` as a user runs it."""
    return subprocess.run([sys.executable, "-m", "runsnap", *args], cwd=cwd, env=dict(env),
                          capture_output=True, text=True, timeout=timeout, check=False)


class MLflowServer:
    """``mlflow server`` on 127.0.0.1, its store in a SQLite file and its artifacts in a folder
    (:attr:`artifacts`); an experiment made by :meth:`served_experiment` has its artifacts
    served through the server instead (``mlflow-artifacts:``, into :attr:`served`). One server
    holds both layouts: it starts once (seconds of imports and migrations)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.artifacts = root / "artifacts"
        self.served = root / "served"
        where = ["--default-artifact-root", str(self.artifacts),
                 "--artifacts-destination", str(self.served)]
        self.log = (root / "server.log").open("wb")
        env = {**base_env(root), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        env.pop("PYTHONPATH")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mlflow", "server", "--backend-store-uri",
             f"sqlite:///{root / 'store.db'}", *where, "--host", "127.0.0.1",
             "--port", str(self.port), "--workers", "1"],
            cwd=root, env=env, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True)
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                text = (root / "server.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"mlflow server did not start:\n{text}")
            time.sleep(0.3)

    def served_experiment(self, name: str) -> str:
        """Create the experiment ``name`` whose artifacts the server serves (MLflow's default
        layout when the server has no ``--default-artifact-root``); returns its id."""
        body = json.dumps({"name": name, "artifact_location": f"mlflow-artifacts:/{name}"})
        request = urllib.request.Request(f"{self.url}/api/2.0/mlflow/experiments/create",
                                         data=body.encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            return str(json.load(answer)["experiment_id"])

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()


def _need(module: str) -> None:
    try:
        __import__(module)
    except ImportError:
        pytest.skip(f"{module} is not installed (pip install -e '.[test]' brings it)")


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MLflowServer]:
    """One real MLflow tracking server for the file that uses it, stopped (and reaped) at its
    end: a child left running for the session would be seen by a later test of the same
    process that waits for its own children (test_git_discovery)."""
    _need("mlflow")
    server = MLflowServer(tmp_path_factory.mktemp("mlflow"))
    yield server
    server.stop()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A real git repository with a training script that uses whichever tracker it is told."""
    return make_repo(tmp_path / "project", {
        "train.py": TRAIN,
        ".gitignore": "wandb/\n.runsnap/\n",
    })


#: A tiny training script: MLflow or W&B by its first argument, as such scripts are written.
TRAIN = '''\
import sys

tracker = sys.argv[1]
lr = float(sys.argv[2]) if len(sys.argv) > 2 else 0.1
if tracker == "mlflow":
    import mlflow

    with mlflow.start_run():
        mlflow.log_param("lr", lr)
        for step in range(3):
            mlflow.log_metric("loss", 1.0 / (step + 1) * lr, step=step)
elif tracker == "wandb":
    import wandb

    run = wandb.init(project="demo", config={"lr": lr})
    for step in range(3):
        run.log({"loss": 1.0 / (step + 1) * lr})
    run.finish()
print("trained with", tracker)
'''


@pytest.fixture
def never_answers() -> Iterator[str]:
    """A server on 127.0.0.1 that accepts connections and never says a word."""
    held: list[socket.socket] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            held.append(conn)  # kept open, never read from nor written to

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    listener.close()


class _Refuse(http.server.BaseHTTPRequestHandler):
    def _refuse(self) -> None:
        body = b'{"error_code": "PERMISSION_DENIED", "message": "Permission denied"}'
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = _refuse  # noqa: N815 - http.server's names

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def refuses() -> Iterator[str]:
    """A server on 127.0.0.1 that answers every request with HTTP 403."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def closed_port() -> str:
    """An address on 127.0.0.1 where nothing listens."""
    return f"http://127.0.0.1:{free_port()}"

