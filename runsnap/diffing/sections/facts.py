"""Differences in the facts maintainers ask for (collect_env's), and what each means for a run.

:func:`system` and :func:`packages` compare the parts of ``[system]`` (GPU details and topology,
resource limits, cgroup, network, CPU layout, toolchain) and of ``[packages]`` (engine builds,
the CUDA libraries, conda) beyond what ``sections/system.py`` and ``sections/packages.py``
compare themselves (they call this module, for comparing and for scoring); :func:`score` says
how likely each changed the behaviour, and why, in words a maintainer can check (torch's build
settings and whether torch can use the GPUs: :mod:`runsnap.knowledge.torchbuild`).

A part absent from one snapshot (written by an older runsnap) is not compared: not knowing is
not a difference.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runsnap.diffing.result import Difference
from runsnap.diffing.walk import dotted, locator, walk
from runsnap.diffing.written import record, written
from runsnap.knowledge import torchbuild
from runsnap.knowledge.factscores import fact_names, fact_rule
from runsnap.knowledge.packages import version_change
from runsnap.snapshot.records import Build, CondaPackage, Library, Packages
from runsnap.snapshot.records_host import (
    AmdDevice,
    Gpus,
    Memory,
    Network,
    ResourceLimit,
    System,
    Toolchain,
)
from runsnap.snapshot.sectionrecord import SectionRecord

__all__ = ["packages", "score", "system"]

def _part(a: Mapping[str, Any], b: Mapping[str, Any], key: str) -> tuple[Any, Any] | None:
    """Both sides of a part, or None when one snapshot did not record it."""
    if key not in a or key not in b:
        return None
    return a[key], b[key]


def _diff(section: str, key: str, x: Any, y: Any, evidence: tuple[str, ...] = (),
          path: tuple[str | int, ...] = ()) -> Difference:
    """A difference keyed ``key`` (dotted) at locator ``(section, *path)`` (default: the key's
    parts)."""
    change = "added" if x is None else "removed" if y is None else "changed"
    return Difference(section, key, change, x, y, evidence=evidence,
                      path=locator(section, *(path or tuple(key.split(".")))))


def _sets(x: list[str], y: list[str]) -> tuple[str, ...]:
    return tuple([f"B only: {v}" for v in y if v not in x] + [f"A only: {v}" for v in x
                                                               if v not in y])


def _gpu(ga: Gpus, gb: Gpus) -> list[Difference]:
    out: list[Difference] = []
    da, db = ga.devices, gb.devices
    # the driver's files (``source``) know none of nvidia-smi's device details or topology
    same_source = ga.source == gb.source
    for field in fact_names("gpu") if same_source else ():
        va = [getattr(d, field) for d in da]
        vb = [getattr(d, field) for d in db]
        if not any(v is not None for v in va + vb) or va == vb:
            continue
        va = ["not reported" if v is None else v for v in va]
        vb = ["not reported" if v is None else v for v in vb]
        ua, ub = set(map(str, va)), set(map(str, vb))
        if len(ua) <= 1 and len(ub) <= 1:
            out.append(_diff("system", f"gpu.{field}", next(iter(ua), None),
                             next(iter(ub), None)))
        else:
            ea = [f"GPU{i}: {v}" for i, v in enumerate(va)]
            eb = [f"GPU{i}: {v}" for i, v in enumerate(vb)]
            out.append(_diff("system", f"gpu.{field}", ea, eb, _sets(ea, eb)))
    ta, tb = ga.topology, gb.topology
    if ta != tb and (ta or tb) and da and db and same_source:
        la, lb = ta.links, tb.links
        pairs = sorted(set(la) | set(lb))
        ev = [f"{p}: {la.get(p, '-')} -> {lb.get(p, '-')}" for p in pairs if la.get(p) != lb.get(p)]
        aa, ab = ta.affinity, tb.affinity
        ev += [f"{g} affinity: {_raw(aa.get(g))} -> {_raw(ab.get(g))}"
               for g in sorted(set(aa) | set(ab)) if aa.get(g) != ab.get(g)]
        if ev:
            out.append(Difference("system", "gpu.topology", "changed", path=locator(
                                  "system", "gpu", "topology", "links"), a=
                                  "; ".join(f"{p} {la.get(p, '-')}" for p in pairs
                                            if la.get(p) != lb.get(p)) or "affinity",
                                  b="; ".join(f"{p} {lb.get(p, '-')}" for p in pairs
                                              if la.get(p) != lb.get(p)) or "affinity",
                                  evidence=tuple(ev)))
    xa, xb = ga.amd, gb.amd
    if xa != xb and (xa or xb):
        if xa.driver_version != xb.driver_version:
            out.append(_diff("system", "gpu.amd.driver_version", xa.driver_version,
                             xb.driver_version))
        ma = [_amd_model(d) for d in xa.devices or ()]
        mb = [_amd_model(d) for d in xb.devices or ()]
        if ma != mb:
            out.append(_diff("system", "gpu.amd.models", ma, mb))
    return out


def _raw(rec: SectionRecord | None) -> Mapping[str, Any] | None:
    """A record as written (what the evidence prints), ``None`` for none."""
    return None if rec is None else rec.raw


def _amd_model(device: AmdDevice) -> str:
    """An AMD GPU's model as any runsnap recorded it (``market_name``/``card_series`` before the
    amd-smi and rocm-smi facts shared one shape)."""
    return str(device.name or device.market_name or device.card_series
               or written(device, "gfx_version", "?"))


def _limit_number(value: Any) -> float:
    return float("inf") if value == "unlimited" else float(value) if isinstance(
        value, (int, float)) else -1.0


def _limits(la: Mapping[str, ResourceLimit], lb: Mapping[str, ResourceLimit]) -> list[Difference]:
    out = []
    none = ResourceLimit()
    for name in sorted(set(la) | set(lb)):
        x, y = la.get(name) or none, lb.get(name) or none
        for which in ("soft", "hard"):
            if getattr(x, which) != getattr(y, which):
                key = f"limits.{name}" if which == "soft" else f"limits.{name}.hard"
                out.append(_diff("system", key, getattr(x, which), getattr(y, which),
                                 path=("limits", name, which)))
    return out


def _network(na: Network, nb: Network) -> list[Difference]:
    out: list[Difference] = []
    ia, ib = na.interfaces, nb.interfaces
    for name in sorted(set(ia) | set(ib)):
        x, y = ia.get(name), ib.get(name)
        if x is None or y is None:
            out.append(_diff("system", f"network.interfaces.{name}",
                             None if x is None else x.state, None if y is None else y.state,
                             path=("network", "interfaces", name)))
            continue
        out.extend(_diff("system", f"network.interfaces.{name}.{field}", getattr(x, field),
                         getattr(y, field), path=("network", "interfaces", name, field))
                   for field in ("state", "mtu", "speed_mbps", "type", "driver")
                   if getattr(x, field) != getattr(y, field))
    ra, rb = na.infiniband, nb.infiniband
    if sorted(ra) != sorted(rb):
        out.append(Difference("system", "network.infiniband", "changed", sorted(ra), sorted(rb),
                              evidence=_sets(sorted(ra), sorted(rb)),
                              path=locator("system", "network", "infiniband")))
    for dev in sorted(set(ra) & set(rb)):
        pa, pb = ra[dev].ports, rb[dev].ports
        for port in sorted(set(pa) | set(pb)):
            for field in ("state", "phys_state", "rate", "link_layer"):
                x, y = (getattr(pa[port], field) if port in pa else None,
                        getattr(pb[port], field) if port in pb else None)
                if x != y:
                    out.append(_diff("system", f"network.infiniband.{dev}.port{port}.{field}",
                                     x, y, path=("network", "infiniband", dev, "ports", port,
                                                 field)))
        fa, fb = ra[dev].fw_ver, rb[dev].fw_ver
        if fa != fb:
            out.append(_diff("system", f"network.infiniband.{dev}.fw_ver", fa, fb,
                             path=("network", "infiniband", dev, "fw_ver")))
    for field in ("peer_memory", "modules"):
        lx, ly = list(getattr(na, field) or []), list(getattr(nb, field) or [])
        if lx != ly and (na.has(field) and nb.has(field)):
            out.append(Difference("system", f"network.{field}", "changed", lx, ly,
                                  evidence=_sets(lx, ly), path=locator("system", "network", field)))
    return out


def _toolchain(ta: Toolchain, tb: Toolchain) -> list[Difference]:
    out: list[Difference] = []
    for tool in fact_names("tool"):
        x, y = getattr(ta, tool), getattr(tb, tool)
        vx = x.version if x.found else "not found"
        vy = y.version if y.found else "not found"
        if vx != vy:
            ev = tuple(f"{side}: {written(t, 'path')} {written(t, 'line')}".rstrip()
                       for side, t in (("A", x), ("B", y)) if t.found)
            out.append(_diff("system", f"toolchain.{tool}", vx, vy, ev,
                             path=("toolchain", tool, "version")))
    out.extend(_diff("system", f"toolchain.{field}", fx, fy)
               for field in ("cuda_home", "libc")
               for fx, fy in ((getattr(ta, field), getattr(tb, field)),) if fx != fy)
    for view in ("ld_library_path", "ldconfig"):
        xa, xb = getattr(ta, view) or {}, getattr(tb, view) or {}
        for soname in sorted(set(xa) | set(xb)):
            fa = (xa[soname].file, xa[soname].path) if soname in xa else (None, None)
            fb = (xb[soname].file, xb[soname].path) if soname in xb else (None, None)
            if fa != fb:
                out.append(_diff("system", f"toolchain.{view}.{soname}",
                                 fa[1] and f"{fa[1]} ({fa[0]})", fb[1] and f"{fb[1]} ({fb[0]})",
                                 path=("toolchain", view, soname)))
    return out


def _leaves(prefix: str, a: Mapping[str, Any], b: Mapping[str, Any],
            skip: tuple[str, ...] = ()) -> list[Difference]:
    return [Difference("system", f"{prefix}.{dotted(parts)}", change, x, y,
                       path=locator("system", prefix, *parts))
            for parts, change, x, y in walk(dict(a), dict(b)) if parts[0] not in skip]


def system(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """GPU details, topology and AMD GPUs; limits; cgroup; network; CPU layout; NUMA; memory
    layout; toolchain."""
    out: list[Difference] = []
    xa, xb = record(System, a), record(System, b)

    def both(key: str) -> bool:
        """Recorded in both, and differing: equal parts make no difference (the nodes of one
        job: all but the host)."""
        return xa.has(key) and xb.has(key) and getattr(xa, key) != getattr(xb, key)

    if both("gpu") and xa.gpu and xb.gpu:
        out += _gpu(xa.gpu, xb.gpu)
    if both("limits"):
        out += _limits(xa.limits, xb.limits)
    if both("cgroup"):
        out += _leaves("cgroup", xa.cgroup.raw, xb.cgroup.raw, skip=("path",))
    if both("network"):
        out += _network(xa.network, xb.network)
    ca, cb = xa.cpu, xb.cpu
    if ca.has("flags") and cb.has("flags") and ca != cb:
        fa, fb = ca.flags or (), cb.flags or ()
        if fa != fb:
            out.append(Difference("system", "cpu.flags", "changed", len(fa), len(fb),
                                  evidence=_sets(list(fa), list(fb)),
                                  path=locator("system", "cpu", "flags")))
        keep = ("vendor", "family", "model_number", "stepping", "microcode", "sockets",
                "threads_per_core", "smt", "caches", "hypervisor", "vulnerabilities")
        # as written: the caches, SMT and hypervisor records' leaves
        out += _leaves("cpu", {k: ca.raw[k] if ca.has(k) else None for k in keep},
                       {k: cb.raw[k] if cb.has(k) else None for k in keep})
    if both("numa"):
        out += _leaves("numa", xa.numa.raw, xb.numa.raw)
    ma, mb = xa.memory, xb.memory
    if ma.has("hugepages") and mb.has("hugepages") and ma != mb:
        out += _leaves("memory", _memory_layout(ma), _memory_layout(mb))
    if both("toolchain"):
        out += _toolchain(xa.toolchain, xb.toolchain)
    return out


def _memory_layout(memory: Memory) -> dict[str, Any]:
    """The memory facts compared."""
    pages = memory.hugepages
    return {"hugepages.total": pages.total, "hugepages.size_kib": pages.size_kib,
            "transparent_hugepage": memory.transparent_hugepage,
            "swap_total_bytes": memory.swap_total_bytes}


def packages(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Engine builds (``builds.torch.cuda``...), the CUDA/ROCm libraries (``libraries.nccl``),
    conda packages (``conda.NAME``)."""

    out: list[Difference] = []
    if both := _part(a, b, "builds"):
        ba, bb = both[0] or {}, both[1] or {}
        for name in sorted(set(ba) | set(bb)):
            x, y = ba.get(name), bb.get(name)
            if x is None or y is None:
                out.append(_diff("packages", f"builds.{name}", x and Build(x).version,
                                 y and Build(y).version, path=("builds", name)))
                continue
            for parts, change, fx, fy in walk(dict(x), dict(y)):
                if parts[0] == "path" or (name == "torch" and torchbuild.not_compared(
                        parts, x, y, fx, fy)):
                    continue
                out.append(Difference("packages", f"builds.{name}.{dotted(parts)}", change, fx,
                                      fy, path=locator("packages", "builds", name, *parts),
                                      evidence=torchbuild.evidence(parts, x, y)
                                      if name == "torch" else ()))
    if _part(a, b, "libraries"):
        la, lb = record(Packages, a).libraries, record(Packages, b).libraries
        for family in sorted(set(la) | set(lb)):
            x, y = la.get(family) or Library(), lb.get(family) or Library()
            vx, vy = x.version, y.version
            sx, sy = x.source or x.dir, y.source or y.dir
            if vx != vy:
                change = version_change(str(vx), str(vy)) if vx and vy else (
                    "added" if not x else "removed" if not y else "changed")
                out.append(Difference("packages", f"libraries.{family}", change, vx, vy,
                                      evidence=(f"A: {sx}", f"B: {sy}"),
                                      path=locator("packages", "libraries", family, "version")))
            elif sx != sy or written(x, "files", None) != written(y, "files", None):
                out.append(Difference("packages", f"libraries.{family}.source", "changed",
                                      f"{sx} {written(x, 'files', None)}",
                                      f"{sy} {written(y, 'files', None)}",
                                      path=locator("packages", "libraries", family, "source")))
    conda_a, conda_b = record(Packages, a).conda, record(Packages, b).conda
    if conda_a or conda_b:
        pa: Mapping[str, CondaPackage] = (conda_a.packages if conda_a else None) or {}
        pb: Mapping[str, CondaPackage] = (conda_b.packages if conda_b else None) or {}
        for name in sorted(set(pa) | set(pb)):
            vx = pa[name].version if name in pa else None
            vy = pb[name].version if name in pb else None
            if vx != vy:
                change = version_change(str(vx), str(vy)) if vx and vy else (
                    "added" if vx is None else "removed")
                out.append(Difference("packages", f"conda.{name}", change, vx, vy,
                                      path=locator("packages", "conda", "packages", name,
                                                   "version")))
            elif pa.get(name) != pb.get(name):
                out.append(Difference("packages", f"conda.{name}.build", "changed",
                                      pa[name].build, pb[name].build,
                                      path=locator("packages", "conda", "packages", name,
                                                   "build")))
    return out


def _lower(d: Difference) -> bool:
    return _limit_number(d.b) < _limit_number(d.a)


def score(d: Difference) -> tuple[int, str] | None:
    """(score, reason) for a difference of the facts above; None for any other difference.
    The scores and reasons are data (``knowledge/fact-scores.tsv``); this says which rule a
    difference falls under."""
    head, _, rest = d.key.partition(".")
    if d.section == "packages":
        return _package_score(d, head, rest)
    if d.section != "system":
        return None
    if head == "gpu":
        if rest == "topology" or rest.startswith("amd"):
            return fact_rule("fact", "gpu.topology" if rest == "topology" else "gpu.amd")
        return fact_rule("gpu", rest)
    if head == "limits":
        return _limit_score(d, rest)
    if head == "toolchain":
        tool = rest.split(".")[0]
        if tool in ("ldconfig", "ld_library_path"):
            s, why = _fact(f"toolchain.{tool}")
            return s, why.replace("{soname}", rest.partition(".")[2])
        return fact_rule("tool", tool) or fact_rule("fact", f"toolchain.{tool}")
    if head in ("cgroup", "network", "cpu", "numa", "memory"):
        return _fact(_system_rule(head, rest, d.change))
    return None


def _fact(name: str) -> tuple[int, str]:
    rule = fact_rule("fact", name)
    assert rule is not None, f"fact-scores.tsv has no rule fact {name}"
    return rule


def _system_rule(head: str, rest: str, change: str) -> str:
    """The ``fact`` rule of a ``[system]`` difference under cgroup, network, cpu, numa or
    memory: the name its line in ``fact-scores.tsv`` has."""
    if head == "cgroup":
        return ("cgroup.cpu" if rest in ("cpu_limit", "cpuset") else
                "cgroup.memory" if rest.startswith("memory") else "cgroup")
    if head == "network":
        if rest.startswith("interfaces"):
            if rest.endswith(".state") or change in ("added", "removed"):
                return "network.interface.up"
            return "network.interface.mtu" if rest.endswith(".mtu") else "network.interface"
        if rest == "infiniband" or rest.endswith((".state", ".phys_state")):
            return "network.rdma"
        if rest.startswith("infiniband"):
            return "network.rdma.port"
        return "network.peer_memory" if rest == "peer_memory" else "network.modules"
    if head == "cpu":
        if rest == "flags":
            return "cpu.flags"
        if rest.startswith("vulnerabilities") or rest == "microcode":
            return "cpu.mitigations"
        return "cpu.layout" if rest.startswith(("sockets", "threads_per_core", "smt")) else "cpu"
    return "numa" if head == "numa" else "memory"


def _limit_score(d: Difference, rest: str) -> tuple[int, str]:
    """A lower limit in B scores the limit's rule; a higher one 25 less, a hard limit 20 less
    (never under 5)."""
    name = rest.split(".")[0]
    s, why = fact_rule("limit", name, default=True) or (30, "")
    if rest.endswith(".hard"):
        return max(5, s - 20), f"another hard limit of {name}: {why}"
    if _lower(d):
        return s, f"a lower {name} limit in B: {why}"
    return max(5, s - 25), f"a higher {name} limit in B: {why}"


def _package_score(d: Difference, head: str, rest: str) -> tuple[int, str] | None:
    """Engine builds, CUDA/ROCm libraries and conda packages."""
    if head == "builds":
        name, _, field = rest.partition(".")
        if not field:
            s, why = fact_rule("build", "importable") or (60, "")
            return s, f"{name} {why}"
        if name == "torch" and (known := torchbuild.score(field, d.a, d.b)):
            return known
        base = field.split(".")[0].split("[")[0]
        s, why = fact_rule("build", base, default=True) or (45, "")
        return s, f"{name} {why}"
    if head == "libraries":
        family, _, sub = rest.partition(".")
        s, why = fact_rule("library", family, default=True) or (50, "")
        why = why.replace("{family}", family)
        if sub == "source":
            return s - 8, f"{family} is loaded from elsewhere; {why.split(': ', 1)[-1]}"
        return s, why
    if head == "conda":
        return fact_rule("conda", "build" if rest.endswith(".build") else "version")
    return None
