"""Unmet requirements, as ``pip check`` finds them: each installed distribution's
``Requires-Dist`` against the versions installed beside it.

The snapshot lists the distributions and where they are installed; their metadata is read where
they are installed on this machine (the same machine, or the same image), so ``runsnap check``
finds what ``pip check`` would have said in the run's environment. A requirement whose
environment marker is false for the run's Python (an ``extra``, another platform) is skipped, as
pip does. The capture path never runs this (it would read every installed distribution's
metadata): the pre-launch guard leaves it to ``runsnap check``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from runsnap.checks.finding import Finding

__all__ = ["requires_dist", "unmet_requirements"]

#: ``(location, name, version) -> Requires-Dist lines``, or None when not installed here.
Requires = Callable[[str, str, str], "list[str] | None"]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requires_dist(location: str, name: str, version: str) -> list[str] | None:
    """The ``Requires-Dist`` lines of ``name`` ``version`` installed under ``location`` (its
    ``.dist-info/METADATA`` header, read up to the blank line), or None when absent here."""
    want = _norm(name)
    try:
        entries = os.listdir(location)
    except OSError:
        return None
    for entry in entries:
        if not entry.endswith(".dist-info"):
            continue
        dist, _, ver = entry[: -len(".dist-info")].rpartition("-")
        if _norm(dist) != want or ver != version:
            continue
        out = []
        try:
            with open(os.path.join(location, entry, "METADATA"), encoding="utf-8",
                      errors="replace") as fh:
                for line in fh:
                    if not line.strip():
                        break
                    if line.startswith("Requires-Dist:"):
                        out.append(line.partition(":")[2].strip())
        except OSError:
            return None
        return out
    return None


def _marker_env(snap: Any) -> dict[str, str]:
    from packaging.markers import default_environment

    env = {k: str(v) for k, v in default_environment().items()}
    version = str((snap.get("packages") or {}).get("python_version") or "")
    if re.fullmatch(r"\d+\.\d+(\.\d+)?.*", version):
        env["python_full_version"] = version
        env["python_version"] = ".".join(version.split(".")[:2])
    env["extra"] = ""
    return env


def unmet_requirements(snap: Any, requires: Requires = requires_dist) -> list[Finding]:
    """What ``pip check`` reports for the snapshot's interpreter, one finding per line of it
    (``X 1.0 requires Y, which is not installed.``, ``X 1.0 has requirement Y>=2, but you have
    Y 1.5.``)."""
    from packaging.requirements import InvalidRequirement, Requirement

    dists: Mapping[str, Any] = (snap.get("packages") or {}).get("distributions") or {}
    installed = {_norm(n): (n, str(d.get("version", ""))) for n, d in dists.items()
                 if isinstance(d, Mapping)}
    env = _marker_env(snap)
    out: list[Finding] = []
    for name, d in sorted(dists.items()):
        if not isinstance(d, Mapping) or not d.get("location"):
            continue
        version = str(d.get("version", ""))
        lines = requires(str(d["location"]), str(name), version)
        for line in lines or ():
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if req.marker is not None and not req.marker.evaluate(env):
                continue
            have = installed.get(_norm(req.name))
            if have is None:
                out.append(Finding("unmet-requirement", 86, (
                    f"{name} {version} requires {req.name}, which is not installed."),
                    ("packages", str(name)), (f"Requires-Dist: {line}",)))
            elif req.specifier and not req.specifier.contains(have[1], prereleases=True):
                out.append(Finding("unmet-requirement", 84, (
                    f"{name} {version} has requirement {req}, but you have "
                    f"{have[0]} {have[1]}."), ("packages", str(name)),
                    (f"Requires-Dist: {line}",)))
    return out
