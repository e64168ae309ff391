"""``[system]`` CPU and memory layout: flags, caches, sockets, SMT, NUMA, hypervisor, huge pages.

What ``lscpu`` prints in ``torch.utils.collect_env``, read from the files ``lscpu`` reads
(``/proc/cpuinfo``, ``/sys/devices/system/cpu``, ``/sys/devices/system/node``,
``/proc/meminfo``) without starting it. The part merges into ``[system]``: ``cpu`` gains
``vendor``, ``family``, ``model_number``, ``stepping``, ``flags``, ``sockets``,
``threads_per_core``, ``smt``, ``online``, ``caches``, ``hypervisor``, ``vulnerabilities`` (the
ones the CPU has, with their mitigation; every other is "Not affected");
``memory`` gains ``swap_total_bytes``, ``hugepages`` and ``transparent_hugepage``; ``numa``
lists the nodes with their CPUs and memory.

``lscpu`` learns the hypervisor's vendor from the ``cpuid`` instruction, which Python cannot
run; here the vendor comes from DMI or ``/sys/hypervisor`` when the machine shows them, and
``present`` is the ``hypervisor`` CPU flag.
"""

from __future__ import annotations

from runsnap.base.files import open_regular_text
from runsnap.capturing.collectors.sysread import cpu_list_count, listdir, read, read_int, under

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from runsnap.capturing.context import CaptureContext

__all__ = ["collect", "read_layout"]

_CPU = "/sys/devices/system/cpu"
_CPUINFO_KEYS = {
    "vendor_id": "vendor", "CPU implementer": "vendor", "cpu family": "family",
    "model": "model_number", "CPU part": "model_number", "stepping": "stepping",
    "CPU variant": "stepping", "microcode": "microcode", "address sizes": "address_sizes",
}


def _cpuinfo(root: str) -> dict[str, str]:
    """The first processor's block of ``/proc/cpuinfo`` (read only that far)."""
    out: dict[str, str] = {}
    try:
        with open_regular_text(under(root, "/proc/cpuinfo")) as fh:
            for line in fh:
                if not line.strip():
                    if out:
                        break
                    continue
                key, found, value = line.partition(":")
                if found:
                    out.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return out


def _size_kib(text: str | None) -> int | None:
    """``48K`` / ``2048K`` / ``32M`` -> KiB.

    >>> _size_kib("48K"), _size_kib("32M"), _size_kib("x")
    (48, 32768, None)
    """
    if not text:
        return None
    mult = {"K": 1, "M": 1024, "G": 1024 * 1024}.get(text[-1].upper(), 0)
    try:
        return int(text[:-1]) * mult if mult else int(text) // 1024
    except ValueError:
        return None


def _caches(root: str, online: int) -> dict[str, Any]:
    """``{"L1d": {"size_kib", "instances"}, ...}`` from cpu0's cache indexes.

    Instances are online CPUs over the CPUs sharing one cache, as on a uniform machine.
    """
    out: dict[str, Any] = {}
    base = f"{_CPU}/cpu0/cache"
    for index in listdir(root, base):
        if not index.startswith("index"):
            continue
        level = read(root, f"{base}/{index}/level")
        kind = read(root, f"{base}/{index}/type") or ""
        size = _size_kib(read(root, f"{base}/{index}/size"))
        shared = cpu_list_count(read(root, f"{base}/{index}/shared_cpu_list")) or 1
        if not level or size is None:
            continue
        name = f"L{level}" + {"Data": "d", "Instruction": "i"}.get(kind, "")
        out[name] = {"size_kib": size, "instances": max(1, online // shared) if online else 1}
    return out


def _hypervisor(root: str, flags: list[str]) -> dict[str, Any]:
    vendor = read(root, "/sys/hypervisor/type") or ""
    if not vendor:
        parts = [read(root, f"/sys/class/dmi/id/{f}") or "" for f in ("sys_vendor", "product_name")]
        vendor = " ".join(p for p in parts if p)
    return {"present": "hypervisor" in flags, "vendor": vendor}


def _numa(root: str) -> dict[str, Any]:
    nodes: dict[str, Any] = {}
    base = "/sys/devices/system/node"
    for name in listdir(root, base):
        if not (name.startswith("node") and name[4:].isdigit()):
            continue
        node: dict[str, Any] = {"cpus": read(root, f"{base}/{name}/cpulist") or ""}
        for line in (read(root, f"{base}/{name}/meminfo") or "").splitlines():
            if "MemTotal:" in line:
                try:
                    node["memory_bytes"] = int(line.split("MemTotal:")[1].split()[0]) * 1024
                except (IndexError, ValueError):
                    pass
        nodes[name] = node
    return {"count": len(nodes), "nodes": nodes}


def _memory(root: str) -> dict[str, Any]:
    info: dict[str, int] = {}
    for line in (read(root, "/proc/meminfo") or "").splitlines():
        key, _, rest = line.partition(":")
        if key in ("SwapTotal", "HugePages_Total", "HugePages_Free", "Hugepagesize"):
            try:
                info[key] = int(rest.split()[0])
            except (IndexError, ValueError):
                continue
    out: dict[str, Any] = {}
    if "SwapTotal" in info:
        out["swap_total_bytes"] = info["SwapTotal"] * 1024
    if "HugePages_Total" in info:
        out["hugepages"] = {"total": info["HugePages_Total"],
                            "free": info.get("HugePages_Free", 0),
                            "size_kib": info.get("Hugepagesize", 0)}
    thp = read(root, "/sys/kernel/mm/transparent_hugepage/enabled")
    if thp:
        chosen = [w[1:-1] for w in thp.split() if w.startswith("[")]
        out["transparent_hugepage"] = chosen[0] if chosen else thp
    return out


def _sockets(root: str, online: int) -> int:
    """Sockets: online CPUs over the CPUs of cpu0's package (one read, not one per CPU: a
    224-CPU node would take 224); by ``physical_package_id`` where the kernel lacks the list."""
    per_package = cpu_list_count(
        read(root, f"{_CPU}/cpu0/topology/package_cpus_list")
        or read(root, f"{_CPU}/cpu0/topology/core_siblings_list"))
    if per_package and online:
        return max(1, online // per_package)
    packages = {read(root, f"{_CPU}/{name}/topology/physical_package_id")
                for name in listdir(root, _CPU) if name.startswith("cpu") and name[3:].isdigit()}
    packages.discard(None)
    return len(packages)


def read_layout(root: str = "/") -> dict[str, Any]:
    """The part of ``[system]`` this module adds, read under ``root``."""
    errors: list[str] = []
    info = _cpuinfo(root)
    if not info:
        errors.append(f"{under(root, '/proc/cpuinfo')}: not readable; no CPU flags")
    cpu: dict[str, Any] = {}
    for key, name in _CPUINFO_KEYS.items():
        if key in info and name not in cpu:
            value = info[key]
            cpu[name] = int(value) if value.isdigit() else value
    flags = sorted(set((info.get("flags") or info.get("Features") or "").split()))
    cpu["flags"] = flags
    online_text = read(root, f"{_CPU}/online") or ""
    online = cpu_list_count(online_text)
    cpu["online"] = online_text
    sockets = _sockets(root, online)
    if sockets:
        cpu["sockets"] = sockets
    siblings = (read(root, f"{_CPU}/cpu0/topology/thread_siblings_list")
                or read(root, f"{_CPU}/cpu0/topology/core_cpus_list"))
    if siblings:
        cpu["threads_per_core"] = cpu_list_count(siblings)
    smt_active = read_int(root, f"{_CPU}/smt/active")
    smt_control = read(root, f"{_CPU}/smt/control")
    if smt_active is not None or smt_control:
        cpu["smt"] = {"active": bool(smt_active), "control": smt_control or ""}
    cpu["caches"] = _caches(root, online)
    cpu["hypervisor"] = _hypervisor(root, flags)
    # Only the vulnerabilities the CPU has (with their mitigation): "Not affected" is the rest.
    vulns = {name: read(root, f"{_CPU}/vulnerabilities/{name}") or ""
             for name in listdir(root, f"{_CPU}/vulnerabilities")}
    cpu["vulnerabilities"] = {k: v for k, v in vulns.items() if v != "Not affected"}
    return {"cpu": cpu, "memory": _memory(root), "numa": _numa(root), "errors": errors}


def collect(ctx: CaptureContext) -> dict[str, Any]:
    """This machine's CPU and memory layout (merged into ``[system]``)."""
    return read_layout("/")
