"""``[system.gpu]``: NVIDIA GPUs from ``nvidia-smi``, their topology, and AMD GPUs from ``rocm-smi``.

No GPU, no driver, no ``nvidia-smi``: a recorded fact (``available = false`` and why), never an
error of the capture. Per device: index, name, UUID, memory, PCI bus id, and, where the driver
knows them, compute capability, persistence mode, MIG mode, ECC mode, power limit, maximum SM
and memory clocks and the PCIe link. ``topology`` is ``nvidia-smi topo -m``: the link between
every pair of GPUs and NICs (``NV18``, ``PXB``, ``SYS``...), with NIC names resolved and each
GPU's CPU and NUMA affinity. ``amd`` holds what ``amd-smi static --json`` (ROCm 6 and later)
or, without it, ``rocm-smi --json`` says, where one is installed.

Older drivers: a ``--query-gpu`` field the driver does not know (``compute_cap`` before R510)
makes nvidia-smi refuse the whole query; it is asked again without that field, and the field is
named in ``unsupported_fields``. ``topo -m`` is read by its header, so the NIC legend of newer
drivers and the NIC names in the header of older ones both work, as do tables without the
``NUMA Affinity`` or ``GPU NUMA ID`` columns.

All programs start together (:func:`start`), before the other collectors, and each has a timeout.
"""

from __future__ import annotations

import os
import re

from runsnap import shell

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from runsnap.capturing.context import CaptureContext

__all__ = ["BASE_FIELDS", "EXTRA_FIELDS", "collect", "parse_amd_smi", "parse_query",
           "parse_rocm_smi", "parse_topology", "start"]

#: Fields every driver answers, and the snapshot key of each.
BASE_FIELDS = (("index", "index"), ("name", "name"), ("uuid", "uuid"),
               ("memory.total", "memory_mib"), ("pci.bus_id", "pci_bus_id"),
               ("driver_version", "driver_version"))
#: Fields newer drivers answer (each dropped, and named, when the driver refuses it).
EXTRA_FIELDS = (("compute_cap", "compute_capability"), ("persistence_mode", "persistence_mode"),
                ("mig.mode.current", "mig_mode"), ("ecc.mode.current", "ecc_mode"),
                ("power.limit", "power_limit_w"), ("clocks.max.sm", "max_sm_clock_mhz"),
                ("clocks.max.memory", "max_memory_clock_mhz"),
                ("pcie.link.gen.max", "pcie_gen_max"), ("pcie.link.width.max", "pcie_width_max"))
_HEADER = re.compile(r"Driver Version:\s*(?P<driver>\S+)\s+CUDA Version:\s*(?P<cuda>\S+)")
_BAD_FIELD = re.compile(r'Field "([^"]+)" is not a valid field')
_TIMEOUT = 30.0
_INTS = {"index", "memory_mib", "max_sm_clock_mhz", "max_memory_clock_mhz", "pcie_gen_max",
         "pcie_width_max"}


def _env(ctx: CaptureContext) -> dict[str, str]:
    env = dict(ctx.env)
    env["LC_ALL"] = "C"
    return env


def _query(smi: str, fields: list[str], env: dict[str, str]) -> shell.Pending:
    return shell.start([smi, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
                       env=env)


def start(ctx: CaptureContext) -> None:
    """Start ``nvidia-smi`` (query, header, ``topo -m``) and ``rocm-smi``; :func:`collect`
    reads their answers."""
    path = ctx.env.get("PATH", os.environ.get("PATH", os.defpath))
    env = _env(ctx)
    started: dict[str, Any] = {}
    smi = shell.which("nvidia-smi", path=path)
    if smi is None:
        started["absent"] = "nvidia-smi not found on PATH"
    else:
        fields = [f for f, _ in BASE_FIELDS + EXTRA_FIELDS]
        started.update(path=smi, fields=fields, query=_query(smi, fields, env),
                       header=shell.start([smi], env=env),
                       topo=shell.start([smi, "topo", "-m"], env=env))
    amd = shell.which("amd-smi", path=path)  # ROCm 6 and later; rocm-smi before
    rocm = None if amd else shell.which("rocm-smi", path=path)
    if amd is not None:
        started["amd-smi"] = shell.start([amd, "static", "--asic", "--bus", "--vram", "--driver",
                                          "--json"], env=env)
    elif rocm is not None:
        started["rocm"] = shell.start([rocm, "--showproductname", "--showbus",
                                       "--showdriverversion", "--showmeminfo", "vram", "--json"],
                                      env=env)
    ctx.started["system.gpu"] = started


def parse_query(text: str, fields: list[str]) -> list[dict[str, Any]]:
    """Devices from ``--query-gpu`` CSV lines (no header, no units), keyed by snapshot names.

    ``[N/A]`` and ``[Not Supported]`` values are left out.

    >>> dev = parse_query("0, NVIDIA A40, GPU-1, 46068, 00000000:4F:00.0, 550.1, [N/A], 8.6", [
    ...     "index", "name", "uuid", "memory.total", "pci.bus_id", "driver_version",
    ...     "mig.mode.current", "compute_cap"])[0]
    >>> dev["index"], dev["memory_mib"], dev["compute_capability"], "mig_mode" in dev
    (0, 46068, '8.6', False)
    """
    names = dict(BASE_FIELDS + EXTRA_FIELDS)
    devices = []
    for line in text.splitlines():
        values = [v.strip() for v in line.split(",")]
        if len(values) < len(BASE_FIELDS):
            continue
        device: dict[str, Any] = {}
        for field, value in zip(fields, values, strict=False):
            key = names.get(field, field)
            if not value or value.startswith("["):
                continue
            if key in _INTS:
                device[key] = int(value) if value.isdigit() else value
            elif key == "power_limit_w":
                try:
                    device[key] = float(value)
                except ValueError:
                    device[key] = value
            else:
                device[key] = value
        devices.append(device)
    return devices


def parse_topology(text: str) -> dict[str, Any]:
    """``nvidia-smi topo -m`` -> ``{"links": {"GPU0 GPU1": "NV18", "GPU0 mlx5_0": "PXB"},
    "affinity": {"GPU0": {"cpus", "numa"}}, "nics": {"NIC0": "mlx5_0"}}``.

    >>> t = parse_topology("\\tGPU0\\tGPU1\\tmlx5_0\\tCPU Affinity\\n"
    ...                    "GPU0\\t X \\tNV4\\tPIX\\t0-11\\nGPU1\\tNV4\\t X \\tSYS\\t12-23\\n"
    ...                    "mlx5_0\\tPIX\\tSYS\\t X \\t\\n\\nLegend:\\n")
    >>> t["links"], t["affinity"]["GPU1"]
    ({'GPU0 GPU1': 'NV4', 'GPU0 mlx5_0': 'PIX', 'GPU1 mlx5_0': 'SYS'}, {'cpus': '12-23'})
    """
    lines = text.splitlines()
    header_at = next((i for i, ln in enumerate(lines) if "GPU0" in ln and "\t" in ln), None)
    if header_at is None:
        return {}
    columns = [c.strip() for c in lines[header_at].split("\t") if c.strip()]
    devices = [c for c in columns if "Affinity" not in c and c != "GPU NUMA ID"]
    extra = columns[len(devices):]
    nics: dict[str, str] = {}
    for line in lines:
        m = re.match(r"\s*(NIC\d+):\s*(\S+)\s*$", line)
        if m:
            nics[m[1]] = m[2]
    def name(label: str) -> str:
        return nics.get(label, label)
    links: dict[str, str] = {}
    affinity: dict[str, Any] = {}
    for line in lines[header_at + 1:]:
        if not line.strip() or line.startswith("Legend"):
            break
        cells = [c.strip() for c in line.split("\t")]
        row, values = cells[0], cells[1:]
        for col, value in zip(devices, values, strict=False):
            if col == row or value in ("X", ""):
                continue
            pair = " ".join(sorted((name(row), name(col))))
            links.setdefault(pair, value)
        if row.startswith("GPU"):
            aff = dict(zip(extra, values[len(devices):], strict=False))
            entry = {"cpus": aff.get("CPU Affinity", "")}
            if aff.get("NUMA Affinity"):
                entry["numa"] = aff["NUMA Affinity"]
            affinity[row] = entry
    return {"links": links, "affinity": affinity, "nics": nics}


def parse_rocm_smi(text: str) -> dict[str, Any]:
    """``rocm-smi --json`` -> ``{"driver_version", "devices": [{...}]}`` (field names as it
    prints them, lower case with underscores)."""
    import json

    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("rocm-smi printed JSON that is not an object")
    devices = []
    driver = ""
    for key, value in data.items():
        if not isinstance(value, dict):
            continue
        fields = {re.sub(r"[^a-z0-9]+", "_", k.lower()).strip("_"): v for k, v in value.items()}
        if key.startswith("card"):
            devices.append({"card": key, **fields})
        elif key == "system":
            driver = str(fields.get("driver_version", ""))
    return {"driver_version": driver, "count": len(devices), "devices": devices}


def parse_amd_smi(text: str) -> dict[str, Any]:
    """``amd-smi static --asic --bus --vram --driver --json`` -> ``{"driver_version", "count",
    "devices": [{"gpu", "market_name", "gfx_version", "pci_bus", "vram_mb", "vram_type"}]}``.

    Both shapes amd-smi has printed: a list of GPUs, or ``{"gpu_data": [...]}``.

    >>> amd = parse_amd_smi('[{"gpu": 0, "asic": {"market_name": "MI300X", '
    ...                     '"target_graphics_version": "gfx942"}, "driver": {"version": "6.8"}}]')
    >>> amd["driver_version"], amd["devices"]
    ('6.8', [{'gpu': 0, 'market_name': 'MI300X', 'gfx_version': 'gfx942'}])
    """
    import json

    data = json.loads(text)
    if isinstance(data, dict):
        data = data.get("gpu_data", data.get("gpus"))
    if not isinstance(data, list):
        raise ValueError("amd-smi printed no list of GPUs")
    devices: list[dict[str, Any]] = []
    driver = ""
    for gpu in data:
        if not isinstance(gpu, dict):
            continue
        asic = gpu.get("asic") or {}
        bus = gpu.get("bus") or {}
        vram = gpu.get("vram") or {}
        drv = gpu.get("driver") or {}
        dev: dict[str, Any] = {"gpu": gpu.get("gpu", len(devices))}
        for key, value in (("market_name", asic.get("market_name")),
                           ("gfx_version", asic.get("target_graphics_version")),
                           ("pci_bus", bus.get("bdf")), ("vram_type", vram.get("type"))):
            if value not in (None, "", "N/A"):
                dev[key] = str(value)
        size = vram.get("size")
        if isinstance(size, dict) and str(size.get("value", "")).isdigit():
            dev["vram_mb"] = int(size["value"])
        driver = driver or str(drv.get("version") or drv.get("driver_version") or "")
        devices.append(dev)
    return {"driver_version": driver, "count": len(devices), "devices": devices}


def _finish_query(started: dict[str, Any], env: dict[str, str], errors: list[str]) -> Any:
    """The query's result, asked again without each field the driver does not know."""
    fields: list[str] = started["fields"]
    result = started["query"].wait(timeout=_TIMEOUT)
    dropped: list[str] = []
    while not result.ok:
        said = result.stdout.decode("utf-8", "replace") + result.stderr.decode("utf-8", "replace")
        bad = _BAD_FIELD.search(said)
        if not bad or bad[1] not in fields or bad[1] in dict(BASE_FIELDS):
            break
        fields = [f for f in fields if f != bad[1]]
        dropped.append(bad[1])
        result = _query(started["path"], fields, env).wait(timeout=_TIMEOUT)
    started["fields"] = fields
    return result, dropped


def collect(ctx: CaptureContext) -> dict[str, Any]:
    """``{"gpu": {...}, "errors": [...]}``."""
    started = ctx.started.pop("system.gpu", None)
    if started is None:
        start(ctx)
        started = ctx.started.pop("system.gpu")
    errors: list[str] = []
    if "absent" in started:
        gpu: dict[str, Any] = {"available": False, "reason": started["absent"], "count": 0,
                               "devices": []}
    else:
        gpu = _nvidia(started, _env(ctx), errors)
    if "amd-smi" in started:
        result = started["amd-smi"].wait(timeout=_TIMEOUT)
        if result.ok:
            try:
                gpu["amd"] = parse_amd_smi(result.text())
            except ValueError as exc:
                errors.append(f"amd-smi: output not understood: {exc}")
        else:
            errors.append(result.error_line())
    if "rocm" in started:
        result = started["rocm"].wait(timeout=_TIMEOUT)
        if result.ok:
            try:
                gpu["amd"] = parse_rocm_smi(result.text())
            except ValueError as exc:
                errors.append(f"rocm-smi: output not understood: {exc}")
        else:
            errors.append(result.error_line())
    return {"gpu": gpu, "errors": errors}


def _nvidia(started: dict[str, Any], env: dict[str, str], errors: list[str]) -> dict[str, Any]:
    query, dropped = _finish_query(started, env, errors)
    header = started["header"].wait(timeout=_TIMEOUT)
    topo = started["topo"].wait(timeout=_TIMEOUT)
    out: dict[str, Any] = {"available": False, "nvidia_smi": started["path"]}
    match = _HEADER.search(header.text()) if header.ok else None
    out["driver_version"] = match["driver"] if match else ""
    out["cuda_version"] = match["cuda"] if match else ""
    if not query.ok:
        out.update(reason=query.error_line(), count=0, devices=[])
        return out
    devices = parse_query(query.text(), started["fields"])
    for device in devices:
        driver = device.pop("driver_version", "")
        if not out["driver_version"]:
            out["driver_version"] = driver
    out.update(available=bool(devices), count=len(devices), devices=devices)
    if dropped:
        out["unsupported_fields"] = dropped
    if not devices:
        out["reason"] = "nvidia-smi listed no GPU"
    if topo.ok:
        topology = parse_topology(topo.text())
        if topology:
            out["topology"] = topology
        elif devices:
            errors.append("nvidia-smi topo -m: output not understood")
    elif devices:
        errors.append(topo.error_line())
    return out
