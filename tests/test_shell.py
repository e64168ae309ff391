"""The one module that runs other programs: finding them, starting and cancelling them."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from runsnap import shell


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
        assert shell.which(name, path=path) == shutil.which(name, path=path), name
    assert shell.which("tool", path=path) == str(tmp_path / "b" / "tool")
    assert stat.S_IMODE((tmp_path / "a" / "tool").stat().st_mode) == 0o644


def test_a_cancelled_program_is_stopped_and_reaped(tmp_path: Path) -> None:
    pending = shell.start(["sleep", "30"])
    pending.cancel()
    assert pending._proc is not None and pending._proc.returncode is not None
    shell.start(["no-such-program-anywhere"]).cancel()  # a failed start: nothing to stop
