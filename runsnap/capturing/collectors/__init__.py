"""The collectors: one module per snapshot section, each ``collect(ctx) -> dict``.

:data:`REGISTRY` is the ordered mapping section name -> collector that a capture runs. A
collector returns plain data with an ``errors`` list; when it raises, the capture records the
exception in that section's ``errors`` and goes on.

A collector that waits on other programs may also have a ``start(ctx)`` in :data:`STARTERS`:
:func:`start` calls them all before any collector runs, so the package probe, git and
``nvidia-smi`` work side by side with runsnap's own work; each ``collect`` then finishes what
its ``start`` began (or does everything itself when ``start`` was not called).

A name with a dot (``system.gpu``) is a *part* of a section: one module with one job that adds
keys to the section named before the dot, after that section's collector ran. :func:`merge`
puts a part into its section: its keys join the section (a table the section already has is
extended, at every depth), and each of its ``errors`` joins the section's, prefixed with the
part's name. Each part is timed on its own in ``[meta] collect_ms``. A part of :data:`DERIVED`
is inferred from the sections already collected (``packages.availability``: what
``torch.cuda.is_available()`` would say), after every collector ran.
"""

from __future__ import annotations

from collections.abc import Callable  # at run time too: Collector below is evaluated

from runsnap.capturing.collectors import (
    availability,
    builds,
    cgroup,
    command,
    conda,
    cpu,
    env,
    git,
    gpu,
    limits,
    models,
    network,
    packages,
    system,
    toolchain,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from runsnap.capturing.context import CaptureContext

__all__ = ["DERIVED", "REGISTRY", "STARTERS", "Collector", "Deriver", "merge", "start"]

Collector = Callable[["CaptureContext"], "Mapping[str, Any]"]
Deriver = Callable[["CaptureContext", "Mapping[str, Any]"], "dict[str, Any]"]

#: Section name -> collector, in the order they run (snapshots order sections by
#: ``snapshot.SECTION_ORDER``, not by this). The collectors that only read files come first, so
#: their work overlaps the package probe and git, which :func:`start` has set going; ``packages``
#: and ``git`` then wait for those (git also needs the probe's editable installs). ``system.gpu``
#: comes last: NVML's thread and ``nvidia-smi topo -m`` have had all that time to answer.
REGISTRY: dict[str, Collector] = {
    "command": command.collect,
    "env": env.collect,
    "models": models.collect,
    "system": system.collect,
    "system.cpu": cpu.collect,
    "system.cgroup": cgroup.collect,
    "system.limits": limits.collect,
    "system.network": network.collect,
    "system.toolchain": toolchain.collect,
    "packages": packages.collect,
    "packages.builds": builds.collect,
    "packages.conda": conda.collect,
    "git": git.collect,
    "system.gpu": gpu.collect,
}

#: Part name -> deriver: a part inferred from the sections collected so far (no outside
#: programs), run after :data:`REGISTRY` in this order, merged and timed like a part.
DERIVED: dict[str, Deriver] = {
    "packages.availability": availability.collect,
}

#: Section name -> starter: begins a collector's slow outside work early (see the docstring).
STARTERS: dict[str, Callable[[CaptureContext], None]] = {
    "git": git.start,
    "system.gpu": gpu.start,
    "system.toolchain": toolchain.start,
}


def merge(section: dict[str, Any], part_name: str, part: Mapping[str, Any]) -> None:
    """Put the part ``part_name`` (``system.gpu``) into ``section`` (see the docstring)."""
    label = part_name.partition(".")[2]
    for key, value in part.items():
        if key == "errors":
            section.setdefault("errors", []).extend(f"{label}: {e}" for e in value)
        else:
            section[key] = _joined(section.get(key), value)


def _joined(old: Any, new: Any) -> Any:
    """``new`` over ``old``; tables are joined key by key, at every depth.

    >>> _joined({"torch": {"version": "2.9"}, "x": 1}, {"torch": {"cuda_available": False}})
    {'torch': {'version': '2.9', 'cuda_available': False}, 'x': 1}
    """
    if isinstance(old, dict) and isinstance(new, dict):
        out = dict(old)
        for key, value in new.items():
            out[key] = _joined(old.get(key), value)
        return out
    return new


def start(ctx: CaptureContext) -> None:
    """Start the package probe and every collector's outside programs; never raises."""
    ctx.start_probe()
    for name, starter in STARTERS.items():
        try:
            starter(ctx)
        # One starter failing must not stop the others; its collector then does the work
        # itself and records any failure.
        except Exception:  # noqa: PERF203
            ctx.started.pop(name, None)
