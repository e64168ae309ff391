"""`capture --pid`: a process that is already running, read with psutil."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runsnap.capturing import process
from runsnap.snapshot import load
from tests.launch.launch_helpers import start, wait_for


@pytest.mark.parametrize(
    ("filename", "parsed"),
    [
        ("libnccl.so.2.21.5", ("libnccl", "2.21.5")),
        ("libcudart.so.12", ("libcudart", "12")),
        ("libcudart-d0da41ae.so.11.0", ("libcudart", "11.0")),
        ("libstdc++.so.6.0.30", ("libstdc++", "6.0.30")),
        ("ld-linux-x86-64.so.2", ("ld-linux-x86-64", "2")),
        ("libpython3.11.so.1.0", ("libpython3.11", "1.0")),
        ("libtorch_cuda.so", ("libtorch_cuda", None)),
        ("config.json", None),
        ("libfoo.so.bak", None),
    ],
)
def test_library_versions_come_from_file_names(
    filename: str, parsed: tuple[str, str | None] | None
) -> None:
    assert process.library_version(filename) == parsed


def test_pid_snapshots_a_running_process(scratch: Path) -> None:
    env = {**os.environ, "RUNSNAP_TEST_MARK": "seen-by-pid", "HF_TOKEN": "hf_" + "x" * 34}
    code = "import time; open('ready', 'w').close(); time.sleep(120)"
    child = subprocess.Popen([sys.executable, "-c", code, "--model-path", "nowhere"], env=env,
                             cwd=scratch)
    try:
        wait_for(scratch / "ready")
        proc = start("--pid", str(child.pid), "-o", "pid.toml", "--label", "stuck")
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.decode() == "pid.toml\n"
        snap = load(scratch / "pid.toml")
    finally:
        child.kill()
        child.wait()
    assert snap.meta["launch"] == "pid" and snap.label == "stuck"
    assert snap["env"]["vars"]["RUNSNAP_TEST_MARK"] == "seen-by-pid"
    assert snap["env"]["vars"]["HF_TOKEN"].startswith("<redacted:")
    assert snap["command"]["argv"] == [sys.executable, "-c", code, "--model-path", "nowhere"]
    assert snap["command"]["cwd"] == str(scratch)
    proc_section = snap["process"]
    assert proc_section["pid"] == child.pid
    assert os.path.realpath(proc_section["exe"]) == os.path.realpath(sys.executable)
    libc = proc_section["libraries"]["libc.so.6"]
    assert (libc["name"], libc["version"]) == ("libc", "6")
    # its real interpreter: its venv's when it runs in one, else /proc/PID/exe; never "--python"
    assert snap["packages"]["reason"].startswith("the running process's interpreter")
    assert "outcome" not in snap.sections


def test_pid_lists_children(scratch: Path) -> None:
    code = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
            "'import time; time.sleep(120)', '--api-key', 'tops3cret-K9x']); "
            "time.sleep(0.5); open('ready', 'w').close(); time.sleep(120)")
    parent = subprocess.Popen([sys.executable, "-c", code], cwd=scratch,
                              start_new_session=True)
    try:
        wait_for(scratch / "ready")
        snap = process.process_section(__import__("psutil").Process(parent.pid))
        from runsnap.redact import Redactor, load_key

        clean = Redactor(load_key()).sections({"process": snap})["process"]
    finally:
        os.killpg(parent.pid, 9)
        parent.wait()
    (kid,) = clean["children"]
    assert kid["ppid"] == parent.pid and kid["argv"][-2] == "--api-key"
    assert kid["argv"][-1].startswith("<redacted:")  # (a plain word would be no secret)
