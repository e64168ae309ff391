"""The shapes of the host's sections (:mod:`runsnap.snapshot.shapes`): ``[system]`` (CPU,
memory, GPUs, NUMA, network, toolchain) and ``[runtime]`` (what the traced processes read and
imported). Read like :mod:`runsnap.snapshot.shapes`, only where types are checked and by the
schema's writer and test."""

from __future__ import annotations

from typing import Any, TypedDict

from runsnap.snapshot.shape_marks import Errors

__all__ = [
    "AmdGpus", "Cpu", "GpuDevice", "GpuTopology", "Gpus", "HostPython", "ImportedModule",
    "InfinibandDevice", "Memory", "Network", "Numa", "ReadSite", "RuntimeSection",
    "SystemSection", "Tool", "Toolchain", "TracedProcess", "VariableRead",
]


class Cpu(TypedDict, total=False):
    """The CPUs."""

    model: str | None
    logical: int | None
    physical: int | None
    affinity: int | None
    vendor: str | None
    flags: list[str] | None
    online: str | None
    microcode: str | None
    family: int | None
    model_number: int | None
    stepping: int | None
    sockets: int | None
    threads_per_core: int | None
    address_sizes: str | None
    caches: dict[str, dict[str, int | None]]
    """``L1d``, ``L1i``, ``L2``, ``L3`` -> ``size_kib``, ``instances``."""
    smt: dict[str, bool | str | None]
    """``active``, ``control`` (``/sys/devices/system/cpu/smt``)."""
    hypervisor: dict[str, bool | str | None]
    """``present``, ``vendor``."""
    vulnerabilities: dict[str, str | None]


class Memory(TypedDict, total=False):
    """Memory totals."""

    total_bytes: int | None
    available_bytes: int | None
    hugepages: dict[str, Any]
    transparent_hugepage: str | None
    swap_total_bytes: int | None


class GpuDevice(TypedDict, total=False):
    """One GPU."""

    name: str | None
    index: int | None
    uuid: str | None
    pci_bus_id: str | None
    minor: int | None
    device_node: str | None
    usable: bool | None
    excluded: bool | None
    vbios_version: str | None
    bus_type: str | None
    gsp_firmware: str | None


class GpuTopology(TypedDict, total=False):
    """How GPUs and NICs are linked (``nvidia-smi topo``)."""

    links: dict[str, str | None]
    affinity: dict[str, dict[str, Any]]
    nics: list[Any] | dict[str, Any] | None


class AmdGpus(TypedDict, total=False):
    """AMD GPUs (``amd-smi``/``rocm-smi``)."""

    devices: list[dict[str, Any]] | None
    count: int | None


class Gpus(TypedDict, total=False):
    """The GPUs, their driver and CUDA."""

    available: bool | None
    count: int | None
    reason: str | None
    driver_version: str | None
    cuda_version: str | None
    devices: list[GpuDevice] | None
    unsupported_fields: list[Any] | None
    topology: GpuTopology
    amd: AmdGpus
    source: str | None
    nvidia_smi: str | None
    nvidia_smi_error: str | None
    cuda_version_from: str | None
    kernel_module: str | None
    listed: int | None
    count_note: str | None
    control_node: bool | None


class HostPython(TypedDict, total=False):
    """runsnap's own interpreter."""

    executable: str | None
    implementation: str | None
    version: str | None
    note: str | None


class Numa(TypedDict, total=False):
    """NUMA nodes."""

    count: int | None
    nodes: dict[str, dict[str, Any]]


class InfinibandDevice(TypedDict, total=False):
    """One InfiniBand device."""

    ports: dict[str, dict[str, Any]]


class Network(TypedDict, total=False):
    """Network interfaces and RDMA."""

    interfaces: dict[str, dict[str, Any]]
    infiniband: dict[str, InfinibandDevice]
    modules: list[Any] | None
    peer_memory: list[Any] | None
    modules_note: str | None


class Tool(TypedDict, total=False):
    """One compiler or build tool found on ``PATH``."""

    found: bool | None
    path: str | None
    version: str | None
    line: str | None
    release: str | None


class Toolchain(TypedDict, total=False):
    """Compilers, CUDA home, the C library."""

    cuda_home: str | None
    cuda_home_from: str | None
    libc: str | None
    ldconfig: dict[str, dict[str, Any]] | None
    ld_library_path: dict[str, dict[str, Any]]
    cc: Tool
    cxx: Tool
    gcc: Tool
    clang: Tool
    ninja: Tool
    cmake: Tool
    nvcc: Tool


class SystemSection(TypedDict, total=False):
    """``[system]``: the host: OS, CPUs, memory, GPUs, limits, network, toolchain."""

    errors: Errors
    host: str | None
    os: str | None
    kernel: str | None
    machine: str | None
    system: str | None
    cpu: Cpu
    memory: Memory
    gpu: Gpus
    python: HostPython
    numa: Numa
    cgroup: dict[str, Any]
    limits: dict[str, dict[str, Any]]
    network: Network
    toolchain: Toolchain


class TracedProcess(TypedDict, total=False):
    """A traced Python process of the run."""

    pid: int | None
    ppid: int | None
    argv: list[str]
    executable: str | None
    how: str | None
    """How it started: ``exec`` or ``fork``."""
    ended: str | None
    """``exited``, or ``os._exit(N)``."""


class ReadSite(TypedDict, total=False):
    """Where a variable was read."""

    stack: list[str]
    pid: int | None
    via: str | None
    """The call that read it (``get``, ...)."""
    set: bool | None
    reads: int | None


class VariableRead(TypedDict, total=False):
    """How the run read one environment variable (schema 1)."""

    set: bool | None
    value: str | None
    reads: int | None
    bulk: bool | None
    python: bool | None
    native: bool | None
    pids: list[int]
    bulk_reads: int | None
    native_reads: int | None
    via: list[str]
    written: bool | None
    """The run set it itself."""
    sites: list[ReadSite]


class ImportedModule(TypedDict, total=False):
    """A module the run imported."""

    file: str | None
    dist: str | None
    version: str | None
    origin: str | None


class RuntimeSection(TypedDict, total=False):
    """``[runtime]``: what the run read and imported (docs/runtime.md)."""

    errors: Errors
    traced: bool | None
    reason: str | None
    native: str | None
    processes: list[TracedProcess]
    env: dict[str, VariableRead]
    modules: dict[str, ImportedModule]
    stdlib_modules: list[str]
    config_reads: list[str]
    files: list[str]
    frames: list[str | list[Any]]
    stacks: list[list[int]]
    vars: dict[str, dict[str, Any] | list[Any]]
    native_reads: dict[str, int]
    values: dict[str, Any]
    other_values: dict[str, list[Any]]
