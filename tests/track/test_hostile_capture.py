"""A tracked capture against a hostile MLflow server on 127.0.0.1 (issue 37, class 6): a server
that answers each request just inside ``--track-timeout`` cannot hold runsnap past one deadline
for the whole exchange (runsnap ends with the child's status); a run id the server chose
(``../../../../tmp/x``) reaches neither the child (``MLFLOW_RUN_ID``), nor ``[meta.track]``, nor
a URL; a redirect to another host gets no credentials; an answer that is not a snapshot is not
cached. Each is compared with the same command run without runsnap."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomllib

from tests.track.conftest import base_env
from tests.track.conftest import runsnap as run_runsnap

GOOD_ID = "0f" * 16
CHILD = ("import os, sys, time\n"
         "print('child sees', os.environ.get('MLFLOW_RUN_ID', 'no run'), flush=True)\n"
         "open('ended', 'w').write(repr(time.time()))\n"
         "sys.exit(3)\n")


class FakeMLflow:
    """An MLflow tracking server's REST API, as hostile as :attr:`mode` says: ``drip`` (every
    answer after the first dripped over :attr:`drip` seconds), ``bad id`` (runs/create answers
    ``../../../../tmp/x``), ``redirect`` (every request after runs/create is sent on, by a
    307, to :attr:`to`), ``junk`` (get-artifact answers text that is not a snapshot)."""

    def __init__(self, mode: str, drip: float = 0.0, to: str = "") -> None:
        self.mode, self.drip, self.to = mode, drip, to
        self.seen: list[tuple[str, str, str]] = []  # (method, path, authorization)
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                outer.seen.append((self.command, self.path,
                                   self.headers.get("Authorization", "")))
                outer.serve(self)

            do_GET = do_POST = do_PUT = _answer

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def serve(self, h: http.server.BaseHTTPRequestHandler) -> None:
        first = "runs/create" in h.path
        if self.mode == "redirect" and h.command == "GET":  # urllib follows a 307 of a GET
            h.send_response(307)
            h.send_header("Location", self.to + h.path)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        run_id = "../../../../tmp/x" if self.mode == "bad id" else GOOD_ID
        answer: dict[str, Any] = {}
        if first or "runs/get" in h.path:
            answer = {"run": {"info": {"run_id": run_id, "experiment_id": "0",
                                       "status": "RUNNING",
                                       "artifact_uri": "mlflow-artifacts:/0/x/artifacts"},
                              "data": {"tags": []}}}
        body = json.dumps(answer).encode()
        if "get-artifact" in h.path and self.mode == "junk":
            body = b"<html>a login page, not a snapshot</html>"
        h.send_response(200)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if self.mode != "drip" or first:
            h.wfile.write(body)
            return
        step = self.drip / len(body)
        try:
            for i in range(len(body)):  # never a pause long enough for a socket's timeout
                h.wfile.write(body[i:i + 1])
                h.wfile.flush()
                time.sleep(step)
        except OSError:
            pass

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake() -> Iterator[list[FakeMLflow]]:
    made: list[FakeMLflow] = []
    yield made
    for server in made:
        server.close()


def _capture(tmp_path: Path, url: str, *extra: str, **env: str) -> tuple[Any, float, dict]:
    """``capture --track mlflow`` of :data:`CHILD`; the result, the seconds runsnap took after
    the child ended, and the snapshot."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    environ = base_env(tmp_path, MLFLOW_TRACKING_URI=url, **env)
    res = run_runsnap(["capture", "--track", "mlflow", *extra, "-o", str(tmp_path / "s.toml"),
                       "--", sys.executable, "-c", CHILD], work, environ, timeout=120)
    after = time.time() - float((work / "ended").read_text())
    snap = tomllib.loads((tmp_path / "s.toml").read_text())
    return res, after, snap


def _bare(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CHILD], cwd=tmp_path, capture_output=True,
                          text=True, check=False, env={"PATH": os.environ["PATH"]})


def test_one_deadline_for_the_whole_exchange(tmp_path: Path, fake: list[FakeMLflow]) -> None:
    # Each answer takes 2.5 s of a 3 s --track-timeout: each request alone is in time, the four
    # after the child (runs/get, log-batch, the upload, runs/update) took 10 s together.
    fake.append(FakeMLflow("drip", drip=2.5))
    res, after, snap = _capture(tmp_path, fake[0].url, "--track-timeout", "3")
    bare = _bare(tmp_path)
    assert (res.returncode, bare.returncode) == (3, 3)
    assert res.stdout.splitlines()[0] == f"child sees {GOOD_ID}"
    assert after < 3 + 4, after  # the deadline, and runsnap's own work after the child
    track = snap["meta"]["track"]
    assert track["run"] == f"mlflow:{GOOD_ID}"
    assert any("all requests together" in e for e in track["errors"]), track["errors"]
    assert "all requests together" in res.stderr


def test_a_run_id_the_server_chose_is_checked(tmp_path: Path, fake: list[FakeMLflow]) -> None:
    fake.append(FakeMLflow("bad id"))
    res, _, snap = _capture(tmp_path, fake[0].url)
    bare = _bare(tmp_path)
    assert (res.returncode, bare.returncode) == (3, 3)
    assert res.stdout.splitlines()[0] == "child sees no run" == bare.stdout.strip()
    track = snap["meta"]["track"]
    assert "run" not in track and "where" not in track, track
    for part in ("meta", "env", "launch", "outcome"):  # (not [git]: it holds this test's code)
        assert "tmp/x" not in json.dumps(snap.get(part)), f"the server's id is in [{part}]"
    assert "32 hexadecimal digits" in " ".join(track["errors"]), track["errors"]
    assert [p for _, p, _ in fake[0].seen if "runs/create" not in p] == []


def test_a_redirect_to_another_host_gets_no_token(tmp_path: Path, fake: list[FakeMLflow]) -> None:
    fake.append(FakeMLflow("ok"))
    fake.append(FakeMLflow("redirect", to=fake[0].url.replace("127.0.0.1", "localhost")))
    res, _, snap = _capture(tmp_path, fake[1].url, MLFLOW_TRACKING_TOKEN="tracker-t0ken-5ecret")
    assert res.returncode == 3, res.stderr
    assert snap["meta"]["track"]["errors"] == [], snap["meta"]["track"]
    assert fake[1].seen and all(auth == "Bearer tracker-t0ken-5ecret"
                                for _, _, auth in fake[1].seen)
    assert fake[0].seen and [auth for _, _, auth in fake[0].seen] == [""] * len(fake[0].seen)


def test_an_answer_that_is_no_snapshot_is_not_cached(tmp_path: Path,
                                                     fake: list[FakeMLflow]) -> None:
    fake.append(FakeMLflow("junk"))
    env = base_env(tmp_path, MLFLOW_TRACKING_URI=fake[0].url)
    res = run_runsnap(["show", f"mlflow:{GOOD_ID}"], tmp_path, env)
    assert (res.returncode, res.stdout) == (2, "")
    assert res.stderr.startswith(f"runsnap: mlflow:{GOOD_ID}: the tracker's answer is not a "
                                 f"runsnap snapshot"), res.stderr
    assert "nothing was cached" in res.stderr and len(res.stderr.splitlines()) == 1
    cached = list(Path(env["RUNSNAP_CACHE_DIR"]).rglob("*.toml")) \
        if Path(env["RUNSNAP_CACHE_DIR"]).exists() else []
    assert cached == []
    again = run_runsnap(["show", f"mlflow:{GOOD_ID}"], tmp_path, env)
    assert again.returncode == 2 and len(fake[0].seen) == 2  # asked again: nothing was kept


def test_a_wandb_run_id_is_checked_before_use(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = base_env(tmp_path, WANDB_MODE="offline", WANDB_RUN_ID="../../../../tmp/x")
    res = run_runsnap(["capture", "--track", "wandb", "-o", str(tmp_path / "s.toml"), "--",
                       sys.executable, "-c", "import sys; sys.exit(3)"], work, env, timeout=120)
    assert res.returncode == 3, res.stderr
    track = tomllib.loads((tmp_path / "s.toml").read_text())["meta"]["track"]
    assert "run" not in track and "where" not in track, track
    assert track["errors"] == ["wandb: WANDB_RUN_ID: wandb:../../../../tmp/x: not a run id "
                               "(runsnap takes W&B ids of letters, digits, '_', '-' and '.'); "
                               "the run is not tracked"]
    assert not (work / "wandb").exists()
