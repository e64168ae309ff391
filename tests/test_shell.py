"""The one module that runs other programs: finding them, starting and cancelling them."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import time
from pathlib import Path

import pytest

from runsnap.base import programs


def test_which_finds_what_shutil_which_finds(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for d, mode in (("a", 0o644), ("b", 0o755)):  # not executable in a/, executable in b/
        tool = tmp_path / d / "tool"
        tool.write_text("#!/bin/sh\n")
        tool.chmod(mode)
    (tmp_path / "a" / "dir").mkdir()  # a directory is never a program
    path = os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b"), os.environ["PATH"]])
    for name in ("tool", "dir", "git", "sh", "no-such-program", str(tmp_path / "b" / "tool"),
                 str(tmp_path / "a" / "tool")):
        assert programs.which(name, path=path) == shutil.which(name, path=path), name
    assert programs.which("tool", path=path) == str(tmp_path / "b" / "tool")
    assert stat.S_IMODE((tmp_path / "a" / "tool").stat().st_mode) == 0o644


def test_a_cancelled_program_is_stopped_and_reaped(tmp_path: Path) -> None:
    pending = programs.start(["sleep", "30"])
    assert pending.pid is not None
    pending.cancel()
    with pytest.raises(ChildProcessError):  # already reaped: no zombie left behind
        os.waitpid(pending.pid, os.WNOHANG)
    programs.start(["no-such-program-anywhere"]).cancel()  # a failed start: nothing to stop


def test_large_output_on_both_streams_arrives_whole() -> None:
    script = ("import os; os.write(2, b'e' * 300_000); "
              "[os.write(1, bytes([65 + i % 26]) * 65536) for i in range(40)]")
    res = programs.run([sys.executable, "-c", script])
    assert res.ok
    assert len(res.stdout) == 40 * 65536 and res.stdout[-1:] == bytes([65 + 39 % 26])
    assert res.stderr == b"e" * 300_000


def test_a_program_writes_a_megabyte_and_exits_before_anyone_reads() -> None:
    """The enlarged pipe lets git diff finish while runsnap is still busy elsewhere."""
    try:
        limit = min(programs.PIPE_SIZE, int(Path("/proc/sys/fs/pipe-max-size").read_text()))
    except (OSError, ValueError):
        pytest.skip("no Linux pipe size limit to read")
    size = limit * 7 // 8
    pending = programs.start([sys.executable, "-c", f"import sys; sys.stdout.buffer.write(b'x' * {size})"])
    assert pending.pid is not None
    deadline = time.monotonic() + 30
    while os.waitid(os.P_PID, pending.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        assert time.monotonic() < deadline, "the program blocked on a full pipe"
        time.sleep(0.01)
    assert len(pending.wait().stdout) == size


def test_exit_status_signal_missing_program_and_path_lookup(tmp_path: Path) -> None:
    assert programs.run(["sh", "-c", "echo out; echo err >&2; exit 3"]).returncode == 3
    res = programs.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (res.stdout, res.stderr) == (b"out\n", b"err\n")
    assert programs.run(["sh", "-c", "kill -TERM $$"]).returncode == -15
    missing = programs.run(["no-such-program-anywhere"])
    assert missing.returncode == 127 and b"No such file" in missing.stderr
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\necho from-env-path\n")
    tool.chmod(0o755)
    found = programs.run(["tool"], env={"PATH": str(tmp_path)})
    assert found.stdout == b"from-env-path\n"  # looked up on the given environment's PATH
    assert programs.run(["cat"]).stdout == b""  # standard input is /dev/null: no hang


def test_a_timeout_kills_the_program_and_says_so() -> None:
    res = programs.start(["sleep", "30"]).wait(timeout=0.2)
    assert res.returncode == 124 and b"timed out after 0.2s" in res.stderr


def test_the_program_gets_sigpipe_back() -> None:
    """Python ignores SIGPIPE; a program started by runsnap must not inherit that."""
    res = programs.run(["sh", "-c", "grep SigIgn /proc/$$/status"])
    ignored = int(res.text().split()[1], 16)
    assert not ignored & (1 << (13 - 1))


def test_a_program_in_another_directory(tmp_path: Path) -> None:
    res = programs.run(["pwd"], cwd=str(tmp_path))
    assert res.text().strip() == str(tmp_path.resolve())


def test_a_background_program_runs_at_the_lowest_priority_while_a_core_is_spare() -> None:
    own = os.getpriority(os.PRIO_PROCESS, 0)  # the suite itself may run niced
    background = programs.start(["sleep", "5"], background=True)
    foreground = programs.start(["sleep", "5"])
    try:
        assert os.getpriority(os.PRIO_PROCESS, foreground.pid) == own
        want = programs.BACKGROUND_NICE if programs.spare_core() else own
        assert os.getpriority(os.PRIO_PROCESS, background.pid) == want
    finally:
        background.cancel()
        foreground.cancel()
    load, cpus = os.getloadavg()[0], len(os.sched_getaffinity(0))
    assert programs.spare_core(load=load, cpus=cpus) == (load < cpus)
