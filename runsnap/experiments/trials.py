"""One trial of a bisection: launch a specification, captured, and say whether it went good or bad.

A full trial is ``runsnap capture -o trial-NN.toml -- ARGV`` run with the spec's environment and
working directory, so it leaves a snapshot with its outcome, like any wrapped launch (diff it,
show it, replay it); a quick one (``quick=True``, a search trial judged by its outcome) runs
:mod:`runsnap.experiments.quicktrial` instead, which launches the same way and records nothing
but the verdict's fields. runsnap itself runs isolated, with the import path of the runsnap
that starts it (:mod:`runsnap.experiments.selfrun`), so the trial's ``PYTHONPATH`` and the like
reach only the program, however runsnap was installed. The program's output goes to
``trial-NN.log`` and nothing else does: runsnap's own lines, and a ``--test`` command's, go to
``trial-NN.runsnap.txt``. A trial whose runsnap cannot start is a :class:`TrialError` (exit 2)
with the reason it gave, never a verdict.

What decides (:class:`Criteria`):

* by default, the outcome: does it look like GOOD's or like BAD's (exit status and signal,
  else the first error line with numbers masked, else the metric, wall time or peak memory
  that differs: :mod:`runsnap.experiments.judging`)? Neither is ``unclear``;
* ``timeout``: a server. Still running after that many seconds is good (with ``ready_line`` or
  ``ready_url``: ready by then is good, and the trial stops as soon as it is ready); an exit
  before is bad. The trial is then stopped cleanly (SIGTERM, a grace period, SIGKILL);
* ``test``: a shell command whose exit status decides (0 good, 125 unclear, else bad); it runs
  after the launch ends, or, with ``timeout``, while the server is up. It sees
  ``RUNSNAP_TRIAL_SNAPSHOT``, ``RUNSNAP_TRIAL_LOG`` (the program's output only) and
  ``RUNSNAP_TRIAL_EXIT_STATUS``.
"""

from __future__ import annotations

import enum
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from runsnap.base.records import FrozenRecord
from runsnap.errors import RunsnapError, SnapshotError, UsageError
from runsnap.experiments.caches import ResultCache, fresh_caches
from runsnap.experiments.judging import (
    BAD,
    GOOD,
    STOPPED,
    UNCLEAR,
    OutcomeJudge,
    Verdict,
    as_outcome,
    describe,
)
from runsnap.experiments.selfrun import runsnap_argv
from runsnap.launch.signals import escalate
from runsnap.launch.watch import descendants
from runsnap.snapshot import load

if TYPE_CHECKING:
    from typing import BinaryIO

    from runsnap.launch import LaunchSpec

__all__ = ["BAD", "GOOD", "STOPPED", "UNCLEAR", "Criteria", "Judging", "OutcomeJudge", "TrialError",
           "TRACKER_VARIABLES", "TrialOutcome", "Verdict", "env_keys", "run_judged", "run_trial",
           "tracker_notes", "untracked"]


class TrialError(RunsnapError):
    """A trial's runsnap could not start or launch the program: no verdict can be had (exit 2)."""




class _Watched(enum.Enum):
    """How watching a trial's launch ended."""

    EXITED = "exited"
    """The launch ended by itself."""
    READY = "ready"
    """``--ready-line`` or ``--ready-url`` said it is ready, before ``--timeout``."""
    RUNNING = "running"
    """Still running at ``--timeout``."""
    STOPPED = "stopped"
    """Interrupted."""


class Criteria(FrozenRecord):
    """How a trial is judged (see the module's docstring)."""

    timeout: float | None = None
    ready_line: str | None = None
    ready_url: str | None = None
    test: str | None = None
    kill_grace: float = 5.0
    """Seconds between the stop signal and the next step when a trial is stopped."""
    metric: str | None = None
    """When GOOD and BAD ended alike: the metric that decides (``--metric NAME``; default the
    first metric the diff finds beyond noise, else wall time, else peak memory)."""
    metric_tolerance: tuple[str, ...] = ()
    """``--metric-tolerance [NAME=]TOL`` specs: how far a metric may move and still be noise,
    before the project's ``metric-tolerance`` (as ``runsnap diff`` reads them)."""

    def __post_init__(self) -> None:
        if (self.ready_line or self.ready_url) and self.timeout is None:
            raise UsageError("--ready-line and --ready-url need --timeout S (how long to wait)")
        if self.ready_line:
            try:
                re.compile(self.ready_line)
            except re.error as exc:
                raise UsageError(f"--ready-line: not a regular expression: {exc}") from None


class TrialOutcome(FrozenRecord):
    """What one trial gave."""

    verdict: Verdict
    why: str
    snapshot: str | None
    log: str
    elapsed: float


def _url_ready(url: str) -> bool:
    # deferred: urllib.request (http.client, email, ssl), ~153 ms measured under load; only _url_ready() needs
    # it
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=1.0):  # noqa: S310 - the user's own URL
            return True
    except urllib.error.HTTPError as exc:
        return exc.code < 500
    except (OSError, ValueError):
        return False


def _ended(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the trial's runsnap has ended, without reaping it: while it is not reaped its
    process group's id cannot be taken by another process, so the group can still be killed
    safely (:func:`_stop`)."""
    if proc.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return proc.poll() is not None


def _stop(proc: subprocess.Popen[bytes], grace: float, at_once: bool = False) -> None:
    """Stop a trial (its runsnap passes the signals on to the program): SIGTERM, again after
    ``grace`` (runsnap then escalates to SIGKILL), SIGKILL at last; ``at_once`` (Ctrl-C):
    none of that. Then whatever is left of the trial's process group (it has one of its own:
    a helper the program started, a server's workers) is killed, so no trial leaves a process
    behind to hold a port or a GPU for the next; only then is runsnap's process reaped. So are
    its descendants in sessions of their own (torchrun starts each worker in one): stopped at
    once, torchrun cannot stop them, and a rank waiting in a collective would stay."""
    steps = () if at_once else ((signal.SIGTERM, grace), (signal.SIGTERM, grace + 2.0),
                                (signal.SIGKILL, 5.0))
    own = [p for p in descendants(proc.pid) if _group(p) not in (None, proc.pid)]
    for sig, wait in steps:
        if _ended(proc):
            break
        try:
            proc.send_signal(sig)
        except OSError:
            break
        until = time.monotonic() + wait
        while not _ended(proc) and time.monotonic() < until:
            time.sleep(0.02)
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:  # the group is gone already
            pass
    for pid in own:
        if _group(pid) is not None:  # still there: the trial's launcher did not stop it
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    escalate(proc, ((signal.SIGKILL, None),))
    proc.wait()


def _group(pid: int) -> int | None:
    """The process group of ``pid`` (None: gone)."""
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def own_log(log: str) -> str:
    """Where runsnap's own lines of a trial go, beside its log: ``trial-03.runsnap.txt``."""
    return (log[: -len(".log")] if log.endswith(".log") else log) + ".runsnap.txt"


def _run_test(criteria: Criteria, snapshot: str, log: str, status: Any) -> tuple[Verdict, str]:
    """Run ``--test``; its words and output go to runsnap's own log of the trial, never into
    the program's log it may read."""
    env = {**os.environ, "RUNSNAP_TRIAL_SNAPSHOT": snapshot, "RUNSNAP_TRIAL_LOG": log,
           "RUNSNAP_TRIAL_EXIT_STATUS": "" if status is None else str(status)}
    with open(own_log(log), "ab") as out:
        out.write(f"# runsnap: --test {criteria.test}\n".encode())
        out.flush()
        code = subprocess.call(criteria.test or "", shell=True, env=env, stdout=out, stderr=out,
                               stdin=subprocess.DEVNULL)
    if code == 0:
        return GOOD, "--test exited 0"
    if code == 125:
        return UNCLEAR, "--test exited 125 (cannot tell)"
    return BAD, f"--test exited {code}"


def run_trial(
    spec: LaunchSpec,
    *,
    name: str,
    folder: str,
    criteria: Criteria,
    judge: OutcomeJudge | None,
    stop: threading.Event,
    label: str = "",
    quick: bool = False,
) -> TrialOutcome:
    """Launch ``spec`` captured to ``folder/NAME.toml`` and judge it: start it, watch it until
    it ends, is ready, times out or is interrupted, judge it live (``--test``, readiness) and
    stop it, then judge what it recorded.

    ``quick``: when the verdict is the outcome's likeness to GOOD's and BAD's (no ``--test``,
    no ``--timeout``), launch it with only what that needs
    (:mod:`runsnap.experiments.quicktrial`): no context collected, no snapshot written.
    The caller keeps the trial out of the trackers (``spec``'s environment made with
    :func:`untracked`, which knows the variables under test)."""
    quick = quick and judge is not None and criteria.test is None and criteria.timeout is None
    snap_path = os.path.join(folder, f"{name}.toml")
    log_path = os.path.join(folder, f"{name}.log")
    t0 = time.monotonic()
    fields: dict[str, Any] | None = None
    with open(log_path, "wb") as log:
        if quick:
            back, out = os.pipe()
            try:
                proc = _start(spec, runsnap_argv(
                    "runsnap.experiments.quicktrial",
                    ["--fd", str(out), "--kill-after", f"{criteria.kill_grace:g}", "--",
                     *spec.argv], own=own_log(log_path)), pass_fds=(out,))
            finally:
                os.close(out)
            fields_box: list[dict[str, Any]] = []
            fields_reader = threading.Thread(target=lambda: fields_box.append(_read_fields(back)),
                                             name=f"runsnap-{name}-verdict", daemon=True)
            fields_reader.start()
        else:
            proc = _start(spec, _capture_argv(spec, snap_path, label or name, criteria,
                                              own_log(log_path)))
        ready, reader = _relay(proc, log, criteria, name)
        watched = _watch(proc, criteria, ready, stop, t0)
        verdict, why = _judge_live(watched, criteria, snap_path, log_path,
                                   time.monotonic() - t0)
        _stop(proc, criteria.kill_grace, at_once=watched is _Watched.STOPPED)
        reader.join(5.0)
        if not reader.is_alive() and proc.stdout is not None:
            proc.stdout.close()
        if quick:
            fields_reader.join(5.0)
            fields = fields_box[0] if fields_box else {}
    if watched is _Watched.STOPPED:
        verdict, why = STOPPED, "interrupted"
    elif watched is _Watched.EXITED:
        if (fields == {} if quick else not os.path.exists(snap_path)):
            raise TrialError(_not_started(name, log_path, proc.returncode))
        if fields is not None and judge is not None:
            verdict, why = judge(fields)
        else:
            verdict, why = _judge_ended(criteria, judge, snap_path, log_path)
    return TrialOutcome(verdict, why, snap_path if os.path.exists(snap_path) else None,
                        log_path, time.monotonic() - t0)


class Judging(FrozenRecord):
    """How a trial is judged and stopped: the caller's criteria, the outcome judge (GOOD's
    and BAD's outcomes; None with ``--test``), and the event that stops it."""

    criteria: Criteria
    judge: OutcomeJudge | None
    stop: threading.Event


def run_judged(spec: LaunchSpec, *, name: str, folder: str, judging: Judging,
               label: str = "", quick: bool = False, caches: Collection[ResultCache] = ()
               ) -> list[TrialOutcome]:
    """:func:`run_trial`, and once more (``NAME-again``) when it was judged by its outcome and
    ended like neither GOOD nor BAD: a launch that fails at random (a rank that aborts as it
    exits, "terminate called without an active exception", after printing BAD's loss) says
    nothing of the changes it applied, and read as "not bad" it leads the search astray. The
    outcomes, one a launch; the last one's verdict stands (a second "unclear" too). A
    ``--test`` exiting 125 (cannot tell) is never launched again. ``caches``: the on-disk
    result caches the runs used; each launch gets empty ones of its own
    (:mod:`runsnap.experiments.caches`)."""
    criteria, judge = judging.criteria, judging.judge

    def one(trial: str) -> TrialOutcome:
        own = spec.replace(env=fresh_caches(spec.env, caches, folder, trial)) if caches else spec
        return run_trial(own, name=trial, folder=folder, criteria=criteria, judge=judge,
                         stop=judging.stop, label=label or trial, quick=quick)

    first = one(name)
    if first.verdict != UNCLEAR or judge is None or criteria.test or criteria.timeout is not None:
        return [first]
    return [first, one(f"{name}-again")]


#: The variables :func:`untracked` sets, grouped by tracker: a group is left to the trial's
#: own values when any variable of it is a difference in play.
TRACKER_VARIABLES = {"MLflow": ("MLFLOW_TRACKING_URI", "MLFLOW_ALLOW_FILE_STORE"),
                     "W&B": ("WANDB_MODE",)}


def untracked(folder: str, keep: Collection[str] = ()) -> dict[str, str]:
    """The variables every trial's program gets so that its own tracker calls leave no run in
    the team's tracker, whatever the snapshots' ``--track`` was: MLflow logs into a file store
    in the trials' folder (``MLFLOW_ALLOW_FILE_STORE``: MLflow 3 refuses one otherwise), W&B
    is disabled (``wandb.init`` gives a run that logs nowhere). The trial's own capture is
    never tracked (``--track none``).

    ``keep``: the variables that are themselves differences bisected or proven. Masking one
    would hide the very change under test, so its tracker's variables keep the values the
    trial applies (:func:`tracker_notes` says so before the trials run).

    >>> untracked("/w/bisect-1")["MLFLOW_TRACKING_URI"]
    'file:///w/bisect-1/mlruns'
    >>> sorted(untracked("/w/bisect-1", keep={"MLFLOW_TRACKING_URI"}))
    ['WANDB_MODE']
    """
    out = {"MLFLOW_TRACKING_URI": "file://" + os.path.join(os.path.abspath(folder), "mlruns"),
           "MLFLOW_ALLOW_FILE_STORE": "true", "WANDB_MODE": "disabled"}
    for group in TRACKER_VARIABLES.values():
        if any(name in keep for name in group):
            for name in group:
                out.pop(name)
    return out


def env_keys(changes: Collection[Any]) -> frozenset[str]:
    """The variables ``changes`` (records with a locator ``path``) change."""
    return frozenset(str(c.path[1]) for c in changes if c.path[:1] == ("env",) and len(c.path) > 1)


def tracker_notes(keep: Collection[str]) -> list[str]:
    """What trials cannot promise when a tracker's variable is a difference in play.

    >>> tracker_notes({"WANDB_MODE", "PATH"})
    ['WANDB_MODE is a difference under test: trials apply its value, so a trial may log a run to W&B']
    """
    out = []
    for tracker, group in TRACKER_VARIABLES.items():
        named = [name for name in group if name in keep]
        if named:
            out.append(f"{' and '.join(named)} {'is' if len(named) == 1 else 'are'} a difference "
                       f"under test: trials apply its value, so a trial may log a run to {tracker}")
    return out


def _read_fields(fd: int) -> dict[str, Any]:
    """The verdict fields a quick trial wrote (empty when it wrote none: unclear)."""
    chunks = []
    try:
        while True:
            got = os.read(fd, 65536)
            if not got:
                break
            chunks.append(got)
    finally:
        os.close(fd)
    try:
        fields = json.loads(b"".join(chunks) or b"{}")
    except ValueError:
        return {}
    return fields if isinstance(fields, dict) else {}


def _not_started(name: str, log_path: str, status: int | None) -> str:
    """Why a trial's runsnap gave no verdict: the last line it wrote of its own."""
    try:
        with open(own_log(log_path), encoding="utf-8", errors="replace") as fh:
            lines = [ln.strip() for ln in fh if ln.strip()]
    except OSError:
        lines = []
    said = lines[-1] if lines else f"it exited {status} and said nothing"
    return (f"{name}: runsnap could not run the trial ({said}); its own lines are in "
            f"{own_log(log_path)}")


def _capture_argv(spec: LaunchSpec, snap_path: str, label: str, criteria: Criteria,
                  own: str) -> list[str]:
    """``runsnap capture`` of the trial's launch, isolated from the trial's environment."""
    args = ["capture", "-o", snap_path, "--label", label, "--kill-after",
            f"{criteria.kill_grace:g}", "--track", "none"]
    if spec.python:
        args += ["--python", spec.python]
    return runsnap_argv("runsnap", [*args, "--", *spec.argv], own=own)


def _start(spec: LaunchSpec, cmd: list[str], pass_fds: tuple[int, ...] = ()
           ) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(cmd, env=dict(spec.env), cwd=spec.cwd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                pass_fds=pass_fds, start_new_session=True)
    except OSError as exc:
        raise UsageError(f"cannot start a trial in {spec.cwd}: {exc.strerror or exc}") from None


def _relay(proc: subprocess.Popen[bytes], log: BinaryIO, criteria: Criteria, name: str
           ) -> tuple[threading.Event, threading.Thread]:
    """Copy the trial's output into its log in a thread; the event is set when a line matches
    ``--ready-line``."""
    ready = threading.Event()
    rx = re.compile(criteria.ready_line) if criteria.ready_line else None
    stdout = proc.stdout
    assert stdout is not None

    def read() -> None:
        for line in iter(stdout.readline, b""):
            log.write(line)
            log.flush()
            if rx is not None and rx.search(line.decode("utf-8", "replace")):
                ready.set()

    reader = threading.Thread(target=read, name=f"runsnap-{name}", daemon=True)
    reader.start()
    return ready, reader


def _watch(proc: subprocess.Popen[bytes], criteria: Criteria, ready: threading.Event,
           stop: threading.Event, t0: float) -> _Watched:
    """Poll the trial until it exits, is interrupted, is ready or reaches ``--timeout``
    (``--ready-url`` asked every 0.25 s)."""
    next_url = 0.0
    while not _ended(proc):
        if stop.is_set():
            return _Watched.STOPPED
        elapsed = time.monotonic() - t0
        if criteria.ready_url and elapsed >= next_url:
            next_url = elapsed + 0.25
            if _url_ready(criteria.ready_url):
                ready.set()
        if criteria.timeout is not None:
            if ready.is_set() and not _ended(proc):
                return _Watched.READY
            if elapsed >= criteria.timeout:
                return _Watched.RUNNING
        time.sleep(0.05)
    return _Watched.EXITED


def _judge_live(watched: _Watched, criteria: Criteria, snap_path: str, log_path: str,
                waited: float) -> tuple[Verdict, str]:
    """The verdict on a launch still running (ready, or at ``--timeout``): ``--test``, else
    ready is good, not ready in time is bad, still running is good."""
    if watched not in (_Watched.READY, _Watched.RUNNING):
        return UNCLEAR, ""
    if criteria.test:
        return _run_test(criteria, snap_path, log_path, None)
    if watched is _Watched.READY:
        return GOOD, f"ready after {waited:.1f}s"
    if criteria.ready_line or criteria.ready_url:
        return BAD, f"still not ready after {criteria.timeout:g}s"
    return GOOD, f"still running after {criteria.timeout:g}s"


def _judge_ended(criteria: Criteria, judge: OutcomeJudge | None, snap_path: str,
                 log_path: str) -> tuple[Verdict, str]:
    """The verdict on a launch that ended by itself, from its recorded outcome: bad when it
    should have kept running, else ``--test``, else likeness to GOOD's and BAD's outcomes."""

    try:
        outcome = load(snap_path).records.outcome
    except SnapshotError:
        outcome = as_outcome({})
    if criteria.timeout is not None:
        limit = "before it was ready" if criteria.ready_line or criteria.ready_url else \
            f"within {criteria.timeout:g}s"
        return BAD, f"{describe(outcome)}, {limit}"
    if criteria.test:
        return _run_test(criteria, snap_path, log_path, outcome.exit_status)
    if judge is not None:
        return judge(outcome)
    return UNCLEAR, ""
