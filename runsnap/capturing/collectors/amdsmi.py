"""AMD GPUs in ``[system.gpu] amd``: what ``amd-smi static --json`` (ROCm 6 and later) or, without
it, ``rocm-smi --json`` says, in one shape for both (started and collected by
:mod:`runsnap.capturing.collectors.gpu`). Tested against output recorded on real machines
(``fixtures/amd-smi``, ``fixtures/rocm-smi``; each source is named in the README beside them).
"""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["parse_amd"]


def parse_amd(text: str, tool: str) -> dict[str, Any]:
    """``amd-smi static --asic --bus --vram --driver --json`` or ``rocm-smi --showproductname
    --showbus --showdriverversion --showmeminfo vram --json`` -> ``{"tool", "driver_version",
    "count", "devices": [{"gpu", "name", "gfx_version", "pci_bus", "vram_mib", "vram_type"}],
    "warning"}``, the same keys from either tool (a fact the tool does not give, or gives as
    ``N/A``, is left out).

    amd-smi has printed a list of GPUs and, since ROCm 7, ``{"gpu_data": [...]}``; without access
    to the device nodes it prints a text warning before the JSON, kept as ``warning``. rocm-smi
    spells its keys differently across releases (``Card series``, ``Card Series``), so they are
    matched without case. amd-smi's ``MB`` are 2**20 bytes (196592 for a 192 GiB MI300X), as are
    the ``vram_mib`` made from rocm-smi's bytes.

    >>> amd = parse_amd('[{"gpu": 0, "asic": {"market_name": "MI300X", '
    ...                 '"target_graphics_version": "gfx942"}, "driver": {"version": "6.8"}}]',
    ...                 "amd-smi")
    >>> amd["driver_version"], amd["devices"]
    ('6.8', [{'gpu': 0, 'name': 'MI300X', 'gfx_version': 'gfx942'}])
    """
    data, warning = _json_after_banner(text)
    if tool == "amd-smi":
        gpus = data.get("gpu_data", data.get("gpus")) if isinstance(data, dict) else data
        if not isinstance(gpus, list):
            raise ValueError("no list of GPUs")
        units = [(gpu.get("gpu", i), _amd_smi_facts(gpu)) for i, gpu in enumerate(gpus)
                 if isinstance(gpu, dict)]
        driver = next((f["driver"] for _, f in units if _known(f["driver"])), "")
    else:
        if not isinstance(data, dict):
            raise ValueError("JSON that is not an object")
        units = [(key, _rocm_smi_facts(card)) for key, card in data.items()
                 if key.startswith("card") and isinstance(card, dict)]
        system = {str(k).lower(): v for k, v in (_at(data, ("system",)) or {}).items()}
        driver = _at(system, ("driver version",)) or ""
    devices = []
    for unit, facts in units:
        device = {"gpu": unit}
        device.update((k, v) for k, v in facts.items() if k != "driver" and _known(v))
        devices.append(device)
    out: dict[str, Any] = {"tool": tool, "driver_version": str(driver), "count": len(devices),
                           "devices": devices}
    if warning:
        out["warning"] = warning
    return out


def _known(value: Any) -> bool:
    return value not in (None, "", "N/A")


def _json_after_banner(text: str) -> tuple[Any, str]:
    """The JSON a tool printed, and the first line of any text it printed before it."""
    lines = text.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if line.lstrip().startswith(("{", "["))), None)
    if at is None:
        first = text.strip().splitlines()
        raise ValueError(first[0][:200] if first else "printed nothing")
    before = "".join(lines[:at]).strip().splitlines()
    return json.loads("".join(lines[at:])), before[0].strip() if before else ""


#: Where each fact sits in one GPU of ``amd-smi static --json``: a path of keys (a table the
#: tool could not read is ``"N/A"`` there, and the fact is unknown); ``vram_mib``: the size,
#: where its unit is ``MB``.
_AMD_SMI: dict[str, tuple[str, ...] | None] = {
    "name": ("asic", "market_name"), "gfx_version": ("asic", "target_graphics_version"),
    "pci_bus": ("bus", "bdf"), "vram_mib": None, "vram_type": ("vram", "type"),
    "driver": ("driver", "version")}
#: The key of each fact in one card of ``rocm-smi --json``, lower-cased (releases differ in case).
_ROCM_SMI = {"name": "card series", "gfx_version": "gfx version", "pci_bus": "pci bus"}


def _at(unit: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` in ``unit``; ``None`` where a step is missing or no table."""
    for key in path:
        if not isinstance(unit, dict) or key not in unit:
            return None
        unit = unit[key]
    return unit


def _amd_smi_facts(gpu: dict[str, Any]) -> dict[str, Any]:
    mib = (_at(gpu, ("vram", "size", "value")) if _at(gpu, ("vram", "size", "unit")) == "MB"
           else None)
    return {name: mib if path is None else _at(gpu, path) for name, path in _AMD_SMI.items()}


def _rocm_smi_facts(card: dict[str, Any]) -> dict[str, Any]:
    low = {str(k).lower(): v for k, v in card.items()}
    facts = {name: _at(low, (key,)) for name, key in _ROCM_SMI.items()}
    total = str(_at(low, ("vram total memory (b)",)))
    if total.isdigit():
        facts["vram_mib"] = int(total) >> 20
    return facts
