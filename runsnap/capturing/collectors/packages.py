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
    from runsnap.snapshot.shapes import Distribution, PackagesSection


def _record(d: dict[str, Any]) -> Distribution:
    rec: Distribution = {"version": d["version"], "location": d["location"]}
    if "editable" in d:
        rec["editable"] = d["editable"]
    if "source" in d:
        rec["source"] = d["source"]
    if "direct_url" in d:
        rec["direct_url"] = d["direct_url"]
    if "shadowed_by" in d:  # its metadata folder only matters beside the one shadowing it
        rec["shadowed_by"] = d["shadowed_by"]
        rec["metadata_dir"] = d["metadata_dir"]
    return rec


def collect(ctx: CaptureContext) -> PackagesSection:
    """``{"interpreter", "interpreter_real", "reason", "python_version", "count",
    "distributions": {name: {"version", "location", ...}}, "shadowed", "errors"}``."""
    interp = ctx.interpreter
    section: PackagesSection = {
        "interpreter": interp.path,
        "interpreter_real": os.path.realpath(interp.path),
        "reason": interp.reason,
    }
    probe = ctx.probe
    if "error" in probe:
        section.update({"count": 0, "distributions": {}, "errors": [probe["error"]]})
        if "exit_status" in probe:
            section["probe_exit_status"] = probe["exit_status"]
        return section
    # the answer is checked where it arrived (runsnap.base.probeanswer): every field is there
    dists = probe["distributions"]
    section.update({
        "python_version": probe["version"],
        "implementation": probe["implementation"],
        "prefix": probe["prefix"],
        "base_prefix": probe["base_prefix"],
        "probe": probe["probe_from"],
        "sys_path": probe["sys_path"],
        "count": len(dists),
        "distributions": {d["name"]: _record(d) for d in dists},
    })
    if probe["shadowed"]:
        section["shadowed"] = [{"name": d["name"], **_record(d)} for d in probe["shadowed"]]
    section["errors"] = list(probe["errors"])
    return section
