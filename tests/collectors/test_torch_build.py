"""torch's build configuration and what torch.cuda/xpu.is_available() would answer, read without
importing torch: from real files of real torch installs (fixtures/torch, with their provenance)
laid out as a wheel lays them out, compared with what the real torch said about the same files,
and, where torch is installed, with the real ``torch.utils.collect_env``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import runsnap
from runsnap.capturing.collectors.availability import cuda_available
from runsnap.capturing.collectors.gpu import parse_header
from runsnap.capturing.collectors.torchconfig import build_strings, settings_line, switches
from runsnap.views.hostsummary import environment
from tests.collectors.test_gpu import printing, smi_path
from tests.collectors.test_toolchain_builds import dist
from tests.conftest import asset


def install_torch(site: Path, build: str) -> Path:
    """A torch installed in ``site`` from the real files of fixtures/torch/BUILD (torch itself
    cannot be imported from it: runsnap must never need to)."""
    torch = site / "torch"
    (torch / "lib").mkdir(parents=True)
    (torch / "__init__.py").write_text("raise ImportError('runsnap must not import torch')\n")
    src = asset("torch", build)
    shutil.copy(src / "version.py", torch / "version.py")
    if (src / "macros.h").exists():
        (torch / "include/caffe2/core").mkdir(parents=True)
        shutil.copy(src / "macros.h", torch / "include/caffe2/core/macros.h")
    if (src / "TorchConfig.cmake").exists():
        (torch / "share/cmake/Torch").mkdir(parents=True)
        shutil.copy(src / "TorchConfig.cmake", torch / "share/cmake/Torch/TorchConfig.cmake")
    version = (src / "version.py").read_text().split("__version__ = '")[1].split("'")[0]
    dist(site, "torch", version)
    return torch


def capture(tmp_path: Path, build: str, path: str = "/usr/bin:/bin", **env: str
            ) -> runsnap.Snapshot:
    site = tmp_path / f"site-{build}"
    if not site.exists():
        install_torch(site, build)
    return runsnap.capture([sys.executable, "-c", "pass"],
                           env={"PATH": path, "PYTHONPATH": str(site), **env}, cwd=tmp_path)


def torch_of(snap: runsnap.Snapshot) -> dict:
    return snap["packages"]["builds"]["torch"]


def collect_env_lines(text: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)


#: The lines of collect_env runsnap now answers, and how our row reads each.
COLLECT_ENV_LINES = ("PyTorch version", "Is debug build", "CUDA used to build PyTorch",
                     "ROCM used to build PyTorch", "Is CUDA available", "Is XPU available",
                     "Is XNNPACK available", "CUDA_MODULE_LOADING set to",
                     "Caching allocator config")


def ours(snap: runsnap.Snapshot) -> dict[str, str]:
    """Our rows for collect_env's lines, without the reason we add in parentheses."""
    rows = {label: value for _, group in environment(snap) for label, value in group}
    return {line: rows[line].split(" (", 1)[0] for line in COLLECT_ENV_LINES}


def same_as_collect_env(mine: dict[str, str], theirs: dict[str, str]) -> None:
    for line in COLLECT_ENV_LINES:
        expected = theirs[line]
        if line == "CUDA used to build PyTorch" and expected == "Could not collect":
            # collect_env prints torch.version.cuda = None as "None" on a machine without CUDA
            # tools and as "Could not collect" where nvcc or nvidia-smi answers (pretty_str)
            expected = "None"
        assert mine[line] == expected, line


def test_a_cpu_wheel_matches_what_its_torch_said(tmp_path: Path) -> None:
    """torch 2.13.0+cpu: our lines equal the real collect_env and torch.__config__.show() of
    the interpreter these files come from (recorded: fixtures/torch/cpu-2.13.0)."""
    snap = capture(tmp_path, "cpu-2.13.0")
    assert snap["packages"]["errors"] == []
    torch = torch_of(snap)
    show = asset("torch", "cpu-2.13.0", "config_show.txt").read_text().splitlines()
    assert f"  - {settings_line(torch['config'])}".rstrip() == next(
        line for line in show if "Build settings" in line).rstrip()
    assert torch["switches"]["USE_XNNPACK"] is False
    assert torch["cuda_available"] is False
    assert torch["cuda_available_reason"] == ("torch 2.13.0+cpu is built without CUDA or ROCm: "
                                              "torch.version.cuda is None")
    assert torch["xpu_available_reason"].endswith("built without XPU: torch.version.xpu is None")
    recorded = collect_env_lines(asset("torch", "cpu-2.13.0", "collect_env.txt").read_text())
    same_as_collect_env(ours(snap), recorded)


def test_a_cuda_wheel_on_an_h100_node(tmp_path: Path) -> None:
    """torch 2.9.0+cu128 (a real wheel's files) with a recorded H100 nvidia-smi (driver 590.48.01,
    CUDA 13.1): available; every device hidden, or the files of its switches missing, each said
    in words."""
    path = smi_path(tmp_path, "h100-r590")
    torch = torch_of(capture(tmp_path, "cu128-2.9.0", path))
    assert torch["config"]["CUDA_VERSION"] == "12.8"
    assert torch["config"]["CUDNN_VERSION"] == "9.8.0"
    assert torch["config"]["USE_NCCL"] == "1"
    assert torch["cuda_available"] is True
    assert torch["cuda_available_reason"].endswith(
        "1 of 1 GPU(s) visible; driver 590.48.01: the driver supports CUDA 13.1")
    # the wheel's copy kept no share/cmake: XNNPACK from CXX_FLAGS, the missing file an error
    assert torch["xnnpack_available"] is True
    assert "-DUSE_XNNPACK is in CXX_FLAGS" in torch["xnnpack_available_reason"]
    hidden = capture(tmp_path, "cu128-2.9.0", path, CUDA_VISIBLE_DEVICES="")
    assert torch_of(hidden)["cuda_available"] is False
    assert "none visible: CUDA_VISIBLE_DEVICES=''" in torch_of(hidden)["cuda_available_reason"]
    errors = hidden["packages"]["errors"]
    assert [e for e in errors if "TorchConfig.cmake not found" in e] == [
        "builds: torch/share/cmake/Torch/TorchConfig.cmake not found: its configured switches "
        "are not recorded"]
    some = torch_of(capture(tmp_path, "cu128-2.9.0", path, CUDA_VISIBLE_DEVICES="0,9,1"))
    assert some["cuda_available"] is True
    assert "1 of 1 GPU(s) visible (CUDA_VISIBLE_DEVICES='0,9,1')" in some[
        "cuda_available_reason"]


def recorded_gpus(name: str) -> dict:
    """[system.gpu] as far as a recorded default table of nvidia-smi tells it
    (fixtures/nvidia-smi/headers: no full query of those machines is published)."""
    text = asset("nvidia-smi", "headers", name).read_text()
    count = sum(1 for line in text.splitlines() if re.match(r"\|\s+\d+\s+\S", line))
    return {"available": True, "count": count, "devices": [], **parse_header(text)}


def test_a_driver_of_an_older_minor_release_and_one_too_old(tmp_path: Path) -> None:
    """The same wheel with a recorded driver 550.40.07 (CUDA 12.4): the build's CUDA 12.8 runs
    by minor-version compatibility; with a recorded driver 450.57 (CUDA 11.0) the driver's major
    release is older than the build's, so cudaGetDeviceCount fails and torch counts no
    device."""
    torch = torch_of(capture(tmp_path, "cu128-2.9.0"))
    ok, why = cuda_available(torch, recorded_gpus("rtx4070-r550.txt"), {})
    assert ok is True
    assert why.endswith("1 of 1 GPU(s) visible; driver 550.40.07: the driver supports CUDA 12.4: "
                        "the build's CUDA 12.8 runs on it by minor-version compatibility (kernels "
                        "that need PTX JIT of a newer CUDA can still fail)")
    ok, why = cuda_available(torch, recorded_gpus("titanxp-r450.txt"), {})
    assert ok is False
    assert why.endswith(
        "driver 450.57: the driver supports CUDA 11.0, older than the build's major release "
        "12 (CUDA minor-version compatibility needs a driver of CUDA 12.x or later)")
    no_gpu = torch_of(capture(tmp_path, "cu128-2.9.0"))
    assert no_gpu["cuda_available"] is False
    assert "no NVIDIA GPU is usable: nvidia-smi not found" in no_gpu["cuda_available_reason"]


def test_a_source_build_with_its_switches(tmp_path: Path) -> None:
    """torch 2.7.1 built from source (booleans spelt 1 and ON, an ABI define with no value)."""
    torch = torch_of(capture(tmp_path, "cu129-2.7.1-source"))
    assert torch["switches"] == {"USE_CUDA": True, "USE_XPU": False, "USE_NNPACK": True,
                                 "USE_PYTORCH_QNNPACK": True, "USE_XNNPACK": True,
                                 "USE_KLEIDIAI": False, "USE_FBGEMM": True, "USE_MKLDNN": True,
                                 "USE_KINETO": True}
    assert torch["config"]["BLAS_INFO"] == "open" and torch["config"]["USE_MPI"] == "1"
    assert "cxx11_abi" not in torch
    assert torch["xnnpack_available_reason"].startswith("USE_XNNPACK is ON in torch/share/")


def test_a_torch_1_9_source_build_in_the_older_formats(tmp_path: Path) -> None:
    """torch 1.9.0 built from source (fixtures/torch/cpu-1.9.0-source): a version.py without
    annotations or xpu, a macros.h with fewer settings (no ROCM_VERSION, USE_GLOO empty), and a
    TorchConfig.cmake that states the C++ ABI and blocks not tied to one switch
    (``if(NOT OFF)``, perfkernels)."""
    snap = capture(tmp_path, "cpu-1.9.0-source")
    assert snap["packages"]["errors"] == []
    torch = torch_of(snap)
    assert torch["version"] == "1.9.0a0+git0a18211" and "xpu" not in torch
    assert torch["config"]["TORCH_VERSION"] == "1.9.0" and "ROCM_VERSION" not in torch["config"]
    assert torch["config"]["USE_GLOO"] == "" and torch["config"]["USE_MPI"] == "ON"
    assert torch["switches"] == {"USE_CUDA": False, "USE_NNPACK": True,
                                 "USE_PYTORCH_QNNPACK": True, "USE_QNNPACK": True,
                                 "USE_XNNPACK": True, "USE_FBGEMM": True, "USE_MKLDNN": True}
    assert torch["cxx11_abi"] is True
    assert (torch["xnnpack_available"], torch["cuda_available"]) == (True, False)
    assert settings_line(torch["config"]).startswith(
        "Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, CXX_COMPILER=/usr/bin/c++, ")
    rows = ours(snap)
    assert (rows["PyTorch version"], rows["CUDA used to build PyTorch"],
            rows["Is XNNPACK available"]) == ("1.9.0a0+git0a18211", "None", "True")


def test_parsers_on_what_no_release_shows_here() -> None:
    """A value with escaped quotes, a header without the table, no macros.h at all."""
    from runsnap.capturing.collectors.torchconfig import read

    assert build_strings('CAFFE2_BUILD_STRINGS {\\\n {"X", "a \\"b\\""}, \\\n}') == {
        "X": 'a "b"'}
    assert switches("if(0 AND 1)\n  append_torchlib_if_found(c10_xpu torch_xpu)\n") == {}
    _, unknown = read({"include/caffe2/core/macros.h": "#pragma once\n"})
    assert unknown[0].endswith("no CAFFE2_BUILD_STRINGS in it (a format not known yet): "
                               "torch.__config__.show()'s build settings are not recorded")
    _, missing = read({})
    assert missing == [
        "torch/include/caffe2/core/macros.h not found (a source checkout or a stripped "
        "install?): torch.__config__.show()'s build settings are not recorded",
        "torch/share/cmake/Torch/TorchConfig.cmake not found: its configured switches are not "
        "recorded, nor whether XNNPACK is available"]


def torch_python() -> str:
    """An interpreter with torch installed: ``RUNSNAP_TEST_TORCH_PYTHON``, else this one."""
    python = os.environ.get("RUNSNAP_TEST_TORCH_PYTHON") or sys.executable
    found = subprocess.run([python, "-c", "import importlib.util as u, sys; "
                            "sys.exit(u.find_spec('torch') is None)"], capture_output=True)
    if found.returncode != 0:
        pytest.skip(f"torch is not installed for {python} (set RUNSNAP_TEST_TORCH_PYTHON to an "
                    "interpreter that has it)")
    return python


def test_the_real_collect_env_agrees(tmp_path: Path) -> None:
    """The real ``python -m torch.utils.collect_env`` and ``torch.__config__.show()`` of an
    interpreter with torch, against a capture of the same interpreter in the same environment."""
    python = torch_python()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    for name in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                 "PYTORCH_CUDA_ALLOC_CONF", "CUDA_MODULE_LOADING", "LD_LIBRARY_PATH"):
        if name in os.environ:
            env[name] = os.environ[name]
    real = subprocess.run([python, "-m", "torch.utils.collect_env"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)
    assert real.returncode == 0, real.stderr
    show = subprocess.run([python, "-c", "import torch; print(torch.__config__.show())"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    snap = runsnap.capture([python, "-c", "pass"], env=env, cwd=tmp_path)
    same_as_collect_env(ours(snap), collect_env_lines(real.stdout))
    torch = torch_of(snap)
    settings = next(line for line in show.stdout.splitlines() if "Build settings" in line)
    assert f"  - {settings_line(torch['config'])}".rstrip() == settings.rstrip()


#: torch.version of a ROCm build: the values of a published ROCm nightly's torch/version.py
#: (2.3.0.dev20240308+rocm6.0, seen in public code; its repository was not identified).
ROCM_TORCH = {"version": "2.3.0.dev20240308+rocm6.0", "hip": "6.0.32830-d62f6a171"}


def test_a_rocm_build_counts_the_amd_gpus_it_may_see(tmp_path: Path) -> None:
    """amd-smi's recorded 8 x MI300X: ROCR_VISIBLE_DEVICES filters first, then
    HIP_VISIBLE_DEVICES (or CUDA_VISIBLE_DEVICES, which HIP honours when it is unset)."""
    amd_smi = printing(tmp_path, "amd-smi", asset("amd-smi", "mi300x8-rocm721.json"))
    gpu = runsnap.capture([], env={"PATH": f"{amd_smi}:/usr/bin:/bin"},
                          cwd=tmp_path)["system"]["gpu"]
    assert gpu["amd"]["count"] == 8
    ok, why = cuda_available(ROCM_TORCH, gpu, {})
    assert (ok, why) == (True, "torch 2.3.0.dev20240308+rocm6.0 is built for ROCm (HIP "
                               "6.0.32830-d62f6a171); 8 of 8 AMD GPU(s) visible")
    ok, why = cuda_available(ROCM_TORCH, gpu, {"ROCR_VISIBLE_DEVICES": "1",
                                               "CUDA_VISIBLE_DEVICES": "1"})
    assert not ok and why.endswith("none visible: ROCR_VISIBLE_DEVICES='1'; "
                                   "CUDA_VISIBLE_DEVICES='1'")
    ok, _ = cuda_available(ROCM_TORCH, gpu, {"HIP_VISIBLE_DEVICES": "0",
                                             "CUDA_VISIBLE_DEVICES": "-1"})
    assert ok  # HIP_VISIBLE_DEVICES set: CUDA_VISIBLE_DEVICES is not read
    assert cuda_available(ROCM_TORCH, {"available": False}, {})[1].endswith(
        "neither amd-smi nor rocm-smi reported an AMD GPU")


def test_an_xpu_build_needs_an_intel_gpu(tmp_path: Path) -> None:
    """torch.version.xpu is a date-like string ("20250101", as torch's own inductor code
    describes it); an Intel GPU is a DRM render node whose PCI vendor is 0x8086."""
    from runsnap.capturing.collectors.availability import xpu_available

    xpu = {"version": "2.13.0+xpu", "xpu": "20250101"}
    root = tmp_path / "root"
    drm = root / "sys/class/drm"
    (drm / "renderD128/device").mkdir(parents=True)
    (drm / "renderD128/device/vendor").write_text("0x1af4\n")  # a virtio GPU
    assert xpu_available(xpu, str(root)) == (
        False, "torch 2.13.0+xpu is built with XPU 20250101, but /sys/class/drm has no Intel "
               "GPU render node")
    (drm / "renderD129/device").mkdir(parents=True)
    (drm / "renderD129/device/vendor").write_text("0x8086\n")
    ok, why = xpu_available(xpu, str(root))
    assert ok and "1 Intel GPU render node(s)" in why and "not checked" in why
    assert xpu_available({"version": "2.13.0+cpu"}, str(root))[0] is False


def test_show_prints_collect_env_lines_with_reasons_and_the_build_settings(tmp_path: Path
                                                                           ) -> None:
    from runsnap.render import show

    snap = capture(tmp_path, "cu128-2.9.0", smi_path(tmp_path, "h100-r590"),
                   PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
    rows = ours(snap)
    assert rows["Is CUDA available"] == "True"
    assert rows["CUDA_MODULE_LOADING set to"] == "LAZY"
    assert rows["Caching allocator config"] == "{'PYTORCH_CUDA_ALLOC_CONF': " \
                                               "'expandable_segments:True'}"
    groups = dict(environment(snap))
    assert dict(groups["CUDA and GPUs"])["cuDNN version"] == (
        "could not collect (torch is built against 9.8.0)")  # no cuDNN library installed here
    settings = dict(groups["PyTorch build settings (torch.__config__.show())"])
    assert settings["CUDA_VERSION"] == "12.8" and settings["CUDNN_VERSION"] == "9.8.0"
    assert "USE_NCCL" in settings["switched on"].split()
    assert settings["CXX_FLAGS"].startswith("-O2; defines USE_PTHREADPOOL NDEBUG USE_KINETO")
    md = show.render(snap, "markdown")
    assert "| Is CUDA available | True (torch 2.9.0+cu128 is built with CUDA 12.8; 1 of 1 GPU(s)" \
           " visible; driver 590.48.01: the driver supports CUDA 13.1" in md
    text = show.render(snap, "text")
    assert "    Is XNNPACK available" in text
    from runsnap.render import bugreport as render_bugreport
    from runsnap.views import bugreport

    pasted = render_bugreport.render(bugreport.build([snap]), "markdown")
    assert "| torch.cuda.is\\_available\\(\\) | `True (torch 2.9.0+cu128 is built with CUDA " \
           "12.8; 1 of 1 GPU(s) visible" in pasted
