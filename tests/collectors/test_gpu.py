"""[system.gpu] against output recorded on real machines (fixtures/nvidia-smi, fixtures/amd-smi,
fixtures/rocm-smi; each file's source is in the README beside it), replayed by stand-in programs:
current drivers with the terminal underline in ``topo -m``, a MIG-enabled H100, an 8 x H100 node
with eleven NICs, PCIe-only boxes, the older ``topo -m`` header, an nvidia-smi that refuses
``compute_cap``, amd-smi as root and without device access, rocm-smi of two ROCm generations, and
no tools at all."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import runsnap
from runsnap.capturing.collectors.gpu import parse_amd, parse_query, parse_topology
from tests.conftest import asset

H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3",
        "uuid": "GPU-00000000-0000-0000-0000-000000000000", "memory_mib": 81559,
        "pci_bus_id": "00000000:00:09.0", "compute_capability": "9.0",
        "persistence_mode": "Enabled", "mig_mode": "Disabled", "ecc_mode": "Enabled",
        "power_limit_w": 700.0, "max_sm_clock_mhz": 1980, "max_memory_clock_mhz": 2619,
        "pcie_gen_max": 5, "pcie_width_max": 16}


def smi_path(tmp_path: Path, name: str | Path) -> str:
    """A PATH whose nvidia-smi replays the recordings in fixtures/nvidia-smi/NAME (or a folder)."""
    rec = name if isinstance(name, Path) else asset("nvidia-smi", name)
    folder = tmp_path / f"smi-{rec.name}"
    folder.mkdir()
    smi = folder / "nvidia-smi"
    smi.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{asset("nvidia-smi", "replay.py")}" '
                   f'"{rec}" "$@"\n')
    smi.chmod(0o755)
    return f"{folder}:/usr/bin:/bin"


def printing(tmp_path: Path, tool: str, recording: Path) -> str:
    """A folder holding a TOOL that prints RECORDING, whatever it is asked."""
    folder = tmp_path / f"{tool}-{recording.stem}"
    folder.mkdir()
    (folder / tool).write_text(f'#!/bin/sh\ncat "{recording}"\n')
    (folder / tool).chmod(0o755)
    return str(folder)


def gpu_of(tmp_path: Path, path: str) -> tuple[dict, list[str]]:
    system = runsnap.capture([], env={"PATH": path}, cwd=tmp_path)["system"]
    return system["gpu"], [e for e in system["errors"] if e.startswith("gpu:")]


def topo(name: str) -> dict:
    return parse_topology(asset("nvidia-smi", "topo", name).read_text())


def test_an_h100_on_driver_590_every_device_fact(tmp_path: Path) -> None:
    gpu, errors = gpu_of(tmp_path, smi_path(tmp_path, "h100-r590"))
    assert errors == []
    assert (gpu["available"], gpu["count"], gpu["driver_version"], gpu["cuda_version"]) == (
        True, 1, "590.48.01", "13.1")
    assert "unsupported_fields" not in gpu
    assert gpu["devices"] == [H100]


def test_topo_m_of_current_drivers_is_read_without_its_terminal_underline(tmp_path: Path) -> None:
    """Drivers since about R525 print ESC[4m ... ESC[0m around the header even into a pipe: the
    last column was taken for a device ("GPU NUMA ID\\x1b[0m") and the first for "\\x1b[4mGPU0"."""
    gpu, _ = gpu_of(tmp_path, smi_path(tmp_path, "h100-r590"))
    assert gpu["topology"] == {"links": {}, "affinity": {"GPU0": {"cpus": "0-19", "numa": "0"}},
                               "nics": {}}
    h100x8 = topo("h100x8-mlx5-r580.txt")
    assert not any("\x1b" in key or "NUMA ID" in key for key in h100x8["links"])
    assert h100x8["links"]["GPU0 GPU1"] == "NV18"


def test_eight_h100_with_eleven_nics() -> None:
    t = topo("h100x8-mlx5-r580.txt")
    assert len(t["nics"]) == 11
    assert t["nics"]["NIC9"] == "mlx5_10"  # mlx5_9 is not listed on that node: names, not counts
    assert len(t["links"]) == 19 * 18 // 2
    assert {t["links"][f"GPU{i} GPU{j}"] for i in range(8) for j in range(i + 1, 8)} == {"NV18"}
    assert (t["links"]["GPU0 mlx5_0"], t["links"]["GPU0 mlx5_1"], t["links"]["GPU0 mlx5_2"],
            t["links"]["GPU0 mlx5_6"]) == ("PIX", "PXB", "NODE", "SYS")
    assert t["links"]["GPU6 mlx5_8"] == "PIX"
    assert t["links"]["mlx5_10 mlx5_11"] == "PIX"
    assert t["affinity"]["GPU5"] == {"cpus": "56-111,168-223", "numa": "1"}


def test_pcie_only_boxes_and_the_older_header_without_a_nic_legend() -> None:
    rtx = topo("rtx4090x8-pcie.txt")  # NIC rows without trailing cells, no legend pasted
    assert {v for k, v in rtx["links"].items() if "NIC" not in k} == {"SYS"}
    assert (rtx["links"]["GPU6 NIC0"], rtx["links"]["NIC0 NIC1"]) == ("PHB", "PIX")
    assert rtx["nics"] == {}
    assert rtx["affinity"]["GPU4"] == {"cpus": "56-111,168-223", "numa": "1"}
    della = topo("a100x2-pcie-della-2021.txt")  # NICs named in the header, no GPU NUMA ID
    assert della == {"links": {"GPU0 GPU1": "SYS", "GPU0 mlx5_0": "NODE", "GPU0 mlx5_1": "SYS",
                               "GPU1 mlx5_0": "SYS", "GPU1 mlx5_1": "NODE",
                               "mlx5_0 mlx5_1": "SYS"},
                     "affinity": {"GPU0": {"cpus": "0-63", "numa": "0"},
                                  "GPU1": {"cpus": "64-127", "numa": "1"}},
                     "nics": {}}
    traverse = topo("v100x4-power9-traverse-2021.txt")
    assert (traverse["links"]["GPU0 GPU1"], traverse["links"]["GPU0 GPU2"]) == ("NV3", "SYS")
    assert traverse["affinity"]["GPU3"] == {"cpus": "64-127", "numa": "8"}
    assert parse_topology("No devices were found\n") == {}


def test_a_mig_enabled_h100_and_an_l40s_without_mig(tmp_path: Path) -> None:
    mig, errors = gpu_of(tmp_path, smi_path(tmp_path, "h100-mig-r590"))
    assert errors == [] and mig["devices"] == [{**H100, "mig_mode": "Enabled"}]
    l40s, errors = gpu_of(tmp_path, smi_path(tmp_path, "l40s-r595"))
    assert errors == []
    assert (l40s["driver_version"], l40s["cuda_version"]) == ("595.80", "13.2")
    assert l40s["devices"] == [{
        "index": 0, "name": "NVIDIA L40S", "uuid": "GPU-00000000-0000-0000-0000-000000000000",
        "memory_mib": 46068, "pci_bus_id": "00000000:01:00.0", "compute_capability": "8.9",
        "persistence_mode": "Disabled", "ecc_mode": "Enabled", "power_limit_w": 350.0,
        "max_sm_clock_mhz": 2520, "max_memory_clock_mhz": 9001, "pcie_gen_max": 4,
        "pcie_width_max": 16}]  # MIG mode [N/A] on an L40S: left out


def test_the_query_is_read_by_its_header_whatever_the_fields() -> None:
    """The recorded answer to a query for all 212 fields the driver knows, in nvidia-smi's own
    order (``index`` is the 29th column): each value is found by the header, units dropped."""
    assert parse_query(asset("nvidia-smi", "h100-r590", "query.csv").read_text()) == [
        {**H100, "driver_version": "590.48.01"}]


def test_an_nvidia_smi_that_refuses_compute_cap_is_asked_again_without_it(tmp_path: Path) -> None:
    """The refusal and the old header are recorded from an R470 nvidia-smi (inference-snaps#89);
    no full answer of that machine is published, so the other fields come from the L40S
    recording: this checks the retry, not one machine."""
    rec = tmp_path / "rec"
    rec.mkdir()
    (rec / "query.csv").write_text(asset("nvidia-smi", "l40s-r595", "query.csv").read_text())
    for name in ("header.txt", "refused.txt"):
        (rec / name).write_text(asset("nvidia-smi", "smi470-on-r580", name).read_text())
    gpu, errors = gpu_of(tmp_path, smi_path(tmp_path, rec))
    assert gpu["unsupported_fields"] == ["compute_cap"]
    assert (gpu["driver_version"], gpu["cuda_version"]) == ("580.95.05", "13.0")
    assert gpu["count"] == 1 and "compute_capability" not in gpu["devices"][0]
    assert gpu["devices"][0]["max_sm_clock_mhz"] == 2520
    assert len(errors) == 1 and "topo: not recorded" in errors[0]


def test_a_failing_topology_is_recorded_beside_working_devices(tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    rec.mkdir()
    for name in ("header.txt", "query.csv"):
        (rec / name).write_text(asset("nvidia-smi", "h100-r590", name).read_text())
    gpu, errors = gpu_of(tmp_path, smi_path(tmp_path, rec))
    assert gpu["count"] == 1 and "topology" not in gpu
    assert len(errors) == 1 and "topo: not recorded" in errors[0]


def test_eight_mi300x_from_amd_smi_before_rocm_smi(tmp_path: Path) -> None:
    amd_smi = printing(tmp_path, "amd-smi", asset("amd-smi", "mi300x8-rocm721.json"))
    rocm_smi = printing(tmp_path, "rocm-smi", asset("rocm-smi", "mi250-older.json"))
    gpu, errors = gpu_of(tmp_path, f"{amd_smi}:{rocm_smi}:/usr/bin:/bin")
    assert errors == []
    amd = gpu["amd"]
    assert (amd["tool"], amd["driver_version"], amd["count"]) == ("amd-smi", "6.16.13", 8)
    assert amd["devices"][0] == {"gpu": 0, "name": "AMD Instinct MI300X", "gfx_version": "gfx942",
                                 "pci_bus": "0000:1b:00.0", "vram_mib": 196592,
                                 "vram_type": "HBM"}
    assert [d["gpu"] for d in amd["devices"]] == list(range(8))


def test_amd_smi_without_device_access_prints_a_warning_before_its_json(tmp_path: Path) -> None:
    """Not in the render group: amd-smi prints a text banner, then JSON full of N/A."""
    amd_smi = printing(tmp_path, "amd-smi", asset("amd-smi", "mi300x8-rocm721-nonroot.txt"))
    gpu, errors = gpu_of(tmp_path, f"{amd_smi}:/usr/bin:/bin")
    assert errors == ["gpu: amd-smi: Permission needed to access required GPU device node(s):"]
    assert gpu["amd"]["count"] == 8 and gpu["amd"]["driver_version"] == ""
    assert gpu["amd"]["devices"][0] == {"gpu": 0, "pci_bus": "0000:1b:00.0"}


def test_amd_smi_list_shape_of_releases_before_rocm_7() -> None:
    """Before ROCm 7 ``static --json`` was a bare list (AMD's own blog indexes it with .[0]); the
    same recorded GPUs without the wrapper read the same."""
    import json

    text = asset("amd-smi", "mi300x8-rocm721.json").read_text()
    listed = json.dumps(json.loads(text)["gpu_data"])
    assert parse_amd(listed, "amd-smi") == parse_amd(text, "amd-smi")


def test_rocm_smi_of_two_rocm_generations_gives_the_same_keys(tmp_path: Path) -> None:
    rocm_smi = printing(tmp_path, "rocm-smi", asset("rocm-smi", "mi250-older.json"))
    gpu, errors = gpu_of(tmp_path, f"{rocm_smi}:/usr/bin:/bin")
    assert errors == []
    assert gpu["amd"] == {"tool": "rocm-smi", "driver_version": "6.2.4", "count": 1, "devices": [
        {"gpu": "card0", "name": "AMD INSTINCT MI250 (MCM) OAM AC MBA", "pci_bus": "0000:2F:00.0"}]}
    rx = parse_amd(asset("rocm-smi", "rx7900xt-rocm6.json").read_text(), "rocm-smi")
    assert rx["devices"] == [{"gpu": "card0", "name": "Radeon RX 7900 XT", "gfx_version": "gfx1100",
                              "vram_mib": 21458059264 >> 20}]
    mi250x = parse_amd(asset("rocm-smi", "mi250x-rocm6-productname.json").read_text(), "rocm-smi")
    assert mi250x["devices"][0]["name"] == "AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2"


def test_rocm_smi_with_nothing_to_report_is_recorded(tmp_path: Path) -> None:
    """The line rocm-smi prints when it has nothing to report as JSON (recorded in
    ROCm/legacy-rocm-build#4374)."""
    said = tmp_path / "said.txt"
    said.write_text("WARNING: No JSON data to report\n")
    gpu, errors = gpu_of(tmp_path, f"{printing(tmp_path, 'rocm-smi', said)}:/usr/bin:/bin")
    assert "amd" not in gpu
    assert errors == ["gpu: rocm-smi: output not understood: WARNING: No JSON data to report"]


def test_a_machine_without_any_tool_still_captures_with_reasons(tmp_path: Path) -> None:
    """An empty PATH: no nvidia-smi, no compiler, no nvcc, no python; the capture succeeds and
    says what it could not see."""
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {"PATH": str(empty)}
    snap = runsnap.capture(["serve"], env=env, cwd=tmp_path)
    system = snap["system"]
    if not os.path.exists("/proc/driver/nvidia"):  # else the driver's files answer instead
        assert system["gpu"] == {"available": False, "count": 0, "devices": [], "reason":
                                 "nvidia-smi not found on PATH, and no NVIDIA kernel driver is "
                                 "loaded (no /proc/driver/nvidia)"}
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
