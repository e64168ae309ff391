"""The current context, captured for a snapshot's own launch so that like is compared with like.

``runsnap diff A`` answers "will my next launch match the last good one?": it captures now, in
memory, for A's command line, working directory, interpreter (when A named one with
``--python``), extra repositories and extra models, with this shell's environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from runsnap.capturing import capture
from runsnap.snapshot import Snapshot

__all__ = ["capture_like", "context_args"]

def context_args(snap: Snapshot) -> dict[str, Any]:
    """The :func:`runsnap.capture` arguments that repeat ``snap``'s capture here and now.

    >>> context_args(Snapshot(meta={}, sections={"command": {"argv": ["python", "x.py"],
    ...     "cwd": "/nonexistent"}}))["argv"]
    ['python', 'x.py']
    """
    records = snap.records
    cwd = records.command.cwd
    args: dict[str, Any] = {
        "argv": list(records.command.argv),
        "cwd": cwd if isinstance(cwd, str) and os.path.isdir(cwd) else None,
        "label": "now",
    }
    pk = records.packages
    if pk.reason == "--python" and pk.interpreter \
            and os.path.exists(pk.interpreter):  # gone: today's choice, a difference
        args["python"] = pk.interpreter
    args["repos"] = [r.path for r in records.git.repos.values() if "--repo" in r.roles and r.path]
    args["models"] = [m.given for m in records.models.models.values()
                      if any(str(s).startswith("runsnap --model") for s in m.sources) and m.given]
    return args


def capture_like(snap: Snapshot, env: Mapping[str, str] | None = None) -> Snapshot:
    """A fresh snapshot (not saved) of this context for ``snap``'s launch; ``env`` defaults to
    this process's environment."""
    args = context_args(snap)
    return capture(args.pop("argv"), env=env, **args)
