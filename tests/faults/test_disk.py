"""Class 6: a full disk or a kill at any named point of a capture leaves no empty snapshot."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from .conftest import bare_env, runsnap


def _visible(folder: Path) -> list[tuple[str, int]]:
    return sorted((p.name, p.stat().st_size) for p in folder.iterdir()
                  if not p.name.startswith("."))


@pytest.fixture
def full_disk(tmp_path: Path):
    """A 64 KiB tmpfs, filled (root only: mounting needs it)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mnt = tmp_path / "full"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        (mnt / "snaps").mkdir()
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"x" * 4096)
        except OSError:
            pass
        finally:
            os.close(fd)
        yield mnt / "snaps"
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_full_disk_leaves_no_empty_file(full_disk: Path, tmp_path: Path) -> None:
    for _ in range(3):  # every retry used to add one more empty file
        proc = runsnap("capture", "--dir", str(full_disk), "--", "true", cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert "No space left on device" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert _visible(full_disk) == []
    proc = runsnap("ls", "--dir", str(full_disk), cwd=tmp_path)
    assert "?" not in proc.stdout


# The first save claims the name (written, claimed); the rewrite with the outcome replaces
# it (partial, written#2, renamed).
KILLED_IN_A_CHOSEN_NAME = ("snapshot.written", "snapshot.claimed", "snapshot.partial",
                           "snapshot.written#2", "snapshot.renamed")


@pytest.mark.parametrize("point", KILLED_IN_A_CHOSEN_NAME)
def test_a_kill_at_a_named_point_leaves_no_empty_file(tmp_path: Path, point: str) -> None:
    snaps = tmp_path / "snaps"
    proc = runsnap("capture", "--dir", str(snaps), "--", "true", cwd=tmp_path,
                   env=bare_env(RUNSNAP_TEST_FAULT=point))
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert all(size > 0 for _name, size in _visible(snaps)), _visible(snaps)
    listed = runsnap("ls", "--dir", str(snaps), cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "?" not in listed.stdout, listed.stdout
    again = runsnap("capture", "--dir", str(snaps), "--", "true", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert not [p for p in snaps.iterdir() if p.name.endswith(".tmp")]  # swept
