"""Helpers for the launch tests: real runsnap processes, handshake files, child scripts."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import RUNSNAP


def runsnap_argv(*args: str) -> list[str]:
    """``python -m runsnap capture ARGS`` with this interpreter."""
    return [*RUNSNAP, "capture", *args]


#: Every runsnap :func:`start` started; the launch tests' conftest kills what is left running
#: when a test ends (a failed test would otherwise leave a capture waiting for its child).
STARTED: list[subprocess.Popen[bytes]] = []


def start(*args: str, **kwargs: object) -> subprocess.Popen[bytes]:
    """Start ``runsnap capture ARGS`` (stdout/stderr piped unless given)."""
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    proc = subprocess.Popen(runsnap_argv(*args), **kwargs)  # type: ignore[call-overload]
    STARTED.append(proc)
    return proc


def reap_started() -> None:
    """SIGKILL every runsnap :func:`start` started that still runs (the kernel then ends its
    child: runsnap sets ``PR_SET_PDEATHSIG``), and close their pipes."""
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def wait_for(path: Path, text: str = "", timeout: float = 30.0) -> str:
    """Wait until ``path`` exists and contains ``text``; return its content."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            content = path.read_text()
            if text in content:
                return content
        time.sleep(0.02)
    raise AssertionError(f"{path} never contained {text!r}: "
                         f"{path.read_text() if path.exists() else '(missing)'}")


def py(code: str) -> list[str]:
    """A child command: this interpreter running ``code``."""
    return [sys.executable, "-c", code]


# A child that installs handlers for the forwarded signals, says so in READY, records each
# signal it gets in LOG, and exits with 40+signum on the stop signal named in argv[1]
# ("none": never), or with 7 once the file GO exists.
SIGNAL_CHILD = r"""
import os, signal, sys, time
log, ready, go, stop = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
def handler(sig, frame):
    with open(log, "a") as fh:
        fh.write(signal.Signals(sig).name + "\n")
    if signal.Signals(sig).name == stop:
        os._exit(40 + sig)
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT,
          signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(s, handler)
print("child ready", flush=True)  # before the handshake: a test may kill it right after
with open(ready + ".tmp", "w") as fh:  # whole when it appears: a test reads the pid in it
    fh.write(str(os.getpid()))
os.replace(ready + ".tmp", ready)
while not os.path.exists(go):
    time.sleep(0.02)
sys.exit(7)
"""


def signal_child(tmp: Path, stop: str) -> list[str]:
    """argv of :data:`SIGNAL_CHILD` with its files in ``tmp``."""
    return [sys.executable, "-c", SIGNAL_CHILD, str(tmp / "log"), str(tmp / "ready"),
            str(tmp / "go"), stop]
