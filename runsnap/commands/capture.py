"""What ``runsnap capture`` does once its options are known (both faces call it), and the
request it is given; free of click."""

from __future__ import annotations

import os
import sys

from runsnap.base.paths import current_dir, shown
from runsnap.base.records import FrozenRecord
from runsnap.base.terminal import say
from runsnap.capturing import (
    capture_context,
    capture_process,
    resolve_output,
    save_first,
    with_meta,
)
from runsnap.capturing.options import CaptureOptions
from runsnap.capturing.prelaunch import prelaunch_guard
from runsnap.capturing.settings import load_settings, track_settings
from runsnap.errors import TIMED_OUT, CaptureError, Signalled, UsageError
from runsnap.redact import Redactor, load_key
from runsnap.snapshot import dumps

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from runsnap.snapshot import Snapshot
    from runsnap.track import Session

__all__ = ["CaptureRequest", "run_capture"]



class CaptureRequest(FrozenRecord):
    """A ``runsnap capture`` command line as both faces read it from
    :data:`~runsnap.capturing.options.CAPTURE_OPTIONS`: the capture's :class:`CaptureOptions`
    and what only the command line decides (run or not, ``--pid``, the tracker)."""

    options: CaptureOptions
    """What the capture records and how it runs the command."""
    command: tuple[str, ...] = ()
    """The command after ``--`` (empty: the current context)."""
    no_run: bool = False
    """``--no-run``: record the context only."""
    pid: int | None = None
    """``--pid``: a process already running instead of a command."""
    track: str | None = None
    """``--track``: the experiment tracker (None: the project's setting)."""
    track_experiment: str | None = None
    """``--track-experiment``."""
    track_timeout: float | None = None
    """``--track-timeout``."""
    track_html: bool = False
    """``--track-html``: also keep the diff page with the run (a failed run: always)."""

    #: The options of ``CAPTURE_OPTIONS`` that are the request's own; every other one is a
    #: field of :class:`CaptureOptions` of the same name, but ``--no-trace`` (``trace``).
    OWN = ("command", "no_run", "pid", "track", "track_experiment", "track_timeout",
           "track_html")

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> CaptureRequest:
        """The request from the values of :data:`CAPTURE_OPTIONS` (keyed by ``dest``) and
        ``command``, as :func:`parse_capture` and click give them.

        >>> r = CaptureRequest.from_params({"label": "a", "no_trace": True, "timeout": 0,
        ...                                  "command": ("true",)})
        >>> r.options.label, r.options.trace, r.options.timeout, r.command
        ('a', False, None, ('true',))
        """
        given = dict(params)
        own = {name: given.pop(name) for name in cls.OWN if name in given}
        given["trace"] = not given.pop("no_trace", False)
        given["timeout"] = given.get("timeout") or None  # --timeout 0: none
        return cls(CaptureOptions.of(**given), **own)


def run_capture(request: CaptureRequest) -> int:
    """What ``runsnap capture`` does once its options are known; returns the exit status.

    ``request.options.started``: work begun for this capture before the rest of runsnap was
    imported (the fast path's git head start), handed over to the capture."""
    options, command, pid = request.options, request.command, request.pid
    output, out_dir = options.output, options.out_dir
    session = _tracking(request.track, request.track_experiment, request.track_timeout, pid,
                        options.exec_)
    if pid is not None:
        if command:
            raise UsageError("--pid takes no COMMAND: give one or the other")
        if options.exec_ or options.log or request.no_run or options.timeout:
            raise UsageError("--exec, --log, --no-run and --timeout need a COMMAND, not --pid")

        snap = capture_process(pid, options.replace(output=None))
        _emit(snap, output, out_dir)
        return 0
    if not command or request.no_run:
        if options.exec_ or options.log or options.timeout:
            raise UsageError("--exec, --log and --timeout need a COMMAND to run (and no --no-run)")

        snap = capture_context(command, options.replace(output=None))
        if command:  # --no-run -- COMMAND: the launch it would be, checked as before a launch

            prelaunch_guard(snap, options.strict or
                            load_settings(snap.records.command.cwd).strict)
        if session is not None:
            return _tracked_context(session, snap, output, out_dir)
        _emit(snap, output, out_dir)
        return 0
    if options.exec_ and options.timeout:
        raise UsageError("--exec leaves nobody to stop the command: --timeout needs runsnap to "
                         "stay (drop --exec)")


    def announce(snap: Snapshot) -> None:
        where = shown(snap.path_text) if output != "-" else \
            "to standard output when the command ends"
        say(f"runsnap: snapshot {where}\n")

    from runsnap.capturing.wrapped import run_with  # the launch machinery: only to launch

    record = run_with(command, options, on_saved=announce,
                      companion=None if session is None else _Told(session))
    if record.result.error:
        say(f"runsnap: {record.result.error}\n")
    for problem in record.errors:
        say(f"runsnap: {problem}\n")
    if session is not None:
        _log_to_tracker(session, record.snapshot, record.snapshot.path_text)
        # deferred: the diff and the page renderer, only a tracked run needs them
        from runsnap.commands.trackpage import keep_diff_page

        _tell(keep_diff_page(session, record.snapshot, request.track_html))
    if record.result.timed_out:
        return TIMED_OUT
    if record.result.signal_number is not None:  # the console script then dies by it too
        return Signalled(record.exit_status, record.result.signal_number)
    return int(record.exit_status)


class _Told:
    """A tracked run as :func:`runsnap.capturing.run` takes it, its problems told on stderr
    (one line each) before the command starts."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def launch_env(self) -> dict[str, str]:
        env = self.session.launch_env()
        _tell(self.session.new_errors())
        return env

    def meta(self) -> dict[str, Any]:
        return {"track": self.session.meta()}


def _tell(problems: list[str]) -> None:
    for problem in problems:
        say(f"runsnap: {problem}\n")


def _tracking(track: str | None, experiment: str | None, timeout: float | None,
              pid: int | None, exec_: bool) -> Session | None:
    """The tracked run of this capture (``--track`` or ``[tool.runsnap.capture] track``),
    started now so that the tracker answers while the collectors work; None when untracked."""

    where = current_dir()
    settings: dict[str, Any] = {}
    if track is None or experiment is None or timeout is None:
        settings = track_settings(where)
    name = (track if track is not None else settings.get("track", "")).strip().lower()
    if name in ("", "none", "no", "off"):
        return None
    # deferred: runsnap.track, ~12 ms measured under load; only _tracking() needs it
    from runsnap.track import DEFAULT_TIMEOUT, TRACKERS, Session

    if name not in TRACKERS:
        raise UsageError(f"--track {name}: not a tracker runsnap knows ({', '.join(TRACKERS)}, "
                         f"none)")
    if pid is not None or exec_:
        raise UsageError("--track logs the snapshot when the command ends: it needs a COMMAND "
                         "run by runsnap (not --pid or --exec; from inside a program: "
                         "runsnap.track.log_snapshot())")
    return Session.start(
        name, os.environ, where,
        timeout=timeout if timeout is not None else settings.get("track_timeout", DEFAULT_TIMEOUT),
        experiment=experiment if experiment is not None else settings.get("track_experiment", ""))


def _log_to_tracker(session: Session, snap: Snapshot, path: str | None) -> None:
    """Log the final snapshot to the tracked run; a problem is told and, when the snapshot is
    a file, added to its ``[meta.track] errors`` (as is the run's name when it became known only
    now: an online W&B run's ENTITY/PROJECT)."""
    before = session.meta()
    problems = session.finish(snap, path)
    _tell(problems)
    if session.meta() != before and path is not None:  # a problem, or the run's final name

        try:
            with_meta(snap, {"track": session.meta()}, Redactor(load_key())).save(path)
        except CaptureError as exc:
            _tell([f"the tracker's problem was not written into {path}: {exc}"])


def _tracked_context(session: Session, snap: Snapshot, output: str | None,
                     out_dir: str | None) -> int:
    """``--no-run`` (or no command) with ``--track``: the context goes to a run of its own."""
    session.launch_env()  # the run is created (or given up on) before anything is written
    _tell(session.new_errors())
    snap = with_meta(snap, {"track": session.meta()}, Redactor(load_key()))
    snap = _emit(snap, output, out_dir)
    _log_to_tracker(session, snap, snap.path_text)
    return 0


def _emit(snap: Snapshot, output: str | None, out_dir: str | None) -> Snapshot:
    """Save ``snap`` and print its path, or with ``-o -`` print the snapshot itself; the
    snapshot as saved (with its path)."""
    if output == "-":
        sys.stdout.write(dumps(snap))
        sys.stdout.flush()
        return snap

    saved = save_first(snap, resolve_output(snap, output, out_dir))
    print(shown(saved.path_text), flush=True)
    return saved
