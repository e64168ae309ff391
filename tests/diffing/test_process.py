"""[process] differences between two snapshots of running processes (``capture --pid``)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from runsnap.capturing import capture_pid
from runsnap.diffing import compare


def snapshot_of_sleeper(tmp_path: Path, code: str) -> object:
    """Snapshot a child once it has run ``code`` (it touches a ready file, then sleeps)."""
    ready = tmp_path / "ready"
    ready.unlink(missing_ok=True)
    script = f"{code}\nimport time; open({str(ready)!r}, 'w').close(); time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path)
    try:
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return capture_pid(child.pid)
    finally:
        child.kill()
        child.wait()


def test_two_processes_of_one_launch_differ_only_in_noise(tmp_path: Path) -> None:
    a = snapshot_of_sleeper(tmp_path, "pass")
    b = snapshot_of_sleeper(tmp_path, "pass")
    report = compare(a, b)
    assert [(d.section, d.key) for d in report.counted] == []
    hidden = {(d.section, d.key) for d in report.differences if d.hidden}
    assert ("process", "pid") in hidden and ("process", "started_at") in hidden
    assert not report


def test_another_mapped_library_ranks_high(tmp_path: Path) -> None:
    a = snapshot_of_sleeper(tmp_path, "pass")
    # ctypes loads libffi: a shared library the first process does not map
    b = snapshot_of_sleeper(tmp_path, "import ctypes")
    libs = [d for d in compare(a, b).counted if d.section == "process"]
    assert libs and all(d.key.startswith("libraries") for d in libs)
    assert any(d.change == "added" and "libffi" in d.key for d in libs)
    assert libs[0].score == 72
    assert libs[0].reason == "another shared library mapped into the running process"
