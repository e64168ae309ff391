"""``[packages]``: every distribution installed for the interpreter the child will run.

The listing comes from the stdlib-only probe (``runsnap/probe/packages.py``) run inside that
interpreter with the child's environment, never from runsnap's own environment: runsnap is
often installed with pipx, and the packages that matter are the child's.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from runsnap.capturing.context import CaptureContext


def _record(d: dict[str, Any]) -> dict[str, Any]:
    rec: dict[str, Any] = {"version": d.get("version", ""), "location": d.get("location", "")}
    for key in ("editable", "source", "direct_url", "shadowed_by", "metadata_dir"):
        if key in d and (key != "metadata_dir" or "shadowed_by" in d):
            rec[key] = d[key]
    return rec


def collect(ctx: CaptureContext) -> dict[str, Any]:
    """``{"interpreter", "interpreter_real", "reason", "python_version", "count",
    "distributions": {name: {"version", "location", ...}}, "shadowed", "errors"}``."""
    interp = ctx.interpreter
    section: dict[str, Any] = {
        "interpreter": interp.path,
        "interpreter_real": os.path.realpath(interp.path),
        "reason": interp.reason,
    }
    probe = ctx.probe
    if "error" in probe:
        section.update(count=0, distributions={}, errors=[probe["error"]])
        if "exit_status" in probe:
            section["probe_exit_status"] = probe["exit_status"]
        return section
    dists = probe.get("distributions", [])
    section.update(
        python_version=probe.get("version", ""),
        implementation=probe.get("implementation", ""),
        prefix=probe.get("prefix", ""),
        base_prefix=probe.get("base_prefix", ""),
        probe=probe.get("probe_from", "run"),
        sys_path=probe.get("sys_path", []),
        count=len(dists),
        distributions={d["name"]: _record(d) for d in dists},
    )
    shadowed = probe.get("shadowed", [])
    if shadowed:
        section["shadowed"] = [{"name": d["name"], **_record(d)} for d in shadowed]
    section["errors"] = list(probe.get("errors", []))
    return section
