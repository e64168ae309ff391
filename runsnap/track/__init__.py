"""Snapshots where teams keep their runs: MLflow and Weights & Biases.

Three ways in:

* ``runsnap capture --track mlflow|wandb -- CMD`` (or ``[tool.runsnap.capture] track``): a
  :class:`Session` names or creates the run before the launch, the child gets its id through the
  launch specification (never ``[env]``), and when the child has ended the snapshot is logged to
  the run as ``runsnap/snapshot.toml`` with ``runsnap.*`` tags. A tracker that does not answer
  within ``--track-timeout`` seconds, or refuses, costs the launch nothing more: one line on
  stderr and an entry in ``[meta.track] errors``; the snapshot is still written locally.
* ``mlflow:RUN_ID``, ``wandb:ENTITY/PROJECT/RUN_ID``, ``wandb:RUN_ID`` or ``wandb:FOLDER``
  wherever a snapshot is named (:func:`fetch`: the snapshot fetched into runsnap's cache);
  :func:`tracked_runs` for ``runsnap ls --track``.
* :func:`log_snapshot` inside a program that started its own run.

One module per tracker (:mod:`~runsnap.track.mlflow`, :mod:`~runsnap.track.wandb`), the shared
interface in :mod:`~runsnap.track.base`. No tracker client is imported unless a tracked run or
reference is used, and the capture path imports neither.

    >>> is_reference("mlflow:0a1b"), is_reference("wandb:me/proj/x1"), is_reference("a.toml")
    (True, True, False)
"""

from __future__ import annotations

import os
import time

from runsnap.errors import TrackerError, UsageError
from runsnap.track.base import ARTIFACT, DEFAULT_TIMEOUT, Deadline, TrackedRun

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from runsnap.snapshot import Snapshot
    from runsnap.track.base import Started, Tracker

__all__ = [
    "ARTIFACT",
    "DEFAULT_TIMEOUT",
    "FETCH_TIMEOUT",
    "TRACKERS",
    "Session",
    "TrackedRun",
    "attach",
    "fetch",
    "is_reference",
    "log_snapshot",
    "project_settings",
    "tracked_runs",
    "tracker",
]

#: The trackers, by the name ``--track`` and references use.
TRACKERS = ("mlflow", "wandb")
#: Seconds a fetch or a listing waits for a tracker (no launch waits on these).
FETCH_TIMEOUT = 30.0


def tracker(name: str) -> Tracker:
    """The :class:`~runsnap.track.base.Tracker` called ``name``; the module behind it is
    imported now, not before."""
    if name == "mlflow":
        # deferred: runsnap.track.mlflow, ~35 ms measured under load; only tracker() needs it
        from runsnap.track.mlflow import MLflow

        return MLflow()
    if name == "wandb":
        # deferred: runsnap.track.wandb, ~2 ms measured under load; only tracker() needs it
        from runsnap.track.wandb import WandB

        return WandB()

    raise UsageError(f"{name!r}: not a tracker runsnap knows (mlflow, wandb)")


def is_reference(text: str) -> bool:
    """Whether ``text`` names a tracked run (``mlflow:...``, ``wandb:...``)."""
    scheme, sep, rest = text.partition(":")
    return bool(sep and rest) and scheme in TRACKERS


def fetch(ref: str, env: Mapping[str, str] | None = None,
          timeout: float = FETCH_TIMEOUT) -> str:
    """A local file holding the snapshot of the tracked run ``ref`` (fetched into runsnap's
    cache once, then reused); :class:`~runsnap.errors.TrackerError` when the tracker cannot be
    reached or the run holds no snapshot."""
    scheme, _, key = ref.partition(":")
    return tracker(scheme).fetch(key, os.environ if env is None else env, timeout)


def attach(ref: str, name: str, data: bytes, env: Mapping[str, str] | None = None,
           timeout: float = FETCH_TIMEOUT) -> str:
    """Add the file ``runsnap/NAME`` (``data``) to the tracked run ``ref`` (``mlflow:RUN_ID``):
    a report or a page kept with the run; where it is now, in words. Raises
    :class:`~runsnap.errors.TrackerError`."""
    if not is_reference(ref):
        raise UsageError(f"{ref!r}: not a tracked run (mlflow:RUN_ID)")
    scheme, _, key = ref.partition(":")
    return tracker(scheme).attach(key, name, data, os.environ if env is None else env, timeout)


def tracked_runs(name: str, experiment: str = "", env: Mapping[str, str] | None = None,
                 timeout: float = FETCH_TIMEOUT) -> list[TrackedRun]:
    """The runs of ``experiment`` (MLflow: its name; W&B: ``ENTITY/PROJECT``, or a folder
    holding offline runs, default ``./wandb``) that hold a snapshot, newest first."""
    return tracker(name).runs(experiment, os.environ if env is None else env, timeout)


class Session:
    """One tracked capture: :meth:`start` before the collectors, :meth:`launch_env` right
    before the launch, :meth:`meta` into the snapshot, :meth:`finish` once it is final."""

    def __init__(self, tracker: Tracker, started: Started, env: Mapping[str, str], cwd: str,
                 timeout: float) -> None:
        self.tracker, self.started, self.env, self.cwd = tracker, started, env, cwd
        self.timeout = timeout
        self._reported = 0
        self._after: Deadline | None = None

    @classmethod
    def start(cls, name: str, env: Mapping[str, str], cwd: str,
              timeout: float = DEFAULT_TIMEOUT, experiment: str = "") -> Session:
        """Name the run (W&B) or begin creating it (MLflow, in a thread): returns at once."""
        chosen = tracker(name)
        return cls(chosen, chosen.start(env, cwd, timeout, experiment), env, cwd, timeout)

    def launch_env(self) -> dict[str, str]:
        """The variables the launch specification gets; waits for the tracker at most until
        ``timeout`` seconds after :meth:`start`."""
        return self.started.launch_env()

    def meta(self) -> dict[str, Any]:
        """``[meta.track]``: ``tracker``, ``run`` (its reference), ``where`` and ``errors``."""
        return self.started.meta()

    def new_errors(self) -> list[str]:
        """The problems not yet asked for (each is reported once)."""
        fresh = self.started.errors[self._reported:]
        self._reported = len(self.started.errors)
        return fresh

    def left(self) -> float:
        """The seconds the tracker may still take, once the child has ended: one deadline for
        every request after the launch (logging the snapshot, a page), set at the first ask,
        of ``timeout`` less what the launch waited for the run; 0 once it has passed."""
        if self._after is None:
            self._after = Deadline(max(0.0, self.timeout - self.started.waited))
        return max(0.0, self._after.end - time.monotonic())

    def finish(self, snapshot: Snapshot, path: str | None) -> list[str]:
        """Log the final ``snapshot`` (saved at ``path``, None: only in memory) to the run,
        within :meth:`left`; the problems, which also join :meth:`meta`'s ``errors``."""
        left = self.left()
        if left <= 0 and self.started.ref:
            problems = [f"{self.tracker.name}: no time left of --track-timeout "
                        f"{self.timeout:g} s; the snapshot is not in {self.started.ref}"]
        else:
            problems = self.tracker.finish(self.started, snapshot, path, {**self.env},
                                           self.cwd, left)
        self.started.errors.extend(problems)
        return problems


def project_settings(start: str) -> dict[str, Any]:
    """``track``, ``track_timeout`` and ``track_experiment`` as the nearest project file gives
    them (:func:`runsnap.capturing.settings.track_settings`)."""
    # deferred: runsnap.capturing.settings, ~1 ms measured under load; only project_settings() needs it
    from runsnap.capturing.settings import track_settings

    return track_settings(start)


def log_snapshot(tracker_name: str | None = None, *, label: str = "",
                 output: str | os.PathLike[str] | None = None, repos: Sequence[str] = (),
                 models: Sequence[str] = (), redact: Sequence[str] = (),
                 keep: Sequence[str] = ()) -> str:
    """Snapshot this process (as ``runsnap capture --pid`` does) and log it to the run this
    program started (``mlflow.active_run()``, ``wandb.run``); returns the run's reference
    (``mlflow:RUN_ID`` ...). ``tracker_name``: ``mlflow`` or ``wandb`` (default: whichever
    has an active run, both when both do). ``output``: also save the snapshot there.

    Raises :class:`~runsnap.errors.TrackerError` when no tracker has an active run here.
    """
    # deferred: runsnap.capturing, runsnap.snapshot, ~94 ms measured under load; only log_snapshot() needs it
    from runsnap.capturing import capture_pid
    from runsnap.snapshot import dumps

    snap = capture_pid(os.getpid(), label=label, repos=repos, models=models, redact=redact,
                       keep=keep, output=output)
    text = dumps(snap)
    refs = []
    for name in (tracker_name,) if tracker_name else TRACKERS:
        ref = tracker(name).log_active(snap, text)
        if ref:
            refs.append(ref)
    if not refs:
        which = tracker_name or "MLflow or W&B"
        raise TrackerError(f"no active {which} run in this process: start one "
                           f"(mlflow.start_run(), wandb.init()) before log_snapshot()")
    return " ".join(refs)
