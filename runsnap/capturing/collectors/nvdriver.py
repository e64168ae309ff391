"""NVIDIA GPUs from the kernel driver's own files, for when ``nvidia-smi`` is missing or fails.

Many containers have the driver loaded and the GPUs usable, but no ``nvidia-smi``. The kernel
module still says what it is and what it drives, in files any process can read:

- ``/proc/driver/nvidia/version``: ``NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03
  Thu Oct 19 ...`` (the proprietary module) or ``NVRM version: NVIDIA UNIX Open Kernel Module for
  x86_64  570.86.15  Release Build ...`` (the open one); ``/sys/module/nvidia/version`` holds the
  bare version where the first is unreadable.
- ``/proc/driver/nvidia/gpus/<PCI bus id>/information``, one per GPU: ``Model``, ``GPU UUID``,
  ``Video BIOS``, ``Bus Type``, ``Bus Location``, ``Device Minor``, ``GPU Firmware`` (GSP, newer
  drivers), ``GPU Excluded`` (``Blacklisted`` before R460). The driver writes ``key: \\t value``;
  copies pasted by people have spaces, so the key is what comes before the first ``:``.

A process opens a GPU through ``/dev/nvidia<Device Minor>`` (and ``/dev/nvidiactl``). A container
may see every GPU of the host in ``/proc`` yet have been given the device node of only some: each
device says whether its node exists (``usable``; left out where the driver does not give the
device's minor, as before about R390), and ``count`` counts only the usable ones (with
``listed``, every GPU the driver lists, and ``count_note`` saying so). Usable devices are numbered
(``index``) in PCI bus order, as nvidia-smi and ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` number them.

What only the user-space driver knows (memory, compute capability, clocks) is not in these
files. The newest CUDA the driver supports (nvidia-smi's "CUDA Version") follows from its
branch, by NVIDIA's table of toolkit releases and their drivers
(``runsnap/knowledge/cuda-drivers.tsv``): ``cuda_version`` is that, and ``cuda_version_from``
says it was inferred (a ``cuda-compat`` package on the library path can give a process a newer
CUDA than the branch; only the user-space driver would say so). A branch the table does not
know leaves it unknown.

Cost: one read of the version file, one listing and one small read per GPU, one ``stat`` per
device node; made only when nvidia-smi is absent or failed.
"""

from __future__ import annotations

import os
import re

from runsnap.base.patterns import on_use
from runsnap.capturing.collectors.sysread import listdir, read, under
from runsnap.knowledge import rule_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SOURCE", "cuda_for_driver", "parse_information", "parse_version", "pci_bus_id",
           "read_driver"]

#: What ``source`` says when the GPU facts came from the driver's files.
SOURCE = "/proc/driver/nvidia"
_NVRM = on_use(r"NVRM version:\s*(?P<module>.*?)\s+(?P<version>\d+\.\d+(?:\.\d+)*)(?=\s|$)")
#: ``information`` keys -> snapshot keys.
_KEYS = {"Model": "name", "GPU UUID": "uuid", "Bus Location": "pci_bus_id",
         "Device Minor": "minor", "Video BIOS": "vbios_version", "Bus Type": "bus_type",
         "GPU Firmware": "gsp_firmware", "GPU Excluded": "excluded", "Blacklisted": "excluded"}


def parse_version(text: str) -> dict[str, str]:
    """The driver version and which kernel module (``open`` or ``proprietary``) from
    ``/proc/driver/nvidia/version`` ({} when its first line is not an ``NVRM version`` line).

    >>> parse_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 "
    ...               "18:56:32 UTC 2023\\nGCC version:  gcc version 12.2.0")
    {'driver_version': '535.129.03', 'kernel_module': 'proprietary'}
    >>> parse_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  "
    ...               "Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Jan 23 2025")
    {'driver_version': '570.86.15', 'kernel_module': 'open'}
    """
    match = _NVRM.search(text)
    if not match:
        return {}
    module = "open" if re.search(r"\bOpen\b", match["module"]) else "proprietary"
    return {"driver_version": match["version"], "kernel_module": module}


def cuda_for_driver(version: str) -> tuple[str, str]:
    """``(cuda_version, how it is known)`` for an NVIDIA driver ``version``: the newest CUDA its
    branch supports, as nvidia-smi would print it; ``("", why)`` for a branch not in the table.

    >>> cuda_for_driver("570.86.15")
    ('12.8', 'inferred from driver branch 570 (NVIDIA: CUDA 12.8 ships with it)')
    >>> cuda_for_driver("999.1")[0], cuda_for_driver("")[0]
    ('', '')
    """
    branch = version.partition(".")[0]
    if not branch.isdigit():
        return "", "the driver version is unknown"
    table = {fields[0]: fields[1] for fields in rule_lines("cuda-drivers.tsv")}
    cuda = table.get(branch, "")
    if not cuda:
        newest = max(table, key=int)
        return "", (f"driver branch {branch} is not in runsnap's table of CUDA releases (up to "
                    f"branch {newest}, CUDA {table[newest]})")
    return cuda, f"inferred from driver branch {branch} (NVIDIA: CUDA {cuda} ships with it)"


def pci_bus_id(location: str) -> str:
    """The driver's ``0000:70:00.0`` in nvidia-smi's spelling (``00000000:70:00.0``, upper-case
    hex), so that the same GPU has the same id whichever source recorded it.

    >>> pci_bus_id("0000:c1:00.0"), pci_bus_id("odd")
    ('00000000:C1:00.0', 'odd')
    """
    domain, sep, rest = location.partition(":")
    try:
        return f"{int(domain, 16):08X}:{rest.upper()}" if sep else location
    except ValueError:
        return location


def parse_information(text: str) -> dict[str, Any]:
    """One GPU's ``information`` file, keyed by snapshot names (the keys runsnap keeps).

    >>> parse_information("Model: \\t\\t NVIDIA L4\\nBus Location: \\t 0000:70:00.0\\n"
    ...                   "Device Minor: \\t 0\\nGPU Excluded:\\t No\\n")
    {'name': 'NVIDIA L4', 'pci_bus_id': '00000000:70:00.0', 'minor': 0, 'excluded': False}
    """
    out: dict[str, Any] = {}
    for line in text.splitlines():
        key, found, value = line.partition(":")
        name = _KEYS.get(key.strip())
        if not found or name is None or name in out:
            continue
        value = value.strip()
        if name == "minor":
            if value.isdigit():
                out[name] = int(value)
        elif name == "excluded":
            out[name] = value.lower() == "yes"
        elif name == "pci_bus_id":
            out[name] = pci_bus_id(value)
        elif value:
            out[name] = value
    return out


def _device(root: str, bus: str, errors: list[str]) -> dict[str, Any]:
    path = f"{SOURCE}/gpus/{bus}/information"
    text = read(root, path)
    if text is None:
        errors.append(f"{path}: not readable")
        return {"pci_bus_id": pci_bus_id(bus)}
    device = parse_information(text)
    device.setdefault("pci_bus_id", pci_bus_id(bus))
    minor = device.get("minor")
    if minor is None:
        return device  # drivers before about R390 do not say it: usable unknown, left out
    node = f"/dev/nvidia{minor}"
    device["device_node"] = node
    device["usable"] = os.path.exists(under(root, node)) and not device.get("excluded")
    return device


def read_driver(root: str = "/") -> dict[str, Any]:
    """What the NVIDIA kernel driver under ``root`` says: ``{"loaded", "driver_version",
    "kernel_module", "control_node", "listed", "count", "devices", "errors"}`` (``loaded`` false
    and nothing else when no NVIDIA driver is loaded)."""
    errors: list[str] = []
    text = read(root, f"{SOURCE}/version")
    buses = listdir(root, f"{SOURCE}/gpus")
    module = read(root, "/sys/module/nvidia/version")
    if text is None and not buses and module is None:
        loaded = os.path.isdir(under(root, SOURCE))
        return {"loaded": loaded, "errors": [f"{SOURCE}/version: not readable"] if loaded
                else []}
    version = parse_version(text or "")
    if text is not None and not version:
        errors.append(f"{SOURCE}/version: no NVRM version line: {text.splitlines()[0][:120]!r}"
                      if text else f"{SOURCE}/version: empty")
    if not version.get("driver_version") and module:
        version["driver_version"] = module
    elif text is None and module is None:
        errors.append(f"{SOURCE}/version and /sys/module/nvidia/version: not readable; the driver "
                      "version is unknown")
    devices = [_device(root, bus, errors) for bus in sorted(buses, key=pci_bus_id)]
    usable = [d for d in devices if d.get("usable")]
    for index, device in enumerate(usable):
        device["index"] = index
    out: dict[str, Any] = {"loaded": True, "driver_version": version.get("driver_version", ""),
                           "control_node": os.path.exists(under(root, "/dev/nvidiactl")),
                           "listed": len(devices), "count": len(usable),
                           "devices": [{"index": d.pop("index"), **d} if "index" in d else d
                                       for d in devices],
                           "errors": errors}
    if "kernel_module" in version:
        out["kernel_module"] = version["kernel_module"]
    return out
