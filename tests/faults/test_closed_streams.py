"""Class 3: runsnap started with a standard stream closed (``2>&-``, ``>&-``, ``<&-``) or one
that cannot be written (``2>/dev/full``) runs the command as it would run without runsnap: the
command runs, its exit status is kept, it gets the same streams closed, the snapshot is whole;
and the tracing logs in the child never take a stream's number or write into a program's file."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from runsnap.snapshot import load

from .conftest import bare_env, runsnap_argv

# The child: which of its standard streams are open (checked before it opens anything), a
# read of the environment (traced), then exit 3.
CHILD = """\
import os, sys
state = []
for fd in (0, 1, 2):
    try:
        os.fstat(fd)
        state.append("open")
    except OSError:
        state.append("closed")
os.environ.get("APP_SETTING")
with open(sys.argv[1], "w") as fh:
    fh.write(" ".join(state))
sys.exit(3)
"""


def _bash(line: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", line], cwd=tmp_path, env=bare_env(), timeout=120,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("redirect", ["2>&-", "2>/dev/full", ">&-", "<&-", "<&- >&- 2>&-"])
@pytest.mark.parametrize("trace", [True, False])
def test_the_command_runs_as_without_runsnap(tmp_path: Path, redirect: str, trace: bool) -> None:
    (tmp_path / "child.py").write_text(CHILD)
    child = f"{shlex.quote(sys.executable)} child.py"
    bare = _bash(f"{child} bare.txt {redirect}; echo status $?", tmp_path)
    r = shlex.join(runsnap_argv("capture", *([] if trace else ["--no-trace"]), "-o", "x.toml",
                                "--"))
    wrapped = _bash(f"{r} {child} wrapped.txt {redirect}; echo status $?", tmp_path)
    assert "Traceback" not in wrapped.stderr + wrapped.stdout, wrapped.stderr
    if ">&-" not in redirect:
        assert bare.stdout == wrapped.stdout == "status 3\n", (wrapped.stdout, wrapped.stderr)
    else:  # the status line itself has no stdout to go to: the files say it
        assert wrapped.returncode == bare.returncode
    assert (tmp_path / "wrapped.txt").read_text() == (tmp_path / "bare.txt").read_text()
    snap = load(tmp_path / "x.toml")  # whole, and nothing of runsnap's own lines in it
    assert snap["outcome"]["exit_status"] == 3
    assert "\nrunsnap: snapshot x.toml\n" not in (tmp_path / "x.toml").read_text()
    if trace:
        assert "APP_SETTING" in (snap.get("runtime") or {}).get("vars", {}), snap.get("runtime")


def test_a_program_that_takes_the_logs_number_gets_nothing_of_ours(tmp_path: Path) -> None:
    """A traced program that ``dup2()``s a file of its own over every descriptor it did not
    open (as a daemon or a shell's ``exec N>file`` may) finds none of runsnap's log lines in
    it: the log's writer sees the number is no longer its file and stops."""
    child = (
        "import os, sys\n"
        "mine = os.open('mine.txt', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)\n"
        "for name in os.listdir('/proc/self/fd'):\n"
        "    fd = int(name)\n"
        "    if fd > 2 and fd != mine:\n"
        "        try:\n"
        "            os.dup2(mine, fd)\n"
        "        except OSError:\n"
        "            pass\n"
        "for i in range(50):\n"
        "    os.environ.get(f'APP_AFTER_{i}')\n"
        "import json, csv, email.parser  # new read sites, new modules\n"
        "os.write(mine, b'end\\n')\n"
    )
    (tmp_path / "child.py").write_text(child)
    proc = subprocess.run(runsnap_argv("capture", "-o", "x.toml", "--", sys.executable,
                                       "child.py"), cwd=tmp_path, env=bare_env(), timeout=120,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "mine.txt").read_text() == "end\n"
    load(tmp_path / "x.toml")


@pytest.mark.parametrize("redirect", ["2>/dev/full", "2>&-"])
def test_replay_runs_the_command_whatever_stderr_is(tmp_path: Path, redirect: str) -> None:
    """``replay`` tells what it runs on stderr before the launch: a stderr it cannot write
    loses those lines, not the launch."""
    made = subprocess.run(runsnap_argv("capture", "-o", "own.toml", "--no-run", "--", "touch",
                                       "ran"), cwd=tmp_path, env=bare_env(), timeout=120,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert made.returncode == 0, made.stderr
    r = shlex.join(runsnap_argv("replay", "own.toml", "-o", "again.toml"))
    proc = _bash(f"{r} {redirect}; echo status $?", tmp_path)
    assert proc.stdout == "status 0\n", (proc.stdout, proc.stderr)
    assert (tmp_path / "ran").exists()
    load(tmp_path / "again.toml")
