"""``[system.limits]``: the resource limits (``ulimit``) the child inherits from runsnap.

Open files (``nofile``), locked memory (``memlock``: RDMA and NCCL over InfiniBand register
memory and fail with a small limit), stack, processes (``nproc``), core files and address
space, as ``{"soft", "hard"}`` pairs; no limit is ``"unlimited"``.
"""

from __future__ import annotations

import resource

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from runsnap.capturing.context import CaptureContext

__all__ = ["LIMITS", "collect", "read_limits"]

#: Name in the snapshot -> the ``resource.RLIMIT_*`` name.
LIMITS = {"nofile": "RLIMIT_NOFILE", "memlock": "RLIMIT_MEMLOCK", "stack": "RLIMIT_STACK",
          "nproc": "RLIMIT_NPROC", "core": "RLIMIT_CORE", "as": "RLIMIT_AS"}


def read_limits() -> dict[str, Any]:
    """``{"limits": {name: {"soft", "hard"}}, "errors": [...]}`` for this process."""
    limits: dict[str, Any] = {}
    errors: list[str] = []
    for name, attr in LIMITS.items():
        which = getattr(resource, attr, None)
        if which is None:
            continue
        try:
            soft, hard = resource.getrlimit(which)
        except (OSError, ValueError) as exc:
            errors.append(f"getrlimit({attr}): {exc}")
            continue
        limits[name] = {"soft": _value(soft, resource.RLIM_INFINITY),
                        "hard": _value(hard, resource.RLIM_INFINITY)}
    return {"limits": limits, "errors": errors}


def _value(value: int, infinity: int) -> int | str:
    return "unlimited" if value == infinity or value < 0 else value


def collect(ctx: CaptureContext) -> dict[str, Any]:
    """The limits part of ``[system]``."""
    return read_limits()
