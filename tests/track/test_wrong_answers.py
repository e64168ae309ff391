"""An MLflow server whose answers hold a value of the wrong type: runsnap reads each answer once,
where it arrives (``runsnap/track/answers.py``), so the wrong value is one line naming the
answer and the field (exit 2 for a command; a tracked capture goes on untracked), never a
traceback from deeper in. The servers here are real HTTP servers on 127.0.0.1 that answer
each endpoint with a fixed JSON document."""

from __future__ import annotations

import http.server
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import runsnap
from tests.track.conftest import base_env
from tests.track.conftest import runsnap as run_runsnap

#: Real launches and a real server: seconds each.
pytestmark = pytest.mark.slow

RUN_ID = "0123456789abcdef0123456789abcdef"


def serve(answers: dict[str, Any]) -> Iterator[str]:
    """A server answering each endpoint (``runs/search`` ...) with its document, 404 else."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            endpoint = self.path.split("/api/2.0/mlflow/", 1)[-1].split("?", 1)[0]
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            found = endpoint in answers
            body = json.dumps(answers[endpoint] if found else
                              {"error_code": "RESOURCE_DOES_NOT_EXIST"}).encode()
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer  # noqa: N815 - http.server's names

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def a_run(**info: Any) -> dict[str, Any]:
    return {"info": {"run_id": RUN_ID, "experiment_id": "0", **info},
            "data": {"tags": [{"key": "runsnap.label", "value": "first"}]}}


@pytest.mark.parametrize(("page", "said"), [
    ({"runs": {"0": a_run()}}, " runs/search: runs is an object, not an array"),
    ({"runs": [a_run(run_name=["x"])]},
     " runs/search: runs[0].info.run_name is an array, not a string"),
    ({"runs": [{"info": {"run_id": RUN_ID}, "data": {"tags": [{"key": "k", "value": 3}]}}]},
     " runs/search: runs[0].data.tags[0].value is an integer, not a string"),
    ({"runs": [a_run()], "next_page_token": 7},
     " runs/search: next_page_token is an integer, not a string"),
    ([a_run()], "/api/2.0/mlflow/runs/search: the answer is not a JSON object"),
])
def test_a_listing_of_the_wrong_shape_is_one_line(tmp_path: Path, page: Any, said: str) -> None:
    for url in serve({"runs/search": page}):
        env = base_env(tmp_path, MLFLOW_TRACKING_URI=url)
        res = run_runsnap(["ls", "--track", "mlflow", "--format", "json"], tmp_path, env)
        assert res.returncode == 2, res.stderr
        assert res.stderr == f"runsnap: {url}{said}\n"


def test_a_listing_of_the_right_shape_lists_its_runs(tmp_path: Path) -> None:
    nameless = {"data": {"tags": []}}  # no info: no run id, left out as before
    for url in serve({"runs/search": {"runs": [a_run(run_name="r1"), nameless]}}):
        env = base_env(tmp_path, MLFLOW_TRACKING_URI=url)
        res = run_runsnap(["ls", "--track", "mlflow", "--format", "json"], tmp_path, env)
        assert res.returncode == 0, res.stderr
        listed = json.loads(res.stdout)
        runs = listed if isinstance(listed, list) else listed["runs"]
        assert [(r["ref"], r["label"]) for r in runs] == [(f"mlflow:{RUN_ID}", "first")]


def test_a_created_run_of_the_wrong_shape_leaves_the_capture_untracked(tmp_path: Path) -> None:
    for url in serve({"runs/create": {"run": {"info": ["not", "a", "table"]}}}):
        env = base_env(tmp_path, MLFLOW_TRACKING_URI=url)
        out = tmp_path / "s.toml"
        res = run_runsnap(["capture", "--track", "mlflow", "--track-timeout", "5", "-o", str(out),
                           "--", sys.executable, "-c", "pass"], tmp_path, env)
        assert res.returncode == 0, res.stderr
        said = f"mlflow: {url} runs/create: run.info is an array, not an object; the run is not tracked"
        assert [line for line in res.stderr.splitlines() if "mlflow" in line] == [f"runsnap: {said}"]
        assert runsnap.load(out).meta["track"] == {"tracker": "mlflow", "errors": [said]}
