"""[system.gpu] from NVML (runsnap/capturing/collectors/nvml.py) against the nvidia-smi path, both
answering from the same recordings of real machines: a stub ``libnvidia-ml.so.1`` built here
with ``cc`` (nvml_stub.c, nvml_stub.py) answers from the recorded nvidia-smi output, and the
recorded nvidia-smi is replayed as in test_gpu.py. The NVML path must give exactly what the
nvidia-smi path gives: every key, value and order, and the same errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import runsnap
from runsnap.capturing.collectors import gpu, nvml
from runsnap.capturing.collectors.gpu import parse_header, parse_query, parse_topology
from tests.collectors import nvml_stub
from tests.collectors.test_gpu import smi_path
from tests.conftest import ROOT, asset, run_runsnap

pytestmark = pytest.mark.skipif(nvml_stub.compiler() is None, reason="no C compiler")


def gpu_of(tmp_path: Path, env: dict[str, str]) -> tuple[dict, list[str], float]:
    snap = runsnap.capture([], env=env, cwd=tmp_path)
    system = snap["system"]
    return (system["gpu"], [e for e in system["errors"] if e.startswith("gpu:")],
            snap.meta["collect_ms"]["system.gpu"])


def topo_only(tmp_path: Path, machine: str) -> str:
    """A PATH whose nvidia-smi has only the recording's ``topo -m``: its query fails (the
    replay has no answer), so facts that match came from NVML."""
    rec = tmp_path / "topo-only" / machine
    rec.mkdir(parents=True)
    (rec / "topo.txt").write_text(asset("nvidia-smi", machine, "topo.txt").read_text())
    (tmp_path / "topo-only-smi").mkdir()
    return smi_path(tmp_path / "topo-only-smi", rec)


def stub(tmp_path: Path, name: str, facts: dict[str, str], **kw: tuple[str, ...]) -> str:
    return str(nvml_stub.build(tmp_path / f"nvml-{name}", facts, **kw))


@pytest.mark.parametrize("machine", ["h100-r590", "h100-mig-r590", "l40s-r595"])
def test_nvml_gives_exactly_what_nvidia_smi_gives(tmp_path: Path, machine: str) -> None:
    path = smi_path(tmp_path, machine)
    by_smi, smi_errors, _ = gpu_of(tmp_path, {"PATH": path})
    lib = stub(tmp_path, machine, nvml_stub.facts_of(asset("nvidia-smi", machine)))
    by_nvml, nvml_errors, _ = gpu_of(tmp_path, {"PATH": topo_only(tmp_path, machine),
                                                "LD_LIBRARY_PATH": lib})
    assert by_nvml.pop("nvidia_smi") != by_smi.pop("nvidia_smi")  # the topo-only replay's
    assert by_nvml == by_smi and nvml_errors == smi_errors == []
    assert list(by_nvml) == list(by_smi)
    assert [list(d) for d in by_nvml["devices"]] == [list(d) for d in by_smi["devices"]]
    assert by_nvml["available"] and by_nvml["count"] == 1


def test_an_h200_from_nvidia_smi_q_agrees_with_its_query_header_and_topology(
        tmp_path: Path) -> None:
    """The H200's stub answers from ``nvidia-smi -q -x``; its query, header and ``topo -m``,
    recorded on the same machine, are the reference (the query holds 10 of the 15 fields: the
    others are checked against -q as nvidia-smi printed them there)."""
    rec = asset("nvidia-smi", "h200-r580")
    lib = stub(tmp_path, "h200", nvml_stub.facts_of(rec))
    gpu, errors, _ = gpu_of(tmp_path, {"PATH": topo_only(tmp_path, "h200-r580"),
                                       "LD_LIBRARY_PATH": lib})
    assert errors == []
    queried = parse_query((rec / "query.csv").read_text())
    header = parse_header((rec / "header.txt").read_text())
    assert (gpu["driver_version"], gpu["cuda_version"]) == (
        header["driver_version"], header["cuda_version"]) == ("580.159.04", "13.0")
    assert queried[0].pop("driver_version") == "580.159.04"
    device = gpu["devices"][0]
    assert {k: device[k] for k in queried[0]} == queried[0]
    assert {k: v for k, v in device.items() if k not in queried[0]} == {
        "ecc_mode": "Enabled", "power_limit_w": 700.0, "max_memory_clock_mhz": 3201,
        "pcie_gen_max": 5, "pcie_width_max": 16}  # <current_ecc>, <requested_power_limit>,
    # <max_clocks><mem_clock>, <max_link_gen>, <max_link_width> of q.xml
    assert gpu["topology"] == parse_topology((rec / "topo.txt").read_text())
    assert (gpu["count"], gpu["available"], device["name"]) == (1, True, "NVIDIA H200")


def test_a_library_without_compute_capability_names_the_field(tmp_path: Path) -> None:
    """As nvidia-smi of R470 refuses ``compute_cap`` (test_gpu.py, same recordings), a library
    without ``nvmlDeviceGetCudaComputeCapability`` leaves it out and names it."""
    rec = tmp_path / "rec"
    rec.mkdir()
    (rec / "query.csv").write_text(asset("nvidia-smi", "l40s-r595", "query.csv").read_text())
    for name in ("header.txt", "refused.txt"):
        (rec / name).write_text(asset("nvidia-smi", "smi470-on-r580", name).read_text())
    path = smi_path(tmp_path, rec)
    by_smi, smi_errors, _ = gpu_of(tmp_path, {"PATH": path})
    facts = nvml_stub.from_query((rec / "query.csv").read_text(),
                                 (rec / "header.txt").read_text())
    lib = stub(tmp_path, "r470", facts, without=("WITHOUT_COMPUTE_CAP",))
    (tmp_path / "silent" / "rec").mkdir(parents=True)  # an nvidia-smi with nothing recorded
    silent = smi_path(tmp_path / "silent", tmp_path / "silent" / "rec")
    by_nvml, nvml_errors, _ = gpu_of(tmp_path, {"PATH": silent, "LD_LIBRARY_PATH": lib})
    assert by_nvml.pop("nvidia_smi") != by_smi.pop("nvidia_smi")
    assert by_nvml == by_smi and by_nvml["unsupported_fields"] == ["compute_cap"]
    assert [e.replace("/silent", "") for e in nvml_errors] == smi_errors
    assert len(smi_errors) == 1 and smi_errors[0].endswith("topo -m: topo: not recorded")


def test_nvml_that_cannot_start_leaves_the_nvidia_smi_path_unchanged(tmp_path: Path) -> None:
    """A library whose driver is not loaded (nvmlInit_v2: NVML_ERROR_DRIVER_NOT_LOADED) and no
    library at all: nvidia-smi answers, as before NVML was asked."""
    path = smi_path(tmp_path, "h100-r590")
    by_smi, _, _ = gpu_of(tmp_path, {"PATH": path})
    lib = stub(tmp_path, "none", {})
    (tmp_path / "nvml-none" / "facts.tsv").unlink()
    by_nvml, errors, _ = gpu_of(tmp_path, {"PATH": path, "LD_LIBRARY_PATH": lib})
    assert by_nvml == by_smi and errors == []
    reading = nvml.read(str(Path(lib) / nvml.LIBRARY))
    assert reading.failed == "NVML: nvmlInit_v2: Driver Not Loaded (error 9)"
    assert nvml.read(str(tmp_path / "nowhere.so")).absent.startswith("libnvidia-ml.so.1 not")


def test_nvml_without_nvidia_smi_gives_the_facts_without_topology(tmp_path: Path) -> None:
    """Containers often have the driver's library but no nvidia-smi: the facts come from NVML
    (before, only the kernel driver's files); topology needs nvidia-smi."""
    lib = stub(tmp_path, "h100", nvml_stub.facts_of(asset("nvidia-smi", "h100-r590")))
    by_smi, _, _ = gpu_of(tmp_path, {"PATH": smi_path(tmp_path, "h100-r590")})
    gpu, errors, _ = gpu_of(tmp_path, {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": lib})
    assert errors == []
    assert gpu == {k: v for k, v in by_smi.items() if k not in ("nvidia_smi", "topology")}


def test_the_library_is_looked_for_on_the_launch_s_library_path(tmp_path: Path) -> None:
    lib = stub(tmp_path, "h100", nvml_stub.facts_of(asset("nvidia-smi", "h100-r590")))
    env = {"LD_LIBRARY_PATH": f"{tmp_path}/empty::{lib}"}
    assert nvml.find_library(env) == f"{lib}/libnvidia-ml.so.1"
    assert nvml.find_library({}) == "libnvidia-ml.so.1"


def test_runsnap_no_nvml_asks_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = stub(tmp_path, "h100", nvml_stub.facts_of(asset("nvidia-smi", "h100-r590")))
    monkeypatch.setenv("RUNSNAP_NO_NVML", "1")
    gpu, errors, _ = gpu_of(tmp_path, {"PATH": topo_only(tmp_path, "h100-r590"),
                                       "LD_LIBRARY_PATH": lib})
    said = gpu.get("nvidia_smi_error") or gpu["reason"]  # the driver's files, or none here
    assert said.startswith("nvidia-smi failed (exit status 1)")  # the replay had no query
    assert not any("memory_mib" in d for d in gpu.get("devices", []))  # NVML's were not read


def test_runsnap_capture_starts_nvml_before_its_imports_and_reads_it_last(
        tmp_path: Path, hermetic_env: dict[str, str]) -> None:
    """``runsnap capture`` (a real process) begins the GPU facts with git, before the rest of
    runsnap is imported (gpu.prestart), and hands them to the capture."""
    lib = stub(tmp_path, "h100", nvml_stub.facts_of(asset("nvidia-smi", "h100-r590")))
    by_smi, _, _ = gpu_of(tmp_path, {"PATH": smi_path(tmp_path, "h100-r590")})
    env = {**hermetic_env, "PATH": topo_only(tmp_path, "h100-r590"), "LD_LIBRARY_PATH": lib}
    done = run_runsnap("capture", "-o", str(tmp_path / "s.toml"), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    gpu = runsnap.load(tmp_path / "s.toml")["system"]["gpu"]
    assert {k: v for k, v in gpu.items() if k != "nvidia_smi"} == {
        k: v for k, v in by_smi.items() if k != "nvidia_smi"}


def test_gpu_facts_begun_for_another_environment_are_not_taken_over(tmp_path: Path) -> None:
    """A head start made for one environment (its library path, its nvidia-smi) is stopped
    when the capture's environment differs, and the facts are read again for the capture's."""
    lib = stub(tmp_path, "h100", nvml_stub.facts_of(asset("nvidia-smi", "h100-r590")))
    early = gpu.prestart({"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": lib})
    assert early is not None
    snap = runsnap.capture([], env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path,
                           started={"system.gpu": early})
    assert "memory_mib" not in str(snap["system"]["gpu"])  # no library on this capture's path
    again = gpu.prestart({"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": lib})
    snap = runsnap.capture([], env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": lib},
                           cwd=tmp_path, started={"system.gpu": again})
    assert snap["system"]["gpu"]["devices"][0]["memory_mib"] == 81559


def test_no_driver_no_thread_and_no_ctypes(tmp_path: Path) -> None:
    """Where no NVIDIA driver is loaded, the system's NVML is not tried: no thread, no ctypes,
    no dlopen (a capture on a machine without an NVIDIA GPU pays nothing for NVML); the answer
    says why, and nvidia-smi's path is asked as before."""
    if any(os.path.exists(p) for p in ("/dev/nvidiactl", "/proc/driver/nvidia")):
        pytest.skip("an NVIDIA driver is loaded here")
    code = ("import sys, threading; from runsnap.capturing.collectors import nvml; "
            "asked = []; before = threading.active_count(); "
            "job = nvml.start({'PATH': '/usr/bin:/bin'}, lambda: asked.append(1)); "
            "print(threading.active_count() - before, 'ctypes' in sys.modules, asked, "
            "job.result(1).absent)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}, check=True)
    assert done.stdout.split(" ", 3)[:3] == ["0", "False", "[1]"], done.stdout
    assert "no NVIDIA driver loaded" in done.stdout
