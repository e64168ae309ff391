"""``[system.cgroup]``: the CPU and memory budget of the control group the child starts in.

A container's real budget is its cgroup's, not the machine's: ``os.cpu_count()`` says 64 while
``cpu.max`` allows 8 CPUs, and a memory limit kills the process long before RAM runs out. Read
from ``/proc/self/cgroup`` (the child inherits runsnap's cgroup) and the cgroup files: v2
(``cpu.max``, ``cpuset.cpus.effective``, ``memory.max``, ``memory.high``, ``pids.max``) or v1
(``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``, ``cpuset.cpus``, ``memory.limit_in_bytes``,
``pids.max``). A limit that is not set is ``"unlimited"``.
"""

from __future__ import annotations

from runsnap.capturing.collectors.sysread import listdir, read

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from runsnap.capturing.context import CaptureContext

__all__ = ["collect", "read_cgroup"]

_BASE = "/sys/fs/cgroup"
#: v1 reports "no limit" as the largest page-aligned 64-bit value; anything this big is none.
_V1_UNLIMITED = 1 << 62


def _limit(text: str | None) -> int | str | None:
    """``max`` / a huge v1 value -> ``"unlimited"``; digits -> int; else None.

    >>> _limit("max"), _limit("9223372036854771712"), _limit("1073741824"), _limit(None)
    ('unlimited', 'unlimited', 1073741824, None)
    """
    if text is None:
        return None
    if text == "max" or text == "-1":
        return "unlimited"
    try:
        value = int(text)
    except ValueError:
        return None
    return "unlimited" if value >= _V1_UNLIMITED else value


def _memberships(root: str) -> dict[str, str]:
    """Controller -> cgroup path, from ``/proc/self/cgroup`` (``""`` is the v2 hierarchy)."""
    out: dict[str, str] = {}
    for line in (read(root, "/proc/self/cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            out[controller] = parts[2]
    return out


def _dir(root: str, mount: str, path: str) -> str:
    """The cgroup's folder: the path under the mount, or the mount itself inside a container
    whose cgroup namespace hides the path."""
    full = f"{mount}/{path.strip('/')}".rstrip("/")
    return full if listdir(root, full) else mount


def _mount(root: str, controller: str) -> str:
    """Where a v1 controller is mounted: ``/sys/fs/cgroup/cpu``, or a joint mount such as
    ``/sys/fs/cgroup/cpu,cpuacct`` where no ``cpu`` link exists."""
    entries = listdir(root, _BASE)
    if controller in entries:
        return f"{_BASE}/{controller}"
    joint = [e for e in entries if controller in e.split(",")]
    return f"{_BASE}/{joint[0] if joint else controller}"


def _cpus(quota: int | str | None, period: int | str | None) -> float | str | None:
    if quota == "unlimited":
        return "unlimited"
    if isinstance(quota, int) and isinstance(period, int) and period > 0:
        return round(quota / period, 2)
    return None


def read_cgroup(root: str = "/") -> dict[str, Any]:
    """``{"version", "path", "cpu_limit", "cpuset", "memory_limit_bytes", "memory_high_bytes",
    "pids_limit", "errors"}`` under ``root``; limits absent from the files are left out."""
    members = _memberships(root)
    if not members:
        return {"version": "", "errors": ["/proc/self/cgroup not readable: no cgroup facts"]}
    out: dict[str, Any] = {}
    v2_only = set(members) == {""}
    if "" in members and (v2_only or "memory" not in members):
        where = _dir(root, _BASE if v2_only else f"{_BASE}/unified", members[""])
        out["version"] = 2
        out["path"] = members[""]
        quota_text, _, period_text = (read(root, f"{where}/cpu.max") or "").partition(" ")
        out["cpu_limit"] = _cpus(_limit(quota_text or None), _limit(period_text or None))
        out["cpuset"] = read(root, f"{where}/cpuset.cpus.effective")
        out["memory_limit_bytes"] = _limit(read(root, f"{where}/memory.max"))
        out["memory_high_bytes"] = _limit(read(root, f"{where}/memory.high"))
        out["pids_limit"] = _limit(read(root, f"{where}/pids.max"))
    else:
        out["version"] = 1
        out["path"] = members.get("memory") or members.get("cpu") or ""
        cpu = _dir(root, _mount(root, "cpu"), members.get("cpu", "/"))
        quota = _limit(read(root, f"{cpu}/cpu.cfs_quota_us"))
        out["cpu_limit"] = _cpus(quota, _limit(read(root, f"{cpu}/cpu.cfs_period_us")))
        cpuset = _dir(root, _mount(root, "cpuset"), members.get("cpuset", "/"))
        out["cpuset"] = (read(root, f"{cpuset}/cpuset.effective_cpus")
                         or read(root, f"{cpuset}/cpuset.cpus"))
        mem = _dir(root, _mount(root, "memory"), members.get("memory", "/"))
        out["memory_limit_bytes"] = _limit(read(root, f"{mem}/memory.limit_in_bytes"))
        pids = _dir(root, _mount(root, "pids"), members.get("pids", "/"))
        out["pids_limit"] = _limit(read(root, f"{pids}/pids.max"))
    cleaned = {k: v for k, v in out.items() if v is not None}
    cleaned["errors"] = []
    return cleaned


def collect(ctx: CaptureContext) -> dict[str, Any]:
    """``{"cgroup": {...}}`` for this process (the child starts in the same cgroup)."""
    found = read_cgroup("/")
    errors = found.pop("errors")
    return {"cgroup": found, "errors": errors}
