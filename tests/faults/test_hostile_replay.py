"""Classes 5 and 8: replay and bisect of a stranger's snapshot: text no process can take is one
line and exit 2; a snapshot from elsewhere never runs blind; system folders are refused."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import assert_clean_error, bare_env, runsnap, runsnap_argv


@pytest.fixture
def own(tmp_path: Path) -> Path:
    """A real snapshot of `touch ran` captured here, by this user."""
    proc = runsnap("capture", "-o", "own.toml", "--no-run", "--", "touch", "ran", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return tmp_path / "own.toml"


def _edit(src: Path, name: str, old: str, new: str) -> Path:
    text = src.read_text()
    assert old in text, old
    out = src.with_name(name)
    out.write_text(text.replace(old, new, 1))
    return out


def _cwd_line(path: Path) -> str:
    return next(line for line in path.read_text().splitlines() if line.startswith("cwd = "))


BROKEN = {
    "= in a name": ("[env.vars]\n", '[env.vars]\n"A=B" = "1"\n'),
    "NUL in a name": ("[env.vars]\n", '[env.vars]\n"A\\u0000B" = "1"\n'),
    "NUL in a value": ("[env.vars]\n", '[env.vars]\nNV = "a\\u0000b"\n'),
    "empty name": ("[env.vars]\n", '[env.vars]\n"" = "1"\n'),
    "NUL in argv": ('    "touch",\n', '    "tou\\u0000ch",\n'),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
@pytest.mark.parametrize("command", ["replay", "bisect"])
def test_unlaunchable_text_is_one_line(own: Path, case: str, command: str) -> None:
    bad = _edit(own, "bad.toml", *BROKEN[case])
    args = [bad.name] if command == "replay" else [own.name, bad.name, "--test", "true"]
    proc = runsnap(command, *args, "--yes", cwd=own.parent)
    assert_clean_error(proc)
    assert not (own.parent / "ran").exists()


@pytest.mark.parametrize("pid", ["-5", "0", "-1", "99999999999999999999999"])
def test_bad_pid_is_one_line(pid: str, tmp_path: Path) -> None:
    assert_clean_error(runsnap("capture", "--pid", pid, cwd=tmp_path))


def test_own_snapshot_runs_without_a_terminal(own: Path) -> None:
    proc = runsnap("replay", own.name, cwd=own.parent)
    assert proc.returncode == 0, proc.stderr
    assert (own.parent / "ran").exists()


@pytest.mark.parametrize("field", ["host", "fingerprint_key"])
def test_a_stranger_snapshot_is_refused_without_yes(own: Path, field: str) -> None:
    line = next(ln for ln in own.read_text().splitlines() if ln.startswith(f"{field} = "))
    evil = json.dumps("elsewhere\x1b]0;x\x07")
    strange = _edit(own, "strange.toml", line, f"{field} = {evil}")
    strange = _edit(strange, "strange.toml", "[env.vars]\n",
                    '[env.vars]\nBASH_ENV = "/tmp/x\\r\\u001b[2Kok"\nLD_PRELOAD = "/evil.so"\n')
    proc = runsnap("replay", strange.name, cwd=own.parent)
    assert_clean_error(proc, "--yes", "argv[0] = touch", "argv[1] = ran",
                       "BASH_ENV = /tmp/x\\r\\x1b[2Kok", "LD_PRELOAD = /evil.so")
    assert "\x1b" not in proc.stderr and "\r" not in proc.stderr
    assert not (own.parent / "ran").exists()
    proc = runsnap("bisect", own.name, strange.name, "--test", "true", cwd=own.parent)
    assert_clean_error(proc, "--yes")
    assert not (own.parent / "ran").exists()
    proc = runsnap("replay", strange.name, "--yes", cwd=own.parent)
    assert proc.returncode == 0, proc.stderr
    assert (own.parent / "ran").exists()


@pytest.mark.parametrize("cwd", ["/", "/etc", "/proc/self", "/usr/lib"])
@pytest.mark.parametrize("command", ["replay", "bisect"])
def test_system_folders_are_refused(own: Path, cwd: str, command: str) -> None:
    moved = _edit(own, "moved.toml", _cwd_line(own), f"cwd = {json.dumps(cwd)}")
    args = [moved.name] if command == "replay" else [own.name, moved.name, "--test", "true"]
    if command == "bisect":  # trials run in GOOD's folder
        args = [moved.name, own.name, "--test", "true"]
    proc = runsnap(command, *args, "--yes", cwd=own.parent)
    assert_clean_error(proc, "does not launch there")


def _on_a_terminal(args: list[str], cwd: Path, answer: bytes) -> tuple[int, str]:
    """Run runsnap with a pseudo-terminal on stdin, answer its question, return status and
    everything it wrote."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(runsnap_argv(*args), cwd=cwd, env=bare_env(), stdin=slave,
                            stdout=slave, stderr=slave)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + 120
    answered = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        if not answered and b"Run it?" in out:
            os.write(master, answer)
            answered = True
        if proc.poll() is not None and not ready:
            break
    proc.wait(30)
    os.close(master)
    return proc.returncode, out.decode("utf-8", "replace")


@pytest.mark.parametrize(("answer", "runs"), [(b"n\n", False), (b"y\n", True)])
def test_a_terminal_is_asked_even_for_own_snapshots(own: Path, answer: bytes, runs: bool) -> None:
    status, out = _on_a_terminal(["replay", own.name], own.parent, answer)
    assert "argv[0] = touch" in out and re.search(r"cwd = .*", out)
    assert (status == 0) == runs and (own.parent / "ran").exists() == runs, out
