"""A variable that chooses among NVIDIA GPUs decides nothing on hosts without one
(runsnap/diffing/ambient.py, ``no_device_to_choose``): torch's CPU build reads
``CUDA_VISIBLE_DEVICES`` natively (a library looking for a device), and the runs of a job on two
CPU-only shells differ in it. Two real traced launches each; the native reader is a library
built here with the C compiler, reading the variable each time it is asked for a device count
as the CUDA runtime does (``cudaGetDeviceCount``); the hosts' GPU facts are what the collector
records with no NVIDIA driver (an empty driver root, no nvidia-smi on PATH) or with an H100's
recorded nvidia-smi (tests/collectors/fixtures/nvidia-smi/h100-r590)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from runsnap.capturing import run
from runsnap.capturing.collectors import gpu as gpu_collector
from runsnap.diffing import compare
from runsnap.snapshot import Snapshot
from tests.collectors.test_gpu import smi_path
from tests.diffing.conftest import shared_library, write_script

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

RUNTIME = r"""
#include <stdlib.h>
#include <string.h>
int devices(void) {
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    if (!v) return 8;
    if (!*v) return 0;
    int n = 1;
    for (const char *p = v; *p; p++) n += *p == ',';
    return n;
}
"""

PROGRAM = """
    import ctypes, os, sys

    rt = ctypes.CDLL(sys.argv[1])

    def train():
        lr = float(os.environ.get("TRAIN_LR", "0.1"))
        device = "cuda" if rt.devices() and os.path.exists("/dev/nvidia0") else "cpu"
        print(f"device={device} loss={3 * lr:.4f}")

    train()
    """


def _pair(tmp_path: Path, path: str, lib: Path) -> tuple[Snapshot, Snapshot]:
    app = write_script(tmp_path, "train.py", PROGRAM)
    snaps = []
    for name, env in (("a", {"TRAIN_LR": "0.1", "CUDA_VISIBLE_DEVICES": "0,1"}),
                      ("b", {"TRAIN_LR": "0.2", "CUDA_VISIBLE_DEVICES": "1"})):
        snaps.append(run([sys.executable, str(app), str(lib)],
                         env={"PATH": path, "HOME": str(tmp_path), **env}, cwd=tmp_path,
                         output=tmp_path / f"{name}.toml").snapshot)
    return snaps[0], snaps[1]


@pytest.fixture
def runtime(tmp_path: Path) -> Path:
    return shared_library(tmp_path, "rt-like", RUNTIME)


@needs_cc
def test_a_device_choice_read_natively_on_hosts_without_a_gpu_decides_nothing(
        tmp_path: Path, runtime: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No NVIDIA driver on either host: the native read chose among no GPU; the learning rate
    the program read is the one cause the runs show."""
    monkeypatch.setattr(gpu_collector, "DRIVER_ROOT", str(tmp_path / "no-driver"))
    empty = tmp_path / "bin"
    empty.mkdir()
    a, b = _pair(tmp_path, str(empty), runtime)
    assert a["system"]["gpu"]["available"] is False
    report = compare(a, b)
    cvd = next(d for d in report.counted if d.key == "CUDA_VISIBLE_DEVICES")
    assert cvd.evidence_kind == "incidental", cvd.reason
    assert "neither run's host had one" in cvd.reason
    assert (report.candidates[0].key, report.confidence) == ("TRAIN_LR", "confident"), \
        report.verdict()


@needs_cc
def test_on_a_host_with_a_gpu_the_device_choice_stays_a_decision(
        tmp_path: Path, runtime: Path) -> None:
    """The same launches on a host whose nvidia-smi lists an H100: the variable chose which
    GPUs the program saw, read evidence beside the learning rate."""
    a, b = _pair(tmp_path, smi_path(tmp_path, "h100-r590"), runtime)
    assert a["system"]["gpu"]["available"] is True
    report = compare(a, b)
    cvd = next(d for d in report.counted if d.key == "CUDA_VISIBLE_DEVICES")
    assert cvd.evidence_kind == "read", cvd.reason
    assert report.confidence == "undecided"
    assert {d.key for d in report.candidates} == {"TRAIN_LR", "CUDA_VISIBLE_DEVICES"}
