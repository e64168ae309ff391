"""Signals and streams as the same command would see them without runsnap (issue 37, class 1).

Each case runs a real command twice, bare and under ``runsnap capture``, and compares what the
shell, the child and the pipe's reader saw: Ctrl-C and Ctrl-\\ typed into a real bash in a pty
(a loop stops, bash says ``Quit``), a signal sent to the whole process group (``kill -- -PGID``,
``timeout(1)``) that the child gets once, and a background grandchild that keeps writing into a
pipe after the child ended.
"""

from __future__ import annotations

import os
import select
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import RUNSNAP
from tests.launch.launch_helpers import wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux signals")


def _under(runsnap: bool, snap: Path) -> str:
    """The words put before the command: nothing bare, ``runsnap capture -o SNAP --``."""
    return shlex.join([*RUNSNAP, "capture", "-o", str(snap), "--"]) if runsnap else ""


def _in_pty(script: str, ready: Path, key: bytes, cwd: Path) -> tuple[int, str]:
    """Run ``bash -c SCRIPT`` on a new pty as its controlling terminal, type ``key`` once
    ``ready`` exists, and return bash's return code and all it wrote."""
    import fcntl
    import termios

    master, slave = os.openpty()

    def take_terminal() -> None:  # setsid already done by start_new_session
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(["bash", "-c", script], stdin=slave, stdout=slave, stderr=slave,
                            cwd=cwd, start_new_session=True, preexec_fn=take_terminal)
    os.close(slave)
    out = b""
    typed = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not typed and ready.exists():
            time.sleep(0.3)  # the command under runsnap is waiting in its sleep by now
            os.write(master, key)
            typed = True
        if select.select([master], [], [], 0.05)[0]:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer of the pty is gone
                break
            if not data:
                break
            out += data
        elif proc.poll() is not None and typed:
            break
    os.close(master)
    return proc.wait(timeout=30), out.decode(errors="replace")


@pytest.mark.parametrize(("key", "name"), [(b"\x03", "SIGINT"), (b"\x1c", "SIGQUIT")])
def test_a_stop_key_in_a_loop_ends_the_loop_as_bare(key: bytes, name: str, tmp_path: Path) -> None:
    seen = {}
    for runsnap in (False, True):
        ready = tmp_path / f"ready-{runsnap}"
        command = (f"{_under(runsnap, tmp_path / 's.toml')} "
                   f"sh -c '[ -e {ready} ] && exit 0; touch {ready}; exec sleep 20'")
        script = f"for i in 1 2 3; do {command}; echo i=$i; done; echo after-loop"
        rc, out = _in_pty(script, ready, key, tmp_path)
        seen[runsnap] = (rc, "i=1" in out, "after-loop" in out, "Quit" in out)
    assert seen[True] == seen[False]
    if name == "SIGINT":  # bash stops the loop and dies by SIGINT itself
        assert seen[False][:3] == (-signal.SIGINT, False, False)
        outcome = _outcome(tmp_path / "s.toml")
        assert (outcome["status"], outcome["signal"]) == ("signalled", name)
    else:  # bash goes on with the loop, and says "Quit" of the command
        assert seen[False] == (0, True, True, True)


def _outcome(snap: Path) -> dict:
    from runsnap.snapshot import load

    return load(snap)["outcome"]


#: A child that counts the SIGTERMs it gets (one line each), says it is ready, and ends with
#: status 3 a second after the first (a server shutting down cleanly).
COUNTING = r"""
import os, signal, sys, time
log, ready = sys.argv[1], sys.argv[2]
def stop(sig, frame):
    with open(log, "a") as fh:
        fh.write("TERM\n")
signal.signal(signal.SIGTERM, stop)
with open(ready, "w") as fh:
    fh.write(str(os.getpid()))
while not os.path.exists(log):
    time.sleep(0.01)
time.sleep(1.0)  # shutting down; a second SIGTERM now is written down too
sys.exit(3)
"""


def _counting(tmp_path: Path, tag: str) -> tuple[list[str], Path, Path]:
    log, ready = tmp_path / f"log-{tag}", tmp_path / f"ready-{tag}"
    return [sys.executable, "-c", COUNTING, str(log), str(ready)], log, ready


@pytest.mark.parametrize("runsnap", [False, True])
def test_a_signal_to_the_whole_group_reaches_the_child_once(runsnap: bool,
                                                           tmp_path: Path) -> None:
    child, log, ready = _counting(tmp_path, "group")
    argv = [*RUNSNAP, "capture", "-o", str(tmp_path / "s.toml"), "--", *child] if runsnap \
        else child
    proc = subprocess.Popen(argv, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    wait_for(ready)
    time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGTERM)  # kill -- -PGID
    out, err = proc.communicate(timeout=30)
    assert (proc.returncode, log.read_text()) == (3, "TERM\n"), err
    if runsnap:
        assert _outcome(tmp_path / "s.toml")["exit_status"] == 3


def test_timeout_1_stops_the_child_once_as_bare(tmp_path: Path) -> None:
    """timeout(1) signals its child, then the whole group, microseconds apart: bare, the two
    copies merge into one. On a loaded machine even bare can take two (timeout descheduled
    between its kills, the child's handler run in between: seen in CI), so each attempt runs
    bare then under runsnap, and one attempt of the three where both took one is the proof; a
    runsnap that forwards the group's signal again takes two in every attempt."""
    attempts = []
    for attempt in range(3):
        seen = []
        for runsnap in (False, True):
            child, log, ready = _counting(tmp_path, f"{attempt}-{runsnap}")
            under = [*RUNSNAP, "capture", "-o", str(tmp_path / "t.toml"), "--"] if runsnap else []
            done = subprocess.run(["timeout", "3", *under, *child], capture_output=True,
                                  timeout=60)
            seen.append((done.returncode, log.read_text()))
        attempts.append(seen)
        if seen[0] == seen[1] == (124, "TERM\n"):
            return
    pytest.fail(f"bare and under runsnap, (status, TERMs taken) in 3 attempts: {attempts}")


def test_a_group_signal_after_a_copy_to_runsnap_alone_reaches_the_child_once(
        tmp_path: Path) -> None:
    """timeout(1) descheduled between its two kills (a loaded machine): runsnap takes the copy
    sent to it alone before the group's arrives, so its own copy of the group signal is pending
    on its own; it is not judged again as a second signal to runsnap alone."""
    child, log, ready = _counting(tmp_path, "late-group")
    proc = subprocess.Popen([*RUNSNAP, "capture", "-o", str(tmp_path / "s.toml"), "--", *child],
                            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(ready)
    time.sleep(0.2)
    os.kill(proc.pid, signal.SIGTERM)  # timeout(1)'s first kill: its child, runsnap
    time.sleep(0.04)  # taken by runsnap, which now waits for the group's copy
    os.killpg(proc.pid, signal.SIGTERM)  # its second: the whole group
    out, err = proc.communicate(timeout=30)
    assert (proc.returncode, log.read_text()) == (3, "TERM\n"), err


def test_a_signal_sent_to_runsnap_alone_still_reaches_the_child(tmp_path: Path) -> None:
    child, log, ready = _counting(tmp_path, "alone")
    proc = subprocess.Popen([*RUNSNAP, "capture", "-o", str(tmp_path / "s.toml"), "--", *child],
                            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(ready)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert (proc.returncode, log.read_text()) == (3, "TERM\n")


def test_a_background_grandchild_keeps_its_output_in_a_pipe(tmp_path: Path) -> None:
    script = "(sleep 1; echo late; sleep 0.5; echo later) & echo early"
    bare = subprocess.run(["sh", "-c", script], capture_output=True, timeout=60)
    under = subprocess.run([*RUNSNAP, "capture", "-o", str(tmp_path / "s.toml"), "--",
                            "sh", "-c", script], capture_output=True, timeout=60)
    assert bare.stdout == under.stdout == b"early\nlate\nlater\n"
    assert bare.returncode == under.returncode == 0
    outcome = _outcome(tmp_path / "s.toml")
    assert outcome["stdout"]["tail"] == ["early"]


@pytest.mark.parametrize("name", ["SIGUSR1", "SIGKILL", "SIGSEGV"])
def test_a_child_killed_by_a_signal_ends_runsnap_by_it(name: str, tmp_path: Path) -> None:
    number = signal.Signals[name].value
    command = ["sh", "-c", f"ulimit -c 0; kill -{number} $$"]
    done = subprocess.run([*RUNSNAP, "capture", "-o", str(tmp_path / "s.toml"), "--", *command],
                          capture_output=True, timeout=60, cwd=tmp_path)
    bare = subprocess.run(command, capture_output=True, timeout=60, cwd=tmp_path)
    assert done.returncode == bare.returncode == -number
    assert _outcome(tmp_path / "s.toml")["exit_status"] == 128 + number
    assert not list(tmp_path.glob("core*"))  # runsnap wrote no core of its own
