"""The current context, captured for a snapshot's own launch so that like is compared with like.

``runsnap diff A`` answers "will my next launch match the last good one?": it captures now, in
memory, for A's command line, working directory, interpreter (when A named one with
``--python``), extra repositories and extra models, with this shell's environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from runsnap.diffing.report import Difference
from runsnap.snapshot import Snapshot

__all__ = ["RUN_SECTIONS", "capture_like", "context_args", "only_what_now_has"]

#: Sections only a run (or a running process) has: a context captured now has none of them,
#: so against now they are never differences (the outcome, ``capture --pid``'s facts of the
#: live process, run-time evidence).
RUN_SECTIONS = frozenset({"outcome", "process", "runtime"})

#: Said in the report when something was left out for that reason.
NOTE = "A's outcome and what only a run has are not compared: B has not run"


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
    from runsnap.capturing import capture

    args = context_args(snap)
    return capture(args.pop("argv"), env=env, **args)


def only_what_now_has(found: Sequence[Difference]) -> list[Difference]:
    """``found`` without the differences in sections only a run has (:data:`RUN_SECTIONS`).

    >>> [d.key for d in only_what_now_has([Difference("outcome", "exit_status", "removed", 3,
    ...     None), Difference("env", "X", "added", None, "1")])]
    ['X']
    """
    return [d for d in found if d.section not in RUN_SECTIONS]
