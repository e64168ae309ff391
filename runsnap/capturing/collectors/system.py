"""``[system]``: host, OS and kernel, Python, CPU model and counts, memory.

The rest of ``[system]`` comes from the parts registered after it (``collectors.PARTS``): GPUs
(``gpu``), CPU and memory layout (``cpu``), cgroup limits, resource limits, network and
toolchain.

Speed: on Linux, memory and physical cores are read from ``/proc`` and ``/sys`` directly (the
files psutil reads); psutil, a costly import for every capture, is imported only where those
are missing.
"""

from __future__ import annotations

import os
import sys

from runsnap.base.files import open_regular_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from runsnap.capturing.context import CaptureContext
    from runsnap.snapshot.shapes_host import Cpu, Memory, SystemSection

_IMPLEMENTATIONS = {"cpython": "CPython", "pypy": "PyPy", "graalpy": "GraalVM"}


def _platform() -> Any:
    """:mod:`platform`, only where ``/proc`` and ``os.uname`` do not answer: it is not imported
    by a capture (tests/test_capture_imports.py; ~1.5 ms)."""
    # deferred: platform, ~2 ms measured under load; only _platform() needs it
    import platform

    return platform


def _uname() -> tuple[str, str, str]:
    """(system, kernel release, machine) from ``os.uname`` (no :mod:`platform` import)."""
    if hasattr(os, "uname"):
        u = os.uname()
        return u.sysname, u.release, u.machine
    p = _platform().uname()  # pragma: no cover - Windows
    return p.system, p.release, p.machine


def hostname() -> str:
    """This machine's name (``os.uname``: no :mod:`socket` import on the capture path)."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket  # pragma: no cover - Windows

    return socket.gethostname()


def _os_release() -> str:
    try:
        with open_regular_text("/etc/os-release") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return _platform().platform(terse=True)  # only where /etc/os-release is missing


def _cpu_model() -> str:
    try:
        with open_regular_text("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith(("model name", "Model", "Hardware")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    platform = _platform()
    return platform.processor() or platform.machine()


def _linux_memory() -> Memory:
    """Total and available memory from ``/proc/meminfo`` (what psutil reads; {} elsewhere)."""
    found: dict[str, int] = {}
    try:
        with open_regular_text("/proc/meminfo", "ascii") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                if key in ("MemTotal", "MemAvailable"):
                    found[key] = int(rest.split()[0]) * 1024
                    if len(found) == 2:
                        break
    except (OSError, ValueError, IndexError):
        return {}
    if "MemTotal" not in found:
        return {}
    return {"total_bytes": found["MemTotal"],
            "available_bytes": found.get("MemAvailable", 0)}


def _linux_physical_cores() -> int:
    """Physical cores: distinct sibling sets in ``/sys`` CPU topology, as psutil counts them."""
    base = "/sys/devices/system/cpu"
    try:
        cpus = [e for e in os.listdir(base) if e.startswith("cpu") and e[3:].isdigit()]
    except OSError:
        return 0
    cores = set()
    for cpu in cpus:
        for name in ("core_cpus_list", "thread_siblings_list"):
            try:
                with open_regular_text(f"{base}/{cpu}/topology/{name}", "ascii") as fh:
                    cores.add(fh.read(4096).strip())
                break
            except OSError:
                continue
    return len(cores)


def collect(ctx: CaptureContext) -> SystemSection:
    """``{"host", "os", "kernel", "machine", "python", "cpu", "memory", "errors"}``."""
    errors: list[str] = []
    system, kernel, machine = _uname()
    section: SystemSection = {
        "host": hostname(),
        "os": _os_release(),
        "system": system,
        "kernel": kernel,
        "machine": machine,
        "python": {
            "version": sys.version.split()[0],
            "executable": sys.executable,
            "implementation": _IMPLEMENTATIONS.get(sys.implementation.name,
                                                   sys.implementation.name),
            "note": "runsnap's own interpreter; the child's is under [packages]",
        },
    }
    cpu: Cpu = {"model": _cpu_model(), "logical": os.cpu_count() or 0}
    physical, memory = _linux_physical_cores(), _linux_memory()
    if not physical or not memory:  # not Linux (no /proc, /sys): ask psutil
        try:
            # deferred: psutil, ~59 ms measured under load; only collect() needs it
            import psutil

            physical = physical or psutil.cpu_count(logical=False) or 0
            vm = psutil.virtual_memory()
            memory = memory or {"total_bytes": vm.total, "available_bytes": vm.available}
        except Exception as exc:  # psutil unavailable or unsupported here: recorded, not fatal
            errors.append(f"psutil: {exc}")
    cpu["physical"] = physical
    if hasattr(os, "sched_getaffinity"):
        cpu["affinity"] = len(os.sched_getaffinity(0))
    section["cpu"] = cpu
    section["memory"] = memory
    section["errors"] = errors
    return section
