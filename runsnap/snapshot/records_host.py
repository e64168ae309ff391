"""The host's sections (``[system]``, ``[runtime]``) as frozen records: GENERATED from
the declarations of ``runsnap/snapshot/shapes*.py`` by ``python -m runsnap.snapshot.shapes``;
do not edit (``tests/test_shapes.py`` fails when it differs from them). The fields' meanings
are documented in the declarations; how a record is read from its mapping, in
:mod:`runsnap.snapshot.sectionrecord`. Read through ``snap.records``.
"""

from __future__ import annotations

from runsnap.snapshot.sectionrecord import SectionRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

__all__ = ["AmdDevice", "AmdGpus", "BulkSite", "Cgroup", "Cpu", "CpuCache", "DataFile",
           "GpuAffinity", "GpuDevice", "GpuTopology", "Gpus", "HostPython", "Hugepages",
           "Hypervisor", "ImportedModule", "InfinibandDevice", "InfinibandPort", "Interface",
           "LibraryFile", "Memory", "Network", "Numa", "NumaNode", "ParsedOption", "ReadSite",
           "ResourceLimit", "Runtime", "Smt", "System", "Tool", "Toolchain", "TracedProcess",
           "VariableRead"]


class CpuCache(SectionRecord):
    """One level of CPU cache, read from cpu0's cache indexes."""

    size_kib: int | None
    instances: int | None


class Smt(SectionRecord):
    """Simultaneous multithreading (``/sys/devices/system/cpu/smt``)."""

    active: bool | str | None
    control: bool | str | None


class Hypervisor(SectionRecord):
    """The hypervisor the CPU flags say the host runs under."""

    present: bool | str | None
    vendor: bool | str | None


class Cpu(SectionRecord):
    """The CPUs."""

    model: str | None
    logical: int | None
    physical: int | None
    affinity: int | None
    vendor: str | None
    flags: Sequence[str] | None
    online: str | None
    microcode: str | None
    family: int | None
    model_number: int | None
    stepping: int | None
    sockets: int | None
    threads_per_core: int | None
    address_sizes: str | None
    caches: Mapping[str, CpuCache]
    smt: Smt
    hypervisor: Hypervisor
    vulnerabilities: Mapping[str, str | None]


class Hugepages(SectionRecord):
    """Huge pages (``/proc/meminfo``)."""

    total: int | None
    free: int | None
    size_kib: int | None


class Memory(SectionRecord):
    """Memory totals."""

    total_bytes: int | None
    available_bytes: int | None
    hugepages: Hugepages
    transparent_hugepage: str | None
    swap_total_bytes: int | None


class GpuDevice(SectionRecord):
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
    memory_mib: int | str | None
    driver_version: str | None
    compute_capability: str | None
    persistence_mode: str | None
    mig_mode: str | None
    ecc_mode: str | None
    power_limit_w: float | str | None
    max_sm_clock_mhz: int | str | None
    max_memory_clock_mhz: int | str | None
    pcie_gen_max: int | str | None
    pcie_width_max: int | str | None


class GpuAffinity(SectionRecord):
    """The CPUs and NUMA node nearest one GPU (``nvidia-smi topo -m``)."""

    cpus: str | None
    numa: str | None


class GpuTopology(SectionRecord):
    """How GPUs and NICs are linked (``nvidia-smi topo``)."""

    links: Mapping[str, str | None]
    affinity: Mapping[str, GpuAffinity]
    nics: Sequence[Any] | Mapping[str, Any] | None


class AmdDevice(SectionRecord):
    """One AMD GPU, the same keys from ``amd-smi`` and ``rocm-smi`` (a fact the tool does not
    give is left out)."""

    gpu: int | str | None
    name: str | None
    gfx_version: str | None
    pci_bus: str | None
    vram_mib: int | str | None
    vram_type: str | None
    driver: str | None
    market_name: str | None
    card_series: str | None


class AmdGpus(SectionRecord):
    """AMD GPUs (``amd-smi``/``rocm-smi``)."""

    devices: tuple[AmdDevice, ...]
    count: int | None
    tool: str | None
    driver_version: str | None
    warning: str | None


class Gpus(SectionRecord):
    """The GPUs, their driver and CUDA."""

    available: bool | None
    count: int | None
    reason: str | None
    driver_version: str | None
    cuda_version: str | None
    devices: tuple[GpuDevice, ...]
    unsupported_fields: Sequence[Any] | None
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


class HostPython(SectionRecord):
    """runsnap's own interpreter."""

    executable: str | None
    implementation: str | None
    version: str | None
    note: str | None


class NumaNode(SectionRecord):
    """One NUMA node (``/sys/devices/system/node/nodeN``)."""

    cpus: str | None
    memory_bytes: int | None


class Numa(SectionRecord):
    """NUMA nodes."""

    count: int | None
    nodes: Mapping[str, NumaNode]


class Cgroup(SectionRecord):
    """The cgroup the child starts in; ``"unlimited"`` where it sets no limit."""

    version: int | str | None
    path: str | None
    cpu_limit: float | str | None
    cpuset: str | None
    memory_limit_bytes: int | str | None
    memory_high_bytes: int | str | None
    pids_limit: int | str | None


class ResourceLimit(SectionRecord):
    """One resource limit (``getrlimit``); ``"unlimited"`` for none."""

    soft: int | str | None
    hard: int | str | None


class Interface(SectionRecord):
    """One network interface (``/sys/class/net/NAME``)."""

    state: str | None
    mtu: int | None
    type: str | None
    speed_mbps: int | None
    driver: str | None


class InfinibandPort(SectionRecord):
    """One port of an InfiniBand device (``/sys/class/infiniband/DEV/ports/N``)."""

    state: str | None
    phys_state: str | None
    rate: str | None
    link_layer: str | None


class InfinibandDevice(SectionRecord):
    """One InfiniBand device."""

    node_type: str | None
    fw_ver: str | None
    board_id: str | None
    hca_type: str | None
    ports: Mapping[str, InfinibandPort]
    netdevs: Sequence[str]


class Network(SectionRecord):
    """Network interfaces and RDMA."""

    interfaces: Mapping[str, Interface]
    infiniband: Mapping[str, InfinibandDevice]
    modules: Sequence[Any] | None
    peer_memory: Sequence[Any] | None
    modules_note: str | None


class LibraryFile(SectionRecord):
    """A GPU-stack library's soname as the loader resolves it."""

    path: str | None
    file: str | None


class Tool(SectionRecord):
    """One compiler or build tool found on ``PATH``."""

    found: bool | None
    path: str | None
    version: str | None
    line: str | None
    release: str | None


class Toolchain(SectionRecord):
    """Compilers, CUDA home, the C library."""

    cuda_home: str | None
    cuda_home_from: str | None
    libc: str | None
    ldconfig: Mapping[str, LibraryFile]
    ld_library_path: Mapping[str, LibraryFile]
    cc: Tool
    cxx: Tool
    gcc: Tool
    clang: Tool
    ninja: Tool
    cmake: Tool
    nvcc: Tool


class System(SectionRecord):
    """``[system]``: the host: OS, CPUs, memory, GPUs, limits, network, toolchain."""

    errors: Sequence[str]
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
    cgroup: Cgroup
    limits: Mapping[str, ResourceLimit]
    network: Network
    toolchain: Toolchain


class TracedProcess(SectionRecord):
    """A traced Python process of the run."""

    pid: int | None
    ppid: int | None
    argv: Sequence[str]
    executable: str | None
    how: str | None
    ended: str | None


class ReadSite(SectionRecord):
    """Where a variable was read."""

    stack: Sequence[str]
    pid: int | None
    via: str | None
    set: bool | None
    reads: int | None


class VariableRead(SectionRecord):
    """How the run read one environment variable (schema 1)."""

    set: bool | None
    value: str | None
    reads: int | None
    bulk: bool | None
    python: bool | None
    native: bool | None
    pids: Sequence[int]
    bulk_reads: int | None
    native_reads: int | None
    via: Sequence[str]
    written: bool | None
    sites: tuple[ReadSite, ...]
    other_values: Sequence[Any]


class ImportedModule(SectionRecord):
    """A module the run imported."""

    file: str | None
    dist: str | None
    version: str | None
    origin: str | None


class ParsedOption(SectionRecord):
    """What the program's option parser made of one option string (``runtime.parsed_options``,
    keyed by the string: ``--node-rank``; runsnap/tracing/parsed.py)."""

    dest: str | None
    value: str | None
    given: bool | None
    custom: bool | None


class DataFile(SectionRecord):
    """A file the run opened for reading (``runtime.data_files``, keyed by its absolute path):
    its content identity when the run ended (runsnap/tracing/datafiles.py)."""

    sha256: str | None
    size: int | None
    hashed: str | None
    missing: bool | None
    written: bool | None
    error: str | None
    pids: Sequence[int]
    stack: Sequence[str]
    keys: Sequence[str]
    quoted: Mapping[str, str]
    modified: str | None


class BulkSite(SectionRecord):
    """A place that read the whole environment (``os.environ`` copied or iterated)."""

    stack: Sequence[str] | int | None
    pid: int | None
    reads: int | None
    names: int | None
    scan: bool | None
    prefixes: Sequence[str]
    suffixes: Sequence[str]
    contains: Sequence[str]
    kept: Sequence[str]


class Runtime(SectionRecord):
    """``[runtime]``: what the run read and imported (docs/runtime.md)."""

    errors: Sequence[str]
    traced: bool | None
    reason: str | None
    native: str | None
    processes: tuple[TracedProcess, ...]
    env: Mapping[str, VariableRead]
    modules: Mapping[str, ImportedModule]
    submodules: Mapping[str, str]
    libraries_loaded: Sequence[str]
    stdlib_modules: Sequence[str]
    config_reads: Sequence[str]
    parsed_options: Mapping[str, ParsedOption]
    data_files: Mapping[str, DataFile]
    data_files_written: Sequence[str]
    data_files_left_out: int | None
    files: Sequence[str]
    frames: Sequence[str | Sequence[Any]]
    stacks: Sequence[Sequence[int]]
    vars: Mapping[str, Mapping[str, Any] | Sequence[Any]]
    native_reads: Mapping[str, int]
    native_startup: Sequence[str]
    values: Mapping[str, Any]
    other_values: Mapping[str, Sequence[Any]]
    bulk_sites: tuple[BulkSite, ...]
