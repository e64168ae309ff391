"""The shapes of the host's sections (:mod:`runsnap.snapshot.shapes`): ``[system]`` (CPU,
memory, GPUs, NUMA, network, toolchain) and ``[runtime]`` (what the traced processes read and
imported). Read like :mod:`runsnap.snapshot.shapes`, only where types are checked and by the
schema's writer and test."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from runsnap.snapshot.shape_marks import Compare, Errors, NotCompared

__all__ = [
    "AmdDevice", "AmdGpus", "BulkSite", "Cgroup", "Cpu", "CpuCache", "GpuAffinity", "GpuDevice",
    "GpuTopology", "Gpus", "HostPython", "Hugepages", "Hypervisor", "ImportedModule",
    "InfinibandDevice", "InfinibandPort", "Interface", "LibraryFile", "Memory", "Network", "Numa",
    "NumaNode", "ParsedOption", "ReadSite", "ResourceLimit", "RuntimeSection", "Smt", "SystemSection", "Tool",
    "Toolchain", "TracedProcess", "VariableRead",
]


class CpuCache(TypedDict, total=False):
    """One level of CPU cache, read from cpu0's cache indexes."""

    size_kib: int | None
    instances: int | None
    """How many copies the online CPUs share out (``lscpu``'s instances)."""


class Smt(TypedDict, total=False):
    """Simultaneous multithreading (``/sys/devices/system/cpu/smt``)."""

    active: bool | str | None
    control: bool | str | None


class Hypervisor(TypedDict, total=False):
    """The hypervisor the CPU flags say the host runs under."""

    present: bool | str | None
    vendor: bool | str | None
    """From DMI, where readable."""


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
    caches: dict[str, CpuCache]
    """``L1d``, ``L1i``, ``L2``, ``L3``."""
    smt: Smt
    hypervisor: Hypervisor
    vulnerabilities: dict[str, str | None]


class Hugepages(TypedDict, total=False):
    """Huge pages (``/proc/meminfo``)."""

    total: int | None
    free: int | None
    size_kib: int | None


class Memory(TypedDict, total=False):
    """Memory totals."""

    total_bytes: int | None
    available_bytes: int | None
    hugepages: Hugepages
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
    memory_mib: int | str | None
    """Its memory (an answer nvidia-smi gives in other words is kept as text)."""
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


class GpuAffinity(TypedDict, total=False):
    """The CPUs and NUMA node nearest one GPU (``nvidia-smi topo -m``)."""

    cpus: str | None
    numa: str | None


class GpuTopology(TypedDict, total=False):
    """How GPUs and NICs are linked (``nvidia-smi topo``)."""

    links: dict[str, str | None]
    affinity: dict[str, GpuAffinity]
    nics: list[Any] | dict[str, Any] | None


class AmdDevice(TypedDict, total=False):
    """One AMD GPU, the same keys from ``amd-smi`` and ``rocm-smi`` (a fact the tool does not
    give is left out)."""

    gpu: int | str | None
    """amd-smi's index, or rocm-smi's card (``card0``)."""
    name: str | None
    gfx_version: str | None
    pci_bus: str | None
    vram_mib: int | str | None
    vram_type: str | None
    driver: str | None
    market_name: str | None
    """The model, as runsnap wrote it before both tools' facts shared one shape (amd-smi)."""
    card_series: str | None
    """The model, as runsnap wrote it before both tools' facts shared one shape (rocm-smi)."""


class AmdGpus(TypedDict, total=False):
    """AMD GPUs (``amd-smi``/``rocm-smi``)."""

    devices: list[AmdDevice] | None
    count: int | None
    tool: str | None
    """``amd-smi`` or ``rocm-smi``."""
    driver_version: str | None
    warning: str | None
    """What the tool printed before its JSON."""


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


class NumaNode(TypedDict, total=False):
    """One NUMA node (``/sys/devices/system/node/nodeN``)."""

    cpus: str | None
    memory_bytes: int | None


class Numa(TypedDict, total=False):
    """NUMA nodes."""

    count: int | None
    nodes: dict[str, NumaNode]


class InfinibandPort(TypedDict, total=False):
    """One port of an InfiniBand device (``/sys/class/infiniband/DEV/ports/N``)."""

    state: str | None
    phys_state: str | None
    rate: str | None
    link_layer: str | None


class InfinibandDevice(TypedDict, total=False):
    """One InfiniBand device."""

    node_type: str | None
    fw_ver: str | None
    board_id: str | None
    hca_type: str | None
    ports: dict[str, InfinibandPort]
    netdevs: list[str]
    """Its network interfaces."""


class Interface(TypedDict, total=False):
    """One network interface (``/sys/class/net/NAME``)."""

    state: str | None
    mtu: int | None
    type: str | None
    speed_mbps: int | None
    driver: str | None


class Network(TypedDict, total=False):
    """Network interfaces and RDMA."""

    interfaces: dict[str, Interface]
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


class LibraryFile(TypedDict, total=False):
    """A GPU-stack library's soname as the loader resolves it."""

    path: str | None
    """Where the name resolves (``ldconfig -p``, or a folder of ``LD_LIBRARY_PATH``)."""
    file: str | None
    """The file it is, links followed (``libnccl.so.2.21.5``: the full version)."""


class Toolchain(TypedDict, total=False):
    """Compilers, CUDA home, the C library."""

    cuda_home: str | None
    cuda_home_from: str | None
    libc: str | None
    ldconfig: dict[str, LibraryFile] | None
    ld_library_path: dict[str, LibraryFile]
    cc: Tool
    cxx: Tool
    gcc: Tool
    clang: Tool
    ninja: Tool
    cmake: Tool
    nvcc: Tool


class Cgroup(TypedDict, total=False):
    """The cgroup the child starts in; ``"unlimited"`` where it sets no limit."""

    version: int | str | None
    """1 or 2 (``""`` when ``/proc/self/cgroup`` was not readable)."""
    path: str | None
    cpu_limit: float | str | None
    """CPUs' worth of time (quota / period)."""
    cpuset: str | None
    memory_limit_bytes: int | str | None
    memory_high_bytes: int | str | None
    pids_limit: int | str | None


class ResourceLimit(TypedDict, total=False):
    """One resource limit (``getrlimit``); ``"unlimited"`` for none."""

    soft: int | str | None
    hard: int | str | None


class SystemSection(TypedDict, total=False):
    """``[system]``: the host: OS, CPUs, memory, GPUs, limits, network, toolchain."""

    errors: Errors
    host: Annotated[str | None, Compare()]
    os: Annotated[str | None, Compare()]
    kernel: Annotated[str | None, Compare()]
    machine: Annotated[str | None, Compare()]
    system: Annotated[str | None, NotCompared("the operating system's name; os and kernel are compared")]
    cpu: Annotated[Cpu, Compare()]
    memory: Annotated[Memory, Compare()]
    gpu: Annotated[Gpus, Compare()]
    python: Annotated[HostPython, Compare()]
    numa: Annotated[Numa, Compare()]
    cgroup: Annotated[Cgroup, Compare()]
    limits: Annotated[dict[str, ResourceLimit], Compare()]
    network: Annotated[Network, Compare()]
    toolchain: Annotated[Toolchain, Compare()]


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


class BulkSite(TypedDict, total=False):
    """A place that read the whole environment (``os.environ`` copied or iterated)."""

    stack: list[str] | int | None
    """Its stack, innermost first (schema 2: the number of a stack of ``stacks``)."""
    pid: int | None
    reads: int | None
    names: int | None
    """How many variables it saw."""
    scan: bool | None
    """Its code filters the names (true), copies them all (false); absent: not known."""
    prefixes: list[str]
    """The prefixes its filter keeps (``TQDM_``)."""
    suffixes: list[str]
    """The suffixes its filter keeps (``_proxy``)."""
    contains: list[str]
    """The parts of a name its filter looks for."""
    kept: list[str]
    """The whole names its filter keeps."""


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
    other_values: list[Any]
    """Other values other processes saw."""


class ImportedModule(TypedDict, total=False):
    """A module the run imported."""

    file: str | None
    dist: str | None
    version: str | None
    origin: str | None


class DataFile(TypedDict, total=False):
    """A file the run opened for reading (``runtime.data_files``, keyed by its absolute path):
    its content identity when the run ended (runsnap/tracing/datafiles.py)."""

    sha256: str | None
    """The sha256 of the whole file, or (``hashed``) of its size, first and last MiB."""
    size: int | None
    hashed: str | None
    """``whole``, ``first and last MiB`` (over 16 MiB), or why it was not hashed."""
    missing: bool | None
    """The open was tried, and the file was not there when the run ended."""
    written: bool | None
    """Written during the run (opened for writing, or modified after the launch): an output."""
    error: str | None
    """Why it could not be read (``not a regular file``, a permission)."""
    pids: list[int]
    """The traced processes that opened it."""
    stack: list[str]
    """Where the first of them opened it, innermost frame first."""
    keys: list[str]
    """The key names of a small config file (never their values)."""
    quoted: dict[str, str]
    """A failed run's own error quoting a value of the file: key -> the token as the error
    printed it (runsnap/tracing/quoted.py)."""
    modified: str | None
    """When the file was last modified (UTC, ISO 8601), as the run ended."""


class ParsedOption(TypedDict, total=False):
    """What the program's option parser made of one option string (``runtime.parsed_options``,
    keyed by the string: ``--node-rank``; runsnap/tracing/parsed.py)."""

    dest: str | None
    """Where the parser stores the option (``node_rank``): the spellings of one option share it."""
    value: str | None
    """Its value after the parse, as text: ``repr`` of a number, string, bool, ``None`` or a list
    of those, ``<type name>`` for anything else, cut past 200 characters (ending ``...``)."""
    given: bool | None
    """The parse this value comes from read the option string among its words: it received
    the option (not another program's parser declaring the same string)."""
    custom: bool | None
    """The option's action is the program's own ``Action`` subclass, not one of argparse's
    (``store``, ``store_true``, ``count``...): its call may do more than set the dest."""


class RuntimeSection(TypedDict, total=False):
    """``[runtime]``: what the run read and imported (docs/runtime.md)."""

    errors: Errors
    traced: Annotated[bool | None, Compare()]
    reason: Annotated[str | None, NotCompared("why the run was not traced; traced is compared")]
    native: Annotated[str | None, Compare()]
    processes: Annotated[list[TracedProcess], Compare()]
    env: Annotated[dict[str, VariableRead], Compare()]
    modules: Annotated[dict[str, ImportedModule], Compare()]
    submodules: Annotated[dict[str, str], NotCompared(
        "which of the program's own modules ran: evidence for [git]'s uncommitted edits")]
    """The submodules of the program's own packages (found outside installed packages and
    Python's library) imported, each with its file; 512 a process at most."""
    libraries_loaded: Annotated[list[str], NotCompared(
        "which copy of a library the loader took: evidence for [system] toolchain's "
        "ld_library_path differences")]
    """The GPU and interconnect libraries (the toolchain's) the traced processes had mapped when
    they ended, by file name; absent where a process did not say (killed) or from a runsnap
    before it was recorded."""
    stdlib_modules: Annotated[list[str], NotCompared(
        "the standard library follows the interpreter, compared in [packages]")]
    config_reads: Annotated[list[str], NotCompared(
        "the config fields the program read: evidence for [models]' fields, compared there")]
    parsed_options: Annotated[dict[str, ParsedOption], NotCompared(
        "what the program's parser made of [command]'s options: evidence for their differences, "
        "compared there")]
    data_files: Annotated[dict[str, DataFile], Compare()]
    data_files_written: Annotated[list[str], NotCompared(
        "the outputs of the run: evidence that a file git lists as changed is one")]
    """The files a traced process opened for writing before it read them: outputs."""
    data_files_left_out: Annotated[int | None, NotCompared(
        "how many more files were opened than listed: a count of the run, not an input")]
    files: Annotated[list[str], NotCompared("the files read are the evidence of the reads compared")]
    frames: Annotated[list[str | list[Any]], NotCompared(
        "the stacks' frames, evidence of the reads compared")]
    stacks: Annotated[list[list[int]], NotCompared("the stacks of the reads, evidence of the reads compared")]
    vars: Annotated[dict[str, dict[str, Any] | list[Any]], NotCompared("schema 2 of env, which is compared")]
    native_reads: Annotated[dict[str, int], NotCompared("counts of native reads; env says which were read")]
    native_startup: Annotated[list[str], NotCompared(
        "when native reads happened: evidence for env's differences, which are compared")]
    values: Annotated[dict[str, Any], NotCompared("the values of env's reads, compared there")]
    other_values: Annotated[dict[str, list[Any]], NotCompared("the values of env's reads, compared there")]
    bulk_sites: Annotated[list[BulkSite], NotCompared(
        "where the whole environment was read: evidence for env's differences, compared there")]
