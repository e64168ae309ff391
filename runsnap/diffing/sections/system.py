"""``[system]``: host, OS, kernel, CPU, memory; GPU availability, driver, CUDA, models and
devices."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runsnap.diffing.result import Difference
from runsnap.diffing.rules import RankContext, Verdict
from runsnap.diffing.sections import facts
from runsnap.diffing.walk import compare_lists
from runsnap.diffing.written import record, written
from runsnap.knowledge.drift import moved_within
from runsnap.snapshot.records_host import System
from runsnap.snapshot.sectionrecord import SectionRecord

__all__ = ["SYSTEM_FIELDS", "compare", "score"]

_SYSTEM_FIELDS = (
    ("host", ("host",)), ("os", ("os",)), ("kernel", ("kernel",)), ("machine", ("machine",)),
    ("cpu.model", ("cpu", "model")), ("cpu.logical", ("cpu", "logical")),
    ("cpu.affinity", ("cpu", "affinity")), ("memory.total_bytes", ("memory", "total_bytes")),
    ("runsnap_python", ("python", "version")),
    ("gpu.available", ("gpu", "available")), ("gpu.driver_version", ("gpu", "driver_version")),
    ("gpu.cuda_version", ("gpu", "cuda_version")), ("gpu.count", ("gpu", "count")),
)


def _get(record: SectionRecord, path: Sequence[str]) -> Any:
    """The field at ``path`` (records within records, then a value)."""
    got: Any = record
    for p in path:
        got = getattr(got, p)
    return got


def _gpu_models(section: System, memory: bool = True) -> list[str]:
    """``['8 x NVIDIA H100 80GB HBM3 (81559 MiB)']`` (without the memory when ``memory`` is
    false); devices the driver lists without their device node here are left out."""
    counts: dict[str, int] = {}
    for dev in section.gpu.devices:
        if dev.usable is False:
            continue
        label = (f"{written(dev, 'name', '?')} ({written(dev, 'memory_mib', '?')} MiB)" if memory
                 else str(written(dev, "name", "?")))
        counts[label] = counts.get(label, 0) + 1
    return [f"{n} x {label}" for label, n in sorted(counts.items())]


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Host, OS, kernel, CPU, memory; GPU: availability, driver, CUDA version, model and count,
    and which physical devices (UUIDs). Facts that move on their own (memory totals, free
    memory: :mod:`runsnap.knowledge.drift`) count only past their tolerance."""
    out: list[Difference] = []
    xa, xb = record(System, a), record(System, b)
    # GPU facts read from the driver's files (no nvidia-smi) lack what only nvidia-smi says (the
    # driver's CUDA version, memory): on one side only, not knowing is not a difference.
    sa, sb = xa.gpu.source, xb.gpu.source
    for key, path in _SYSTEM_FIELDS:
        x, y = _get(xa, path), _get(xb, path)
        if key == "gpu.cuda_version" and (not x and sa or not y and sb):
            continue
        if x != y:
            out.append(Difference("system", key, "changed", x, y, path=("system", *path)))
    if sa != sb and xa.gpu.available and xb.gpu.available:
        out.append(Difference("system", "gpu.source", "changed", sa or "nvidia-smi",
                              sb or "nvidia-smi", path=("system", "gpu", "source")))
    ga, gb = _gpu_models(xa, memory=sa == sb), _gpu_models(xb, memory=sa == sb)
    if ga != gb:
        out.append(Difference("system", "gpu.models", "changed", ga, gb,
                              path=("system", "gpu", "models")))
    ua = [d.uuid for d in xa.gpu.devices if d.usable is not False]
    ub = [d.uuid for d in xb.gpu.devices if d.usable is not False]
    if ua != ub:
        change, ev = compare_lists([str(u) for u in ua], [str(u) for u in ub])
        out.append(Difference("system", "gpu.uuids", change, ua, ub, evidence=ev,
                              path=("system", "gpu", "uuids")))
    out += facts.system(a, b)  # collect_env's facts: GPU details, limits, network...
    # memory totals moving by a little, free memory: recorded, a difference only past the
    # tolerance of knowledge/host-drift.tsv
    return [d for d in out if not moved_within(d.key, d.a, d.b)]


#: System facts: score and reason.
SYSTEM_FIELDS = {
    "gpu.models": (72, "another GPU model or count"),
    "gpu.count": (72, "another number of GPUs"),
    "gpu.available": (72, "GPUs visible in one run only"),
    "gpu.driver_version": (66, "another NVIDIA driver: it matters to every CUDA program"),
    "gpu.cuda_version": (66, "another CUDA version supported by the driver: it matters to every "
                             "CUDA program"),
    "machine": (60, "another CPU architecture"),
    "cpu.affinity": (45, "another number of usable CPUs (thread counts follow it)"),
    "os": (45, "another operating system release"),
    "kernel": (40, "another kernel"),
    "cpu.model": (35, "another CPU model"),
    "cpu.logical": (30, "another number of CPUs"),
    "host": (25, "another host"),
    "memory.total_bytes": (15, "another amount of memory"),
    "gpu.uuids": (15, "other physical GPUs (of the same model)"),
    "gpu.source": (10, "the GPU facts came from nvidia-smi in one run and from the driver's "
                       "files (/proc/driver/nvidia) in the other: what only nvidia-smi says "
                       "(the driver's CUDA version, memory, clocks) is compared only where both "
                       "have it"),
}


def score(d: Difference, rules: RankContext) -> Verdict:
    """GPU model, count and availability (72), driver and CUDA version (66), then host facts
    (15-60, :data:`SYSTEM_FIELDS`); runsnap's own Python is noise (not the child's)."""
    if d.key == "runsnap_python":
        return 2, "noise: runsnap's own interpreter, not the program's", True
    fact = facts.score(d)  # collect_env's facts: GPU details, limits, network, toolchain...
    if fact is not None:
        return fact[0], fact[1], fact[0] < 10
    score, reason = SYSTEM_FIELDS.get(d.key, (30, "another system fact"))
    return score, reason, False
