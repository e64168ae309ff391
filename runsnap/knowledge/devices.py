"""What the CUDA runtime makes of a ``*_VISIBLE_DEVICES`` value (and of ``CUDA_DEVICE_ORDER``,
which numbers the devices and lists none): shared by the inference of
``torch.cuda.is_available()`` (:mod:`runsnap.capturing.collectors.availability`) and by ``diff``'s line
saying which devices each run saw (:mod:`runsnap.diffing.grouping`)."""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["DEVICE_LISTS", "ORDER_VARIABLES", "device_order", "visible_devices"]

#: The variables whose value is a list of devices, the first that differs leading.
DEVICE_LISTS = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                "ROCR_VISIBLE_DEVICES")

#: The variables that say how devices are numbered: no list, a numbering.
ORDER_VARIABLES = ("CUDA_DEVICE_ORDER",)


def device_order(value: str | None) -> str:
    """What ``CUDA_DEVICE_ORDER`` makes of the device numbers, as the CUDA runtime documents
    it (CUDA Programming Guide, "CUDA Environment Variables"): ``FASTEST_FIRST`` (the default)
    or ``PCI_BUS_ID`` (the order nvidia-smi shows).

    >>> device_order("PCI_BUS_ID")
    'numbered in PCI bus order, as nvidia-smi numbers them (PCI_BUS_ID)'
    >>> device_order(None)
    'numbered fastest first (the default, FASTEST_FIRST)'
    """
    if value is None or value.strip() == "":
        return "numbered fastest first (the default, FASTEST_FIRST)"
    v = value.strip()
    if v == "PCI_BUS_ID":
        return "numbered in PCI bus order, as nvidia-smi numbers them (PCI_BUS_ID)"
    if v == "FASTEST_FIRST":
        return "numbered fastest first (FASTEST_FIRST)"
    return f"numbered fastest first ({v!r} is not a value CUDA knows: its default applies)"


def visible_devices(value: str | None, count: int, uuids: Sequence[str] = ()
                    ) -> tuple[int, str]:
    """How many of ``count`` devices a ``*_VISIBLE_DEVICES`` value leaves, and why.

    As the CUDA runtime reads it (torch's ``torch.cuda._parse_visible_devices`` mirrors it):
    comma-separated indices or ``GPU-``/``MIG-`` UUID prefixes, read up to the first entry that
    is not a valid device (so ``""`` and ``-1`` hide every device, ``0,7`` on two GPUs leaves
    one), and a repeated device makes the whole list invalid.

    >>> visible_devices(None, 8), visible_devices("", 8)[0], visible_devices("-1", 8)[0]
    ((8, ''), 0, 0)
    >>> visible_devices("0,1,7", 2)[0], visible_devices("1,1", 2)[0]
    (2, 0)
    """
    if value is None:
        return count, ""
    seen: list[Any] = []
    for raw in value.split(","):
        entry = raw.strip()
        if entry.startswith(("GPU-", "MIG-")):
            if entry.startswith("GPU-") and uuids and not any(u.startswith(entry) for u in uuids):
                break
            key: Any = entry
        else:
            m = re.match(r"\d+", entry)
            if not m or int(m[0]) >= count:
                break
            key = int(m[0])
        if key in seen:
            return 0, f"{raw.strip()} is named twice (CUDA then sees no device)"
        seen.append(key)
    return len(seen), ""
