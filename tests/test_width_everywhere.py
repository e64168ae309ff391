"""Every command fits an 80-column terminal (issue 27, item 7): each runs as a real process
under a pseudo-terminal 80 columns wide with ``COLUMNS=80``, and no line it prints, on
standard output or standard error, is longer."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

import runsnap
from runsnap.cli.app import cli
from tests.conftest import asset, git, make_repo

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
DEMO = ["python3", str(asset("demo", "launch_server.py")), "--model-path",
        str(asset("models", "kimi-k2.5-target")), "--speculative-algorithm", "EAGLE3",
        "--speculative-draft-model-path", str(asset("models", "kimi-k2.5-eagle3-draft"))]


def under_pty(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """``python -m runsnap ARGS`` with a terminal 80 columns wide as its stdin, stdout and
    stderr: its exit status and everything it printed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "runsnap", *args], cwd=cwd, env=env,
                            stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    out = bytearray()
    while True:
        ready, _, _ = select.select([master], [], [], 300)
        if not ready:
            proc.kill()
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return proc.wait(timeout=60), out.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's demo captured for real (good with the flag, bad without) in a repository
    with an uncommitted edit, plus one bisection's folder."""
    work = make_repo(tmp_path_factory.mktemp("width") / "work", {"serve.sh": "echo 1\n"})
    (work / "serve.sh").write_text("echo 2\n")
    env = {**os.environ, "NCCL_IB_DISABLE": "1"}
    for label, extra in (("good", {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}),
                         ("bad", {"NCCL_ALGO": "Ring"})):
        subprocess.run([sys.executable, "-m", "runsnap", "capture", "--label", label, "--",
                        *DEMO], cwd=work, env={**env, **extra}, capture_output=True,
                       timeout=300)
    git(work, "status")
    return work


def test_no_command_prints_a_line_longer_than_the_terminal(demo: Path) -> None:
    env = {**os.environ, "COLUMNS": "80", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    # who-reads lists the places of PATH in this environment's packages (pip, setuptools and
    # more: long paths); its index is shared by the tests of this process (tests/conftest.py)
    python = sys.executable
    commands = [
        ["--help"], *([name, "--help"] for name in sorted(cli.commands)),  # every command's
        ["capture", "--label", "ctx", "--no-run", "--", *DEMO],
        ["ls"], ["show", "@good"], ["show", "@good", "--section", "packages"],
        ["show", "@good", "--section", "env"], ["show", "@good", "--section", "git"],
        ["show", "@good", "--section", "system"], ["check", "@bad"],
        ["pin", "@good"], ["ls"], ["diff", "@pinned", "@bad"],
        ["check"], ["check", "--", *DEMO], ["unpin", "@good"],
        ["diff", "@good", "@bad"], ["diff", "@good", "@bad", "--all"],
        ["diff", "@good", "@bad", "--stat"], ["diff", "@good", "@bad", "--patch"],
        ["report", "@good", "@bad", "--format", "text"],
        ["who-reads", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "PATH", "--python", python],
        # no package of this venv names it (made here, so this file does not either): the
        # line saying so is wrapped too
        ["who-reads", "RUNSNAP_NOWHERE_" + "LONG_" * 12 + "NAME", "--python", python],
        ["bisect", "@good", "@bad", "--dry-run", "--force"],
        # a pty is a terminal: without --yes, bisect and replay show what runs and ask
        ["bisect", "@good", "@bad", "--force", "--recheck", "1", "--yes"],
        ["gc", "--keep", "9", "--dry-run"], ["scrub", "@ctx"],
        ["replay", "@good", "--yes"],
        ["why"], ["why", "--prove", "--yes"], ["why", "@bad", "--against", "@good"],
    ]
    package = os.path.dirname(os.path.abspath(runsnap.__file__))
    own_frame = re.compile(rf'File "(?:{re.escape(package)}|[^"]*/site-packages/runsnap)/')
    for args in commands:
        status, text = under_pty(args, demo, env)
        # runsnap's own traceback (a report quotes the child's, which is fine, even from a
        # checkout that git cloned into a folder named runsnap: .../runsnap/fixtures/demo/...)
        assert not own_frame.search(text), (args, text)
        # a terminal shows what follows the last carriage return of a line (a status line
        # rewritten in place: bisect's and why's progress)
        lines = [ln.rstrip("\r").split("\r")[-1] for ln in ANSI.sub("", text).split("\n")]
        if args[0] == "replay":  # the child's own output passes untouched: runsnap's lines
            lines = [ln for ln in lines if ln.startswith("runsnap")]
        long = [ln for ln in lines if len(ln) > 80]
        assert not long, (args, long)
        assert status in (0, 1), (args, status, text[-2000:])
