"""[system] CPU layout, cgroup, resource limits and network: this machine's real files, checked
against the tools that read them too (lscpu, the shell's ulimit, if_nameindex), and recorded
/sys and /proc trees (fixtures/sysfs) for machines this one is not."""

from __future__ import annotations

import os
import re
import resource
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

import runsnap
from runsnap.capturing.collectors import cgroup, cpu, limits, network
from tests.conftest import asset

P5 = str(asset("sysfs", "p5-h100x8"))


def lscpu() -> dict[str, str]:
    if shutil.which("lscpu") is None:
        pytest.skip("no lscpu on this machine")
    out = subprocess.run(["lscpu"], capture_output=True, text=True, env={"LC_ALL": "C",
                         "PATH": os.environ["PATH"]}, check=True).stdout
    return {k.strip(): v.strip() for k, _, v in (ln.partition(":") for ln in out.splitlines())}


def test_cpu_layout_agrees_with_lscpu() -> None:
    if not os.path.exists("/proc/cpuinfo"):
        pytest.skip("no /proc/cpuinfo here")
    seen = lscpu()
    layout = cpu.read_layout("/")
    assert layout["errors"] == []
    c = layout["cpu"]
    if "Flags" in seen:
        assert c["flags"] == sorted(seen["Flags"].split())
    if "Vendor ID" in seen:
        assert c["vendor"] == seen["Vendor ID"]
    if "Socket(s)" in seen and seen["Socket(s)"].isdigit():
        assert c["sockets"] == int(seen["Socket(s)"])
    if "Thread(s) per core" in seen:
        assert c["threads_per_core"] == int(seen["Thread(s) per core"])
    if "NUMA node(s)" in seen:
        assert layout["numa"]["count"] == int(seen["NUMA node(s)"])
    for name in ("L1d", "L1i", "L2", "L3"):
        m = re.match(r"([\d.]+) (KiB|MiB) \((\d+) instances?\)", seen.get(f"{name} cache", ""))
        if m:
            total = float(m[1]) * (1024 if m[2] == "MiB" else 1)
            got = c["caches"][name]
            assert got["instances"] == int(m[3])
            assert got["size_kib"] * got["instances"] == total
    if seen.get("Hypervisor vendor"):
        assert c["hypervisor"]["present"] is True


def test_recorded_gpu_node_layout() -> None:
    layout = cpu.read_layout(P5)
    c = layout["cpu"]
    assert {"amx_bf16", "amx_int8", "amx_tile", "avx512_fp16", "avx2"} <= set(c["flags"])
    assert (c["vendor"], c["family"], c["model_number"], c["stepping"]) == (
        "GenuineIntel", 6, 143, 8)
    assert c["vulnerabilities"] == {"spectre_v2": "Mitigation; Enhanced / Automatic IBRS; IBPB "
                                    "conditional; RSB filling; PBRSB-eIBRS SW sequence; BHI "
                                    "BHI_DIS_S"}
    assert (c["sockets"], c["threads_per_core"], c["smt"]) == (2, 2, {"active": True,
                                                                     "control": "on"})
    assert c["caches"]["L3"] == {"size_kib": 107520, "instances": 2}
    assert c["caches"]["L1d"] == {"size_kib": 48, "instances": 4}
    assert c["hypervisor"] == {"present": True, "vendor": "Amazon EC2 p5.48xlarge"}
    assert layout["numa"] == {"count": 2, "nodes": {
        "node0": {"cpus": "0-3", "memory_bytes": 1056729506 * 1024},
        "node1": {"cpus": "4-7", "memory_bytes": 1056729506 * 1024}}}
    assert layout["memory"] == {"swap_total_bytes": 0, "transparent_hugepage": "madvise",
                                "hugepages": {"total": 1024, "free": 1000, "size_kib": 2048}}


def test_an_unreadable_tree_is_an_error_not_a_crash(tmp_path: Path) -> None:
    layout = cpu.read_layout(str(tmp_path))
    assert layout["cpu"]["flags"] == []
    assert "cpuinfo" in layout["errors"][0]
    assert cgroup.read_cgroup(str(tmp_path))["errors"] == [
        "/proc/self/cgroup not readable: no cgroup facts"]
    net = network.read_network(str(tmp_path))
    assert net["network"]["interfaces"] == {}
    assert "not readable" in net["errors"][0]


def test_cgroup_v2_container_budget() -> None:
    found = cgroup.read_cgroup(P5)
    assert found == {"version": 2, "path": "/kubepods.slice/pod1234/cri-containerd-abc.scope",
                     "cpu_limit": 16.0, "cpuset": "0-7", "memory_limit_bytes": 256 * 1024**3,
                     "memory_high_bytes": "unlimited", "pids_limit": "unlimited", "errors": []}


def test_cgroup_v1_with_a_joint_cpu_mount() -> None:
    found = cgroup.read_cgroup(str(asset("sysfs", "cgroup-v1")))
    assert found["version"] == 1
    assert found["cpu_limit"] == 4.0
    assert found["memory_limit_bytes"] == 64 * 1024**3
    assert found["cpuset"] == "0-63"


def test_cgroup_of_this_machine() -> None:
    if not os.path.exists("/proc/self/cgroup"):
        pytest.skip("no cgroups here")
    found = cgroup.read_cgroup("/")
    assert found["version"] in (1, 2)
    assert found["errors"] == []


def test_limits_are_what_the_shell_reports() -> None:
    got = limits.read_limits()["limits"]
    shell = subprocess.run(["sh", "-c", "ulimit -n; ulimit -l; ulimit -s"], capture_output=True,
                           text=True, check=True).stdout.split()
    nofile, memlock_kib, stack_kib = shell
    assert str(got["nofile"]["soft"]) == nofile
    expect_memlock = "unlimited" if memlock_kib == "unlimited" else int(memlock_kib) * 1024
    assert got["memlock"]["soft"] == expect_memlock
    expect_stack = "unlimited" if stack_kib == "unlimited" else int(stack_kib) * 1024
    assert got["stack"]["soft"] == expect_stack


def test_a_lower_memlock_in_the_child_environment_is_recorded(tmp_path: Path) -> None:
    """The child inherits runsnap's limits: a capture under a lowered limit records it."""
    code = ("import resource, runsnap; resource.setrlimit(resource.RLIMIT_MEMLOCK, (65536, "
            "resource.getrlimit(resource.RLIMIT_MEMLOCK)[1])); "
            "print(runsnap.capture([], env={'PATH': '/usr/bin:/bin'})['system']['limits']"
            "['memlock']['soft'])")
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if hard != resource.RLIM_INFINITY and hard < 65536:
        pytest.skip("memlock hard limit below 64 KiB here")
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, check=True)
    assert out.stdout.strip() == "65536"


def test_network_of_this_machine_lists_every_interface() -> None:
    if not os.path.isdir("/sys/class/net"):
        pytest.skip("no /sys/class/net here")
    found = network.read_network("/")["network"]
    assert sorted(found["interfaces"]) == sorted(name for _, name in socket.if_nameindex())
    for iface in found["interfaces"].values():
        assert iface["state"] in ("up", "down", "unknown", "dormant", "lowerlayerdown",
                                  "notpresent", "testing")
        assert iface["mtu"] > 0


def test_infiniband_ports_and_peer_memory_of_a_gpu_node() -> None:
    found = network.read_network(P5)
    net = found["network"]
    assert found["errors"] == []
    assert net["interfaces"]["ib0"] == {"state": "up", "mtu": 4092, "type": "infiniband",
                                        "speed_mbps": 400000, "driver": "mlx5_core"}
    assert net["interfaces"]["ib1"]["state"] == "down"
    assert "bonding_masters" not in net["interfaces"]
    assert net["infiniband"]["mlx5_0"]["ports"]["1"] == {
        "state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": "400 Gb/sec (4X NDR)",
        "link_layer": "InfiniBand"}
    assert net["infiniband"]["mlx5_1"]["netdevs"] == ["ib1"]
    assert net["peer_memory"] == ["nvidia_peermem"]
    assert "ext4" not in net["modules"] and "mlx5_ib" in net["modules"]


def test_capture_puts_every_part_into_system_with_its_own_time(tmp_path: Path) -> None:
    snap = runsnap.capture([], env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    system = snap["system"]
    for key in ("cpu", "memory", "numa", "cgroup", "limits", "network", "toolchain", "gpu"):
        assert key in system, key
    assert "model" in system["cpu"] and "flags" in system["cpu"]  # extended, not replaced
    timed = snap.meta["collect_ms"]
    for part in ("system.cpu", "system.cgroup", "system.limits", "system.network",
                 "system.toolchain", "system.gpu", "packages.builds", "packages.conda"):
        assert part in timed


def test_docstring_examples_of_the_fact_collectors() -> None:
    import doctest

    from runsnap.capturing.collectors import builds, conda, gpu, sysread, toolchain

    for module in (sysread, cpu, cgroup, gpu, toolchain, builds, conda):
        failures, tried = doctest.testmod(module)
        assert failures == 0 and tried > 0, module.__name__


def test_sockets_from_package_ids_where_the_kernel_has_no_package_list(tmp_path: Path) -> None:
    tree = tmp_path / "old-kernel"
    shutil.copytree(P5, tree, symlinks=True)
    for listed in tree.glob("sys/devices/system/cpu/cpu*/topology/package_cpus_list"):
        listed.unlink()
    assert cpu.read_layout(str(tree))["cpu"]["sockets"] == 2
    assert cpu.read_layout(P5)["cpu"]["sockets"] == 2
