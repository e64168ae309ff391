"""MLflow: the run created before the launch (``MLFLOW_RUN_ID``), the snapshot logged as the
artifact ``runsnap/snapshot.toml`` with ``runsnap.*`` tags, fetched back for ``mlflow:RUN_ID``.

runsnap speaks to the tracking server named by ``MLFLOW_TRACKING_URI`` (an ``http(s)://``
server, as a team's self-hosted MLflow is) through its REST API (:mod:`runsnap.track.web`), with
``MLFLOW_TRACKING_TOKEN`` or ``MLFLOW_TRACKING_USERNAME``/``PASSWORD`` as the client sends them.
The snapshot goes where the ``mlflow`` client would put it: through the server
(``mlflow-artifacts:``, ``mlflow server --serve-artifacts``), into the artifact folder itself when
the run's artifact location is a local path, and through the ``mlflow`` client, when installed,
for any other store (S3, GCS, ...). Snapshots are read back through the server
(``/get-artifact``), whatever store holds them.

The child attaches to the run because ``mlflow.start_run()`` takes ``MLFLOW_RUN_ID`` from its
environment; MLflow then refuses a script that also chooses another experiment with
``mlflow.set_experiment(...)``, so runsnap creates the run in the experiment the child will use
(``MLFLOW_EXPERIMENT_NAME``/``MLFLOW_EXPERIMENT_ID``, or ``--track-experiment``, then passed on).
"""

from __future__ import annotations

import base64
import os
import sys
import tempfile
import threading
import time
from urllib.parse import quote

from runsnap.errors import SnapshotError, TrackerError
from runsnap.snapshot import atomic_write, dumps, loads
from runsnap.track.answers import MlflowRun, experiment_of, run_of, runs_page_of
from runsnap.track.base import (
    ARTIFACT,
    MLFLOW_EXPERIMENT_ID,
    RUN_IDS,
    TAG_PREFIX,
    Deadline,
    Started,
    TrackedRun,
    Tracker,
    cached_copy,
    check_run_id,
    clean_url,
    summary_tags,
)
from runsnap.track.web import request, request_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from runsnap.snapshot import Snapshot

__all__ = ["MLflow", "run_status", "server"]

_API = "/api/2.0/mlflow"


def server(env: Mapping[str, str]) -> str:
    """The tracking server of ``MLFLOW_TRACKING_URI``, without a trailing ``/``."""
    uri = (env.get("MLFLOW_TRACKING_URI") or "").strip()
    if not uri:
        raise TrackerError("MLFLOW_TRACKING_URI is not set (runsnap logs to a tracking server: "
                           "http://HOST:PORT)")
    if not uri.startswith(("http://", "https://")):
        raise TrackerError(f"MLFLOW_TRACKING_URI={clean_url(uri)}: runsnap logs to a tracking "
                           f"server (http:// or https://), not to a local store")
    return uri.rstrip("/")


def _headers(env: Mapping[str, str]) -> dict[str, str]:
    """The credentials the ``mlflow`` client would send, from the same variables."""
    token = env.get("MLFLOW_TRACKING_TOKEN")
    if token:
        return {"Authorization": f"Bearer {token}"}
    user, password = env.get("MLFLOW_TRACKING_USERNAME"), env.get("MLFLOW_TRACKING_PASSWORD")
    if user and password:
        pair = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        return {"Authorization": f"Basic {pair}"}
    return {}


def _call(env: Mapping[str, str], method: str, endpoint: str, payload: Any = None, *,
          timeout: Deadline) -> dict[str, Any]:
    """One request of an exchange, within what is left of its deadline."""
    url = f"{server(env)}{_API}/{endpoint}"
    return _timed(timeout, url, lambda left: request_json(method, url, payload, timeout=left,
                                                          headers=_headers(env)))


def _timed(deadline: Deadline, url: str, send: Any) -> Any:
    """``send(seconds left)``'s answer; a request cut short by the deadline says so."""
    try:
        return send(deadline.left())
    except TrackerError as exc:
        if deadline.end > time.monotonic():
            raise
        raise TrackerError(f"{clean_url(url)}: {exc}" if "--track-timeout" in str(exc) else
                           f"{clean_url(url)}: no complete answer within {deadline.seconds:g} s "
                           f"(--track-timeout, all requests together)") from None


def _experiment(env: Mapping[str, str], exp: Any) -> str:
    """An experiment id a server answered (or the user gave), checked against MLflow's
    format before it goes into a URL or the child's environment."""
    if not isinstance(exp, (str, int)) or not MLFLOW_EXPERIMENT_ID.fullmatch(str(exp)):
        shown = "".join(c if c.isprintable() else "?" for c in str(exp)[:80])
        raise TrackerError(f"{clean_url(server(env))}: {shown!r} is not an experiment id")
    return str(exp)


def _experiment_id(env: Mapping[str, str], name: str, timeout: Deadline, create: bool) -> str:
    """The id of experiment ``name`` (created when ``create`` and missing); with no name,
    ``MLFLOW_EXPERIMENT_ID``, ``MLFLOW_EXPERIMENT_NAME``, else the default experiment ``0``."""

    if not name:
        if env.get("MLFLOW_EXPERIMENT_ID"):
            return _experiment(env, env["MLFLOW_EXPERIMENT_ID"])
        name = env.get("MLFLOW_EXPERIMENT_NAME", "")
        if not name:
            return "0"
    try:
        found = _call(env, "GET", f"experiments/get-by-name?experiment_name={quote(name)}",
                      timeout=timeout)
    except TrackerError as exc:
        if not create or "HTTP 404" not in str(exc):
            raise
    else:
        where = f"{clean_url(server(env))} experiments/get-by-name"
        return _experiment(env, experiment_of(found, where, "experiment"))
    made = _call(env, "POST", "experiments/create", {"name": name}, timeout=timeout)
    return _experiment(env, experiment_of(made, f"{clean_url(server(env))} experiments/create"))


def run_status(snap: Snapshot) -> str:
    """The MLflow status of a run that ended as ``snap`` says: ``FINISHED``, ``KILLED`` (a
    signal, a timeout) or ``FAILED``; no outcome (nothing run) is ``FINISHED``."""
    if "outcome" not in snap.sections:
        return "FINISHED"
    outcome = snap.records.outcome
    if outcome.timed_out or outcome.status == "signalled":
        return "KILLED"
    return "FINISHED" if outcome.exit_status == 0 else "FAILED"


class _Creating(Started):
    """The run being created in a thread while the collectors work; the launch waits for it
    until the deadline, then goes on without it."""

    def __init__(self, deadline: float, timeout: float) -> None:
        super().__init__("mlflow", deadline)

        self.timeout = timeout
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.abandoned = False

    def launch_env(self) -> dict[str, str]:
        t0 = time.monotonic()
        self.done.wait(max(0.0, self.deadline - t0))
        self.waited += time.monotonic() - t0
        with self.lock:
            if not self.done.is_set():
                self.abandoned = True
                self.errors.append(f"mlflow: {self.server}: no answer within "
                                   f"{self.timeout:g} s; the run is not tracked")
            return dict(self.env)


class MLflow(Tracker):
    """MLflow through its tracking server's REST API."""

    name = "mlflow"
    takes_files = True

    def start(self, env: Mapping[str, str], cwd: str, timeout: float,
              experiment: str = "") -> Started:
        deadline = time.monotonic() + timeout
        run_id = env.get("MLFLOW_RUN_ID", "")
        try:
            base = server(env)
        except TrackerError as exc:
            started = Started("mlflow", deadline)
            started.errors.append(f"mlflow: {exc}; the run is not tracked")
            return started
        if run_id:  # the user chose the run: the child attaches to it, runsnap logs there too
            started = Started("mlflow", deadline)
            try:
                check_run_id("mlflow", run_id)
            except TrackerError as exc:
                started.errors.append(f"mlflow: MLFLOW_RUN_ID: {exc}; the run is not tracked")
                return started
            started.server, started.run_id = clean_url(base), run_id
            started.ref = f"mlflow:{run_id}"
            return started
        creating = _Creating(deadline, timeout)
        creating.server, creating.created = clean_url(base), True

        threading.Thread(target=self._create, args=(creating, dict(env), experiment),
                         name="runsnap-mlflow", daemon=True).start()
        return creating

    def _create(self, started: _Creating, env: dict[str, str], experiment: str) -> None:
        error = ""
        within = Deadline(started.timeout)
        try:
            exp = _experiment_id(env, experiment, within, create=True)
            tags = [{"key": "mlflow.source.type", "value": "LOCAL"}]
            user = env.get("USER") or env.get("LOGNAME")
            if user:
                tags.append({"key": "mlflow.user", "value": user})
            made = _call(env, "POST", "runs/create",
                         {"experiment_id": exp, "start_time": int(time.time() * 1000),
                          "tags": tags, **({"user_id": user} if user else {})},
                         timeout=within)
            run_id = run_of(made, f"{started.server} runs/create").run_id
            if not RUN_IDS["mlflow"][0].fullmatch(run_id):  # never repeated: it is not used
                raise TrackerError(f"{started.server}: the run id it answered is not "
                                   f"one ({RUN_IDS['mlflow'][1]})")
        except TrackerError as exc:
            error = f"mlflow: {exc}; the run is not tracked"
        with started.lock:
            if started.abandoned:
                return
            if error:
                started.errors.append(error)
            else:
                started.ref = f"mlflow:{run_id}"
                started.where = f"{started.server}/#/experiments/{exp}/runs/{run_id}"
                started.run_id = run_id
                started.env["MLFLOW_RUN_ID"] = run_id
                if experiment and not env.get("MLFLOW_EXPERIMENT_ID"):
                    started.env["MLFLOW_EXPERIMENT_ID"] = exp
            started.done.set()

    def finish(self, started: Started, snapshot: Snapshot, path: str | None,
               env: Mapping[str, str], cwd: str, timeout: float) -> list[str]:
        if not started.run_id:
            return []
        try:
            return self._finish(started, started.run_id, snapshot, path, env, Deadline(timeout))
        except TrackerError as exc:
            return [f"mlflow: {exc}; the snapshot is not in {started.ref}"]

    def _finish(self, started: Started, run_id: str, snapshot: Snapshot, path: str | None,
                env: Mapping[str, str], timeout: Deadline) -> list[str]:
        run = run_of(_call(env, "GET", f"runs/get?run_id={run_id}", timeout=timeout),
                     f"{started.server} runs/get")
        if not started.where:
            started.where = (f"{started.server}/#/experiments/"
                             f"{_experiment(env, run.experiment_id)}/runs/{run_id}")
        summary = summary_tags(snapshot)
        tags = {f"{TAG_PREFIX}{k}": v for k, v in summary.items()}
        # What the mlflow client records when it creates a run itself; runsnap created this
        # one, so it records the same from the snapshot (never over the child's own).
        if started.created:
            own = {"mlflow.source.git.commit": summary.get("commit", ""),
                   "mlflow.source.git.branch": summary.get("branch", ""),
                   "mlflow.source.name": _source(snapshot)}
            tags.update({k: v for k, v in own.items() if v and k not in run.tags})
        _call(env, "POST", "runs/log-batch",
              {"run_id": run_id, "tags": [{"key": k, "value": v[:5000]}
                                          for k, v in tags.items()]}, timeout=timeout)
        if path is not None:
            with open(path, "rb") as fh:
                data = fh.read()
        else:
            data = dumps(snapshot).encode("utf-8")
        _upload(env, run_id, run.artifact_uri, data, timeout)
        if started.created and run.status == "RUNNING":
            _call(env, "POST", "runs/update",
                  {"run_id": run_id, "status": run_status(snapshot),
                   "end_time": int(time.time() * 1000)}, timeout=timeout)
        return []

    def fetch(self, key: str, env: Mapping[str, str], timeout: float) -> str:


        run_id = check_run_id("mlflow", key)
        base = server(env)
        target = cached_copy("mlflow", clean_url(base), run_id, env)
        if os.path.isfile(target):
            return target
        url = f"{base}/get-artifact?path={quote(ARTIFACT)}&run_uuid={quote(run_id)}"
        try:
            data = request("GET", url, timeout=timeout, headers=_headers(env))
        except TrackerError as exc:
            if "HTTP 404" in str(exc):
                raise TrackerError(f"mlflow:{run_id}: no such run, or it holds no runsnap "
                                   f"snapshot ({ARTIFACT}) on {clean_url(base)}") from None
            raise TrackerError(f"mlflow:{run_id}: {exc}") from None
        _check_snapshot(data, f"mlflow:{run_id}")  # validated before it is cached
        atomic_write(target, data)
        return target

    def runs(self, experiment: str, env: Mapping[str, str], timeout: float) -> list[TrackedRun]:
        within = Deadline(timeout)
        exp = _experiment_id(env, experiment, within, create=False)
        base = clean_url(server(env))
        found: list[TrackedRun] = []
        token = ""
        for _ in range(50):  # 50 pages of 1000 runs: enough for any list a person reads
            query: dict[str, Any] = {
                "experiment_ids": [exp], "max_results": 1000,
                "filter": f"tags.`{TAG_PREFIX}snapshot` = '{ARTIFACT}'",
                "order_by": ["attributes.start_time DESC"]}
            if token:
                query["page_token"] = token
            page = runs_page_of(_call(env, "POST", "runs/search", query, timeout=within),
                                f"{base} runs/search")
            found.extend(e for e in (_entry(run, base, exp) for run in page.runs) if e)
            token = page.next_page_token
            if not token:
                break
        return found

    def attach(self, key: str, name: str, data: bytes, env: Mapping[str, str],
               timeout: float) -> str:
        run_id = check_run_id("mlflow", key)
        within = Deadline(timeout)
        if "/" in name or name.startswith("."):
            raise TrackerError(f"{name!r}: a file name, without folders")
        run = run_of(_call(env, "GET", f"runs/get?run_id={run_id}", timeout=within),
                     f"mlflow:{run_id}: runs/get")
        _upload(env, run_id, run.artifact_uri, data, within, f"runsnap/{name}")
        return (f"runsnap/{name} in {clean_url(server(env))}/#/experiments/"
                f"{_experiment(env, run.experiment_id)}/runs/{run_id}")

    def log_active(self, snapshot: Snapshot, text: str) -> str | None:
        if "mlflow" not in sys.modules:  # a program with a run has imported the client
            return None
        # deferred: the mlflow client, ~5634 ms measured under load; only log_active() needs it
        import mlflow

        run = mlflow.active_run()
        if run is None:
            return None
        mlflow.log_text(text, ARTIFACT)
        mlflow.set_tags({f"{TAG_PREFIX}{k}": v[:5000] for k, v in summary_tags(snapshot).items()})
        return f"mlflow:{run.info.run_id}"


def _source(snap: Snapshot) -> str:
    """What ``mlflow.source.name`` would say: the script a Python child runs, else argv[0]."""
    argv = [str(a) for a in snap.records.command.argv]
    if not argv:
        return ""
    if os.path.basename(argv[0]).startswith("python") and len(argv) > 1:
        return argv[1] if not argv[1].startswith("-") else " ".join(argv[1:3])
    return argv[0]


def _entry(run: MlflowRun, base: str, exp: str) -> TrackedRun | None:
    """A run of a listing, or None for one whose id is not an MLflow run id (never used)."""
    try:
        run_id = check_run_id("mlflow", run.run_id)
    except TrackerError:
        return None

    ours = {k[len(TAG_PREFIX):]: v for k, v in run.tags.items() if k.startswith(TAG_PREFIX)}
    return TrackedRun.of_tags(f"mlflow:{run_id}", f"{base}/#/experiments/{exp}/runs/{run_id}",
                              ours, run.run_name)


def _check_snapshot(data: bytes, ref: str) -> None:
    """:class:`TrackerError` unless ``data`` is a runsnap snapshot (parsed and checked as
    ``show`` would): what a server answered is never cached before it is known to be one."""
    try:
        loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise TrackerError(f"{ref}: the tracker's answer is not text, not a runsnap snapshot; "
                           f"nothing was cached") from None
    except SnapshotError as exc:
        raise TrackerError(f"{ref}: the tracker's answer is not a runsnap snapshot ({exc}); "
                           f"nothing was cached") from None


def _upload(env: Mapping[str, str], run_id: str, artifact_uri: str, data: bytes,
            timeout: Deadline, name: str = ARTIFACT) -> None:
    """``data`` as the run's artifact ``name`` (under ``runsnap/``; default
    :data:`ARTIFACT`), where the mlflow client would put it."""

    if artifact_uri.startswith("mlflow-artifacts:"):
        rest = artifact_uri[len("mlflow-artifacts:"):]
        base = server(env)
        if rest.startswith("//"):  # mlflow-artifacts://host:port/path names its own server
            host, _, rest = rest[2:].partition("/")
            base = f"{base.split('://')[0]}://{host}"

        url = f"{base}/api/2.0/mlflow-artifacts/artifacts/{quote(rest.strip('/'))}/{name}"
        _timed(timeout, url, lambda left: request("PUT", url, data=data, timeout=left,
                                                  headers=_headers(env),
                                                  content_type="application/octet-stream"))
        return
    if artifact_uri.startswith("/") or artifact_uri.startswith("file:"):
        folder = artifact_uri[len("file://"):] if artifact_uri.startswith("file://") \
            else artifact_uri[len("file:"):] if artifact_uri.startswith("file:") else artifact_uri
        try:
            atomic_write(os.path.join(folder, name), data)
        except OSError as exc:
            raise TrackerError(f"cannot write the artifact into {folder}: "
                               f"{exc.strerror or exc}") from None
        return
    try:
        # deferred: the mlflow client, ~6639 ms measured under load; only _upload() needs it
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise TrackerError(f"the run's artifacts go to {clean_url(artifact_uri)}: that needs the "
                           f"mlflow client (pip install 'runsnap[mlflow]')") from None

    with tempfile.TemporaryDirectory(prefix="runsnap-") as tmp:
        os.makedirs(os.path.join(tmp, "runsnap"))
        with open(os.path.join(tmp, name), "wb") as fh:
            fh.write(data)
        try:
            MlflowClient(tracking_uri=server(env)).log_artifacts(
                run_id, os.path.join(tmp, "runsnap"), "runsnap")
        except Exception as exc:  # the client's own errors, whatever the store
            raise TrackerError(f"the mlflow client could not log the artifact: "
                               f"{type(exc).__name__}: {str(exc)[:200]}") from None

