"""`runsnap capture -- COMMAND` as a real process: statuses, signals, terminals, pipes, --exec."""

from __future__ import annotations

import hashlib
import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runsnap.snapshot import load
from tests.conftest import asset
from tests.launch.launch_helpers import py, runsnap_argv, signal_child, start, wait_for

FULL = ("command", "env", "packages", "git", "models", "system", "outcome")


def finish(proc: subprocess.Popen[bytes], timeout: float = 60) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.parametrize("code", [0, 1, 2, 126, 127, 128, 255])
def test_exit_status_is_the_childs_and_is_recorded(code: int, scratch: Path) -> None:
    rc, out, err = finish(start("-o", "s.toml", "--", "/bin/sh", "-c", f"echo hi; exit {code}"))
    assert rc == code
    assert out == "hi\n"
    assert err == f"runsnap: snapshot {Path('s.toml')}\n"
    outcome = load(scratch / "s.toml")["outcome"]
    assert (outcome["status"], outcome["exit_status"]) == ("exited", code)
    assert outcome["stdout"]["tail"] == ["hi"]


def test_the_snapshot_is_on_disk_before_the_child_starts(scratch: Path) -> None:
    code = ("from runsnap.snapshot import load; s = load('s.toml');"
            "print('outcome' in s.sections, s['command']['argv'][-1])")
    rc, out, _ = finish(start("-o", "s.toml", "--", sys.executable, "-c", code, "marker"))
    assert (rc, out) == (0, "False marker\n")
    assert "outcome" in load(scratch / "s.toml").sections


def test_command_not_found_is_127_with_a_snapshot(scratch: Path) -> None:
    rc, out, err = finish(start("-o", "s.toml", "--", "runsnap-no-such-command-xyz", "--x"))
    assert (rc, out) == (127, "")
    assert err.splitlines() == ["runsnap: snapshot s.toml",
                                "runsnap: runsnap-no-such-command-xyz: command not found"]
    snap = load(scratch / "s.toml")
    assert set(FULL) <= set(snap.sections)
    assert snap["outcome"]["status"] == "not_found" and snap["outcome"]["exit_status"] == 127


def test_not_executable_is_126(scratch: Path) -> None:
    (scratch / "tool.sh").write_text("#!/bin/sh\n")
    rc, _, err = finish(start("-o", "s.toml", "--", "./tool.sh"))
    assert rc == 126 and "Permission denied" in err
    assert load(scratch / "s.toml")["outcome"]["status"] == "not_executable"


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"])
def test_forwarded_signals_reach_the_childs_handlers(stop: str, scratch: Path) -> None:
    proc = start("-o", "s.toml", "--", *signal_child(scratch, stop))
    wait_for(scratch / "ready")
    sent = ["SIGUSR1", "SIGUSR2", stop] if stop == "SIGINT" else [stop]
    for name in sent:
        proc.send_signal(signal.Signals[name])
        wait_for(scratch / "log", name)
    rc, _, _ = finish(proc)
    number = signal.Signals[stop].value
    assert rc == 40 + number
    assert (scratch / "log").read_text().split() == sent
    assert load(scratch / "s.toml")["outcome"]["exit_status"] == 40 + number


@pytest.mark.slow
def test_a_child_that_ignores_sigterm_is_not_abandoned(scratch: Path) -> None:
    proc = start("-o", "s.toml", "--", *signal_child(scratch, "none"))
    wait_for(scratch / "ready")
    proc.send_signal(signal.SIGTERM)
    wait_for(scratch / "log", "SIGTERM")
    time.sleep(0.3)  # room for a wrong exit to happen
    assert proc.poll() is None
    (scratch / "go").touch()
    rc, _, _ = finish(proc)
    assert rc == 7
    assert load(scratch / "s.toml")["outcome"]["exit_status"] == 7


def test_asked_twice_runsnap_escalates_to_sigkill(scratch: Path) -> None:
    proc = start("--kill-after", "0.5", "-o", "s.toml", "--", *signal_child(scratch, "none"))
    wait_for(scratch / "ready")
    proc.send_signal(signal.SIGTERM)
    wait_for(scratch / "log", "SIGTERM")
    proc.send_signal(signal.SIGTERM)
    rc, _, err = finish(proc)
    assert rc == -signal.SIGKILL  # runsnap ends by the signal that ended the child
    assert "asked to stop again" in err and "sent SIGKILL" in err
    outcome = load(scratch / "s.toml")["outcome"]
    assert (outcome["signal"], outcome["exit_status"]) == ("SIGKILL", 137)


def test_a_child_killed_with_sigkill_leaves_a_complete_snapshot(scratch: Path) -> None:
    proc = start("-o", "s.toml", "--", *signal_child(scratch, "none"))
    child = int(wait_for(scratch / "ready"))
    os.kill(child, signal.SIGKILL)
    rc, out, _ = finish(proc)
    assert (rc, out) == (-signal.SIGKILL, "child ready\n")
    snap = load(scratch / "s.toml")
    assert set(FULL) <= set(snap.sections)
    outcome = snap["outcome"]
    assert (outcome["status"], outcome["signal"], outcome["signal_number"]) == (
        "signalled", "SIGKILL", 9)
    assert outcome["pid"] == child and outcome["stdout"]["tail"] == ["child ready"]
    assert outcome["ended_at"] >= outcome["started_at"]


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            return b"".join(chunks)
        if not data:
            return b"".join(chunks)
        chunks.append(data)


@pytest.mark.parametrize("inherit", [False, True])
def test_terminals_stay_terminals_for_the_child(inherit: bool, scratch: Path) -> None:
    master, slave = pty.openpty()
    code = ("import os, sys; print('tty', os.isatty(1), os.isatty(2), flush=True);"
            "print('\\x1b[33mWARNING\\x1b[0m colour kept', file=sys.stderr)")
    extra = ["--inherit-tty"] if inherit else []
    proc = subprocess.Popen(runsnap_argv(*extra, "-o", "s.toml", "--", *py(code)),
                            stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    output = _read_all(master)
    proc.wait(60)
    os.close(master)
    assert proc.returncode == 0
    assert b"\x1b[33mWARNING\x1b[0m colour kept" in output
    outcome = load(scratch / "s.toml")["outcome"]
    if inherit:
        # The child writes to the terminal itself: its output is exactly in its own order.
        assert b"tty True True" in output
        assert outcome["stdout"]["mode"] == "inherit" and outcome["stdout"]["captured"] is False
        assert outcome["warnings"] == []
    else:
        # Two relays share one terminal: chunks of the streams may interleave, so the
        # per-stream record is the evidence.
        assert outcome["stdout"]["mode"] == outcome["stderr"]["mode"] == "pty"
        assert outcome["stdout"]["tail"] == ["tty True True"]
        assert outcome["warnings"] == ["WARNING colour kept"]


def test_ctrl_c_at_the_terminal_reaches_the_child_once(scratch: Path) -> None:
    import fcntl
    import termios

    master, slave = pty.openpty()

    def controlling_tty() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    child = signal_child(scratch, "none")
    proc = subprocess.Popen(runsnap_argv("-o", "s.toml", "--", *child), stdin=slave,
                            stdout=slave, stderr=slave, start_new_session=True,
                            preexec_fn=controlling_tty)
    os.close(slave)
    wait_for(scratch / "ready")
    os.write(master, b"\x03")  # Ctrl-C: SIGINT to the whole foreground process group
    wait_for(scratch / "log", "SIGINT")
    time.sleep(0.3)  # room for a second, forwarded copy to arrive (it must not)
    (scratch / "go").touch()
    _read_all(master)
    proc.wait(60)
    os.close(master)
    assert proc.returncode == 7
    assert (scratch / "log").read_text().split() == ["SIGINT"]


def test_a_closed_stdout_reaches_the_child_as_without_runsnap(scratch: Path) -> None:
    code = ("import os, time\nprint('first', flush=True)\n"
            "while not os.path.exists('closed'): time.sleep(0.02)\n"
            "for i in range(20000): print(f'more {i}', flush=True)\n"
            "open('done', 'w').close()")
    proc = start("-o", "s.toml", "--", *py(code))
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"first\n"
    proc.stdout.close()
    (scratch / "closed").touch()
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    proc.stderr.close()
    proc.wait(60)
    # Python ignores SIGPIPE: its next write raises, as in `python ... | head -1`; it exits 1,
    # or 120 when its final flush of stdout fails too (CPython's own rule, on timing alone)
    assert proc.returncode in (1, 120), err
    assert not (scratch / "done").exists()
    outcome = load(scratch / "s.toml")["outcome"]
    assert outcome["first_error"].startswith("BrokenPipeError")
    assert any("stdout was closed" in e for e in outcome["errors"])


def test_log_option_tees_the_output_and_records_its_sha256(scratch: Path) -> None:
    # One write per line: chunks of the two streams interleave in the log as they arrive.
    code = "import sys; sys.stdout.write('out line\\n'); sys.stderr.write('err line\\n')"
    rc, out, _ = finish(start("--log", "run.log", "-o", "s.toml", "--", *py(code)))
    assert (rc, out) == (0, "out line\n")
    data = (scratch / "run.log").read_bytes()
    assert sorted(data.splitlines()) == [b"err line", b"out line"]
    snap = load(scratch / "s.toml")
    assert snap["outcome"]["log"] == {"path": str(scratch / "run.log"),
                                      "sha256": hashlib.sha256(data).hexdigest(),
                                      "bytes": len(data)}
    assert snap.meta["log"] == str(scratch / "run.log")


def test_exec_replaces_runsnap_with_the_child(scratch: Path) -> None:
    proc = start("--exec", "-o", "s.toml", "--", *py("import os; print(os.getpid())"))
    rc, out, err = finish(proc)
    assert (rc, int(out)) == (0, proc.pid)
    assert err == "runsnap: snapshot s.toml\n"
    snap = load(scratch / "s.toml")
    assert "outcome" not in snap.sections and snap.meta["launch"] == "exec"


def test_exec_of_a_missing_command_records_the_outcome(scratch: Path) -> None:
    rc, _, _ = finish(start("--exec", "-o", "s.toml", "--", "runsnap-no-such-command-xyz"))
    assert rc == 127
    assert load(scratch / "s.toml")["outcome"]["status"] == "not_found"


def test_secrets_in_the_output_are_redacted(scratch: Path) -> None:
    token = "hf_" + "a1B2" * 9
    rc, out, _ = finish(start("-o", "s.toml", "--", *py(f"print('token {token}')")))
    assert rc == 0 and token in out  # the child's own output is untouched
    snap = load(scratch / "s.toml")
    text = (scratch / "s.toml").read_text()
    assert token not in text
    assert snap["outcome"]["stdout"]["tail"][0].startswith("token <redacted:hmac-sha256:")
    assert "outcome.stdout.tail[0]" in snap.meta["redacted"]


def test_label_names_the_default_file(scratch: Path) -> None:
    rc, _, err = finish(start("--label", "good run", "--", "/bin/true"))
    assert rc == 0
    path = scratch / err.split("runsnap: snapshot ", 1)[1].strip()  # printed relative
    assert path.parent == scratch / ".runsnap" and path.name.endswith("-good-run.toml")
    assert load(path).label == "good run"


def test_no_run_only_records_and_prints_the_path_on_stdout(scratch: Path) -> None:
    rc, out, err = finish(start("--no-run", "-o", "s.toml", "--", "/bin/false"))
    assert (rc, out, err) == (0, "s.toml\n", "")
    assert "outcome" not in load(scratch / "s.toml").sections


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--exec"], "runsnap: --exec, --log and --timeout need a COMMAND to run (and no --no-run)\n"),
        (["--pid", "1", "--", "true"], "runsnap: --pid takes no COMMAND: give one or the other\n"),
        (["--pid", "2147483646"], "runsnap: no process with PID 2147483646\n"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    rc, out, err = finish(start(*args))
    assert (rc, out, err) == (2, "", message)


@pytest.mark.parametrize("allow", ["", "1"])
def test_the_demo_launcher_reproduces_the_incident(allow: str, scratch: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if k != "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"}
    if allow:
        env["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"] = allow
    argv = [sys.executable, str(asset("demo", "launch_server.py")),
            "--model-path", str(asset("models", "kimi-k2.5-target")),
            "--speculative-algorithm", "EAGLE3",
            "--speculative-draft-model-path", str(asset("models", "kimi-k2.5-eagle3-draft"))]
    rc, out, err = finish(start("-o", "s.toml", "--", *argv, env=env))
    outcome = load(scratch / "s.toml")["outcome"]
    lead = ("Warning: Target model's context_length (262144) is greater than the derived "
            "context_length (131072).")
    if allow:
        assert rc == 0 and "The server is fired up and ready to roll!" in out
        assert "first_error" not in outcome
        assert lead in outcome["warnings"][0]
    else:
        assert rc == 1 and "Traceback (most recent call last)" in err
        assert outcome["first_error"].startswith("ValueError: " + lead)
        assert outcome["first_error"].endswith("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")
        assert outcome["warnings"] == []


def test_runsnap_killed_with_sigkill_takes_its_child_along(scratch: Path) -> None:
    """SIGKILL cannot be caught, so the kernel is asked (PR_SET_PDEATHSIG) to end the child."""
    code = ("import os, time; open('child.tmp', 'w').write(str(os.getpid())); "
            "os.rename('child.tmp', 'child.pid'); time.sleep(120)")
    proc = start("-o", "s.toml", "--", *py(code), stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL)
    child = int(wait_for(scratch / "child.pid"))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        # a zombie whose parent (init, here the test's reaper) has not reaped it yet is gone too
        with open(f"/proc/{child}/stat") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.05)
    else:
        os.kill(child, signal.SIGKILL)
        raise AssertionError("the child outlived runsnap: an orphan")
    snap = load(scratch / "s.toml")  # written before the child started, whole
    assert snap.meta["launch"] == "wrapped" and "outcome" not in snap.sections


# ----------------------------------------------------------------- --timeout


def test_timeout_stops_the_command_and_exits_124_as_timeout_does(scratch: Path) -> None:
    t0 = time.monotonic()
    rc, out, err = finish(start("--timeout", "0.5", "-o", "s.toml", "--", sys.executable, "-c",
                                "import time; print('up', flush=True); time.sleep(60)"))
    assert time.monotonic() - t0 < 30
    assert (rc, out) == (124, "up\n")
    assert "still running after the 0.5s timeout" in err
    outcome = load(scratch / "s.toml")["outcome"]
    assert outcome["timed_out"] is True
    assert (outcome["status"], outcome["signal"]) == ("signalled", "SIGTERM")


def test_timeout_escalates_to_sigkill_after_kill_after(scratch: Path) -> None:
    code = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
            "print('up', flush=True); time.sleep(60)")
    rc, _, err = finish(start("--timeout", "0.5", "--kill-after", "0.5", "-o", "s.toml", "--",
                              sys.executable, "-c", code))
    assert rc == 124 and "SIGKILL" in err
    assert load(scratch / "s.toml")["outcome"]["signal"] == "SIGKILL"


def test_a_command_that_ends_in_time_keeps_its_status(scratch: Path) -> None:
    rc, _, _ = finish(start("--timeout", "30", "-o", "s.toml", "--", "/bin/sh", "-c", "exit 3"))
    assert rc == 3
    assert "timed_out" not in load(scratch / "s.toml")["outcome"]


@pytest.mark.parametrize("args", [["--no-run", "--", "true"], ["--exec", "--", "true"],
                                  ["--pid", str(os.getpid())], []])
def test_timeout_needs_a_command_runsnap_stays_with(scratch: Path, args: list[str]) -> None:
    rc, out, err = finish(start("--timeout", "5", "-o", "s.toml", *args))
    assert (rc, out) == (2, "")
    assert len(err.splitlines()) == 1 and "--timeout" in err
    assert not (scratch / "s.toml").exists()
