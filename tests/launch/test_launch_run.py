"""runsnap.launch.run with real children, in this process: statuses, exactness, output."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runsnap import capturing, launch
from runsnap.launch import LaunchResult, LaunchSpec, LogTee, outcome
from tests.launch.launch_helpers import py


def run(argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
        **kwargs: object) -> LaunchResult:
    """:func:`runsnap.launch.run` of a spec for ``argv`` (this environment and cwd by default);
    ``timeout``, ``tail_lines``, ``kill_grace`` and ``metrics`` go to its :class:`Watch`."""
    watch = {k: kwargs.pop(k) for k in ("timeout", "tail_lines", "kill_grace", "metrics")
             if k in kwargs}
    return launch.run(LaunchSpec.of(argv, env=env, cwd=cwd), launch.Watch(**watch),
                      **kwargs)  # type: ignore[arg-type]


@pytest.mark.slow
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
    result = launch.exec_child(LaunchSpec.of(["runsnap-no-such-command-xyz"], cwd=tmp_path))
    assert (result.status, result.exit_status) == ("not_found", 127)
    assert os.getcwd() == str(tmp_path)
    assert stat.S_ISDIR(os.stat(".").st_mode)


# ----------------------------------------------------------------- timeout and the spec


def test_a_timeout_stops_the_child_with_sigterm(tmp_path: Path) -> None:
    started = time.monotonic()
    result = run(py("import time; time.sleep(60)"), timeout=0.5, kill_grace=30)
    assert result.timed_out
    assert (result.status, result.signal_name, result.exit_status) == ("signalled", "SIGTERM", 143)
    assert time.monotonic() - started < 20  # SIGTERM was enough: no wait for the grace period
    assert outcome.build(result)["timed_out"] is True


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    code = ("import signal, time, pathlib; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            f"pathlib.Path({str(ready)!r}).write_text('1'); time.sleep(60)")
    result = run(py(code), timeout=1.0, kill_grace=0.5)
    assert ready.exists()  # the handshake: SIGTERM really was ignored, not early
    assert result.timed_out and (result.signal_name, result.exit_status) == ("SIGKILL", 137)


def test_a_child_that_ends_in_time_is_not_timed_out() -> None:
    result = run(["/bin/sh", "-c", "exit 4"], timeout=30)
    assert not result.timed_out and result.exit_status == 4
    assert "timed_out" not in outcome.build(result)


def test_the_spec_is_what_runs_not_what_was_recorded(tmp_path: Path) -> None:
    """A spec with extra variables (what tracing adds) reaches the child; the recorded
    context of a capture stays as the user had it."""
    spec = LaunchSpec.of(py("import os; print(os.environ.get('RUNSNAP_EXTRA'))"), cwd=tmp_path,
                         env={"PATH": os.environ["PATH"]})
    out = tmp_path / "out.txt"
    traced = spec.with_env(RUNSNAP_EXTRA="hook")
    with open(out, "wb") as fh:
        proc = subprocess.run(traced.argv, env=traced.env, cwd=traced.cwd, stdout=fh, check=True)
    assert proc.returncode == 0 and out.read_text().strip() == "hook"
    assert "RUNSNAP_EXTRA" not in spec.env and spec.without_env("PATH").env == {}
    with pytest.raises(AttributeError):
        spec.env = {}  # type: ignore[misc]


def test_capture_builds_the_spec_from_the_recorded_context(tmp_path: Path) -> None:
    script = tmp_path / "tool"
    script.write_text(f"#!{sys.executable}\nprint('hi')\n")
    script.chmod(0o755)
    env = {"PATH": os.environ["PATH"], "A": "1"}
    for argv, python in (([sys.executable, "-c", "pass"], sys.executable),
                         ([str(script)], sys.executable), (["/bin/true"], None)):
        ctx = capturing.build_context(argv, env=env, cwd=tmp_path)
        spec = capturing.launch_spec(ctx)
        assert (spec.argv, spec.env, spec.cwd) == (tuple(argv), env, str(tmp_path))
        assert spec.python == python, argv
