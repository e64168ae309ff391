"""runsnap.launch.run with real children, in this process: statuses, exactness, output."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from pathlib import Path

import pytest
from launch_helpers import py

from runsnap import launch
from runsnap.launch import LogTee, run


def test_every_exit_status_is_preserved() -> None:
    for code in range(256):
        result = run(["/bin/sh", "-c", f"exit {code}"])
        assert (result.status, result.exit_status) == ("exited", code)


def test_a_child_killed_by_a_signal_gives_128_plus_n() -> None:
    result = run(py("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"))
    assert (result.status, result.exit_status, result.signal_name) == ("signalled", 137, "SIGKILL")
    result = run(py("import os, signal; os.kill(os.getpid(), signal.SIGUSR1)"))
    assert (result.exit_status, result.signal_name) == (128 + 10, "SIGUSR1")


def test_not_found_is_127_and_not_executable_is_126(tmp_path: Path) -> None:
    result = run(["runsnap-no-such-command-xyz"])
    assert (result.status, result.exit_status) == ("not_found", 127)
    assert result.error == "runsnap-no-such-command-xyz: command not found"

    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    result = run([str(script)])
    assert (result.status, result.exit_status) == ("not_executable", 126)
    assert "Permission denied" in (result.error or "")

    result = run([str(tmp_path)])
    assert (result.exit_status, result.error) == (126, f"{tmp_path}: is a directory")

    bad = tmp_path / "bad-interpreter"
    bad.write_text("#!/nonexistent/python\n")
    bad.chmod(0o755)
    result = run([str(bad)])
    assert result.exit_status == 126 and "bad interpreter" in (result.error or "")


def test_not_executable_found_on_path_is_126(tmp_path: Path) -> None:
    (tmp_path / "tool").write_text("#!/bin/sh\n")
    env = {**os.environ, "PATH": str(tmp_path)}
    result = run(["tool"], env=env)
    assert result.exit_status == 126


def test_the_child_gets_exactly_the_environment_argv_and_cwd(tmp_path: Path) -> None:
    out = tmp_path / "seen.json"
    work = tmp_path / "work dir"
    work.mkdir()
    env = {"PATH": os.environ["PATH"], "EMPTY": "", "SPACES": " a  b ", "UNI": "café ☃",
           "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}
    code = ("import json, os, sys; json.dump({'env': dict(os.environ), 'argv': sys.argv[1:],"
            f" 'cwd': os.getcwd()}}, open({str(out)!r}, 'w'))")
    args = ["", "two words", "--opt=a b", "'quoted'", "é"]
    result = run([sys.executable, "-c", code, *args], env=env, cwd=str(work))
    assert result.exit_status == 0
    seen = json.loads(out.read_text())
    seen["env"].pop("LC_CTYPE", None)  # Python may coerce the C locale (PEP 538)
    assert seen == {"env": env, "argv": args, "cwd": str(work)}


def test_output_is_relayed_and_its_tail_kept(capfd: pytest.CaptureFixture[str]) -> None:
    code = ("import sys\nfor i in range(20000): print(f'line {i}')\n"
            "print('WARNING: slow disk', file=sys.stderr)\n"
            "print('RuntimeError: boom', file=sys.stderr)")
    result = run(py(code), tail_lines=3)
    out, err = capfd.readouterr()
    assert out.splitlines()[0] == "line 0" and len(out.splitlines()) == 20000
    assert err == "WARNING: slow disk\nRuntimeError: boom\n"
    assert result.modes == {"stdout": "pipe", "stderr": "pipe"}
    stdout = result.watches["stdout"]
    assert stdout.tail_text() == ["line 19997", "line 19998", "line 19999"]
    assert stdout.lines == 20000
    assert result.watches["stderr"].first_error == "RuntimeError: boom"
    assert result.watches["stderr"].warnings == ["WARNING: slow disk"]


def test_log_tees_both_streams_with_their_sha256(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    log = LogTee(tmp_path / "run.log")
    # One write per line: with PYTHONUNBUFFERED, print() writes the text and its newline
    # separately, and the two streams' chunks may then interleave within a line.
    code = "import sys; sys.stdout.write('to out\\n'); sys.stdout.flush(); sys.stderr.write('to err\\n')"
    result = run(py(code), log=log)
    capfd.readouterr()
    data = (tmp_path / "run.log").read_bytes()
    assert sorted(data.decode().splitlines()) == ["to err", "to out"]
    assert result.log_sha256 == hashlib.sha256(data).hexdigest()
    assert result.log_bytes == len(data) and result.log_path == str(tmp_path / "run.log")


def test_signals_are_left_as_they_were_after_the_run() -> None:
    import signal

    before = {s: signal.getsignal(s) for s in launch.FORWARDED_SIGNALS}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    run(["/bin/true"])
    assert {s: signal.getsignal(s) for s in launch.FORWARDED_SIGNALS} == before
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == mask


def test_an_ignored_signal_stays_ignored_for_the_child(tmp_path: Path) -> None:
    import signal

    out = tmp_path / "hup"
    code = (f"import signal; open({str(out)!r}, 'w')"
            ".write(str(signal.getsignal(signal.SIGHUP) == signal.SIG_IGN))")
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        run(py(code))
    finally:
        signal.signal(signal.SIGHUP, old)
    assert out.read_text() == "True"


def test_on_exit_sees_the_finished_result() -> None:
    seen = []
    run(["/bin/sh", "-c", "exit 3"], on_exit=lambda r: seen.append((r.exit_status, r.ended_at)))
    assert seen[0][0] == 3 and seen[0][1]


def test_exec_child_reports_a_missing_program(tmp_path: Path) -> None:
    result = launch.exec_child(["runsnap-no-such-command-xyz"], env=dict(os.environ),
                               cwd=str(tmp_path))
    assert (result.status, result.exit_status) == ("not_found", 127)
    assert os.getcwd() == str(tmp_path)
    assert stat.S_ISDIR(os.stat(".").st_mode)
