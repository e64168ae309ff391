"""``pytest --runsnap``: one snapshot of the session, written when it starts and again, with
``[tests]``, ``[outcome]`` and ``[runtime]``, when it ends.

The context is what ``runsnap capture -- <this pytest command>`` records: the same collectors
over the same command line, environment and working directory. So that the diff has the same
evidence as for a launch (which variables the tests read and where, which packages they
imported), a session started from the command line is started once more, at once, under
runsnap's tracing hook (the exec happens before any test is collected; pytest-xdist's workers
inherit the hook). A session started from Python (``pytest.main``) is not traced: its
``[runtime]`` says so.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import pytest

from runsnap.base.timestamps import utc_timestamp
from runsnap.capturing.collect import capture_context, capture_redactor, with_section
from runsnap.capturing.options import CaptureOptions
from runsnap.capturing.output import default_output, ensure_snapshot_dir
from runsnap.launch.outcome import cut
from runsnap.pytestplugin import OPTION
from runsnap.pytestplugin.cases import Cases, traceback_of
from runsnap.redact import load_key
from runsnap.snapshot import load
from runsnap.snapshot.store import DEFAULT_DIR, default_dir
from runsnap.tracing import Trace, not_traced, prepare

__all__ = ["MARKER", "Recorder", "start"]

#: Set for the session started again under the tracing hook: the trace's folder and interposer.
MARKER = "RUNSNAP_PYTEST_TRACE"

#: Tracebacks of failing tests kept in ``[outcome]`` besides the first one's.
MORE_TRACEBACKS = 20


def start(config: pytest.Config, value: str) -> None:
    """Begin recording the session ``config`` runs (``value``: ``--runsnap``'s FILE or ``""``)."""
    if value and not value.endswith(".toml"):
        raise pytest.UsageError(
            f"--runsnap={value}: FILE is a .toml (to name tests after the option, give FILE "
            "with = or put the tests first)")
    given = _unseen(MARKER)
    if given is not None:  # started again under the hook: the context was captured before
        os.environ._data.pop(os.environ.encodekey(MARKER), None)  # type: ignore[attr-defined]
        os.unsetenv(MARKER)  # out of the tests' sight (the hook wraps os.environ's methods only)
        recorder = Recorder.traced(config, given)
    else:
        recorder = Recorder.captured(config, value)
        why = _exec_traced(config, recorder)  # returns only when the session is not traced
        recorder.why = why
    config.pluginmanager.register(recorder, "runsnap-recorder")


def _unseen(name: str) -> str | None:
    """Variable ``name`` read without the tracing hook seeing it (the plugin's own reads are
    not the tests')."""
    value = os.environ._data.get(os.environ.encodekey(name))  # type: ignore[attr-defined]
    return None if value is None else os.environ.decodevalue(value)


def _exec_traced(config: pytest.Config, recorder: Recorder) -> str:
    """Replace this process with the same command line under runsnap's tracing hook; returns
    (why the session is not traced) only when it did not."""

    if list(config.invocation_params.args) != sys.argv[1:] or not getattr(sys, "orig_argv", None):
        return "pytest was started from Python (pytest.main), not from a command line"
    if _enclosing_trace():
        return ("traced by the enclosing `runsnap capture` (its snapshot's [runtime] has the "
                "session's reads)")
    env = dict(os.environ)
    trace, what = prepare([sys.executable], env, os.getcwd())
    if trace is None:
        return what
    env[MARKER] = json.dumps({"folder": trace.folder, "lib": trace.native_lib,
                              "note": trace.native_note, "path": recorder.path,
                              "started": recorder.started})
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is not None:  # pytest holds fds 1 and 2 by now: give the new process the real ones
        capture.stop_global_capturing()
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], trace.launch_env(env))
    except OSError as exc:
        if capture is not None:
            capture.start_global_capturing()
        return f"pytest could not be started again under the tracing hook: {exc.strerror}"


def _enclosing_trace() -> bool:
    """Whether this process was started under a ``runsnap capture``'s tracing hook, which
    takes its variables out of ``os.environ``: the environment the process began with
    (``/proc/self/environ``) still holds them. Started again under a hook of its own, the
    session would take its reads away from the enclosing capture's trace."""
    try:
        with open("/proc/self/environ", "rb") as fh:
            return b"\0RUNSNAP_TRACE_DIR=" in b"\0" + fh.read()
    except OSError:
        return False


def command_line(args: Sequence[str]) -> list[str]:
    """The session's command line as the snapshot records it, from the interpreter's
    arguments ``args`` (``sys.orig_argv[1:]``): this interpreter, then ``args`` without
    ``--runsnap[=FILE]`` (runsnap's own, as ``capture -o`` is).

    >>> command_line(["-m", "pytest", "--runsnap=ci.toml", "-x"])[1:]
    ['-m', 'pytest', '-x']
    """
    kept = [a for a in args if a != OPTION and not a.startswith(f"{OPTION}=")]
    return [sys.executable, *kept]


def _environment() -> dict[str, str]:
    """The environment as the tests see it, read without the tracing hook seeing it."""
    data = os.environ._data  # type: ignore[attr-defined]
    return {os.environ.decodekey(k): os.environ.decodevalue(v) for k, v in data.items()}


class Recorder:
    """The plugin object of a recorded session: the snapshot, the tests' outcomes, the end."""

    def __init__(self, config: pytest.Config, snap: Any, path: str, started: float,
                 trace: Any = None, why: str = "") -> None:
        self.config, self.snap, self.path, self.started = config, snap, path, started
        self.trace, self.why = trace, why
        self.cases = Cases()

    @classmethod
    def captured(cls, config: pytest.Config, value: str) -> Recorder:
        """The session's context captured now, as ``runsnap capture`` would, and saved."""

        started = time.time()
        args = list(getattr(sys, "orig_argv", sys.argv))[1:]
        snap = capture_context(command_line(args), CaptureOptions(), env=dict(os.environ),
                               cwd=os.getcwd())
        path = _target(snap, value)
        return cls(config, snap.save(path), path, started)  # a killed session leaves it

    @classmethod
    def traced(cls, config: pytest.Config, given: str) -> Recorder:
        """The session started again under the hook: the context its first process saved."""

        try:
            info = json.loads(given)
            trace = Trace(info["folder"], info["lib"], info["note"])
            path, started = str(info["path"]), float(info["started"])
        except (ValueError, TypeError, KeyError):
            raise pytest.UsageError(f"{MARKER} is set, but not by runsnap") from None
        snap = load(path)
        trace.warm(snap.get("packages"))
        return cls(config, snap, path, started, trace)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Each phase of each test, from this process or a pytest-xdist worker."""
        self.cases.add(report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """``[tests]``, ``[outcome]`` and ``[runtime]`` added, and the snapshot written again."""
        ended = time.time()
        env = _environment()
        # the trace first: what runsnap reads from here on is not the tests'
        runtime = (self.trace.finish(self.snap.get("packages"), env)
                   if self.trace is not None else not_traced(self.why))

        key = load_key()
        redactor = capture_redactor(key, self.config.invocation_params.dir.as_posix())
        # the session's secrets known first, so that a test that prints one (an assertion
        # quoting a token) has it hidden in [tests] and [outcome] as in [env]
        redactor.find({"env": {"errors": [], "vars": env}})
        tests = self.cases.section(self._runner())
        outcome = self._outcome(int(exitstatus), ended)
        snap = with_section(self.snap, "tests", tests, key, redactor)
        snap = with_section(snap, "outcome", outcome, key, redactor, after=cut)
        self.snap = with_section(snap, "runtime", runtime, key, redactor).save(self.path)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_line(f"runsnap: snapshot {self.path}")

    def _runner(self) -> str:
        runner = f"pytest {pytest.__version__}"
        workers = getattr(self.config.option, "numprocesses", None)
        if workers and self.config.pluginmanager.hasplugin("dsession"):
            runner += f", xdist ({workers} workers)"
        return runner

    def _outcome(self, status: int, ended: float) -> dict[str, Any]:

        outcome: dict[str, Any] = {
            "errors": [], "status": "exited", "exit_status": status,
            "started_at": utc_timestamp(self.started), "ended_at": utc_timestamp(ended),
            "duration_s": round(ended - self.started, 3), "pid": os.getpid()}
        root = str(self.config.rootpath)
        tracebacks = [(nodeid, traceback_of(report, root))
                      for nodeid, report in self.cases.failures[:MORE_TRACEBACKS + 1]]
        if tracebacks:
            nodeid, first = tracebacks[0]
            case = self.cases.cases[nodeid]
            outcome["first_error"] = f"{nodeid} {case['outcome']}: {case.get('error', '')}"
            outcome["first_error_stream"] = "pytest"
            if first:
                outcome["traceback"] = first
            more = [tb for _n, tb in tracebacks[1:] if tb]
            if more:
                outcome["earlier_tracebacks"] = more
        return outcome


def _target(snap: Any, value: str) -> str:
    """Where the snapshot goes: FILE, else ``.runsnap/<time>-pytest.toml`` (``RUNSNAP_DIR``)."""

    if value:
        return os.path.abspath(value)
    folder = os.path.abspath(default_dir())
    ensure_snapshot_dir(folder, ours=default_dir() == DEFAULT_DIR)
    return os.path.join(folder, os.path.basename(default_output(snap)))
