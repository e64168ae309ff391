"""What every tracker shares: the interface one tracker module implements, the tags a person
filters by, the settings of a tracked capture and the cache of fetched snapshots.

A tracker module (:mod:`runsnap.track.mlflow`, :mod:`runsnap.track.wandb`) gives one
:class:`Tracker`. Nothing here imports a tracker's client library: the clients are imported by
the modules that need them, only when a tracked run or a tracked reference is used.
"""

from __future__ import annotations

import os
import re
import shlex
import time

from runsnap.base.digest import sha256
from runsnap.errors import TrackerError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from runsnap.snapshot import Snapshot
    from runsnap.snapshot.records import GitRepo

__all__ = [
    "ARTIFACT",
    "DEFAULT_TIMEOUT",
    "ENGINES",
    "MLFLOW_EXPERIMENT_ID",
    "RUN_IDS",
    "TAG_PREFIX",
    "Started",
    "TrackedRun",
    "Tracker",
    "TrackerError",
    "Deadline",
    "cached_copy",
    "check_run_id",
    "clean_url",
    "summary_tags",
]

#: Where the snapshot is kept in a tracked run (an MLflow artifact, a W&B run file).
ARTIFACT = "runsnap/snapshot.toml"
#: Seconds runsnap waits for a tracker at most before going on without it (``--track-timeout``).
DEFAULT_TIMEOUT = 5.0
#: The prefix of every tag (MLflow) or config key (W&B, under ``runsnap``) runsnap sets.
TAG_PREFIX = "runsnap."
#: The distributions named as the run's engine, first found wins: serving engines, then
#: training frameworks, then the array libraries under them.
ENGINES = ("sglang", "vllm", "tensorrt-llm", "text-generation-server", "deepspeed",
           "megatron-core", "lightning", "pytorch-lightning", "accelerate", "transformers",
           "torch", "jax", "tensorflow")
#: A run id as the trackers write them (MLflow: 32 hex digits; W&B: 8 base-36 characters by
#: default, or the user's own): what may be used in a cache file name.
_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
#: Each tracker's run ids, checked before an id (the user's, or one a server answered) is used
#: in ``MLFLOW_RUN_ID``/``WANDB_RUN_ID``, ``[meta.track]``, a URL or a file name. MLflow makes
#: every run id itself, ``uuid.uuid4().hex`` (``mlflow/store/tracking/sqlalchemy_store.py``):
#: 32 hexadecimal digits. W&B makes 8 base-36 characters and takes a user's own id without
#: ``:;,#?/'`` or surrounding white space (``wandb/sdk/wandb_settings.py``,
#: ``validate_run_id``); runsnap takes, of those, the ones that can name a file and sit in a URL
#: unquoted (letters, digits, ``_ - .``, not starting with ``.``, at most 128).
RUN_IDS = {
    "mlflow": (re.compile(r"[0-9a-f]{32}"), "MLflow's are 32 hexadecimal digits"),
    "wandb": (re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}"),
              "runsnap takes W&B ids of letters, digits, '_', '-' and '.'"),
}
#: MLflow's experiment ids (``_EXPERIMENT_ID_REGEX`` of ``mlflow/utils/validation.py``).
MLFLOW_EXPERIMENT_ID = re.compile(r"[a-zA-Z0-9][\w\-]{0,63}", re.ASCII)


class TrackedRun:
    """One run of a tracker that holds a snapshot, as ``runsnap ls --track`` lists it (read
    from the run's tags, without fetching the snapshot)."""

    __slots__ = ("ref", "where", "captured_at", "label", "command", "exit_status", "host", "id")

    def __init__(self, ref: str, where: str, captured_at: str, label: str, command: str,
                 exit_status: int | None, host: str, id: str) -> None:
        self.ref, self.where, self.captured_at, self.label = ref, where, captured_at, label
        self.command, self.exit_status, self.host, self.id = command, exit_status, host, id

    def __repr__(self) -> str:
        return f"TrackedRun({self.ref!r}, {self.where!r})"

    @classmethod
    def of_tags(cls, ref: str, where: str, tags: Mapping[str, str], name: str = "") -> TrackedRun:
        """A run listed from the :func:`summary_tags` runsnap wrote into it (keys without
        :data:`TAG_PREFIX`; a tag not there is empty); ``name``: the tracker's own name of the
        run, the label when runsnap's is empty.

        >>> run = TrackedRun.of_tags("mlflow:ab", "", {"label": "", "exit_status": "-9"}, "r1")
        >>> run.label, run.exit_status, run.host
        ('r1', -9, '')
        """
        said = {key: tags.get(key, "") for key in ("captured_at", "label", "command",
                                                     "exit_status", "host", "id")}
        status = said["exit_status"]
        return cls(ref=ref, where=where, captured_at=said["captured_at"],
                   label=said["label"] or name, command=said["command"],
                   exit_status=int(status) if status.lstrip("-").isdigit() else None,
                   host=said["host"], id=said["id"])


class Started:
    """A run named (or being created) before the launch: what the child gets, and what went
    wrong. :meth:`launch_env` waits for the tracker, never past ``deadline``."""

    def __init__(self, tracker: str, deadline: float) -> None:
        self.tracker = tracker
        self.deadline = deadline
        #: ``mlflow:RUN_ID`` / ``wandb:...`` once the run is known.
        self.ref = ""
        #: The run's page or folder (no credentials in it).
        self.where = ""
        #: The variables the launch specification gets (never [env]).
        self.env: dict[str, str] = {}
        #: Problems, one line each.
        self.errors: list[str] = []
        #: What :meth:`Tracker.finish` needs: the run's id once it is known (empty: no run to
        #: log to), the server that holds it, and whether runsnap created the run (then it
        #: records what the tracker's client would and ends the run).
        self.run_id = ""
        self.server = ""
        self.created = False
        #: Seconds the launch waited for the tracker: taken from what is left for the rest of
        #: the exchange (``--track-timeout`` bounds all of it together).
        self.waited = 0.0

    def launch_env(self) -> dict[str, str]:
        """The variables the child gets, once the tracker answered or the deadline passed."""
        return dict(self.env)

    def meta(self) -> dict[str, Any]:
        """``[meta.track]`` of the snapshot: which run holds it, and what went wrong."""
        out: dict[str, Any] = {"tracker": self.tracker}
        if self.ref:
            out["run"] = self.ref
        if self.where:
            out["where"] = self.where
        out["errors"] = list(self.errors)
        return out


class Tracker:
    """One experiment tracker: name or create the run before the launch, log the snapshot
    after it, fetch a snapshot back, list the runs that hold one, log from inside a program."""

    #: The name used in ``--track NAME`` and in references (``NAME:...``).
    name = ""
    #: Whether :meth:`attach` can add files (pages, reports) to its runs.
    takes_files = False

    def start(self, env: Mapping[str, str], cwd: str, timeout: float,
              experiment: str = "") -> Started:
        """Name or begin creating the run the child will use; returns at once."""
        raise NotImplementedError

    def finish(self, started: Started, snapshot: Snapshot, path: str | None,
               env: Mapping[str, str], cwd: str, timeout: float) -> list[str]:
        """Log ``snapshot`` (written at ``path``, or only in memory) and its tags to the run;
        the problems, one line each (nothing raised)."""
        raise NotImplementedError

    def fetch(self, key: str, env: Mapping[str, str], timeout: float) -> str:
        """A local file holding the snapshot of the run ``key`` names (cached); raises
        :class:`~runsnap.errors.TrackerError`."""
        raise NotImplementedError

    def runs(self, experiment: str, env: Mapping[str, str], timeout: float) -> list[TrackedRun]:
        """The runs of ``experiment`` that hold a snapshot, newest first."""
        raise NotImplementedError

    def log_active(self, snapshot: Snapshot, text: str) -> str | None:
        """Log ``snapshot`` to this tracker's active run in this process; its reference, or
        None when this process has no active run of this tracker."""
        raise NotImplementedError

    def attach(self, key: str, name: str, data: bytes, env: Mapping[str, str],
               timeout: float) -> str:
        """Add the file ``runsnap/NAME`` holding ``data`` to the run ``key`` names (a page, a
        report); where it is now, in words. Raises :class:`~runsnap.errors.TrackerError`
        (a tracker that cannot: says so)."""
        raise TrackerError(f"{type(self).__name__}: runsnap cannot add files to its runs yet "
                           "(mlflow can)")


def _git(snap: Snapshot) -> GitRepo | None:
    """The repository a person means by "the commit": the one of the working directory, else
    the first recorded (None: no repository)."""
    chosen = None
    for repo in snap.records.git.repos.values():
        if "cwd" in repo.roles:
            return repo
        chosen = chosen or repo
    return chosen


def _gpu(snap: Snapshot) -> str:
    """``2x NVIDIA H100 80GB HBM3``, ``NVIDIA A10G, NVIDIA T4`` or ``none``.

    >>> from runsnap.snapshot import Snapshot
    >>> gpu = {"devices": [{"name": "NVIDIA H100"}, {"name": "NVIDIA H100"}]}
    >>> _gpu(Snapshot(meta={}, sections={"system": {"gpu": gpu}}))
    '2x NVIDIA H100'
    """
    names = [d.name or "?" for d in snap.records.system.gpu.devices]
    if not names:
        return "none"
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{n}x {name}" if n > 1 else name for name, n in counts.items())


def _engine(snap: Snapshot) -> str:
    """The first of :data:`ENGINES` installed, with its version (``vllm 0.6.3``), or empty."""
    dists = snap.records.packages.distributions
    by_name = {str(k).lower().replace("_", "-"): v for k, v in dists.items()}
    for name in ENGINES:
        dist = by_name.get(name)
        if dist is not None:
            return f"{name} {'?' if dist.version is None else dist.version}"
    return ""


def _outcome(snap: Snapshot) -> tuple[str, str]:
    """``(outcome, exit_status)`` as tags: ``exited``/``signalled``/... and the status, or
    ``not run`` / ``running`` when there is no outcome."""
    if "outcome" not in snap.sections:
        return ("running" if snap.records.meta.launch == "pid" else "not run"), ""
    outcome = snap.records.outcome
    status = outcome.exit_status
    word = "timed out" if outcome.timed_out else str(outcome.status or "?")
    return word, "" if status is None else str(status)


def summary_tags(snap: Snapshot) -> dict[str, str]:
    """The tags a person filters tracked runs by, from the (redacted) snapshot: keys without
    :data:`TAG_PREFIX`; empty values are left out."""
    repo = _git(snap)
    outcome, status = _outcome(snap)
    meta = snap.records.meta
    argv = [str(a) for a in snap.records.command.argv]
    tags = {
        "snapshot": ARTIFACT,
        "id": snap.id,
        "captured_at": meta.captured_at or "",
        "label": snap.label,
        "host": meta.host or "",
        "commit": (repo and repo.commit) or "",
        "dirty": "" if not repo else ("true" if repo.dirty else "false"),
        "branch": (repo and repo.branch) or "",
        "gpu": _gpu(snap),
        "engine": _engine(snap),
        "outcome": outcome,
        "exit_status": status,
        "command": shlex.join(argv)[:500],
        "version": meta.runsnap_version or "",
    }
    return {k: v for k, v in tags.items() if v}


def clean_url(url: str) -> str:
    """``url`` without credentials, query or fragment: what may be recorded and printed.

    >>> clean_url("https://user:pw@mlflow.example:5000/base/?token=x#a")
    'https://mlflow.example:5000/base/'
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url.split("?")[0].split("#")[0]
    host, slash, path = rest.partition("/")
    host = host.rpartition("@")[2]
    return f"{scheme}://{host}{slash}{path.split('?')[0].split('#')[0]}"


def safe_id(run_id: str, what: str) -> str:
    """``run_id`` when it may name a file, else :class:`TrackerError`.

    >>> safe_id("9a89b248665d465290e6f12e5d9a0a74", "mlflow")
    '9a89b248665d465290e6f12e5d9a0a74'
    """
    if not run_id or run_id.startswith(".") or not set(run_id) <= _ID_CHARS:
        raise TrackerError(f"{what}:{run_id}: not a run id")
    return run_id


def check_run_id(tracker: str, run_id: str) -> str:
    """``run_id`` when it has ``tracker``'s run id format (:data:`RUN_IDS`), else
    :class:`TrackerError` naming it (escaped: a server's answer may hold anything).

    >>> check_run_id("mlflow", "9a89b248665d465290e6f12e5d9a0a74")
    '9a89b248665d465290e6f12e5d9a0a74'
    >>> check_run_id("mlflow", "../../../../tmp/x")
    Traceback (most recent call last):
    runsnap.errors.TrackerError: mlflow:../../../../tmp/x: not a run id (MLflow's are 32 hexadecimal digits)
    """
    pattern, says = RUN_IDS[tracker]
    if not isinstance(run_id, str) or not pattern.fullmatch(run_id):
        shown = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in str(run_id)[:80])
        raise TrackerError(f"{tracker}:{shown}: not a run id ({says})")
    return run_id


class Deadline:
    """One time limit for every request of an exchange: each gets what is left.

    >>> Deadline(5).left() > 4
    True
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        """The seconds left (more than 0), else :class:`TrackerError`."""
        rest = self.end - time.monotonic()
        if rest <= 0:
            raise TrackerError(f"no complete answer within {self.seconds:g} s "
                               f"(--track-timeout, all requests together)")
        return rest


def cached_copy(tracker: str, server: str, run_id: str, env: Mapping[str, str]) -> str:
    """Where a fetched snapshot of ``run_id`` on ``server`` is kept: in runsnap's cache
    (``RUNSNAP_CACHE_DIR``), else, with the cache turned off, in a folder of this process."""
    # deferred: runsnap.base.cache, ~26 ms measured under load; only cached_copy() needs it
    from runsnap.base.cache import cache_dir

    base = cache_dir(env)
    if base is None:
        # deferred: tempfile, ~27 ms measured under load; only cached_copy() needs it
        import tempfile

        base = _TEMP.setdefault("dir", tempfile.mkdtemp(prefix="runsnap-tracked-"))
    key = sha256(server.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return os.path.join(base, "tracked", tracker, key, f"{safe_id(run_id, tracker)}.toml")


_TEMP: dict[str, str] = {}
