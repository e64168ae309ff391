"""``[system.toolchain]``: what JIT kernels are built with, and ``ld.so``'s view of the GPU libraries.

Triton, FlashInfer, DeepGEMM and ``torch.utils.cpp_extension`` compile at run time: with the C
compiler (``CC`` or ``cc``), the C++ compiler (``CXX`` or ``c++``), ``nvcc`` under ``CUDA_HOME``
(found as torch finds it: ``CUDA_HOME``, ``CUDA_PATH``, ``nvcc`` on ``PATH``, then
``/usr/local/cuda``), ``ninja`` and ``cmake``. Each is looked for on the *child's* ``PATH`` and
asked its version; the C library's version comes from ``confstr``. ``ldconfig -p`` tells which
CUDA, NCCL, cuDNN and ROCm libraries the dynamic loader finds, and ``LD_LIBRARY_PATH`` (which
comes first) is searched for the same names.

Speed: the programs run side by side, started by :func:`start` before the other collectors,
each with a timeout; their answers are kept in :class:`runsnap.base.cache.OutputCache` while the
program's file (and, for ``ldconfig``, ``/etc/ld.so.cache``) is unchanged, so a warm capture
starts none of them. A missing program is a fact (``found = false``), a failing one an error.
"""

from __future__ import annotations

import os
import time

from runsnap.base import programs
from runsnap.base.cache import OutputCache, program_stamp
from runsnap.base.patterns import on_use

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from runsnap.capturing.context import CaptureContext

__all__ = ["LIBRARY_PREFIXES", "collect", "cuda_home", "library_files", "parse_ldconfig",
           "parse_version", "start"]

#: Shared libraries whose location decides which GPU stack a program loads.
LIBRARY_PREFIXES = ("libcuda.so", "libcudart.so", "libnccl.so", "libcudnn.so", "libcublas.so",
                    "libcublasLt.so", "libnvrtc.so", "libnvJitLink.so", "libnvidia-ml.so",
                    "libcusparseLt.so", "libnvshmem", "libibverbs.so", "libmlx5.so",
                    "libamdhip64.so", "librccl.so", "libMIOpen.so", "librocm_smi64.so")
_TIMEOUT = 10.0
_LDCACHE = "/etc/ld.so.cache"
_VERSION = on_use(r"(\d+\.\d+(?:\.\d+)*)")
_NVCC = on_use(r"release (\S+), V(\S+)")


def cuda_home(env: Mapping[str, str]) -> tuple[str, str]:
    """(CUDA_HOME, where it came from), as ``torch.utils.cpp_extension`` finds it."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var):
            return env[var], var
    nvcc = programs.which("nvcc", path=env.get("PATH", os.defpath))
    if nvcc:
        return os.path.dirname(os.path.dirname(nvcc)), "nvcc on PATH"
    if os.path.exists("/usr/local/cuda"):
        return "/usr/local/cuda", "/usr/local/cuda exists"
    return "", "not found (no CUDA_HOME, CUDA_PATH, nvcc on PATH or /usr/local/cuda)"


def _tools(env: Mapping[str, str]) -> dict[str, tuple[str | None, list[str]]]:
    """Tool name -> (program found, argv) for the child's environment."""
    path = env.get("PATH", os.defpath)
    found: dict[str, tuple[str | None, list[str]]] = {}
    for name, var, default in (("cc", "CC", "cc"), ("cxx", "CXX", "c++"), ("gcc", "", "gcc"),
                               ("clang", "", "clang"), ("ninja", "", "ninja"),
                               ("cmake", "", "cmake")):
        prog = (env.get(var) or default).split()[0] if var else default
        exe = programs.which(prog, path=path)
        found[name] = (exe, [exe or prog, "--version"])
    home, _ = cuda_home(env)
    nvcc = os.path.join(home, "bin", "nvcc") if home else ""
    if not (nvcc and programs.which(nvcc)):
        nvcc = programs.which("nvcc", path=path) or ""
    found["nvcc"] = (nvcc or None, [nvcc or "nvcc", "--version"])
    ldconfig = programs.which("ldconfig", path=f"{path}{os.pathsep}/sbin{os.pathsep}/usr/sbin")
    found["ldconfig"] = (ldconfig, [ldconfig or "ldconfig", "-p"])
    return found


def start(ctx: CaptureContext) -> None:
    """Start every tool whose answer is not cached; :func:`collect` reads them."""
    env = dict(ctx.env)
    env["LC_ALL"] = "C"
    cache = OutputCache()
    jobs: dict[str, Any] = {}
    for name, (exe, argv) in _tools(ctx.env).items():
        if exe is None:
            jobs[name] = {"found": False, "argv": argv}
            continue
        stamp = program_stamp(exe, *([_LDCACHE] if name == "ldconfig" else []))
        key = " ".join(argv)
        cached = cache.get(key, stamp)
        if cached is not None:
            jobs[name] = {"found": True, "argv": argv, "output": cached, "from": "cache"}
        else:
            jobs[name] = {"found": True, "argv": argv, "pending": programs.start(argv, env=env),
                          "stamp": stamp, "key": key}
    ctx.started["system.toolchain"] = {"jobs": jobs, "cache": cache}


def parse_version(name: str, output: str) -> dict[str, str]:
    """``{"version", "line"}`` from a ``--version`` answer (nvcc: also ``release``).

    >>> parse_version("gcc", "gcc (Debian 12.2.0-14+deb12u1) 12.2.0\\nCopyright")
    {'version': '12.2.0', 'line': 'gcc (Debian 12.2.0-14+deb12u1) 12.2.0'}
    >>> parse_version("nvcc", "Cuda compilation tools, release 13.0, V13.0.88\\n")["version"]
    '13.0.88'
    """
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    if name == "nvcc":
        for line in lines:
            m = _NVCC.search(line)
            if m:
                return {"version": m[2], "release": m[1], "line": line}
    line = lines[0] if lines else ""
    found = _VERSION.findall(line)
    return {"version": found[-1] if found else "", "line": line}


def parse_ldconfig(output: str) -> dict[str, str]:
    """soname -> path for the GPU-stack libraries ``ldconfig -p`` lists (first one wins).

    >>> parse_ldconfig("2 libs found\\n\\tlibnccl.so.2 (libc6,x86-64) => /usr/lib/libnccl.so.2\\n"
    ...                "\\tlibz.so.1 (libc6,x86-64) => /lib/libz.so.1\\n")
    {'libnccl.so.2': '/usr/lib/libnccl.so.2'}
    """
    out: dict[str, str] = {}
    for line in output.splitlines():
        name, arrow, path = line.strip().partition(" => ")
        if not arrow:
            continue
        soname = name.split(" (", 1)[0]
        if soname.startswith(LIBRARY_PREFIXES) and soname not in out:
            out[soname] = path.strip()
    return out


def library_files(paths: Mapping[str, str]) -> dict[str, Any]:
    """soname -> ``{"path", "file"}``: the file a name resolves to (``libnccl.so.2.21.5``
    carries the full version that the soname lacks)."""
    return {soname: {"path": path, "file": os.path.basename(os.path.realpath(path))}
            for soname, path in paths.items()}


def _ld_library_path(env: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for folder in env.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if not folder:
            continue
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if name.startswith(LIBRARY_PREFIXES) and name not in out:
                out[name] = os.path.join(folder, name)
    return out


def collect(ctx: CaptureContext) -> dict[str, Any]:
    """``{"toolchain": {...}, "errors": [...]}`` for the child's environment."""
    started = ctx.started.pop("system.toolchain", None)
    if started is None:
        start(ctx)
        started = ctx.started.pop("system.toolchain")
    jobs, cache = started["jobs"], started["cache"]
    errors: list[str] = []
    tools: dict[str, Any] = {}
    libraries: dict[str, Any] = {}
    deadline = time.monotonic() + _TIMEOUT
    for name, job in jobs.items():
        if not job["found"]:
            if name != "ldconfig":
                tools[name] = {"found": False}
            else:
                errors.append("ldconfig not found: the loader's view of the libraries is unknown")
            continue
        output = job.get("output")
        if output is None:
            result = job["pending"].wait(timeout=max(0.1, deadline - time.monotonic()))
            if not result.ok:
                errors.append(result.error_line())
                if name != "ldconfig":
                    tools[name] = {"found": True, "path": job["argv"][0]}
                continue
            output = result.text()
            cache.put(job["key"], job["stamp"], output)
        if name == "ldconfig":
            libraries = library_files(parse_ldconfig(output))
            continue
        tools[name] = {"found": True, "path": job["argv"][0], **parse_version(name, output)}
    cache.flush()
    home, home_from = cuda_home(ctx.env)
    toolchain: dict[str, Any] = {"cuda_home": home, "cuda_home_from": home_from, **tools}
    libc = _libc()
    if libc:
        toolchain["libc"] = libc
    toolchain["ldconfig"] = libraries
    toolchain["ld_library_path"] = library_files(_ld_library_path(ctx.env))
    return {"toolchain": toolchain, "errors": errors}


def _libc() -> str:
    """``glibc 2.36`` (empty where the C library does not say, e.g. musl)."""
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):
        return ""
