"""NVIDIA GPU facts from NVML, the driver's own library (``libnvidia-ml.so.1``), through ctypes.

nvidia-smi is a front end to this library: the facts ``[system.gpu]`` keeps from its
``--query-gpu`` and its header are one NVML call each. Forking nvidia-smi costs far more than
asking NVML in-process (measured on an H200, median of 5: the query 30 ms and the bare table
108 ms, against 15 ms for ``nvmlInit_v2`` and every call below; NVIDIA's ``nvidia-ml-py`` would
add 58 ms of import to each capture, so the few calls are made here through :mod:`ctypes`). The
library is loaded and asked in a thread of its own (:func:`start`): ctypes lets go of the GIL
for every foreign call, so NVML's initialisation overlaps the other collectors.

Every value is the one nvidia-smi prints for the same field, formatted as
:func:`runsnap.capturing.collectors.gpu.parse_query` reads it (``[N/A]`` and refusals left out):

=======================  ==========================================================
nvidia-smi field         NVML
=======================  ==========================================================
index                    the position in ``nvmlDeviceGetHandleByIndex_v2``'s order
name, uuid               ``nvmlDeviceGetName``, ``nvmlDeviceGetUUID``
memory.total [MiB]       ``nvmlDeviceGetMemoryInfo``'s ``total`` bytes, in whole MiB
pci.bus_id               ``nvmlDeviceGetPciInfo_v3``'s ``busId``
compute_cap              ``nvmlDeviceGetCudaComputeCapability``: ``major.minor``
persistence_mode         ``nvmlDeviceGetPersistenceMode``: ``Enabled``/``Disabled``
mig.mode.current         ``nvmlDeviceGetMigMode``'s current mode
ecc.mode.current         ``nvmlDeviceGetEccMode``'s current mode
power.limit [W]          ``nvmlDeviceGetPowerManagementLimit`` (mW), to two decimals
clocks.max.sm/.memory    ``nvmlDeviceGetMaxClockInfo`` (``NVML_CLOCK_SM``, ``_MEM``)
pcie.link.gen/width.max  ``nvmlDeviceGetMaxPcieLinkGeneration``, ``...Width``
driver_version           ``nvmlSystemGetDriverVersion``
CUDA Version (header)    ``nvmlSystemGetCudaDriverVersion``: 13000 -> ``13.0``
=======================  ==========================================================

A function the installed library lacks (an old driver) names its nvidia-smi field in
``unsupported_fields``, as nvidia-smi's refusal of an unknown field does. The topology
(``nvidia-smi topo -m``) has no one NVML call behind it (nvidia-smi combines NVML's common
ancestors and NVLink states with its own walk of the NICs in sysfs), so it still comes from
nvidia-smi, started with the others and read last.

The library is looked for where the launched program's own loader would look first: each folder
of the capture's ``LD_LIBRARY_PATH``, then the system's search (``ld.so.cache``), as
``dlopen("libnvidia-ml.so.1")`` does. Tests and the benchmark put a stub library built from
recorded nvidia-smi answers there (tests/collectors/nvml_stub.py).
"""

from __future__ import annotations

import os
import threading

from runsnap.base.records import Record, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = ["DRIVER_MARKS", "LIBRARY", "Job", "Reading", "facts", "find_library", "read", "start"]

#: The library's name (its soname: the file every driver installs, whatever its version).
LIBRARY = "libnvidia-ml.so.1"
_NAME_SIZE = 96  # NVML_DEVICE_NAME_V2_BUFFER_SIZE, NVML_DEVICE_UUID_V2_BUFFER_SIZE
_VERSION_SIZE = 80  # NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
_CLOCK_SM, _CLOCK_MEM = 1, 2  # nvmlClockType_t
_ENABLED = {0: "Disabled", 1: "Enabled"}  # nvmlEnableState_t; NVML_DEVICE_MIG_DISABLE/ENABLE


#: What a loaded NVIDIA kernel driver shows (a container with GPUs passed through has the device
#: node): without either, the system's NVML is not tried, which spares a capture on a machine
#: without an NVIDIA GPU ctypes, a thread and a failing dlopen (~3-4 ms, benchmarks/RESULTS.md).
#: A library named by ``LD_LIBRARY_PATH`` is always tried.
DRIVER_MARKS = ("/dev/nvidiactl", "/proc/driver/nvidia")


def find_library(env: Mapping[str, str]) -> str:
    """The library the capture's program would load: the first ``LD_LIBRARY_PATH`` folder of
    ``env`` that holds it, else the bare name (the system's search).

    >>> find_library({"LD_LIBRARY_PATH": "/nonexistent"})
    'libnvidia-ml.so.1'
    """
    for folder in env.get("LD_LIBRARY_PATH", "").split(":"):
        path = os.path.join(folder, LIBRARY)
        if folder and os.path.isfile(path):
            return path
    return LIBRARY


class Reading(Record):
    """What NVML answered: the facts, or why there are none."""

    absent: str = ""
    """Why no library could be loaded ("" when one was)."""
    failed: str = ""
    """Why the library gave no facts: its initialisation failed, it listed no GPU, it did not
    answer in time ("" when it did)."""
    driver_version: str = ""
    """``nvmlSystemGetDriverVersion``."""
    cuda_version: str = ""
    """``nvmlSystemGetCudaDriverVersion`` as nvidia-smi prints it (``13.0``)."""
    devices: list[dict[str, Any]] = field(default_factory=list)
    """Each GPU's facts, keyed and ordered as the nvidia-smi path keys them."""
    unsupported: list[str] = field(default_factory=list)
    """The nvidia-smi fields whose NVML function this library lacks."""
    errors: list[str] = field(default_factory=list)
    """What went wrong beside the facts (a GPU without a handle)."""


def read(library: str) -> Reading:
    """Load ``library`` and read every GPU's facts from it (never raises)."""
    out = Reading()
    if not library:
        out.absent = "RUNSNAP_NO_NVML is set"
        return out
    import ctypes  # deferred: ctypes (~15 ms measured under load), only where NVML is loaded

    try:
        lib = ctypes.CDLL(library)
    except OSError as exc:
        out.absent = f"{LIBRARY} not loadable: {exc}"
        return out
    api = _Api(lib, ctypes)
    init = api.fn("nvmlInit_v2") or api.fn("nvmlInit")
    if init is None:
        out.failed = f"{library}: no nvmlInit_v2"
        return out
    code = init()
    if code:
        out.failed = f"NVML: nvmlInit_v2: {api.error(code)}"
        return out
    try:
        _read_system(api, out)
        _read_devices(api, out)
    except Exception as exc:  # a library that misbehaves is recorded, never raised  # noqa: BLE001
        out.failed = f"NVML: {type(exc).__name__}: {exc}"
    finally:
        shutdown = api.fn("nvmlShutdown")
        if shutdown is not None:
            shutdown()
    return out


class _Api:
    """The library's functions, looked up once each; a missing one is ``None``."""

    def __init__(self, lib: Any, ctypes: Any) -> None:
        self.lib, self.c = lib, ctypes
        self.missing: set[str] = set()

    def fn(self, name: str) -> Any:
        try:
            return getattr(self.lib, name)
        except AttributeError:
            self.missing.add(name)
            return None

    def error(self, code: int) -> str:
        describe = self.fn("nvmlErrorString")
        if describe is None:
            return f"error {code}"
        describe.restype = self.c.c_char_p
        said = describe(code)
        return f"{said.decode('utf-8', 'replace')} (error {code})" if said else f"error {code}"

    def text(self, name: str, *args: Any, size: int = _NAME_SIZE) -> str | None:
        buf = self.c.create_string_buffer(size)
        return buf.value.decode("utf-8", "replace") if self.call(name, *args, buf, size) else None

    def uints(self, name: str, *args: Any, count: int = 1) -> list[int] | None:
        values = [self.c.c_uint() for _ in range(count)]
        ok = self.call(name, *args, *(self.c.byref(v) for v in values))
        return [v.value for v in values] if ok else None

    def call(self, name: str, *args: Any) -> bool:
        """Whether ``name(*args)`` answered (``NVML_SUCCESS``); any refusal (not supported, no
        permission, a function this driver lacks) leaves the fact out, as nvidia-smi's
        ``[N/A]`` does."""
        func = self.fn(name)
        return func is not None and func(*args) == 0


def _read_system(api: _Api, out: Reading) -> None:
    out.driver_version = api.text("nvmlSystemGetDriverVersion", size=_VERSION_SIZE) or ""
    cuda = api.c.c_int()
    if (api.call("nvmlSystemGetCudaDriverVersion", api.c.byref(cuda))
            or api.call("nvmlSystemGetCudaDriverVersion_v2", api.c.byref(cuda))):
        out.cuda_version = f"{cuda.value // 1000}.{cuda.value % 1000 // 10}"


def _read_devices(api: _Api, out: Reading) -> None:
    count = api.uints("nvmlDeviceGetCount_v2")
    if count is None:
        out.failed = "NVML: nvmlDeviceGetCount_v2 did not answer"
        return
    for index in range(count[0]):
        handle = api.c.c_void_p()
        if not api.call("nvmlDeviceGetHandleByIndex_v2", index, api.c.byref(handle)):
            out.errors.append(f"NVML: GPU {index}: no device handle")
            continue
        device: dict[str, Any] = {"index": index}
        for key, nvidia_smi_field, function, reader in _FIELDS:
            value = reader(api, handle)
            if value is not None:
                device[key] = value
            elif function in api.missing and nvidia_smi_field not in out.unsupported:
                out.unsupported.append(nvidia_smi_field)
        out.devices.append(device)
    if not out.devices:
        out.failed = "NVML listed no GPU"  # nvidia-smi, asked next, says why in its own words


def _memory_mib(api: _Api, handle: Any) -> int | None:
    memory = (api.c.c_ulonglong * 3)()  # nvmlMemory_t: total, free, used (bytes)
    return memory[0] >> 20 if api.call("nvmlDeviceGetMemoryInfo", handle, memory) else None


def _pci_bus_id(api: _Api, handle: Any) -> str | None:
    class PciInfo(api.c.Structure):  # type: ignore[name-defined]  # nvmlPciInfo_t
        _fields_ = [("busIdLegacy", api.c.c_char * 16), ("domain", api.c.c_uint),
                    ("bus", api.c.c_uint), ("device", api.c.c_uint),
                    ("pciDeviceId", api.c.c_uint), ("pciSubSystemId", api.c.c_uint),
                    ("busId", api.c.c_char * 32)]

    info = PciInfo()
    if api.call("nvmlDeviceGetPciInfo_v3", handle, api.c.byref(info)):
        return str(info.busId.decode("ascii", "replace"))
    return None


def _compute_capability(api: _Api, handle: Any) -> str | None:
    major, minor = api.c.c_int(), api.c.c_int()
    if api.call("nvmlDeviceGetCudaComputeCapability", handle, api.c.byref(major),
                api.c.byref(minor)):
        return f"{major.value}.{minor.value}"
    return None


def _mode(function: str) -> Callable[[_Api, Any], str | None]:
    """A reader of an ``(current, pending)`` or single enable state, as nvidia-smi names it."""
    def reader(api: _Api, handle: Any) -> str | None:
        pair = function != "nvmlDeviceGetPersistenceMode"
        values = api.uints(function, handle, count=2 if pair else 1)
        return _ENABLED.get(values[0]) if values else None
    return reader


def _power_limit_w(api: _Api, handle: Any) -> float | None:
    milliwatts = api.uints("nvmlDeviceGetPowerManagementLimit", handle)
    return float(f"{milliwatts[0] / 1000:.2f}") if milliwatts else None  # nvidia-smi's "%.2f W"


def _uint(function: str, *before: int) -> Callable[[_Api, Any], int | None]:
    def reader(api: _Api, handle: Any) -> int | None:
        values = api.uints(function, handle, *before)
        return values[0] if values else None
    return reader


def _string(function: str) -> Callable[[_Api, Any], str | None]:
    def reader(api: _Api, handle: Any) -> str | None:
        return api.text(function, handle)
    return reader


#: (snapshot key, nvidia-smi field, NVML function, reader), in the order nvidia-smi's query
#: columns are asked (``gpu.BASE_FIELDS`` + ``gpu.EXTRA_FIELDS``), so a device's keys come out in
#: the same order from either source.
_FIELDS: tuple[tuple[str, str, str, Callable[[_Api, Any], Any]], ...] = (
    ("name", "name", "nvmlDeviceGetName", _string("nvmlDeviceGetName")),
    ("uuid", "uuid", "nvmlDeviceGetUUID", _string("nvmlDeviceGetUUID")),
    ("memory_mib", "memory.total", "nvmlDeviceGetMemoryInfo", _memory_mib),
    ("pci_bus_id", "pci.bus_id", "nvmlDeviceGetPciInfo_v3", _pci_bus_id),
    ("compute_capability", "compute_cap", "nvmlDeviceGetCudaComputeCapability",
     _compute_capability),
    ("persistence_mode", "persistence_mode", "nvmlDeviceGetPersistenceMode",
     _mode("nvmlDeviceGetPersistenceMode")),
    ("mig_mode", "mig.mode.current", "nvmlDeviceGetMigMode", _mode("nvmlDeviceGetMigMode")),
    ("ecc_mode", "ecc.mode.current", "nvmlDeviceGetEccMode", _mode("nvmlDeviceGetEccMode")),
    ("power_limit_w", "power.limit", "nvmlDeviceGetPowerManagementLimit", _power_limit_w),
    ("max_sm_clock_mhz", "clocks.max.sm", "nvmlDeviceGetMaxClockInfo",
     _uint("nvmlDeviceGetMaxClockInfo", _CLOCK_SM)),
    ("max_memory_clock_mhz", "clocks.max.memory", "nvmlDeviceGetMaxClockInfo",
     _uint("nvmlDeviceGetMaxClockInfo", _CLOCK_MEM)),
    ("pcie_gen_max", "pcie.link.gen.max", "nvmlDeviceGetMaxPcieLinkGeneration",
     _uint("nvmlDeviceGetMaxPcieLinkGeneration")),
    ("pcie_width_max", "pcie.link.width.max", "nvmlDeviceGetMaxPcieLinkWidth",
     _uint("nvmlDeviceGetMaxPcieLinkWidth")),
)


class Job:
    """NVML asked in a thread of its own; :meth:`result` waits for its answer.

    ``otherwise`` runs in that thread when NVML gives no facts (no library, a failed
    initialisation, no GPU), unless :meth:`result` gave up waiting first: it starts nvidia-smi's
    query, so that path loses no time to NVML's attempt."""

    def __init__(self, library: str, otherwise: Callable[[], None] | None = None,
                 absent: str = "") -> None:
        self._reading: Reading | None = None
        self._given_up = False
        self._otherwise = otherwise
        self._thread: Any = None
        if absent:  # nothing to load: answered here, without a thread or ctypes
            self._answer(Reading(absent=absent))
            return
        self._thread = threading.Thread(target=self._run, args=(library,), name="runsnap-nvml",
                                        daemon=True)
        self._thread.start()

    def _run(self, library: str) -> None:
        self._answer(read(library))

    def _answer(self, reading: Reading) -> None:
        if (reading.absent or reading.failed) and self._otherwise and not self._given_up:
            try:
                self._otherwise()
            except Exception as exc:  # noqa: BLE001  # recorded; collect() does without
                reading.errors.append(f"starting nvidia-smi: {type(exc).__name__}: {exc}")
        self._reading = reading

    def abandon(self) -> None:
        """The answer is no longer wanted: nothing more is started for it."""
        self._given_up = True

    def result(self, timeout: float) -> Reading:
        """The reading; one whose ``failed`` says so when NVML did not answer in ``timeout``."""
        if self._thread is not None:
            self._thread.join(timeout)
        if self._reading is None:
            self._given_up = True
            return Reading(failed=f"NVML did not answer within {timeout:g} s")
        return self._reading


def start(env: Mapping[str, str], otherwise: Callable[[], None] | None = None) -> Job:
    """Begin reading the GPUs' facts from the NVML that ``env``'s program would load;
    ``otherwise`` as :class:`Job` says. ``RUNSNAP_NO_NVML`` set in runsnap's own environment
    leaves NVML alone (nvidia-smi is asked, in a process of its own: a driver whose library
    misbehaves then cannot take runsnap down with it)."""
    if os.environ.get("RUNSNAP_NO_NVML", "").strip() not in ("", "0"):
        return Job("", otherwise)
    library = find_library(env)
    if library == LIBRARY and not any(os.path.exists(p) for p in DRIVER_MARKS):
        # the system's library with no NVIDIA driver loaded: nvmlInit could only fail
        return Job(library, otherwise, absent="no NVIDIA driver loaded (" +
                   ", ".join(DRIVER_MARKS) + " absent)")
    return Job(library, otherwise)


def facts(reading: Reading) -> dict[str, Any]:
    """``[system.gpu]``'s keys from a reading with devices, in the order and spelling of the
    nvidia-smi path (``nvidia_smi`` and ``topology`` are added by the caller)."""
    out: dict[str, Any] = {"driver_version": reading.driver_version,
                           "cuda_version": reading.cuda_version, "available": True,
                           "count": len(reading.devices), "devices": reading.devices}
    if reading.unsupported:
        out["unsupported_fields"] = reading.unsupported
    return out
