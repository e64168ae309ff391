"""collect_env's facts in a diff: another driver or compute capability, NCCL/cuDNN version, a
lower memlock, an interface down, another topology each rank as a likely cause with a reason;
two captures of one machine, and snapshots of an older runsnap, show none of them."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest

from runsnap.capturing.collectors.gpu import parse_topology
from runsnap.diffing import compare
from runsnap.snapshot import Snapshot, loads
from tests.collectors.test_gpu import smi_path
from tests.collectors.test_toolchain_builds import dist, wheel_layout

from .conftest import asset, counted


def smi_dir(tmp_path: Path, name: str) -> str:
    """A folder whose nvidia-smi replays fixtures/nvidia-smi/NAME."""
    return smi_path(tmp_path, name).split(":", 1)[0]


def with_system(snap: Snapshot, edit) -> Snapshot:
    sections = copy.deepcopy(snap.sections)
    edit(sections["system"])
    return snap.replace(sections=sections)


def fact_keys(report) -> list[str]:
    return [k for s, k, _ in counted(report) if s in ("system", "packages")]


def test_two_captures_of_one_machine_show_no_fact_differences(cap):
    report = compare(cap(), cap())
    assert fact_keys(report) == []


def test_a_snapshot_of_an_older_runsnap_is_not_a_difference(cap):
    a = cap()
    old = copy.deepcopy(a.sections)
    for part in ("limits", "cgroup", "network", "numa", "toolchain"):
        del old["system"][part]
    for key in ("flags", "caches", "sockets"):
        old["system"]["cpu"].pop(key, None)
    for part in ("builds", "libraries"):
        old["packages"].pop(part, None)
    report = compare(a.replace(sections=old), a)
    assert fact_keys(report) == []


def test_another_gpu_generation_driver_and_topology(cap, tmp_path, base_env):
    """Two recorded machines: an H100 on driver 590.48.01 and an L40S on 595.80."""
    path = base_env["PATH"]
    a = cap({"PATH": f"{smi_dir(tmp_path, 'h100-r590')}:{path}"})
    b = cap({"PATH": f"{smi_dir(tmp_path, 'l40s-r595')}:{path}"})
    report = compare(a, b)
    by_key = {d.key: d for d in report.counted}
    cc = by_key["gpu.compute_capability"]
    assert (cc.a, cc.b, cc.change) == ("9.0", "8.9", "changed")
    assert cc.score == 72 and "architecture" in cc.reason
    assert by_key["gpu.driver_version"].reason.endswith("it matters to every CUDA program")
    topo = by_key["gpu.topology"]
    assert "NCCL" in topo.reason
    assert topo.evidence == ("GPU0 affinity: {'cpus': '0-19', 'numa': '0'} -> "
                             "{'cpus': '0-7', 'numa': '0'}",)
    assert (by_key["gpu.power_limit_w"].a, by_key["gpu.power_limit_w"].b) == ("700.0", "350.0")
    ranked = [d.key for d in report.counted]
    assert ranked.index("gpu.compute_capability") < ranked.index("gpu.topology")


def test_the_same_gpus_with_another_topology(cap, tmp_path, base_env):
    """The recorded topology of an 8 x H100 node (fixtures/nvidia-smi/topo), then the same with
    GPU0's nearest NIC moved across the socket."""
    a = cap({"PATH": f"{smi_dir(tmp_path, 'h100-r590')}:{base_env['PATH']}"})
    h100x8 = parse_topology(asset("nvidia-smi", "topo", "h100x8-mlx5-r580.txt").read_text())

    def recorded(system):
        system["gpu"]["topology"] = h100x8
    a = with_system(a, recorded)

    def rewire(system):
        system["gpu"]["topology"]["links"]["GPU0 mlx5_0"] = "SYS"
    report = compare(a, with_system(a, rewire))
    assert [(d.key, d.score) for d in report.counted] == [("gpu.topology", 60)]
    assert report.counted[0].evidence == ("GPU0 mlx5_0: PIX -> SYS",)


def test_a_lower_memlock_ranks_as_a_cause_for_nccl(tmp_path):
    """Real captures: one made under a lowered RLIMIT_MEMLOCK, one under the usual limit."""
    code = ("import resource, runsnap, sys; lim = int(sys.argv[1]); "
            "lim and resource.setrlimit(resource.RLIMIT_MEMLOCK, (lim, "
            "resource.getrlimit(resource.RLIMIT_MEMLOCK)[1])); "
            "from runsnap.snapshot import dumps; "
            "sys.stdout.write(dumps(runsnap.capture([], env={'PATH': '/usr/bin:/bin'})))")
    snaps = [loads(subprocess.run([sys.executable, "-c", code, lim], capture_output=True,
                                  text=True, cwd=tmp_path, check=True).stdout)
             for lim in ("0", "65536")]
    report = compare(*snaps)
    memlock = [d for d in report.counted if d.key == "limits.memlock"]
    assert len(memlock) == 1
    assert memlock[0].b == 65536
    assert memlock[0].score == 62
    assert memlock[0].reason.startswith("a lower memlock limit in B: NCCL over InfiniBand")
    raised = compare(snaps[1], snaps[0])
    assert [d.score for d in raised.counted if d.key == "limits.memlock"] == [37]


def test_an_interface_down_and_an_rdma_port_down(cap):
    a = cap()

    def edit(system):
        net = system["network"]
        net["interfaces"]["ib0"] = {"state": "up", "mtu": 4092, "type": "infiniband"}
        net["infiniband"]["mlx5_0"] = {"ports": {"1": {"state": "4: ACTIVE",
                                                       "phys_state": "5: LinkUp",
                                                       "rate": "400 Gb/sec (4X NDR)",
                                                       "link_layer": "InfiniBand"}}}
    good = with_system(a, edit)

    def down(system):
        system["network"]["interfaces"]["ib0"]["state"] = "down"
        system["network"]["infiniband"]["mlx5_0"]["ports"]["1"]["state"] = "1: DOWN"
    report = compare(good, with_system(good, down))
    got = [(d.key, d.score) for d in report.counted]
    assert got == [("network.infiniband.mlx5_0.port1.state", 62),
                   ("network.interfaces.ib0.state", 55)]
    assert "NCCL_IB_HCA" in report.counted[0].reason
    assert "NCCL_SOCKET_IFNAME" in report.counted[1].reason


def test_another_nccl_and_cudnn_from_the_wheels(cap, tmp_path):
    sites = []
    for name, nccl in (("a", "2.27.3"), ("b", "2.26.2")):
        site = tmp_path / f"site-{name}"
        wheel_layout(site)
        for info in site.glob("nvidia_nccl_cu12-*.dist-info"):
            subprocess.run(["rm", "-r", str(info)], check=True)
        dist(site, "nvidia-nccl-cu12", nccl)
        sites.append(site)
    a = cap({"PYTHONPATH": str(sites[0])})
    b = cap({"PYTHONPATH": str(sites[1])})
    report = compare(a, b)
    by_key = {d.key: d for d in report.counted}
    lib = by_key["libraries.nccl"]
    assert (lib.change, lib.a, lib.b, lib.score) == ("downgraded", "2.27.3", "2.26.2", 70)
    assert lib.reason == "another NCCL: collectives (all-reduce, all-gather) change"
    assert by_key["nvidia-nccl-cu12"].change == "downgraded"  # the distribution, as before


def test_torch_built_for_another_cuda(cap, tmp_path):
    site = tmp_path / "site"
    wheel_layout(site)
    a = cap({"PYTHONPATH": str(site)})
    version = site / "torch" / "version.py"
    version.write_text(version.read_text().replace("'12.8'", "'13.0'")
                       .replace("2.9.1+cu128", "2.9.1+cu130"))
    b = cap({"PYTHONPATH": str(site)})
    by_key = {d.key: d for d in compare(a, b).counted}
    assert (by_key["builds.torch.cuda"].a, by_key["builds.torch.cuda"].b) == ("12.8", "13.0")
    assert by_key["builds.torch.cuda"].score == 74
    assert by_key["builds.torch.cuda"].reason == "torch built for another CUDA version"
    assert by_key["builds.torch.version"].b == "2.9.1+cu130"


def test_cuda_lost_ranks_first_with_both_reasons(cap, tmp_path, base_env):
    """The same recorded H100 node: torch 2.9.0+cu128 in A, then CUDA_VISIBLE_DEVICES='' in B;
    and the CPU wheel torch 2.13.0+cpu in B (real files of both wheels, fixtures/torch)."""
    from tests.collectors.test_torch_build import install_torch

    path = f"{smi_dir(tmp_path, 'h100-r590')}:{base_env['PATH']}"
    cuda, cpu = tmp_path / "site-cuda", tmp_path / "site-cpu"
    install_torch(cuda, "cu128-2.9.0")
    install_torch(cpu, "cpu-2.13.0")
    a = cap({"PATH": path, "PYTHONPATH": str(cuda)})
    hidden = cap({"PATH": path, "PYTHONPATH": str(cuda), "CUDA_VISIBLE_DEVICES": ""})
    cause = compare(a, hidden).counted[0]  # the variable, with what it did under it
    assert (cause.key, cause.score) == ("CUDA_VISIBLE_DEVICES", 88)
    assert "with it, packages builds.torch.cuda_available" in cause.reason
    # as the CUDA runtime reads it: '' hides every device (this line was empty before)
    assert cause.evidence == ("devices A saw: all 1 GPU", "devices B saw: no GPU ('' names no "
                                                          "device)")
    lost = next(d for d in cause.related if d.key == "builds.torch.cuda_available")
    assert (lost.a, lost.b, lost.score) == (True, False, 88)
    assert lost.reason.startswith("torch.cuda.is_available() is False in B")
    assert lost.evidence[1] == ("B: torch 2.9.0+cu128 is built with CUDA 12.8; 1 GPU(s), none "
                                "visible: CUDA_VISIBLE_DEVICES=''")
    report = compare(a, cap({"PATH": path, "PYTHONPATH": str(cpu)}))
    by_key = {d.key: d for d in report.counted}
    assert by_key["builds.torch.cuda_available"].score == 88
    assert by_key["builds.torch.config.USE_NCCL"].reason.startswith("torch built with NCCL in one "
                                                                    "run only")
    assert by_key["builds.torch.config.CUDA_VERSION"].score == 74
    assert (by_key["builds.torch.config.CUDNN_VERSION"].a, by_key[
        "builds.torch.config.CUDNN_VERSION"].b) == ("9.8.0", "")
    assert not any(k.endswith("_reason") for k in by_key)
    ranked = [d.key for d in report.counted]
    assert ranked.index("builds.torch.cuda_available") < ranked.index(
        "builds.torch.config.USE_NCCL")


def test_a_switch_spelt_another_way_is_no_difference(cap, tmp_path):
    """``USE_NCCL`` written ``1`` by one build and ``ON`` by another is the same switch; a
    build without NCCL is a cause (torch.distributed's nccl backend is gone)."""
    from tests.collectors.test_torch_build import install_torch

    site = tmp_path / "site"
    torch = install_torch(site, "cu128-2.9.0")
    macros = torch / "include/caffe2/core/macros.h"
    a = cap({"PYTHONPATH": str(site)})
    macros.write_text(macros.read_text().replace('{"USE_NCCL", "1"}', '{"USE_NCCL", "ON"}'))
    same = cap({"PYTHONPATH": str(site)})
    assert [k for k in fact_keys(compare(a, same)) if "config" in k] == []
    macros.write_text(macros.read_text().replace('{"USE_NCCL", "ON"}', '{"USE_NCCL", "OFF"}'))
    report = compare(a, cap({"PYTHONPATH": str(site)}))
    nccl = [d for d in report.counted if d.key == "builds.torch.config.USE_NCCL"]
    assert [(d.a, d.b, d.score) for d in nccl] == [("1", "OFF", 72)]


@pytest.mark.slow
def test_what_torch_printed_names_the_build_fact_and_imports_count(tmp_path):
    """Two traced runs with torch builds that differ only in USE_NCCL (the real 2.9.0+cu128
    files; B's macros.h with NCCL off): B fails with torch's own message for that, which names
    the fact; a program that imported torch makes torch's build facts read, one that did not,
    unread."""
    from runsnap.snapshot import load
    from tests.collectors.test_torch_build import install_torch
    from tests.conftest import run_runsnap

    site = tmp_path / "site"
    torch = install_torch(site, "cu128-2.9.0")
    (torch / "__init__.py").write_text("")  # importable here: the program imports it
    macros = torch / "include/caffe2/core/macros.h"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(site)}
    fail = ("import torch, sys; sys.exit(\"RuntimeError: Distributed package doesn't have "
            "NCCL built in\") if sys.argv[1] == 'b' else None")

    def run(name, code, *args):
        out = tmp_path / f"{name}.toml"
        made = run_runsnap("capture", "-o", str(out), "--", sys.executable, "-c", code, *args,
                           cwd=tmp_path, env=env)
        assert made.returncode in (0, 1), made.stderr
        return load(out)

    a = run("a", fail, "a")
    macros.write_text(macros.read_text().replace('{"USE_NCCL", "1"}', '{"USE_NCCL", "OFF"}'))
    b = run("b", fail, "b")
    nccl = next(d for d in compare(a, b).counted if d.key == "builds.torch.config.USE_NCCL")
    assert nccl.evidence_kind == "named" and nccl.score >= 94
    assert "says \"Distributed package doesn't have NCCL built in\"" in nccl.reason
    macros.write_text(macros.read_text().replace('{"USE_NCCL", "OFF"}', '{"USE_NCCL", "1"}'))
    c, d = run("c", "import torch", "c"), run("d", "import json", "d")
    macros.write_text(macros.read_text().replace('{"USE_NCCL", "1"}', '{"USE_NCCL", "OFF"}'))
    f, e = run("f", "import torch", "f"), run("e", "import json", "e")
    read = next(x for x in compare(c, f).counted if x.key == "builds.torch.config.USE_NCCL")
    assert read.evidence_kind == "read" and "imported torch from" in read.reason
    report = compare(d, e)
    unread = next(x for x in [*report.counted, *report.hidden]
                  if x.key == "builds.torch.config.USE_NCCL")
    assert unread.evidence_kind == "unread" and unread.score <= 30
