"""[system]: host facts, and GPU facts from (recorded) nvidia-smi output."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

import runsnap
from tests.collectors.test_gpu import smi_path


def test_host_cpu_memory_are_recorded_and_no_gpu_is_a_fact(tmp_path: Path) -> None:
    snap = runsnap.capture([], env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    s = snap["system"]
    assert s["errors"] == []
    assert s["host"] == socket.gethostname()
    assert s["kernel"] == os.uname().release
    assert s["cpu"]["logical"] == os.cpu_count()
    assert s["cpu"]["physical"] >= 1
    assert s["memory"]["total_bytes"] > 0
    if not os.path.exists("/proc/driver/nvidia"):  # else the driver's files answer instead
        assert s["gpu"] == {"available": False, "count": 0, "devices": [], "reason":
                            "nvidia-smi not found on PATH, and no NVIDIA kernel driver is "
                            "loaded (no /proc/driver/nvidia)"}


def test_gpus_driver_and_cuda_from_nvidia_smi(tmp_path: Path) -> None:
    """A replayed recording of an L40S node (fixtures/nvidia-smi/l40s-r595)."""
    gpu = runsnap.capture([], env={"PATH": smi_path(tmp_path, "l40s-r595")},
                          cwd=tmp_path)["system"]["gpu"]
    assert gpu["available"] is True
    assert (gpu["driver_version"], gpu["cuda_version"], gpu["count"]) == ("595.80", "13.2", 1)
    assert gpu["devices"][0]["name"] == "NVIDIA L40S"
    assert gpu["devices"][0]["pci_bus_id"] == "00000000:01:00.0"


def test_a_failing_nvidia_smi_is_recorded(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    # What nvidia-smi prints when the kernel driver is not loaded.
    smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed because it couldn'\\''t communicate "
                   "with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed "
                   "and running.'\nexit 9\n")
    smi.chmod(0o755)
    gpu = runsnap.capture([], env={"PATH": f"{bindir}:/usr/bin:/bin"}, cwd=tmp_path)["system"]["gpu"]
    assert gpu["available"] is False
    assert gpu["count"] == 0
    assert "exit status 9" in gpu["reason"]


def test_proc_and_sys_readings_agree_with_psutil(tmp_path: Path) -> None:
    psutil = pytest.importorskip("psutil")
    if not os.path.exists("/proc/meminfo"):
        pytest.skip("no /proc here: psutil itself is used")
    s = runsnap.capture([], env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path)["system"]
    assert s["cpu"]["physical"] == psutil.cpu_count(logical=False)
    assert s["memory"]["total_bytes"] == psutil.virtual_memory().total
