"""[system.gpu]: recorded nvidia-smi answers of a current and an older driver (fixtures/nvidia-smi,
replayed by a stand-in program), topo -m in both formats, rocm-smi, and no tools at all."""

from __future__ import annotations

import os
from pathlib import Path

import runsnap
from runsnap.collectors.gpu import parse_topology
from tests.conftest import asset


def smi_path(tmp_path: Path, name: str) -> str:
    """A PATH whose nvidia-smi replays fixtures/nvidia-smi/NAME."""
    folder = tmp_path / f"smi-{name}"
    folder.mkdir()
    smi = folder / "nvidia-smi"
    smi.write_text(f'#!/bin/sh\nexec "{asset("nvidia-smi", "replay")}" '
                   f'"{asset("nvidia-smi", name)}" "$@"\n')
    smi.chmod(0o755)
    return f"{folder}:/usr/bin:/bin"


def gpu_of(tmp_path: Path, path: str) -> tuple[dict, list[str]]:
    system = runsnap.capture([], env={"PATH": path}, cwd=tmp_path)["system"]
    return system["gpu"], [e for e in system["errors"] if e.startswith("gpu:")]


def test_current_driver_every_device_fact_and_the_topology(tmp_path: Path) -> None:
    gpu, errors = gpu_of(tmp_path, smi_path(tmp_path, "h100x8"))
    assert errors == []
    assert (gpu["available"], gpu["count"], gpu["driver_version"], gpu["cuda_version"]) == (
        True, 8, "550.54.15", "12.4")
    assert "unsupported_fields" not in gpu
    dev = gpu["devices"][3]
    assert dev == {"index": 3, "name": "NVIDIA H100 80GB HBM3",
                   "uuid": "GPU-3a6f3c1e-2b7d-4e8a-9c0f-1d2e3f4a5b63", "memory_mib": 81559,
                   "pci_bus_id": "00000000:5D:00.0", "compute_capability": "9.0",
                   "persistence_mode": "Enabled", "mig_mode": "Disabled", "ecc_mode": "Enabled",
                   "power_limit_w": 700.0, "max_sm_clock_mhz": 1980,
                   "max_memory_clock_mhz": 2619, "pcie_gen_max": 5, "pcie_width_max": 16}
    topo = gpu["topology"]
    assert topo["nics"] == {"NIC0": "mlx5_0", "NIC1": "mlx5_1"}
    assert topo["links"]["GPU0 GPU7"] == "NV18"
    assert topo["links"]["GPU0 mlx5_0"] == "PXB"
    assert topo["links"]["GPU2 mlx5_0"] == "NODE"
    assert topo["links"]["GPU5 mlx5_0"] == "SYS"
    assert topo["links"]["mlx5_0 mlx5_1"] == "SYS"
    assert len(topo["links"]) == 45  # every pair of 10 devices once
    assert topo["affinity"]["GPU6"] == {"cpus": "48-95,144-191", "numa": "1"}


def test_older_driver_refusing_compute_cap(tmp_path: Path) -> None:
    gpu, errors = gpu_of(tmp_path, smi_path(tmp_path, "v100x4-r470"))
    assert errors == []
    assert gpu["unsupported_fields"] == ["compute_cap"]
    assert (gpu["count"], gpu["driver_version"], gpu["cuda_version"]) == (4, "470.103.01", "11.4")
    dev = gpu["devices"][0]
    assert "compute_capability" not in dev
    assert "mig_mode" not in dev  # [N/A] on a V100
    assert (dev["persistence_mode"], dev["ecc_mode"], dev["power_limit_w"]) == (
        "Enabled", "Enabled", 300.0)
    topo = gpu["topology"]
    assert topo["nics"] == {}  # older drivers name the NIC in the header
    assert topo["links"]["GPU0 mlx5_0"] == "PIX"
    assert topo["links"]["GPU0 GPU3"] == "NV2"
    assert topo["affinity"]["GPU2"] == {"cpus": "20-39,60-79", "numa": "1"}


def test_topology_without_numa_affinity_column() -> None:
    text = ("\tGPU0\tGPU1\tCPU Affinity\n"
            "GPU0\t X \tPHB\t0-7\n"
            "GPU1\tPHB\t X \t0-7\n\nLegend:\n")
    assert parse_topology(text) == {"links": {"GPU0 GPU1": "PHB"},
                                    "affinity": {"GPU0": {"cpus": "0-7"},
                                                 "GPU1": {"cpus": "0-7"}},
                                    "nics": {}}
    assert parse_topology("No devices were found\n") == {}


def test_a_failing_topology_is_recorded_beside_working_devices(tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    rec.mkdir()
    for name in ("header.txt", "query.csv"):
        (rec / name).write_text(asset("nvidia-smi", "h100x8", name).read_text())
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text(f'#!/bin/sh\nexec "{asset("nvidia-smi", "replay")}" "{rec}" "$@"\n')
    smi.chmod(0o755)
    gpu, errors = gpu_of(tmp_path, f"{smi.parent}:/usr/bin:/bin")
    assert gpu["count"] == 8 and "topology" not in gpu
    assert len(errors) == 1 and "topo: not recorded" in errors[0]


def test_amd_gpus_from_rocm_smi(tmp_path: Path) -> None:
    gpu, errors = gpu_of(tmp_path, f"{asset('rocm-smi')}:/usr/bin:/bin")
    assert errors == []
    amd = gpu["amd"]
    assert (amd["driver_version"], amd["count"]) == ("6.3.6", 2)
    assert amd["devices"][1]["gfx_version"] == "gfx90a"
    assert amd["devices"][1]["pci_bus"] == "0000:C6:00.0"
    assert amd["devices"][0]["vram_total_memory_b"] == "68702699520"


def test_a_machine_without_any_tool_still_captures_with_reasons(tmp_path: Path) -> None:
    """An empty PATH: no nvidia-smi, no compiler, no nvcc, no python; the capture succeeds and
    says what it could not see."""
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {"PATH": str(empty)}
    snap = runsnap.capture(["serve"], env=env, cwd=tmp_path)
    system = snap["system"]
    assert system["gpu"] == {"available": False, "reason": "nvidia-smi not found on PATH",
                             "count": 0, "devices": []}
    tools = system["toolchain"]
    for name in ("cc", "cxx", "gcc", "clang", "ninja", "cmake"):
        assert tools[name] == {"found": False}, name
    # torch's last guess for CUDA_HOME is /usr/local/cuda, PATH or not
    if os.path.exists("/usr/local/cuda/bin/nvcc"):
        assert tools["nvcc"]["path"] == "/usr/local/cuda/bin/nvcc"
    else:
        assert tools["nvcc"] == {"found": False}
    if not os.path.exists("/usr/local/cuda"):
        assert tools["cuda_home"] == ""
    assert "limits" in system and "network" in system and "cpu" in system
    assert snap["packages"]["count"] > 0  # runsnap's own interpreter, said so
    assert "runsnap's own" in snap["packages"]["reason"]


def test_amd_gpus_from_amd_smi_before_rocm_smi(tmp_path: Path) -> None:
    both = f"{asset('amd-smi')}:{asset('rocm-smi')}:/usr/bin:/bin"
    gpu, errors = gpu_of(tmp_path, both)
    assert errors == []
    amd = gpu["amd"]
    assert (amd["driver_version"], amd["count"]) == ("6.8.5", 2)
    assert amd["devices"][1] == {"gpu": 1, "market_name": "AMD Instinct MI300X",
                                 "gfx_version": "gfx942", "pci_bus": "0000:26:00.0",
                                 "vram_type": "HBM3", "vram_mb": 196592}


def test_amd_smi_list_shape_of_older_releases() -> None:
    from runsnap.collectors.gpu import parse_amd_smi

    text = asset("amd-smi", "mi300x2.json").read_text()
    import json

    listed = json.dumps(json.loads(text)["gpu_data"])
    assert parse_amd_smi(listed) == parse_amd_smi(text)
