"""The environment as maintainers read it: ``torch.utils.collect_env``'s order, from a snapshot.

:func:`environment` turns a snapshot's ``[packages]`` and ``[system]`` into ordered groups of
``(label, value)`` facts, in the order ``python -m torch.utils.collect_env`` prints them (the
torch build and its settings as ``torch.__config__.show()`` prints them, the OS and compilers,
Python, CUDA and the GPUs with whether torch can use them, the CPU, the libraries), then what
vLLM's ``collect_env`` and ``sglang.check_env`` add (engine builds, GPU topology, limits) and what
neither prints (cgroup budget, network, RDMA). :mod:`runsnap.render.hostsummary` prints them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from runsnap.knowledge.packages import distribution_version, normalize_name
from runsnap.snapshot.records import Build, Packages, System, TorchBuild
from runsnap.snapshot.records_host import CpuCache, Tool

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["RELEVANT_PACKAGES", "Groups", "environment"]

#: Distribution names collect_env lists under "Versions of relevant libraries", with the
#: engines' own (vLLM's and SGLang's lists).
RELEVANT_PACKAGES = re.compile(
    r"^(torch|numpy|triton|optree|onnx|nvidia-.*|flash.?attn.*|flashinfer.*|xformers|vllm|"
    r"sglang|sgl-kernel|transformers|tokenizers|accelerate|deepspeed|pytorch-triton.*|"
    r"torchvision|torchaudio|torchao|mypy|pyzmq|ray|xgrammar|outlines|deep-gemm|"
    r"nixl|mooncake.*|cupy.*|jax|jaxlib)$")
_CONDA_RELEVANT = re.compile(r"^(pytorch|torch.*|numpy|triton|cuda.*|cudnn|nccl|libnccl|mkl|"
                             r"magma.*|cudatoolkit|libcublas|libcudnn.*|python)$")
_NOTABLE_FLAGS = re.compile(r"^(avx.*|amx.*|sse4.*|fma|f16c|sve.*|asimd.*|bf16|i8mm)$")

#: Groups of ``(label, value)`` facts, titled, in the order maintainers read them.
Groups = list[tuple[str, list[tuple[str, str]]]]


def _size(kib: int) -> str:
    """Cache sizes as lscpu prints them.

    >>> _size(48), _size(2048), _size(107520)
    ('48 KiB', '2 MiB', '105 MiB')
    """
    return f"{kib // 1024} MiB" if kib >= 1024 and kib % 1024 == 0 or kib >= 10240 else (
        f"{kib} KiB")


def _bytes(n: Any) -> str:
    if not isinstance(n, int):
        return str(n)
    for unit, div in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} B"


def _not(found: Any, what: str = "could not collect") -> str:
    return str(found) if found not in (None, "", [], {}, ()) else what


def _or(found: Any, what: Any = "?") -> Any:
    """A field as written, ``what`` when it was not (``mapping.get(key, what)``)."""
    return what if found is None else found


def _torch(pk: Packages) -> list[tuple[str, str]]:
    builds = pk.builds.raw  # the engines beside torch, by name: each read as a Build
    torch = pk.builds.torch
    dists = pk.distributions
    version = torch.version or (dists["torch"].version if "torch" in dists else None)
    rows = [("PyTorch version", _not(version, "not installed")),
            ("Is debug build", _not(torch.debug, "could not collect"))]
    if torch:
        rows += [("CUDA used to build PyTorch", torch.cuda or "None"),
                 ("ROCM used to build PyTorch", torch.hip or "N/A")]
        if torch.git_version:
            rows.append(("PyTorch git version", torch.git_version))
    # a snapshot written before builds took the distribution's version: read it from there
    versions = {n: d.version for n, d in dists.items()}
    for name, label in (("vllm", "vLLM"), ("sglang", "SGLang"), ("sgl_kernel", "sgl-kernel"),
                        ("flashinfer", "FlashInfer"), ("xformers", "xformers"),
                        ("triton", "Triton"), ("flash_attn", "flash-attn"),
                        ("deep_gemm", "DeepGEMM")):
        raw = builds.get(name)
        if not raw:
            continue
        b = Build(raw)
        detail = [b.version or distribution_version(name, versions) or "version unknown"]
        if b.built_for:
            detail.append(f"built for {b.built_for}")
        if b.architectures:
            detail.append("architectures " + " ".join(b.architectures))
        if b.built_with:
            detail.append("built with " + ", ".join(f"{k} {v}" for k, v in b.built_with.items()))
        if b.backends:
            detail.append("backends " + " ".join(b.backends))
        rows.append((f"{label} version", "; ".join(detail)))
    return rows


def _tool(t: Tool) -> str:
    return t.line or ("not found" if t.found is False else "could not collect")


def _os(system: System, pk: Packages) -> list[tuple[str, str]]:
    tools = system.toolchain
    rows = [("OS", f"{_or(system.os)} ({_or(system.machine)})"),
            ("Kernel", _not(system.kernel)),
            ("GCC version", _tool(tools.gcc)), ("C compiler (cc)", _tool(tools.cc)),
            ("C++ compiler (c++)", _tool(tools.cxx)), ("Clang version", _tool(tools.clang)),
            ("CMake version", _tool(tools.cmake)), ("Ninja version", _tool(tools.ninja)),
            ("Libc version", _not(tools.libc)),
            ("Python platform", f"{_or(system.system)}-{_or(system.kernel)}-{_or(system.machine)}"
                                + (f"-with-{tools.libc.replace(' ', '')}" if tools.libc else "")),
            ("Python version", f"{_not(pk.python_version)} ({_not(pk.implementation, '?')})"),
            ("Python interpreter", f"{_not(pk.interpreter)} ({_or(pk.reason, '')})")]
    return rows


def _inferred(torch: TorchBuild, fact: str) -> str:
    """``False (why)``: an availability fact of the torch build with its reason; collect_env's
    ``N/A`` without torch, ``could not collect`` from a snapshot that did not infer it.

    >>> _inferred(TorchBuild({"version": "2.9", "cuda_available": False,
    ...            "cuda_available_reason": "built without CUDA"}), "cuda_available")
    'False (built without CUDA)'
    """
    if not torch:
        return "N/A"
    found = getattr(torch, fact)
    if not isinstance(found, bool):
        return "could not collect"
    why = getattr(torch, f"{fact}_reason")
    return f"{found}" + (f" ({why})" if why else "")


def _allocator(variables: Mapping[str, Any]) -> str:
    """collect_env's "Caching allocator config": the allocator variables that are set."""
    conf = {k: variables[k] for k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF",
                                      "PYTORCH_ALLOC_CONF") if variables.get(k)}
    return str(conf) if conf else "N/A"


def _gpu(system: System, pk: Packages, variables: Mapping[str, Any]) -> list[tuple[str, str]]:
    tools = system.toolchain
    gpu = system.gpu
    libs = pk.libraries
    nvcc = tools.nvcc
    torch = pk.builds.torch
    loading = "N/A"
    if torch.cuda_available is True:  # torch.cuda.init() sets LAZY when it is unset
        loading = str(variables.get("CUDA_MODULE_LOADING") or "LAZY")
    rows = [("Is CUDA available", _inferred(torch, "cuda_available")),
            ("CUDA_MODULE_LOADING set to", loading),
            ("CUDA runtime version (nvcc)", nvcc.version or
             ("nvcc not found" if nvcc.found is False else "could not collect")),
            ("CUDA_HOME", _not(tools.cuda_home, "not found")
             + (f" ({tools.cuda_home_from})" if tools.cuda_home else ""))]
    if gpu.available:
        for dev in gpu.devices or ():
            extra = [f"{_or(dev.memory_mib)} MiB"]
            for value, label in ((dev.compute_capability, "compute capability"),
                                 (dev.mig_mode, "MIG"), (dev.ecc_mode, "ECC"),
                                 (dev.persistence_mode, "persistence"),
                                 (dev.power_limit_w, "power limit W")):
                if value is not None:
                    extra.append(f"{label} {value}")
            rows.append((f"GPU {_or(dev.index)}", f"{_or(dev.name)} ({', '.join(extra)})"))
    else:
        rows.append(("GPU models and configuration", f"none ({_or(gpu.reason, 'unknown')})"))
    rows += [("Nvidia driver version", _not(gpu.driver_version, "none")),
             ("CUDA version (driver)", _not(gpu.cuda_version, "none"))]
    for family, label in (("cudnn", "cuDNN version"), ("nccl", "NCCL version"),
                          ("cuda-runtime", "CUDA runtime library"), ("cublas", "cuBLAS version"),
                          ("hip", "HIP runtime"), ("miopen", "MIOpen runtime"),
                          ("rccl", "RCCL version")):
        lib = libs.get(family)
        if lib:
            rows.append((label, f"{lib.version or '?'} ({lib.source or lib.dir})"))
        elif family in ("cudnn", "nccl"):
            ld = {**(tools.ldconfig or {}), **tools.ld_library_path}
            found = [f"{v.file} ({v.path})" for k, v in ld.items()
                     if k.startswith(f"lib{family}.so")]
            built = torch.config.get("CUDNN_VERSION") if family == "cudnn" else ""
            rows.append((label, found[0] if found else "could not collect" + (
                f" (torch is built against {built})" if built else "")))
    amd = gpu.amd
    if amd:
        rows.append(("AMD GPUs", f"{_or(amd.count, 0)} x " + ", ".join(sorted(
            {str(d.name or d.market_name or d.card_series or d.gfx_version or "?")
             for d in amd.devices or []})) + f"; driver {_or(amd.driver_version)}"))
    if gpu.unsupported_fields:
        rows.append(("Driver did not report", ", ".join(gpu.unsupported_fields)))
    rows += [("Is XPU available", _inferred(torch, "xpu_available")),
             ("Is XNNPACK available", _inferred(torch, "xnnpack_available")),
             ("Caching allocator config", _allocator(variables))]
    return rows


def _flags(text: str) -> str:
    """Compiler flags in brief: optimisation, the defines, the GPU architectures, the count.

    >>> _flags(" -DNDEBUG -DUSE_KINETO -O2 -fPIC -gencode arch=compute_90,code=sm_90")
    '-O2; defines NDEBUG USE_KINETO; architectures sm_90; 6 words'
    """
    words = text.split()
    parts = [" ".join(dict.fromkeys(w for w in words if re.fullmatch(r"-O\w*", w)))]
    defines = [w[2:] for w in words if w.startswith("-D")]
    if defines:
        parts.append("defines " + " ".join(dict.fromkeys(defines)))
    archs = re.findall(r"code=((?:sm|compute)_\w+)", text)
    if archs:
        parts.append("architectures " + " ".join(dict.fromkeys(archs)))
    parts.append(f"{len(words)} words")
    return "; ".join(p for p in parts if p)


def _torch_config(pk: Packages) -> list[tuple[str, str]]:
    """torch.__config__.show()'s "Build settings" (every non-empty one, by name, as torch
    prints them; compiler flags in brief), then the switches of ``TorchConfig.cmake``."""
    torch = pk.builds.torch
    config = torch.config
    # deferred: runsnap.capturing.collectors.torchconfig, ~185 ms measured under load; only _torch_config()
    # needs it
    from runsnap.capturing.collectors.torchconfig import switch

    shown = [(k, v) for k, v in sorted(config.items()) if isinstance(v, str) and v]
    rows = [(k, _flags(v) if k.endswith("_FLAGS") else v) for k, v in shown
            if switch(v) is None or not k.startswith(("USE_", "HAS_", "PERF_"))]
    for state, label in ((True, "switched on"), (False, "switched off")):
        names = [k for k, v in shown if k.startswith(("USE_", "HAS_", "PERF_"))
                 and switch(v) is state]
        if names:
            rows.append((label, " ".join(names)))
    switches = torch.switches
    if switches:
        rows.append(("TorchConfig.cmake", ", ".join(
            f"{k}={'ON' if v else 'OFF'}" for k, v in sorted(switches.items()))))
    if isinstance(torch.cxx11_abi, bool):
        rows.append(("_GLIBCXX_USE_CXX11_ABI", str(int(torch.cxx11_abi))))
    return rows


def _topology(system: System) -> list[tuple[str, str]]:
    topo = system.gpu.topology
    rows = [(pair, str(link)) for pair, link in topo.links.items()]
    rows += [(f"{g} affinity", f"CPUs {_or(a.cpus, '')}" + (f", NUMA {a.numa}" if a.numa else ""))
             for g, a in topo.affinity.items()]
    return rows


def _cache(name: str, c: CpuCache) -> str:
    """One CPU cache as lscpu prints it: ``L2 2 MiB (2 instances)``."""
    size, count = c.size_kib or 0, _or(c.instances, 1)
    return f"{name} {_size(size * count)} ({count} instance{'s' if count != 1 else ''})"


def _cpu(system: System) -> list[tuple[str, str]]:
    cpu = system.cpu
    mem = system.memory
    rows = [("Model name", _not(cpu.model)),
            ("Vendor ID", _not(cpu.vendor)),
            ("CPU(s)", f"{_or(cpu.logical)} logical, {_or(cpu.physical)} physical, "
                       f"{_or(cpu.affinity)} usable")]
    if cpu.has("sockets"):
        rows.append(("Socket(s)", str(cpu.sockets)))
    if cpu.has("threads_per_core"):
        rows.append(("Thread(s) per core", str(cpu.threads_per_core)))
    if cpu.caches:
        rows.append(("Caches", ", ".join(_cache(name, c) for name, c in cpu.caches.items())))
    flags = [f for f in cpu.flags or () if _NOTABLE_FLAGS.match(f)]
    if cpu.flags is not None:
        rows.append(("Notable flags", " ".join(flags) or "none of avx*, amx*, sve*"))
    hyp = cpu.hypervisor
    if hyp:
        rows.append(("Hypervisor", str(hyp.vendor or '') or (
            "present (vendor not shown: no DMI)" if hyp.present else "none")))
    for name, node in system.numa.nodes.items():
        rows.append((f"NUMA {name} CPU(s)", f"{_or(node.cpus, '')}" + (
            f", {_bytes(node.memory_bytes)}" if node.has("memory_bytes") else "")))
    rows.append(("Memory", f"{_bytes(mem.total_bytes)} total"))
    if mem.hugepages:
        hp = mem.hugepages
        rows.append(("Huge pages", f"{hp.total} x {hp.size_kib} KiB "
                                   f"({hp.free} free); THP {_or(mem.transparent_hugepage)}"))
    cg = system.cgroup
    if cg.version:
        rows.append(("cgroup", f"v{cg.version}: CPUs {_or(cg.cpu_limit)}, cpuset "
                               f"{_or(cg.cpuset)}, memory {_bytes(_or(cg.memory_limit_bytes))}"))
    return rows


def _limits_network(system: System) -> list[tuple[str, str]]:
    def limit(name: str, value: Any) -> str:
        return _bytes(value) if name in ("memlock", "stack", "as") else str(value)

    rows = [(f"ulimit {name}", f"{limit(name, v.soft)} (hard {limit(name, v.hard)})")
            for name, v in system.limits.items()]
    net = system.network
    for name, iface in net.interfaces.items():
        rows.append((f"Interface {name}", f"{_or(iface.state)}, MTU {_or(iface.mtu)}"
                     + (f", {iface.speed_mbps} Mb/s" if iface.has("speed_mbps") else "")
                     + (f", {iface.driver}" if iface.has("driver") else "")))
    for dev, info in net.infiniband.items():
        ports = "; ".join(f"port {p}: {v.state}, {v.rate}, {v.link_layer}"
                          for p, v in info.ports.items())
        rows.append((f"RDMA {dev}", ports or "no ports"))
    if net.has("peer_memory"):
        rows.append(("GPUDirect peer memory", " ".join(net.peer_memory or ()) or "not loaded"))
    return rows


def _libraries(pk: Packages) -> list[tuple[str, str]]:
    dists = pk.distributions
    rows = [("[pip3]", f"{name}=={_or(d.version, '')}") for name, d in sorted(dists.items())
            if RELEVANT_PACKAGES.match(normalize_name(name))]
    conda = (pk.conda.packages if pk.conda else None) or {}
    rows += [("[conda]", f"{name} {_or(c.version, '')} {_or(c.build, '')}")
             for name, c in sorted(conda.items()) if _CONDA_RELEVANT.match(name)]
    return rows


def environment(snapshot: Snapshot) -> Groups:
    """The groups of facts, in the order maintainers read them."""
    system, pk = snapshot.records.system, snapshot.records.packages
    variables = snapshot.records.env.vars
    groups: Groups = [
        ("PyTorch and engines", _torch(pk)),
        ("PyTorch build settings (torch.__config__.show())", _torch_config(pk)),
        ("OS and toolchain", _os(system, pk)),
        ("CUDA and GPUs", _gpu(system, pk, variables)),
        ("GPU topology", _topology(system)),
        ("CPU and memory", _cpu(system)),
        ("Limits and network", _limits_network(system)),
        ("Versions of relevant libraries", _libraries(pk)),
    ]
    return [(title, rows) for title, rows in groups if rows]
