"""A stub ``libnvidia-ml.so.1`` that answers from recorded nvidia-smi output (nvml_stub.c).

This machine has no GPU. The stub has the names and signatures of NVIDIA's public ``nvml.h``
and answers each call with the value a real machine recorded: the facts file it reads is
written here from one recording, by undoing nvidia-smi's formatting of the NVML value behind
each field (``81559 MiB`` -> that many MiB in bytes, ``700.00 W`` -> milliwatts, ``9.0`` ->
``9 0``, ``Enabled`` -> 1). ``[N/A]`` and other bracketed answers are left out, so the stub
says NVML_ERROR_NOT_SUPPORTED as the driver did. Two kinds of recording:

- :func:`from_query`: a ``--query-gpu`` answer for every field the driver knows
  (fixtures/nvidia-smi/*/query.csv) and its default table (the header: driver and CUDA);
- :func:`from_xml`: ``nvidia-smi -q -x`` (every field NVML reports for a GPU,
  /work/shared/data/gpu/h200/, copied into fixtures/nvidia-smi/h200-r580/), which holds no
  compute capability: that one comes from the same machine's query.

Also run as a program by benchmarks/gpu.py: ``python -m tests.collectors.nvml_stub FOLDER
RECORDING`` builds the stub of a recording in FOLDER (the library goes in ``FOLDER/lib``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

SOURCE = Path(__file__).with_name("nvml_stub.c")
#: nvidia-smi's enable states, as NVML numbers them (nvmlEnableState_t, the MIG modes).
STATES = {"Disabled": 0, "Enabled": 1}


def compiler() -> str | None:
    """The C compiler the stub is built with (None: the tests that need it are skipped)."""
    return shutil.which("cc") or shutil.which("gcc")


def build(folder: Path, facts: dict[str, str], *, without: tuple[str, ...] = ()) -> Path:
    """Build a stub answering ``facts`` into ``folder/lib/libnvidia-ml.so.1``; the folder to put
    on ``LD_LIBRARY_PATH``. ``without``: macros such as ``WITHOUT_COMPUTE_CAP``."""
    lib = folder / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    data = folder / "facts.tsv"
    data.write_text("".join(f"{key}\t{value}\n" for key, value in facts.items()))
    cc = compiler()
    assert cc is not None, "no C compiler"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", f'-DSTUB_DATA="{data}"',
                    *(f"-D{name}" for name in without), str(SOURCE), "-o",
                    str(lib / "libnvidia-ml.so.1")], check=True)
    return lib


def _cells(query_csv: str) -> list[dict[str, str]]:
    lines = [line for line in query_csv.splitlines() if line.strip()]
    names = [re.sub(r"\s*\[[^\]]*\]$", "", cell.strip()) for cell in lines[0].split(",")]
    return [dict(zip(names, (c.strip() for c in line.split(",")), strict=True))
            for line in lines[1:]]


def _number(cell: str, unit: str) -> str:
    """``"81559 MiB"`` -> ``"81559"`` (the cell must carry ``unit``)."""
    value, _, said = cell.partition(" ")
    assert said == unit, (cell, unit)
    return value


def _header(header: str) -> tuple[str, str]:
    m = re.search(r"Driver Version:\s*(\S+)\s+CUDA Version:\s*(\S+)", header)
    assert m, "no header line"
    return m[1], m[2]


def _cuda(version: str) -> str:
    """nvidia-smi's ``13.1`` -> NVML's 13010 (``major * 1000 + minor * 10``)."""
    major, minor = version.split(".")
    return str(int(major) * 1000 + int(minor) * 10)


def from_query(query_csv: str, header: str) -> dict[str, str]:
    """The facts of a recorded ``--query-gpu`` answer and default table."""
    driver, cuda = _header(header)
    devices = _cells(query_csv)
    facts = {"driver": driver or devices[0]["driver_version"], "cuda": _cuda(cuda),
             "count": str(len(devices))}
    for i, cells in enumerate(devices):
        known = {k: v for k, v in cells.items() if v and not v.startswith("[")}
        def put(key: str, value: str | None, *, i: int = i) -> None:
            if value is not None:
                facts[f"{i}.{key}"] = value
        put("name", known.get("name"))
        put("uuid", known.get("uuid"))
        put("bus_id", known.get("pci.bus_id"))
        if "memory.total" in known:
            put("memory_total", str(int(_number(known["memory.total"], "MiB")) << 20))
        if "compute_cap" in known:
            put("cc", known["compute_cap"].replace(".", " "))
        if "persistence_mode" in known:
            put("persistence", str(STATES[known["persistence_mode"]]))
        for key, field in (("mig", "mig.mode"), ("ecc", "ecc.mode")):
            if f"{field}.current" in known:
                pending = known.get(f"{field}.pending", known[f"{field}.current"])
                put(key, f"{STATES[known[f'{field}.current']]} {STATES[pending]}")
        if "power.limit" in known:
            watts = _number(known["power.limit"], "W")
            put("power_limit_mw", str(round(float(watts) * 1000)))
        for clock, field in ((1, "clocks.max.sm"), (2, "clocks.max.memory")):
            if field in known:
                put(f"max_clock.{clock}", _number(known[field], "MHz"))
        put("pcie_gen_max", known.get("pcie.link.gen.max"))
        put("pcie_width_max", known.get("pcie.link.width.max"))
    return facts


def from_xml(xml: str, query_csv: str) -> dict[str, str]:
    """The facts of a recorded ``nvidia-smi -q -x``; the compute capability from the same
    machine's query (``-q`` has none)."""
    root = ET.fromstring(xml)
    gpus = root.findall("gpu")
    queried = _cells(query_csv)
    facts = {"driver": root.findtext("driver_version", ""),
             "cuda": _cuda(root.findtext("cuda_version", "")), "count": str(len(gpus))}
    for i, gpu in enumerate(gpus):
        def text(path: str, gpu: ET.Element = gpu) -> str | None:
            value = gpu.findtext(path)
            return None if value is None or value.strip() in ("", "N/A") else value.strip()
        def put(key: str, value: str | None, *, i: int = i) -> None:
            if value is not None:
                facts[f"{i}.{key}"] = value
        put("name", text("product_name"))
        put("uuid", text("uuid"))
        put("bus_id", text("pci/pci_bus_id"))
        total = text("fb_memory_usage/total")
        put("memory_total", str(int(_number(total, "MiB")) << 20) if total else None)
        cap = queried[i].get("compute_cap", "")
        put("cc", cap.replace(".", " ") if cap and not cap.startswith("[") else None)
        mode = text("persistence_mode")
        put("persistence", str(STATES[mode]) if mode else None)
        for key, tag in (("mig", "mig_mode/%s_mig"), ("ecc", "ecc_mode/%s_ecc")):
            current, pending = text(tag % "current"), text(tag % "pending")
            if current and pending:
                put(key, f"{STATES[current]} {STATES[pending]}")
        # power.limit is the requested (software) limit; -q's "current" one is the enforced
        limit = text("gpu_power_readings/requested_power_limit")
        put("power_limit_mw", str(round(float(_number(limit, "W")) * 1000)) if limit else None)
        for clock, tag in ((1, "max_clocks/sm_clock"), (2, "max_clocks/mem_clock")):
            value = text(tag)
            put(f"max_clock.{clock}", _number(value, "MHz") if value else None)
        put("pcie_gen_max", text("pci/pci_gpu_link_info/pcie_gen/max_link_gen"))
        width = text("pci/pci_gpu_link_info/link_widths/max_link_width")
        put("pcie_width_max", width.removesuffix("x") if width else None)
    return facts


def facts_of(recording: Path) -> dict[str, str]:
    """The facts of a recording folder: its ``q.xml`` when there is one, else its query."""
    query = (recording / "query.csv").read_text()
    if (recording / "q.xml").exists():
        return from_xml((recording / "q.xml").read_text(), query)
    return from_query(query, (recording / "header.txt").read_text())


if __name__ == "__main__":
    folder, recording = Path(sys.argv[1]), Path(sys.argv[2])
    print(build(folder, facts_of(recording)))
