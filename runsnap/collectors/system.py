"""``[system]``: host, OS and kernel, Python, CPU, memory, and GPUs from ``nvidia-smi``.

No GPU, no driver, no ``nvidia-smi``: a recorded fact (``gpu.available = false`` and why), never
an error of the capture.
"""

from __future__ import annotations

import os
import platform
import re
import socket
import sys
from typing import TYPE_CHECKING, Any

from runsnap import shell

if TYPE_CHECKING:
    from runsnap.context import CaptureContext

_QUERY = "index,name,uuid,memory.total,pci.bus_id,driver_version"
_HEADER = re.compile(r"Driver Version:\s*(?P<driver>\S+)\s+CUDA Version:\s*(?P<cuda>\S+)")


def _os_release() -> str:
    try:
        with open("/etc/os-release", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.platform(terse=True)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith(("model name", "Model", "Hardware")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def collect(ctx: CaptureContext) -> dict[str, Any]:
    """``{"host", "os", "kernel", "machine", "python", "cpu", "memory", "gpu", "errors"}``."""
    errors: list[str] = []
    gpu_started = _start_gpu(ctx)
    uname = platform.uname()
    section: dict[str, Any] = {
        "host": socket.gethostname(),
        "os": _os_release(),
        "system": uname.system,
        "kernel": uname.release,
        "machine": uname.machine,
        "python": {
            "version": platform.python_version(),
            "executable": sys.executable,
            "implementation": platform.python_implementation(),
            "note": "runsnap's own interpreter; the child's is under [packages]",
        },
    }
    cpu: dict[str, Any] = {"model": _cpu_model(), "logical": os.cpu_count() or 0}
    memory: dict[str, Any] = {}
    try:
        import psutil

        cpu["physical"] = psutil.cpu_count(logical=False) or 0
        vm = psutil.virtual_memory()
        memory = {"total_bytes": vm.total, "available_bytes": vm.available}
        if hasattr(os, "sched_getaffinity"):
            cpu["affinity"] = len(os.sched_getaffinity(0))
    except Exception as exc:  # psutil unavailable or unsupported here: recorded, not fatal
        errors.append(f"psutil: {exc}")
    section["cpu"] = cpu
    section["memory"] = memory
    section["gpu"] = _finish_gpu(gpu_started)
    section["errors"] = errors
    return section


def _start_gpu(ctx: CaptureContext) -> dict[str, Any]:
    path = ctx.env.get("PATH", os.environ.get("PATH", os.defpath))
    smi = shell.which("nvidia-smi", path=path)
    if smi is None:
        return {"absent": "nvidia-smi not found on PATH"}
    env = dict(ctx.env)
    env["LC_ALL"] = "C"
    return {
        "path": smi,
        "query": shell.start(
            [smi, f"--query-gpu={_QUERY}", "--format=csv,noheader,nounits"], env=env
        ),
        "header": shell.start([smi], env=env),
    }


def _finish_gpu(started: dict[str, Any]) -> dict[str, Any]:
    if "absent" in started:
        return {"available": False, "reason": started["absent"], "count": 0, "devices": []}
    query = started["query"].wait(timeout=30)
    header = started["header"].wait(timeout=30)
    out: dict[str, Any] = {"available": False, "nvidia_smi": started["path"]}
    match = _HEADER.search(header.text()) if header.ok else None
    out["driver_version"] = match["driver"] if match else ""
    out["cuda_version"] = match["cuda"] if match else ""
    if not query.ok:
        out.update(reason=query.error_line(), count=0, devices=[])
        return out
    devices = []
    for line in query.text().splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 6:
            continue
        index, name, uuid, mem, bus, driver = fields[:6]
        devices.append({
            "index": int(index) if index.isdigit() else index,
            "name": name,
            "uuid": uuid,
            "memory_mib": int(mem) if mem.isdigit() else mem,
            "pci_bus_id": bus,
        })
        if not out["driver_version"]:
            out["driver_version"] = driver
    out.update(available=bool(devices), count=len(devices), devices=devices)
    if not devices:
        out["reason"] = "nvidia-smi listed no GPU"
    return out
