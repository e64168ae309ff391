"""[system.toolchain] with the real compilers here (nvcc only where it is installed), the output
cache keyed by the program file, and [packages.builds] / [packages.libraries] / [packages.conda]
from real files laid out as the wheels and conda lay them out."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import runsnap
from tests.conftest import asset
from tests.interpreters import customised, plain_base, venv_on


def toolchain(tmp_path: Path, path: str, **env: str) -> dict:
    system = runsnap.capture([], env={"PATH": path, **env}, cwd=tmp_path)["system"]
    assert [e for e in system["errors"] if e.startswith("toolchain:")] == []
    return system["toolchain"]


def test_the_c_compiler_as_gcc_reports_itself(tmp_path: Path) -> None:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc here")
    first = subprocess.run([gcc, "--version"], capture_output=True, text=True).stdout
    tools = toolchain(tmp_path, os.path.dirname(gcc))
    assert tools["gcc"]["line"] == first.splitlines()[0]
    assert tools["gcc"]["version"] in first.splitlines()[0]
    assert tools["libc"].startswith("glibc ")
    assert tools["libc"] == "glibc " + os.confstr("CS_GNU_LIBC_VERSION").split()[-1]


def test_nvcc_and_cuda_home(tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed here (it is not in CI)")
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    tools = toolchain(tmp_path, os.environ["PATH"])
    release = [ln for ln in out.splitlines() if "release" in ln][0]
    assert tools["nvcc"]["line"] == release.strip()
    assert tools["nvcc"]["version"] == release.rsplit("V", 1)[1].strip()
    assert tools["cuda_home"] == os.path.dirname(os.path.dirname(nvcc))
    assert tools["cuda_home_from"] == "nvcc on PATH"
    pinned = toolchain(tmp_path, os.environ["PATH"], CUDA_HOME="/opt/elsewhere")
    assert (pinned["cuda_home"], pinned["cuda_home_from"]) == ("/opt/elsewhere", "CUDA_HOME")


def test_versions_are_cached_by_program_file_and_asked_again_when_it_changes(
        tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = tmp_path / "calls"
    gcc = bindir / "gcc"
    gcc.write_text(f"#!/bin/sh\necho x >> {calls}\necho 'gcc (GCC) 13.2.0'\n")
    gcc.chmod(0o755)
    assert toolchain(tmp_path, str(bindir))["gcc"]["version"] == "13.2.0"
    assert toolchain(tmp_path, str(bindir))["gcc"]["version"] == "13.2.0"
    assert calls.read_text().count("x") == 1  # the second capture used the cache
    gcc.write_text(f"#!/bin/sh\necho x >> {calls}\necho 'gcc (GCC) 14.1.0'\n")
    assert toolchain(tmp_path, str(bindir))["gcc"]["version"] == "14.1.0"
    assert calls.read_text().count("x") == 2


def test_a_failing_compiler_is_an_error_of_the_section(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "clang").write_text("#!/bin/sh\necho 'clang: broken install' >&2\nexit 3\n")
    (bindir / "clang").chmod(0o755)
    system = runsnap.capture([], env={"PATH": str(bindir)}, cwd=tmp_path)["system"]
    assert system["toolchain"]["clang"] == {"found": True, "path": str(bindir / "clang")}
    assert any("clang: broken install" in e for e in system["errors"])


def test_ld_library_path_is_searched_first(tmp_path: Path) -> None:
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "libnccl.so.2.21.5").write_bytes(b"")
    (libs / "libnccl.so.2").symlink_to("libnccl.so.2.21.5")
    (libs / "libfoo.so.1").write_bytes(b"")
    tools = toolchain(tmp_path, "/usr/bin:/bin", LD_LIBRARY_PATH=f"/nonexistent:{libs}")
    assert tools["ld_library_path"]["libnccl.so.2"] == {"path": str(libs / "libnccl.so.2"),
                                                        "file": "libnccl.so.2.21.5"}
    assert "libfoo.so.1" not in tools["ld_library_path"]


TORCH_VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '2.9.1+cu128'
debug = False
cuda: Optional[str] = '12.8'
git_version = 'd38164a545b4a4e4e0cf73ce67173f70574890b6'
hip: Optional[str] = None
rocm: Optional[str] = None
xpu: Optional[str] = None
"""


def dist(site: Path, name: str, version: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n")


def wheel_layout(site: Path) -> None:
    """What pip leaves for torch 2.9.1+cu128 with its nvidia-* wheels, and vllm, sgl-kernel,
    xformers and triton (files empty: only names and the version files are read)."""
    torch = site / "torch"
    (torch / "lib").mkdir(parents=True)
    (torch / "__init__.py").write_text("raise ImportError('never imported')\n")
    (torch / "version.py").write_text(TORCH_VERSION_PY)
    for lib in ("libtorch_cuda.so", "libc10_cuda.so", "libtorch.so"):
        (torch / "lib" / lib).write_bytes(b"")
    dist(site, "torch", "2.9.1+cu128")
    for wheel, folder, files, version in (
            ("nvidia-nccl-cu12", "nccl", ["libnccl.so.2"], "2.27.3"),
            ("nvidia-cudnn-cu12", "cudnn", ["libcudnn.so.9", "libcudnn_graph.so.9"], "9.10.2.21"),
            ("nvidia-cuda-runtime-cu12", "cuda_runtime", ["libcudart.so.12"], "12.8.90"),
            ("nvidia-cublas-cu12", "cublas", ["libcublas.so.12", "libcublasLt.so.12"],
             "12.8.4.1")):
        lib = site / "nvidia" / folder / "lib"
        lib.mkdir(parents=True)
        for f in files:
            (lib / f).write_bytes(b"")
        dist(site, wheel, version)
    vllm = site / "vllm"
    vllm.mkdir()
    (vllm / "__init__.py").write_text("raise ImportError('never imported')\n")
    (vllm / "_version.py").write_text("__version__ = version = '0.11.0'\n"
                                      "__version_tuple__ = version_tuple = (0, 11, 0)\n")
    (vllm / "_C.abi3.so").write_bytes(b"")
    (vllm / "_moe_C.abi3.so").write_bytes(b"")
    sgl = site / "sgl_kernel"
    (sgl / "sm90").mkdir(parents=True)
    (sgl / "sm100").mkdir()
    (sgl / "__init__.py").write_text("")
    (sgl / "version.py").write_text('__version__ = "0.3.16.post3"\n')
    xf = site / "xformers"
    xf.mkdir()
    (xf / "__init__.py").write_text("")
    (xf / "version.py").write_text('__version__ = "0.0.32.post2"\n')
    (xf / "cpp_lib.json").write_text('{"version": {"cuda": 1208, "torch": "2.8.0+cu128", '
                                     '"python": "3.11.11", "flash": "v2.8.2-13-g1f6d4ea"}, '
                                     '"env": {"TORCH_CUDA_ARCH_LIST": "8.0 9.0 10.0"}}')
    (site / "triton" / "backends" / "nvidia").mkdir(parents=True)
    (site / "triton" / "backends" / "amd").mkdir()
    (site / "triton" / "backends" / "__init__.py").write_text("")
    (site / "triton" / "__init__.py").write_text("")


def test_builds_and_libraries_without_importing(tmp_path: Path) -> None:
    site = tmp_path / "site"
    wheel_layout(site)
    env = {"PATH": os.path.dirname(sys.executable) + ":/usr/bin:/bin", "PYTHONPATH": str(site)}
    pk = runsnap.capture([sys.executable, "-c", "pass"], env=env, cwd=tmp_path)["packages"]
    # this layout has no include/ and share/ folders (tests/collectors/test_torch_build.py
    # lays out real ones): said in errors, the rest recorded all the same
    assert pk["errors"] == [
        "builds: torch/include/caffe2/core/macros.h not found (a source checkout or a stripped "
        "install?): torch.__config__.show()'s build settings are not recorded",
        "builds: torch/share/cmake/Torch/TorchConfig.cmake not found: its configured switches "
        "are not recorded, nor whether XNNPACK is available"]
    torch = pk["builds"]["torch"]
    reasons = {k: torch.pop(k) for k in list(torch) if k.endswith("_reason")}
    assert torch == {"path": str(site / "torch"), "version": "2.9.1+cu128", "cuda": "12.8",
                     "debug": False, "git_version": "d38164a545b4a4e4e0cf73ce67173f70574890b6",
                     "built_for": "cuda 12.8", "bundled_libraries": [],
                     "cuda_available": False, "xpu_available": False}
    assert reasons["cuda_available_reason"] == (
        "torch 2.9.1+cu128 is built with CUDA 12.8, but no NVIDIA GPU is usable: nvidia-smi not "
        "found on PATH, and no NVIDIA kernel driver is loaded (no /proc/driver/nvidia)")
    libs = pk["libraries"]
    assert libs["nccl"] == {"dir": str(site / "nvidia/nccl/lib"), "files": ["libnccl.so.2"],
                            "source": "nvidia-nccl-cu12 (pip)", "version": "2.27.3"}
    assert libs["cudnn"]["version"] == "9.10.2.21"
    assert libs["cuda-runtime"]["version"] == "12.8.90"
    assert libs["cublas"]["files"] == ["libcublas.so.12", "libcublasLt.so.12"]
    vllm = pk["builds"]["vllm"]
    assert (vllm["version"], vllm["built_for"]) == ("0.11.0", "cuda")
    assert vllm["native"] == ["_C.abi3.so", "_moe_C.abi3.so"]
    assert pk["builds"]["sgl_kernel"]["version"] == "0.3.16.post3"
    assert pk["builds"]["sgl_kernel"]["architectures"] == ["sm100", "sm90"]
    assert pk["builds"]["xformers"]["built_with"]["torch"] == "2.8.0+cu128"
    assert pk["builds"]["triton"]["backends"] == ["amd", "nvidia"]


def test_a_library_bundled_in_torch_lib_comes_first_with_its_file_version(
        tmp_path: Path) -> None:
    site = tmp_path / "site"
    wheel_layout(site)
    (site / "torch" / "lib" / "libnccl.so.2.21.5").write_bytes(b"")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site)}
    pk = runsnap.capture([sys.executable, "-c", "pass"], env=env, cwd=tmp_path)["packages"]
    nccl = pk["libraries"]["nccl"]
    assert (nccl["source"], nccl["version"]) == ("torch/lib", "2.21.5")
    assert nccl["other_dirs"] == [str(site / "nvidia/nccl/lib")]
    assert pk["builds"]["torch"]["bundled_libraries"] == ["libnccl.so.2.21.5"]


def test_a_changed_torch_version_file_is_read_again(tmp_path: Path) -> None:
    """The probe's cached answer is not used once a build file it read changed. The child is a
    venv on a base with no sitecustomize (:mod:`tests.interpreters`): a customised one (a venv
    on Debian's python3) is probed every time, and this test would show nothing."""
    py, _ = venv_on(plain_base(tmp_path / "plain-python"), tmp_path / "venv")
    assert customised(py) == []
    site = tmp_path / "site"
    wheel_layout(site)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site)}
    first = runsnap.capture([str(py), "-c", "pass"], env=env, cwd=tmp_path)["packages"]
    assert first["builds"]["torch"]["version"] == "2.9.1+cu128"
    cached = runsnap.capture([str(py), "-c", "pass"], env=env, cwd=tmp_path)["packages"]
    assert (first["probe"], cached["probe"]) == ("run", "cache")
    (site / "torch" / "version.py").write_text(
        TORCH_VERSION_PY.replace("2.9.1+cu128", "2.9.1+cu130").replace("'12.8'", "'13.0'"))
    again = runsnap.capture([str(py), "-c", "pass"], env=env, cwd=tmp_path)["packages"]
    assert again["probe"] == "run"
    assert (again["builds"]["torch"]["version"], again["builds"]["torch"]["cuda"]) == (
        "2.9.1+cu130", "13.0")


def test_conda_packages_of_the_environment(tmp_path: Path) -> None:
    prefix = tmp_path / "env"
    shutil.copytree(asset("conda-meta", "cuda124"), prefix)
    env = {"PATH": "/usr/bin:/bin", "CONDA_PREFIX": str(prefix)}
    pk = runsnap.capture([sys.executable, "-c", "pass"], env=env, cwd=tmp_path)["packages"]
    conda = pk["conda"]
    assert (conda["prefix"], conda["count"]) == (str(prefix), 8)
    assert conda["packages"]["nccl"] == {"version": "2.21.5.1", "build": "h6103f9b_0"}
    assert conda["packages"]["pytorch"]["build"] == "py3.11_cuda12.4_cudnn9.1.0_0"
    no_conda = runsnap.capture([sys.executable, "-c", "pass"], env={"PATH": "/usr/bin:/bin"},
                               cwd=tmp_path)["packages"]
    assert "conda" not in no_conda
