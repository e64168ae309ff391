"""``[system.network]``: interfaces, InfiniBand/RoCE devices, and the GPU/RDMA kernel modules.

What NCCL chooses from: the network interfaces (``NCCL_SOCKET_IFNAME`` names them) with their
state, MTU, speed and driver, from ``/sys/class/net``; the RDMA devices and their ports
(``NCCL_IB_HCA`` names them) from ``/sys/class/infiniband``: state, physical state, rate and
link layer (``Ethernet`` is RoCE); and which of the kernel modules that GPUDirect RDMA and the
GPU stack need are loaded (``nvidia_peermem``, ``nv_peer_mem``, ``gdrdrv``, ``mlx5_ib``...),
from ``/proc/modules``. No MAC or GUID is recorded: they identify a machine and decide nothing.
"""

from __future__ import annotations

import os

from runsnap.capturing.collectors.sysread import listdir, read, read_int, under

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from runsnap.capturing.context import CaptureContext

__all__ = ["MODULE_PREFIXES", "PEER_MEMORY_MODULES", "collect", "read_network"]

#: Kernel modules worth recording: the GPU drivers, GPUDirect, RDMA and fabric drivers.
MODULE_PREFIXES = ("nvidia", "nv_peer_mem", "gdrdrv", "ib_", "mlx4", "mlx5", "rdma_", "amdgpu",
                   "efa", "irdma", "bnxt_re", "rdma_rxe", "siw", "hfi1", "qedr", "amd_peer")
#: The modules that let an RDMA NIC read and write GPU memory directly (GPUDirect RDMA).
PEER_MEMORY_MODULES = ("nvidia_peermem", "nv_peer_mem", "amd_peer_direct", "gdrdrv")
_NET_TYPES = {"1": "ether", "32": "infiniband", "772": "loopback", "65534": "none",
              "776": "sit", "778": "gre"}


def _driver(root: str, path: str) -> str:
    try:
        return os.path.basename(os.readlink(under(root, f"{path}/device/driver")))
    except OSError:
        return ""


def _interfaces(root: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in listdir(root, "/sys/class/net"):
        base = f"/sys/class/net/{name}"
        if read(root, f"{base}/operstate") is None and read(root, f"{base}/mtu") is None:
            continue  # bonding_masters and other files that are not interfaces
        iface: dict[str, Any] = {
            "state": read(root, f"{base}/operstate") or "",
            "mtu": read_int(root, f"{base}/mtu"),
        }
        kind = read(root, f"{base}/type") or ""
        iface["type"] = _NET_TYPES.get(kind, kind)
        speed = read_int(root, f"{base}/speed")
        if speed is not None and speed > 0:
            iface["speed_mbps"] = speed
        driver = _driver(root, base)
        if driver:
            iface["driver"] = driver
        out[name] = {k: v for k, v in iface.items() if v is not None}
    return out


def _infiniband(root: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dev in listdir(root, "/sys/class/infiniband"):
        base = f"/sys/class/infiniband/{dev}"
        device: dict[str, Any] = {}
        for field in ("node_type", "fw_ver", "board_id", "hca_type"):
            value = read(root, f"{base}/{field}")
            if value:
                device[field] = value
        ports: dict[str, Any] = {}
        for port in listdir(root, f"{base}/ports"):
            pbase = f"{base}/ports/{port}"
            ports[port] = {field: read(root, f"{pbase}/{field}") or ""
                           for field in ("state", "phys_state", "rate", "link_layer")}
        device["ports"] = ports
        netdevs = listdir(root, f"{base}/device/net")
        if netdevs:
            device["netdevs"] = netdevs
        out[dev] = device
    return out


def _modules(root: str) -> list[str]:
    names = []
    for line in (read(root, "/proc/modules") or "").splitlines():
        name = line.split(" ", 1)[0]
        if name.startswith(MODULE_PREFIXES):
            names.append(name)
    return sorted(names)


def read_network(root: str = "/") -> dict[str, Any]:
    """``{"network": {"interfaces", "infiniband", "modules", "peer_memory"}, "errors"}``."""
    errors: list[str] = []
    interfaces = _interfaces(root)
    if not interfaces and not os.path.isdir(under(root, "/sys/class/net")):
        errors.append(f"{under(root, '/sys/class/net')}: not readable; no network interfaces")
    modules = _modules(root)
    network: dict[str, Any] = {
        "interfaces": interfaces,
        "infiniband": _infiniband(root),
        "modules": modules,
        "peer_memory": [m for m in modules if m in PEER_MEMORY_MODULES],
    }
    if read(root, "/proc/modules") is None:
        if os.path.exists(under(root, "/proc/modules")):
            errors.append(f"{under(root, '/proc/modules')}: not readable; kernel modules unknown")
        else:
            network["modules_note"] = "no /proc/modules: a kernel without loadable modules"
    return {"network": network, "errors": errors}


def collect(ctx: CaptureContext) -> dict[str, Any]:
    """The network part of ``[system]``."""
    return read_network("/")
