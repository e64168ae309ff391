"""``[outcome]``: what happened (an effect, ranked below the causes); timings are noise."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runsnap.diffing.result import Difference
from runsnap.diffing.rules import Rules, Verdict
from runsnap.launch.outcome import without_timestamp

__all__ = ["compare", "score"]


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Exit status, signal, the first error line and the warnings of each run; timings last.
    Lines are compared without the time stamps loggers put in front of them."""
    out: list[Difference] = []
    for key in ("exit_status", "signal", "first_error"):
        x, y = a.get(key), b.get(key)
        if key == "first_error" and isinstance(x, str) and isinstance(y, str) \
                and without_timestamp(x) == without_timestamp(y):
            continue
        if x != y:
            out.append(Difference("outcome", key, "changed" if x is not None and y is not None
                                  else "added" if x is None else "removed", x, y,
                                  path=("outcome", key)))
    wa, wb = list(a.get("warnings") or []), list(b.get("warnings") or [])
    # each message once (a snapshot from before runsnap kept one line per time stamp)
    ka, kb = (list(dict.fromkeys(without_timestamp(str(w)) for w in ws)) for ws in (wa, wb))
    if set(ka) != set(kb):
        ev = tuple([f"A only: {w}" for w in ka if w not in kb]
                   + [f"B only: {w}" for w in kb if w not in ka])
        out.append(Difference("outcome", "warnings", "changed", wa, wb, evidence=ev,
                              path=("outcome", "warnings")))
    for key in ("duration_s", "started_at", "ended_at"):
        x, y = a.get(key), b.get(key)
        if x != y:
            out.append(Difference("outcome", key, "changed", x, y, path=("outcome", key)))
    return out


def score(d: Difference, rules: Rules) -> Verdict:
    """What happened (50): an effect, not a cause, so causes rank above it (the renderers show
    it in a block of its own); timings are noise, they differ on every run."""
    if d.key in ("duration_s", "started_at", "ended_at"):
        return 2, "noise: timings differ on every run", True
    return 50, "what happened differs (an effect; the causes rank above)", False
