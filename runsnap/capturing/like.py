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
    cmd: Mapping[str, Any] = snap.get("command") or {}
    cwd = cmd.get("cwd")
    args: dict[str, Any] = {
        "argv": list(cmd.get("argv") or []),
        "cwd": cwd if isinstance(cwd, str) and os.path.isdir(cwd) else None,
        "label": "now",
    }
    pk: Mapping[str, Any] = snap.get("packages") or {}
    if pk.get("reason") == "--python" and pk.get("interpreter") \
            and os.path.exists(str(pk["interpreter"])):  # gone: today's choice, a difference
        args["python"] = pk["interpreter"]
    repos = (snap.get("git") or {}).get("repos") or {}
    args["repos"] = [r["path"] for r in repos.values()
                     if "--repo" in (r.get("roles") or []) and r.get("path")]
    models = (snap.get("models") or {}).get("models") or {}
    args["models"] = [m["given"] for m in models.values()
                      if any(str(s).startswith("runsnap --model") for s in m.get("sources") or [])
                      and m.get("given")]
    return args


def capture_like(snap: Snapshot, env: Mapping[str, str] | None = None) -> Snapshot:
    """A fresh snapshot (not saved) of this context for ``snap``'s launch; ``env`` defaults to
    this process's environment."""
    args = context_args(snap)
    return capture(args.pop("argv"), env=env, **args)
