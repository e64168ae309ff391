"""`runsnap show`: the environment in torch.utils.collect_env's order, as text and as Markdown
for a bug report, with values from a snapshot treated as untrusted."""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path

import runsnap
from runsnap.render import show
from runsnap.render.hostsummary import render_markdown
from runsnap.views.hostsummary import environment
from tests.collectors.test_gpu import smi_path
from tests.collectors.test_toolchain_builds import wheel_layout
from tests.conftest import run_runsnap

#: The group titles, in the order collect_env prints its parts.
ORDER = ["PyTorch and engines", "OS and toolchain", "CUDA and GPUs", "GPU topology",
         "CPU and memory", "Limits and network", "Versions of relevant libraries"]


def gpu_node_snapshot(tmp_path: Path) -> runsnap.Snapshot:
    site = tmp_path / "site"
    wheel_layout(site)
    env = {"PATH": smi_path(tmp_path, "h100-r590"), "PYTHONPATH": str(site)}
    return runsnap.capture([sys.executable, "-c", "pass"], env=env, cwd=tmp_path)


def test_groups_follow_collect_env_and_hold_its_facts(tmp_path: Path) -> None:
    groups = dict(environment(gpu_node_snapshot(tmp_path)))
    assert list(groups) == ORDER
    torch = dict(groups["PyTorch and engines"])
    assert torch["PyTorch version"] == "2.9.1+cu128"
    assert torch["CUDA used to build PyTorch"] == "12.8"
    assert torch["Is debug build"] == "False"
    assert torch["vLLM version"] == "0.11.0; built for cuda"
    gpus = dict(groups["CUDA and GPUs"])
    assert gpus["GPU 0"].startswith("NVIDIA H100 80GB HBM3 (81559 MiB, compute capability 9.0")
    assert gpus["Nvidia driver version"] == "590.48.01"
    assert gpus["cuDNN version"].startswith("9.10.2.21 (nvidia-cudnn-cu12 (pip))")
    assert gpus["NCCL version"].startswith("2.27.3")
    assert dict(groups["GPU topology"])["GPU0 affinity"] == "CPUs 0-19, NUMA 0"
    libs = [v for _, v in groups["Versions of relevant libraries"]]
    assert "torch==2.9.1+cu128" in libs and "nvidia-nccl-cu12==2.27.3" in libs


def test_text_summary_lists_the_environment(tmp_path: Path) -> None:
    text = show.render(gpu_node_snapshot(tmp_path), "text")
    block = text.split("environment (in torch.utils.collect_env's order)\n", 1)[1]
    positions = [block.index(f"  {title}\n") for title in ORDER]
    assert positions == sorted(positions)
    assert "    PyTorch version  " in block


def test_markdown_for_a_bug_report_escapes_untrusted_values(tmp_path: Path) -> None:
    snap = gpu_node_snapshot(tmp_path)
    sections = copy.deepcopy(snap.sections)
    sections["system"]["gpu"]["devices"][0]["name"] = "H100 | <b>x</b>\x1b[31m"
    hostile = snap.replace(sections=sections)
    md = show.render(hostile, "markdown")
    assert "\x1b" not in md  # nowhere a raw escape character
    env_md = md.split("#### Environment (as torch.utils.collect\\_env reports it)", 1)[1]
    env_md = env_md.split("\n<details><summary>command", 1)[0]
    assert "<b>" not in env_md
    row = next(ln for ln in md.splitlines() if ln.startswith("| GPU 0 |"))
    assert row.startswith("| GPU 0 | H100 \\| &lt;b&gt;x&lt;/b&gt;?\\[31m (81559 MiB")
    for line in md.splitlines():
        if line.startswith("|"):
            assert len([c for c in line.replace("\\|", "") if c == "|"]) == 3, line


def test_long_groups_fold_into_details() -> None:
    md = render_markdown([("Versions of relevant libraries",
                           [("[pip3]", f"pkg{i}==1") for i in range(20)])])
    assert "<details><summary>Versions of relevant libraries (20)</summary>" in md


def test_show_format_markdown_on_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "s.toml"
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    made = run_runsnap("capture", "-o", str(out), cwd=tmp_path, env=env)
    assert made.returncode == 0, made.stderr
    shown = run_runsnap("show", "--format", "markdown", str(out), cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "##### OS and toolchain" in shown.stdout
    assert "| Libc version | glibc" in shown.stdout or "| Libc version |" in shown.stdout
    bad = run_runsnap("show", "--format", "yaml", str(out), cwd=tmp_path, env=env)
    assert bad.returncode == 2


def test_python_platform_is_what_platform_module_says(tmp_path: Path) -> None:
    import platform

    import pytest

    if platform.system() != "Linux" or not platform.libc_ver()[0]:
        pytest.skip("the string compared is Linux-with-glibc's")
    snap = runsnap.capture([], env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    rows = dict(dict(environment(snap))["OS and toolchain"])
    assert rows["Python platform"] == platform.platform()
