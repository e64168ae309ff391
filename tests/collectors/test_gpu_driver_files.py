"""[system.gpu] without nvidia-smi: the NVIDIA kernel driver's own files, as real machines wrote
them (fixtures/proc-nvidia; each file's source is in the README beside them): the proprietary
and the open kernel module's version lines of four releases, GPUs whose ``information`` has tabs
(as the driver writes it) or spaces (as people paste it), and a driver too old to say its device
minor. Whole captures run with a PATH without nvidia-smi and the driver's files read from a
recorded tree (``gpu.DRIVER_ROOT``, the test-only seam); this machine has no GPU."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

import runsnap
from runsnap.capturing.collectors import gpu as gpu_collector
from runsnap.capturing.collectors import nvdriver
from runsnap.capturing.collectors.nvdriver import parse_version, read_driver
from tests.collectors.test_gpu import smi_path
from tests.collectors.test_torch_build import install_torch
from tests.conftest import asset

GTX1660 = {"name": "NVIDIA GeForce GTX 1660 SUPER",
           "uuid": "GPU-12345678-1234-1234-1234-1234567890ab", "vbios_version": "90.16.48.00.aa",
           "bus_type": "PCIe", "pci_bus_id": "00000000:01:00.0", "minor": 0, "excluded": False,
           "device_node": "/dev/nvidia0"}


def tree(name: str) -> str:
    return str(asset("proc-nvidia", name))


def machine(tmp_path: Path, name: str, nodes: tuple[str, ...]) -> Path:
    """A root holding the recorded ``/proc`` of NAME and the device nodes ``nodes`` (names under
    /dev; only their existence is read)."""
    root = tmp_path / f"root-{name}-{len(nodes)}"
    shutil.copytree(asset("proc-nvidia", name), root)
    (root / "dev").mkdir()
    for node in nodes:
        (root / "dev" / node).touch()
    return root


def test_version_lines_of_both_kernel_modules_and_four_releases() -> None:
    for name, version, module in (("gtx1660super-r525", "525.105.17", "proprietary"),
                                  ("r384-neofetch", "384.98", "proprietary"),
                                  ("open-515-arch", "515.43.04", "open"),
                                  ("open-555-gentoo", "555.58", "open")):
        found = read_driver(tree(name))
        assert (found["loaded"], found["driver_version"], found["kernel_module"]) == (
            True, version, module), name
        assert found["errors"] == [], name
    assert parse_version("GCC version:  gcc version 12.1.0 (GCC)") == {}


def test_a_gpu_the_container_was_not_given_is_listed_but_not_counted(tmp_path: Path) -> None:
    """The recorded tree alone has no /dev: the GPU is listed, its node missing, none usable."""
    found = read_driver(tree("gtx1660super-r525"))
    assert (found["listed"], found["count"], found["control_node"]) == (1, 0, False)
    assert found["devices"] == [{**GTX1660, "usable": False}]
    given = read_driver(str(machine(tmp_path, "gtx1660super-r525", ("nvidiactl", "nvidia0"))))
    assert (found["driver_version"], given["listed"], given["count"]) == ("525.105.17", 1, 1)
    assert given["devices"] == [{"index": 0, **GTX1660, "usable": True}]


def test_information_with_the_drivers_tabs_and_without_a_version_file() -> None:
    found = read_driver(tree("l4-snapd"))
    assert found["devices"] == [{
        "name": "NVIDIA L4", "uuid": "GPU-3291dfa4-fcc4-0110-615b-c894a0d7c689",
        "vbios_version": "95.04.65.00.13", "bus_type": "PCIe", "pci_bus_id": "00000000:70:00.0",
        "minor": 0, "excluded": False, "device_node": "/dev/nvidia0", "usable": False}]
    assert found["driver_version"] == ""
    assert found["errors"] == ["/proc/driver/nvidia/version and /sys/module/nvidia/version: not "
                               "readable; the driver version is unknown"]


def test_a_driver_too_old_to_say_its_device_minor() -> None:
    found = read_driver(tree("gtx650-lxd"))
    assert found["devices"] == [{"name": "GeForce GTX 650",
                                 "uuid": "GPU-e3f822b9-8c5f-95a5-b379-8dfdeefd7758",
                                 "vbios_version": "80.07.35.00.80", "bus_type": "PCIe",
                                 "pci_bus_id": "00000000:04:00.0"}]
    assert found["count"] == 0


def test_no_driver_at_all(tmp_path: Path) -> None:
    assert read_driver(str(tmp_path)) == {"loaded": False, "errors": []}


def capture(tmp_path: Path, root: Path | str, monkeypatch: pytest.MonkeyPatch,
            path: str | None = None, **env: str) -> runsnap.Snapshot:
    """A real capture of a Python child whose site holds a CUDA 12.8 torch build (a real
    wheel's files), with no nvidia-smi on PATH unless ``path`` says otherwise."""
    monkeypatch.setattr(gpu_collector, "DRIVER_ROOT", str(root))
    site = tmp_path / "site"
    if not site.exists():
        install_torch(site, "cu128-2.9.0")
    if path is None:
        empty = tmp_path / "no-tools"
        empty.mkdir(exist_ok=True)
        path = str(empty)
    return runsnap.capture([sys.executable, "-c", "pass"],
                           env={"PATH": path, "PYTHONPATH": str(site), **env}, cwd=tmp_path)


def test_a_capture_without_nvidia_smi_reads_the_driver(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root = machine(tmp_path, "gtx1660super-r525", ("nvidiactl", "nvidia0"))
    snap = capture(tmp_path, root, monkeypatch)
    gpu = snap["system"]["gpu"]
    assert gpu == {"available": True, "source": "/proc/driver/nvidia",
                   "nvidia_smi_error": "nvidia-smi not found on PATH", "cuda_version": "12.0",
                   "cuda_version_from": "inferred from driver branch 525 (NVIDIA: CUDA 12.0 "
                                        "ships with it)",
                   "driver_version": "525.105.17", "kernel_module": "proprietary", "count": 1,
                   "listed": 1, "devices": [{"index": 0, **GTX1660, "usable": True}]}
    torch = snap["packages"]["builds"]["torch"]
    # torch built with CUDA 12.8 runs on a 12.0 driver by minor-version compatibility
    assert torch["cuda_available"] is True
    assert torch["cuda_available_reason"] == (
        "torch 2.9.0+cu128 is built with CUDA 12.8; 1 of 1 GPU(s) visible; driver 525.105.17: "
        "the driver supports CUDA 12.0: the build's CUDA 12.8 runs on it by minor-version "
        "compatibility (kernels that need PTX JIT of a newer CUDA can still fail) (inferred "
        "from driver branch 525 (NVIDIA: CUDA 12.0 ships with it))")
    shown = runsnap.render_text(snap)
    assert ("1 x NVIDIA GeForce GTX 1660 SUPER; driver 525.105.17, CUDA 12.0 (from the driver "
            "branch)") in shown
    assert "GPUs read from /proc/driver/nvidia (nvidia-smi not found on PATH)" in shown
    # a snapshot on disk fits the schema and reads back the same
    snap.save(tmp_path / "snap.toml")
    assert runsnap.load(tmp_path / "snap.toml")["system"]["gpu"] == gpu


def test_a_container_that_sees_the_gpu_but_has_no_device_node(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snap = capture(tmp_path, machine(tmp_path, "gtx1660super-r525", ("nvidiactl",)),
                   monkeypatch)
    gpu = snap["system"]["gpu"]
    assert (gpu["available"], gpu["count"], gpu["listed"]) == (False, 0, 1)
    assert gpu["count_note"] == ("count is the 0 of the 1 GPU(s) the driver lists whose device "
                                 "node (/dev/nvidiaN) this process has")
    assert gpu["reason"] == (
        "nvidia-smi not found on PATH; the driver lists 1 GPU(s), none usable by this process "
        "(00000000:01:00.0: no /dev/nvidia0; a container is given only some device nodes) "
        "(/proc/driver/nvidia)")
    torch = snap["packages"]["builds"]["torch"]
    assert torch["cuda_available"] is False
    assert torch["cuda_available_reason"].endswith("no NVIDIA GPU is usable: " + gpu["reason"])


def test_an_nvidia_smi_that_fails_falls_back_and_keeps_its_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """nvidia-smi present but NVML broken (``Failed to initialize NVML: Unknown Error``, exit
    255, as nvidia-smi prints it when the user-space library cannot talk to the driver)."""
    tools = tmp_path / "broken-smi"
    tools.mkdir()
    (tools / "nvidia-smi").write_text(
        "#!/bin/sh\necho 'Failed to initialize NVML: Unknown Error'\nexit 255\n")
    (tools / "nvidia-smi").chmod(0o755)
    root = machine(tmp_path, "gtx1660super-r525", ("nvidiactl", "nvidia0"))
    snap = capture(tmp_path, root, monkeypatch, path=f"{tools}:/usr/bin:/bin")
    gpu = snap["system"]["gpu"]
    assert gpu["nvidia_smi"] == str(tools / "nvidia-smi")
    assert gpu["nvidia_smi_error"] == ("nvidia-smi failed (exit status 255): Failed to "
                                       "initialize NVML: Unknown Error")
    assert (gpu["available"], gpu["source"], gpu["driver_version"], gpu["count"]) == (
        True, "/proc/driver/nvidia", "525.105.17", 1)


def test_no_driver_and_no_nvidia_smi_says_both(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    snap = capture(tmp_path, tmp_path / "empty-root", monkeypatch)
    assert snap["system"]["gpu"] == {
        "available": False, "count": 0, "devices": [],
        "reason": "nvidia-smi not found on PATH, and no NVIDIA kernel driver is loaded (no "
                  "/proc/driver/nvidia)"}


def test_diff_of_the_same_gpus_seen_by_nvidia_smi_and_by_the_driver_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What only nvidia-smi knows is not a difference; the source is, low; a GPU the container
    lost is a likely cause."""
    given = capture(tmp_path, machine(tmp_path, "gtx1660super-r525", ("nvidiactl", "nvidia0")),
                    monkeypatch)
    lost = capture(tmp_path, machine(tmp_path, "gtx1660super-r525", ("nvidiactl",)), monkeypatch)
    keys = {d.key for d in runsnap.diff(given, lost).differences if d.section == "system"}
    assert {"gpu.available", "gpu.count", "gpu.models", "gpu.uuids"} <= keys
    smi = capture(tmp_path, "/nonexistent", monkeypatch, path=smi_path(tmp_path, "h100-r590"))
    keys = {d.key for d in runsnap.diff(smi, given).differences if d.section == "system"}
    assert "gpu.source" in keys
    assert "gpu.cuda_version" in keys  # 13.1 said by nvidia-smi, 12.0 from branch 525
    # a branch runsnap's table does not hold: its CUDA is unknown, which is no difference
    later = {**given["system"], "gpu": {**given["system"]["gpu"], "cuda_version": "",
                                        "driver_version": "999.1"}}
    keys = {d.key for d in runsnap.diff(given.replace(sections={**given.sections, "system":
                                                                 later}),
                                        smi).differences if d.section == "system"}
    assert "gpu.cuda_version" not in keys and "gpu.driver_version" in keys
    assert not any(k.startswith("gpu.") and k.split(".")[1] in (
        "compute_capability", "power_limit_w", "topology") for k in keys)


def test_the_schema_knows_the_driver_files_fields() -> None:
    """A snapshot is checked on load: the new fields are accepted with their types, refused
    with another."""
    from runsnap.errors import SnapshotError
    from runsnap.snapshot.validate import validate_section

    found = read_driver(tree("gtx1660super-r525"))
    good = {"gpu": {"available": False, "source": "/proc/driver/nvidia", "listed": 1,
                    "nvidia_smi_error": "nvidia-smi not found on PATH", "count_note": "...",
                    "kernel_module": "proprietary", "control_node": False,
                    "devices": found["devices"]}}
    validate_section("system", good)
    for key, value in (("usable", "yes"), ("minor", "0"), ("excluded", 1)):
        bad = {"gpu": {**good["gpu"], "devices": [{**found["devices"][0], key: value}]}}
        with pytest.raises(SnapshotError):
            validate_section("system", bad)
    with pytest.raises(SnapshotError):
        validate_section("system", {"gpu": {**good["gpu"], "listed": "1"}})


def test_the_cuda_of_a_driver_branch_is_what_recorded_nvidia_smi_headers_say() -> None:
    """runsnap's table of driver branches against every nvidia-smi header recorded on a real
    machine (fixtures/nvidia-smi), and the /proc recordings' drivers all in it."""
    seen = {}
    for path in Path(asset("nvidia-smi")).rglob("*"):
        if path.is_file():
            for m in re.finditer(r"Driver Version: ([\d.]+)\s+CUDA Version: ([\d.]+)",
                                 path.read_text(errors="replace")):
                seen[m[1]] = m[2]
    assert len(seen) >= 4
    for driver, cuda in seen.items():
        assert nvdriver.cuda_for_driver(driver)[0] == cuda, driver
    for name in ("gtx1660super-r525", "open-515-arch", "open-555-gentoo", "r384-neofetch"):
        version = read_driver(tree(name))["driver_version"]
        assert nvdriver.cuda_for_driver(version)[0], (name, version)
    cuda, why = nvdriver.cuda_for_driver("605.12")
    assert cuda == "" and "not in runsnap's table" in why
