"""``[system.gpu]``: NVIDIA GPUs from NVML or ``nvidia-smi`` and their topology; AMD GPUs from
``amd-smi`` (:mod:`.amdsmi`).

The devices, the driver and the CUDA version come from NVML, the driver's library, read in a
thread (:mod:`.nvml`: the same values ``nvidia-smi --query-gpu`` and its header print, without a
process each); nvidia-smi's query and header are asked only when NVML gives no facts (no
library, a failed initialisation, ``RUNSNAP_NO_NVML``). Both paths give the same section.

No GPU, no driver, no ``nvidia-smi``: a recorded fact (``available = false`` and why), never an
error of the capture. Per device: index, name, UUID, memory, PCI bus id, and, where the driver
knows them, compute capability, persistence mode, MIG mode, ECC mode, power limit, maximum SM
and memory clocks and the PCIe link. ``topology`` is ``nvidia-smi topo -m``: the link between
every pair of GPUs and NICs (``NV18``, ``PXB``, ``SYS``...), with NIC names resolved and each
GPU's CPU and NUMA affinity. ``amd`` holds what ``amd-smi static --json`` (ROCm 6 and later)
or, without it, ``rocm-smi --json`` says, where one is installed, in one shape for both.

The query is read by its header line (``--format=csv``, units kept), so every value is matched to
the field the driver says it is, whatever the order or the set of fields. Older drivers: a
``--query-gpu`` field the driver does not know (``compute_cap`` before R510) makes nvidia-smi
refuse the whole query; it is asked again without that field, and the field is named in
``unsupported_fields``. ``topo -m`` is read by its header, without the terminal underline
(``ESC[4m``) that drivers since about R525 print around it even into a pipe, so the NIC legend
of newer drivers and the NIC names in the header of older ones both work, as do tables without
the ``NUMA Affinity`` or ``GPU NUMA ID`` columns.

Without NVML and ``nvidia-smi``, or when its query fails (a driver/library version mismatch),
the facts come from the kernel driver's own files (:mod:`runsnap.capturing.collectors.nvdriver`):
``source = "/proc/driver/nvidia"``, the driver version, each GPU the driver lists and whether
this process has its device node (``count`` counts only those), ``nvidia_smi_error`` saying why
nvidia-smi did not answer, and ``cuda_version`` inferred from the driver's branch
(``cuda_version_from`` says so; unknown for a branch runsnap's table does not hold).

Every parser here is tested against output recorded on real machines (``fixtures/nvidia-smi``,
``fixtures/amd-smi``, ``fixtures/rocm-smi``, ``fixtures/proc-nvidia``; each source is named in the
README beside them).

Everything starts together (:func:`start`; :func:`prestart` before runsnap's imports in
``runsnap capture``), before the other collectors, and is read after them; each has a timeout.
"""

from __future__ import annotations

import os
import re

from runsnap.base import programs
from runsnap.base.patterns import on_use
from runsnap.capturing.collectors import nvdriver, nvml
from runsnap.capturing.collectors.amdsmi import parse_amd

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from runsnap.capturing.context import CaptureContext

__all__ = ["BASE_FIELDS", "EXTRA_FIELDS", "collect", "parse_amd", "parse_header", "parse_query",
           "parse_topology", "prestart", "start"]

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
_HEADER = on_use(r"Driver Version:\s*(?P<driver>\S+)\s+CUDA Version:\s*(?P<cuda>\S+)")
_BAD_FIELD = on_use(r'Field "([^"]+)" is not a valid field')
#: A header cell of ``--format=csv``: the field, then its unit in brackets (``power.limit [W]``).
_COLUMN = on_use(r"(?P<field>[^\[]*?)\s*(?:\[(?P<unit>[^\]]*)\])?\s*$")
#: Terminal attributes (``ESC[4m`` ... ``ESC[0m``) that ``topo -m`` prints around its header.
_SGR = on_use(r"\x1b\[[0-9;]*m")
_TIMEOUT = 30.0
#: Where the driver's files are read: ``"/"`` in every capture. A test-only seam, like the
#: ``root`` of the other host-fact readers: tests point it at a recorded tree
#: (``fixtures/proc-nvidia/NAME``) to run a whole capture on a machine they do not have.
DRIVER_ROOT = "/"
_INTS = {"index", "memory_mib", "max_sm_clock_mhz", "max_memory_clock_mhz", "pcie_gen_max",
         "pcie_width_max"}


def _env(child_env: Mapping[str, str]) -> dict[str, str]:
    env = dict(child_env)
    env["LC_ALL"] = "C"
    return env


def _query(smi: str, fields: list[str], env: dict[str, str]) -> programs.Pending:
    return programs.start([smi, f"--query-gpu={','.join(fields)}", "--format=csv"], env=env)


def prestart(child_env: Mapping[str, str]) -> dict[str, Any] | None:
    """Start the GPU facts for a capture about to be made with ``child_env``, before the rest of
    runsnap is imported (``runsnap capture`` does, beside git's :func:`~.git.prestart`), to be
    handed over in ``started={"system.gpu": ...}``; None when that could not start."""
    try:
        return _begin(child_env)
    except Exception:  # noqa: BLE001  # only a head start: the capture starts them itself
        return None


def start(ctx: CaptureContext) -> None:
    """Start NVML's reading (:mod:`.nvml`, in a thread), ``nvidia-smi topo -m``, and
    ``amd-smi`` or ``rocm-smi``; :func:`collect` reads their answers. nvidia-smi's query and
    header are started only when NVML gives no facts (no library, a failed initialisation).
    Those begun by :func:`prestart` are taken over when they were begun for the capture's
    environment, and stopped otherwise."""
    early = ctx.started.get("system.gpu")
    if isinstance(early, dict) and early.get("for_env") == ctx.env:
        return
    if isinstance(early, dict):
        early["nvml"].abandon()
        for name in ("topo", "query", "header", "amd-smi", "rocm-smi"):
            if name in early:
                early[name].cancel()
    ctx.started["system.gpu"] = _begin(ctx.env)


def _begin(child_env: Mapping[str, str]) -> dict[str, Any]:
    path = child_env.get("PATH", os.environ.get("PATH", os.defpath))
    env = _env(child_env)
    started: dict[str, Any] = {"for_env": dict(child_env)}
    smi = programs.which("nvidia-smi", path=path)
    if smi is None:
        started["absent"] = "nvidia-smi not found on PATH"
    else:
        started.update(path=smi, fields=[f for f, _ in BASE_FIELDS + EXTRA_FIELDS],
                       topo=programs.start([smi, "topo", "-m"], env=env))
    started["nvml"] = nvml.start(child_env, None if smi is None else
                                 lambda: _start_smi(started, env))
    amd = programs.which("amd-smi", path=path)  # ROCm 6 and later; rocm-smi before
    rocm = None if amd else programs.which("rocm-smi", path=path)
    if amd is not None:
        started["amd-smi"] = programs.start([amd, "static", "--asic", "--bus", "--vram", "--driver",
                                          "--json"], env=env)
    elif rocm is not None:
        started["rocm-smi"] = programs.start([rocm, "--showproductname", "--showbus",
                                           "--showdriverversion", "--showmeminfo", "vram",
                                           "--json"], env=env)
    return started


def _start_smi(started: dict[str, Any], env: dict[str, str]) -> None:
    """Start nvidia-smi's query and its default table (the header)."""
    started.update(query=_query(started["path"], started["fields"], env),
                   header=programs.start([started["path"]], env=env))


def parse_header(text: str) -> dict[str, str]:
    """The driver version and the newest CUDA it supports, from the default table's header line
    (every layout nvidia-smi has printed; "" where it is not there).

    >>> parse_header("| NVIDIA-SMI 470.256.02   Driver Version: 580.95.05    CUDA Version: 13.0 |")
    {'driver_version': '580.95.05', 'cuda_version': '13.0'}
    """
    match = _HEADER.search(text)
    return {"driver_version": match["driver"] if match else "",
            "cuda_version": match["cuda"] if match else ""}


def parse_query(text: str) -> list[dict[str, Any]]:
    """Devices from ``--query-gpu=... --format=csv``, keyed by snapshot names.

    The header line names each column and its unit; a value loses its unit (``81559 MiB`` ->
    ``81559``), and bracketed answers (``[N/A]``, ``[Not Supported]``, ``[Requested functionality
    has been deprecated]``) are left out. Columns of fields runsnap does not keep are skipped.

    >>> dev = parse_query("index, name, memory.total [MiB], power.limit [W], mig.mode.current\\n"
    ...                   "0, NVIDIA L40S, 46068 MiB, 350.00 W, [N/A]\\n")[0]
    >>> dev
    {'index': 0, 'name': 'NVIDIA L40S', 'memory_mib': 46068, 'power_limit_w': 350.0}
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    columns = [_COLUMN.match(cell.strip()) for cell in lines[0].split(",")]
    heads = [(m["field"], m["unit"]) if m else ("", None) for m in columns]
    names = dict(BASE_FIELDS + EXTRA_FIELDS)
    if "index" not in (field for field, _ in heads):
        raise ValueError(f"no header line: {lines[0][:80]!r}")
    devices = []
    for line in lines[1:]:
        device: dict[str, Any] = {}
        for (field, unit), raw in zip(heads, line.split(","), strict=False):
            key, value = names.get(field), raw.strip()
            if key is None or not value or value.startswith("["):
                continue
            if unit and value.endswith(f" {unit}"):
                value = value[:-len(unit) - 1]
            device[key] = _number(key, value)
        devices.append(device)
    return devices


def _number(key: str, value: str) -> Any:
    if key in _INTS and value.isdigit():
        return int(value)
    if key == "power_limit_w":
        try:
            return float(value)
        except ValueError:
            return value
    return value


def parse_topology(text: str) -> dict[str, Any]:
    """``nvidia-smi topo -m`` -> ``{"links": {"GPU0 GPU1": "NV18", "GPU0 mlx5_0": "PXB"},
    "affinity": {"GPU0": {"cpus", "numa"}}, "nics": {"NIC0": "mlx5_0"}}``.

    >>> t = parse_topology("\\tGPU0\\tGPU1\\tmlx5_0\\tCPU Affinity\\n"
    ...                    "GPU0\\t X \\tNV4\\tPIX\\t0-11\\nGPU1\\tNV4\\t X \\tSYS\\t12-23\\n"
    ...                    "mlx5_0\\tPIX\\tSYS\\t X \\t\\n\\nLegend:\\n")
    >>> t["links"], t["affinity"]["GPU1"]
    ({'GPU0 GPU1': 'NV4', 'GPU0 mlx5_0': 'PIX', 'GPU1 mlx5_0': 'SYS'}, {'cpus': '12-23'})
    """
    lines = _SGR.sub("", text).splitlines()
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
    start(ctx)  # nothing new when started (or prestarted) for this capture
    started = ctx.started.pop("system.gpu")
    errors: list[str] = []
    reading = started["nvml"].result(_TIMEOUT)
    errors.extend(reading.errors)
    answered = not (reading.absent or reading.failed)  # by NVML, or else by nvidia-smi's query
    if answered:
        gpu = {"available": False, **({"nvidia_smi": started["path"]} if "path" in started
                                      else {}), **nvml.facts(reading)}
    elif "absent" in started:
        gpu = from_driver(started["absent"] + (f"; {reading.failed}" if reading.failed else ""),
                          errors)
    elif "query" not in started:  # NVML hung: nvidia-smi, on the same library, would too
        gpu = from_driver(reading.failed, errors)
    else:
        gpu, answered = _nvidia(started, _env(ctx.env), errors)
    if "topo" in started:  # waited for in every case: no program is left unreaped
        topo = started["topo"].wait(timeout=_TIMEOUT)
        if answered:
            _topology(topo, gpu, errors)
    for tool in ("amd-smi", "rocm-smi"):
        if tool not in started:
            continue
        result = started[tool].wait(timeout=_TIMEOUT)
        if not result.ok:
            errors.append(result.error_line())
            continue
        try:
            gpu["amd"] = amd = parse_amd(result.text(), tool)
        except ValueError as exc:
            errors.append(f"{tool}: output not understood: {exc}")
            continue
        if "warning" in amd:
            errors.append(f"{tool}: {amd['warning']}")
    return {"gpu": gpu, "errors": errors}


def _nvidia(started: dict[str, Any], env: dict[str, str],
            errors: list[str]) -> tuple[dict[str, Any], bool]:
    """The facts from nvidia-smi's query and header, and whether the query answered (else they
    are the driver's files')."""
    query, dropped = _finish_query(started, env, errors)
    header = started["header"].wait(timeout=_TIMEOUT)
    out: dict[str, Any] = {"available": False, "nvidia_smi": started["path"]}
    out.update(parse_header(header.text()) if header.ok else parse_header(""))
    if not query.ok:
        return _fallback(out, _failure(query), errors), False
    try:
        devices = parse_query(query.text())
    except ValueError as exc:
        return _fallback(out, f"nvidia-smi --query-gpu: output not understood: {exc}",
                         errors), False
    for device in devices:
        driver = device.pop("driver_version", "")
        if not out["driver_version"]:
            out["driver_version"] = driver
    out.update(available=bool(devices), count=len(devices), devices=devices)
    if dropped:
        out["unsupported_fields"] = dropped
    if not devices:
        out["reason"] = "nvidia-smi listed no GPU"
    return out, True


def _topology(topo: programs.Result, out: dict[str, Any], errors: list[str]) -> None:
    """``topology`` from ``nvidia-smi topo -m``'s answer ``topo``."""
    if topo.ok:
        topology = parse_topology(topo.text())
        if topology:
            out["topology"] = topology
        elif out.get("devices"):
            errors.append("nvidia-smi topo -m: output not understood")
    elif out.get("devices"):
        errors.append(topo.error_line())


def _failure(result: programs.Result) -> str:
    """Why nvidia-smi's query failed, in one line: nvidia-smi prints its own failures
    (``Failed to initialize NVML: ...``, ``NVIDIA-SMI has failed because it couldn't communicate
    with the NVIDIA driver...``) on standard output, so that is read when standard error is
    empty."""
    said = (result.stderr.decode("utf-8", "replace").strip()
            or result.stdout.decode("utf-8", "replace").strip()).splitlines()
    line = said[0].strip()[:300] if said else ""
    status = f"nvidia-smi failed (exit status {result.returncode})"
    return f"{status}: {line}" if line else status


def _fallback(out: dict[str, Any], failure: str, errors: list[str]) -> dict[str, Any]:
    """nvidia-smi is there but its query failed: the driver's files, with what it did say."""
    found = from_driver(failure, errors)
    for key in ("driver_version", "cuda_version"):  # the header's, when it answered
        if out.get(key):
            found[key] = out[key]
            if key == "cuda_version":
                found.pop("cuda_version_from", None)  # said, not inferred
    return {"nvidia_smi": out["nvidia_smi"], **found}


def from_driver(failure: str, errors: list[str]) -> dict[str, Any]:
    """``[system] gpu`` from the kernel driver's files (:data:`DRIVER_ROOT`), nvidia-smi having
    failed with ``failure``; the reader's errors join ``errors``."""
    found = nvdriver.read_driver(DRIVER_ROOT)
    errors.extend(found.pop("errors"))
    if not found.pop("loaded"):
        return {"available": False, "reason": f"{failure}, and no NVIDIA kernel driver is loaded "
                f"(no {nvdriver.SOURCE})", "count": 0, "devices": []}
    listed, count, devices = found.pop("listed"), found.pop("count"), found.pop("devices")
    control = found.pop("control_node")
    cuda, how = nvdriver.cuda_for_driver(found["driver_version"])  # "" where unknown
    gpu: dict[str, Any] = {"available": bool(count) and control, "source": nvdriver.SOURCE,
                           "nvidia_smi_error": failure, "cuda_version": cuda,
                           "cuda_version_from": how, **found,
                           "count": count, "listed": listed, "devices": devices}
    if count != listed:
        gpu["count_note"] = (f"count is the {count} of the {listed} GPU(s) the driver lists whose "
                             "device node (/dev/nvidiaN) this process has")
    if not control:
        gpu["control_node"] = False
    if not gpu["available"]:
        gpu["reason"] = _why_none(failure, listed, devices, control)
    return gpu


def _why_none(failure: str, listed: int, devices: list[dict[str, Any]], control: bool) -> str:
    if not listed:
        said = "the NVIDIA kernel driver is loaded but lists no GPU"
    elif not control and any(d.get("usable") for d in devices):
        said = (f"the driver lists {listed} GPU(s) but /dev/nvidiactl, the driver's control "
                "node, is missing: no GPU can be opened")
    else:
        why = []
        for d in devices:
            label = d["pci_bus_id"]  # every device the driver lists has one
            if d.get("excluded"):
                why.append(f"{label} is excluded by the driver")
            elif "usable" not in d:
                why.append(f"{label}: the driver does not say its device node")
            else:
                why.append(f"{label}: no {d.get('device_node')}")
        said = (f"the driver lists {listed} GPU(s), none usable by this process ("
                f"{'; '.join(why)}; a container is given only some device nodes)")
    return f"{failure}; {said} ({nvdriver.SOURCE})"
