"""Weights & Biases: the run named before the launch (``WANDB_RUN_ID``), the snapshot logged as
the run file ``runsnap/snapshot.toml`` with ``runsnap.*`` config keys and the tag ``runsnap``,
read back from an offline run folder or, online, through the W&B API.

Naming the run costs nothing before the launch: runsnap chooses the id (as ``wandb.init``
would: 8 base-36 characters) and the child's ``wandb.init()`` takes it from ``WANDB_RUN_ID``.
When the child has ended, runsnap logs the snapshot with W&B's own client
(:mod:`runsnap.track.wandb_log`, in a process of its own, given the child's environment and
folder so that it finds the same mode, project and ``wandb/`` folder), resuming the same run
(``resume="allow"``): online this is the child's run; offline W&B writes one folder per
``wandb.init``, so the run's snapshot is in the folder runsnap's logging wrote
(``wandb/offline-run-<time>-<id>/files/runsnap/snapshot.toml``), and ``wandb sync`` of both
folders gives one run online.

References: ``wandb:ENTITY/PROJECT/RUN_ID`` (or ``wandb:PROJECT/RUN_ID``) is fetched through the
W&B API; ``wandb:RUN_ID`` is the newest run folder of that id holding a snapshot in ``./wandb/``
(``$WANDB_DIR/wandb/`` when set); ``wandb:FOLDER`` is that run folder (or a ``wandb/`` folder's
newest run with a snapshot).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

from runsnap.errors import RunsnapError, SnapshotError, TrackerError
from runsnap.snapshot import atomic_write, dumps, load, loads
from runsnap.track.answers import logged_of, summary_of
from runsnap.track.base import (
    ARTIFACT,
    Started,
    TrackedRun,
    Tracker,
    cached_copy,
    check_run_id,
    safe_id,
    summary_tags,
)
from runsnap.track.wandb_log import attach

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from runsnap.snapshot import Snapshot

__all__ = ["STARTUP", "WandB", "new_id", "run_folders"]

#: Seconds W&B's client may take to start (its service process) on top of ``--track-timeout``,
#: when runsnap logs after the child ended.
STARTUP = 60.0
_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def new_id() -> str:
    """A run id as ``wandb.init`` makes them: 8 random base-36 characters."""
    return "".join(_ID_ALPHABET[b % 36] for b in os.urandom(8))


def _wandb_dir(env: Mapping[str, str], cwd: str) -> str:
    """The folder W&B writes run folders into: ``$WANDB_DIR/wandb``, else ``CWD/wandb``."""
    base = env.get("WANDB_DIR") or cwd
    return os.path.join(os.path.abspath(os.path.join(cwd, base)), "wandb")


def run_folders(wandb_dir: str, run_id: str = "") -> list[str]:
    """The run folders (``run-*``, ``offline-run-*``) of ``wandb_dir`` holding a snapshot, of
    ``run_id`` when given, newest first (their names begin with the start time)."""
    try:
        names = os.listdir(wandb_dir)
    except OSError:
        return []
    found = []
    for name in names:
        if not name.startswith(("run-", "offline-run-")):
            continue
        if run_id and not name.endswith(f"-{run_id}"):
            continue
        folder = os.path.join(wandb_dir, name)
        if os.path.isfile(os.path.join(folder, "files", ARTIFACT)):
            found.append(folder)
    return sorted(found, key=lambda f: os.path.basename(f).removeprefix("offline-"),
                  reverse=True)


class WandB(Tracker):
    """Weights & Biases, online or offline, through its own client after the launch."""

    name = "wandb"

    def start(self, env: Mapping[str, str], cwd: str, timeout: float,
              experiment: str = "") -> Started:
        started = Started("wandb", time.monotonic() + timeout)
        run_id = env.get("WANDB_RUN_ID") or new_id()
        try:
            check_run_id("wandb", run_id)
        except TrackerError as exc:
            started.errors.append(f"wandb: WANDB_RUN_ID: {exc}; the run is not tracked")
            return started
        if not env.get("WANDB_RUN_ID"):
            started.env["WANDB_RUN_ID"] = run_id
        if experiment and not env.get("WANDB_PROJECT"):
            started.env["WANDB_PROJECT"] = experiment
        started.run_id = run_id
        started.ref = f"wandb:{run_id}"
        return started

    def finish(self, started: Started, snapshot: Snapshot, path: str | None,
               env: Mapping[str, str], cwd: str, timeout: float) -> list[str]:

        if not started.run_id:
            return []
        run_id = started.run_id
        with tempfile.TemporaryDirectory(prefix="runsnap-wandb-") as tmp:
            if path is None:
                path = os.path.join(tmp, "snapshot.toml")
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(dumps(snapshot))
            result = os.path.join(tmp, "result.json")
            # W&B's own error report, sent on the client's way out after a failure, goes to the
            # server that just failed: against one that never answers it held the capture ~14 s
            # past --track-timeout. runsnap's helper sends none unless the user asked for it.
            child_env = {"WANDB_ERROR_REPORTING": "false", **env, **started.env,
                         "WANDB_SILENT": "true"}
            argv = [sys.executable, "-m", "runsnap.track.wandb_log", run_id, path,
                    json.dumps(summary_tags(snapshot)), str(snapshot.records.outcome.exit_status or 0),
                    str(timeout), result]
            try:
                done = subprocess.run(argv, env=child_env, cwd=cwd, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      timeout=timeout + STARTUP, check=False)
            except subprocess.TimeoutExpired:
                return [f"wandb: no answer within {timeout + STARTUP:g} s; the snapshot is not "
                        f"in {started.ref}"]
            except OSError as exc:
                return [f"wandb: cannot start {sys.executable}: {exc.strerror or exc}"]
            try:
                with open(result, encoding="utf-8") as fh:
                    answer = json.load(fh)
            except (OSError, ValueError):
                last = done.stderr.decode("utf-8", "replace").strip().splitlines()
                why = last[-1] if last else f"exit status {done.returncode}"
                return [f"wandb: {why[:300]}; the snapshot is not in {started.ref}"]
        try:
            info = logged_of(answer, "wandb: its helper's answer")
        except TrackerError as exc:
            return [f"{exc}; the snapshot is not in {started.ref}"]
        if info.error:
            return [f"wandb: {info.error}; the snapshot is not in {started.ref}"]
        if info.online:
            try:  # the path the server answered: ENTITY/PROJECT/RUN_ID, each checked
                entity, project, made = info.path.split("/")
                safe_id(entity, "wandb"), safe_id(project, "wandb"), check_run_id("wandb", made)
            except (ValueError, TrackerError):
                return [f"wandb: the server named the run {info.path[:80]!r}, not "
                        f"ENTITY/PROJECT/RUN_ID; it is not recorded"]
        started.ref = f"wandb:{info.path}" if info.online else f"wandb:{run_id}"
        if info.online:  # offline, wandb:RUN_ID names the folder in ./wandb already
            started.where = info.url
        return []

    def fetch(self, key: str, env: Mapping[str, str], timeout: float) -> str:
        cwd = os.getcwd()
        if os.path.isdir(key):
            folder = os.path.abspath(key)
            inside = os.path.join(folder, "files", ARTIFACT)
            if os.path.isfile(inside):
                return inside
            newest = run_folders(folder)
            if newest:
                return os.path.join(newest[0], "files", ARTIFACT)
            raise TrackerError(f"wandb:{key}: holds no runsnap snapshot (files/{ARTIFACT})")
        if "/" not in key:
            run_id = check_run_id("wandb", key)
            where = _wandb_dir(env, cwd)
            folders = run_folders(where, run_id)
            if folders:
                return os.path.join(folders[0], "files", ARTIFACT)
            raise TrackerError(f"wandb:{key}: no run folder of {run_id} holding a snapshot in "
                               f"{where} (an online run: wandb:ENTITY/PROJECT/RUN_ID)")
        return self._download(key, env, timeout)

    def _download(self, key: str, env: Mapping[str, str], timeout: float) -> str:
        parts = key.split("/")
        if len(parts) not in (2, 3) or not all(parts):
            raise TrackerError(f"wandb:{key}: name a run as wandb:ENTITY/PROJECT/RUN_ID, "
                               f"wandb:RUN_ID or wandb:FOLDER")
        for part in parts[:-1]:
            safe_id(part, "wandb")
        check_run_id("wandb", parts[-1])
        target = cached_copy("wandb", env.get("WANDB_BASE_URL", "https://api.wandb.ai"),
                             key.replace("/", "_"), env)
        if os.path.isfile(target):
            return target
        wandb = _client(f"wandb:{key}: reading an online run")


        try:
            run = wandb.Api(timeout=int(max(1, timeout))).run(key)
            with tempfile.TemporaryDirectory(prefix="runsnap-wandb-") as tmp:
                run.file(ARTIFACT).download(root=tmp, replace=True)
                with open(os.path.join(tmp, ARTIFACT), "rb") as fh:
                    data = fh.read()
        except Exception as exc:  # the client's own errors: network, auth, no such run/file
            raise TrackerError(f"wandb:{key}: {type(exc).__name__}: {str(exc)[:200]}") from None
        try:  # validated before it is cached
            loads(data.decode("utf-8"))
        except (UnicodeDecodeError, SnapshotError):
            raise TrackerError(f"wandb:{key}: the tracker's answer is not a runsnap snapshot; "
                               f"nothing was cached") from None
        atomic_write(target, data)
        return target

    def runs(self, experiment: str, env: Mapping[str, str], timeout: float) -> list[TrackedRun]:
        if experiment and not os.path.isdir(experiment):
            return self._online_runs(experiment, timeout)

        where = os.path.abspath(experiment) if experiment else _wandb_dir(env, os.getcwd())
        if os.path.basename(where) != "wandb" and os.path.isdir(os.path.join(where, "wandb")):
            where = os.path.join(where, "wandb")
        found = []
        for folder in run_folders(where):
            path = os.path.join(folder, "files", ARTIFACT)
            try:
                tags = summary_tags(load(path))
            except RunsnapError:  # listed all the same: diff and show say what is wrong
                tags = {}
            found.append(TrackedRun.of_tags(f"wandb:{os.path.relpath(folder)}", folder, tags))
        return found

    def _online_runs(self, project: str, timeout: float) -> list[TrackedRun]:
        wandb = _client(f"listing {project}")
        found = []
        try:
            for run in wandb.Api(timeout=int(max(1, timeout))).runs(
                    project, filters={"tags": "runsnap"}):
                tags = summary_of(run.config.get("runsnap"), f"wandb: {project}: run {run.id}")
                found.append(TrackedRun.of_tags(f"wandb:{'/'.join(run.path)}", str(run.url),
                                                tags, str(run.name)))
        except TrackerError:
            raise
        except Exception as exc:  # the client's own errors: network, auth, no such project
            raise TrackerError(f"wandb: {project}: {type(exc).__name__}: "
                               f"{str(exc)[:200]}") from None
        return found

    def log_active(self, snapshot: Snapshot, text: str) -> str | None:
        if "wandb" not in sys.modules:  # a program with a run has imported the client
            return None
        run = sys.modules["wandb"].run
        if run is None:
            return None

        info = attach(run, text, summary_tags(snapshot))
        return f"wandb:{info['path']}" if info.get("online") else f"wandb:{run.id}"


def _client(needed_for: str) -> Any:
    """The wandb client, imported only to read or list online runs (seconds of imports)."""
    try:
        # deferred: the wandb client, ~4636 ms measured under load; only _client() needs it
        import wandb
    except ImportError:
        raise TrackerError(f"{needed_for} needs the wandb client "
                           f"(pip install 'runsnap[wandb]')") from None
    return wandb
