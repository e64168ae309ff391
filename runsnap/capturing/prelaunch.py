"""The pre-launch guard as a capture runs it: check's rules on what was collected, each finding
told on stderr, and ``--strict`` refusing the launch (:mod:`runsnap.checks.guard` has the rules).

A module of its own so that ``runsnap capture --no-run -- COMMAND``, which runs the guard but
launches nothing, does not import the launch machinery of :mod:`runsnap.capturing.wrapped`
(its first save's thread, the snapshot writes): a measurable share of such a capture's CPU
(benchmarks/RESULTS.md, "Capture cost, fifth round").
"""

from __future__ import annotations

import sys

from runsnap.errors import CaptureError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["prelaunch_guard"]


def prelaunch_guard(snap: Snapshot, strict: bool) -> None:
    """check's rules on what was collected, before the launch: each finding on one line to
    stderr; with ``strict``, no launch when one weighs ``STRICT_WEIGHT`` or more (exit 2)."""
    # deferred: runsnap.checks.guard, ~102 ms measured under load; only prelaunch_guard() needs it
    from runsnap.checks.guard import STRICT_WEIGHT, guard, one_line

    findings = guard(snap)
    if findings:
        # deferred: runsnap.base.terminal, ~8 ms measured under load; only prelaunch_guard() needs it
        from runsnap.base.terminal import say, width, wrap

        cols = width(sys.stderr)  # a finding is a sentence: wrapped to the terminal, not cut
        say("".join("\n".join(wrap(one_line(f), cols, "  ")) + "\n" for f in findings))
    heavy = [f for f in findings if f.score >= STRICT_WEIGHT]
    if strict and heavy:
        raise CaptureError(f"not launched (--strict): {len(heavy)} finding"
                           f"{'s' if len(heavy) != 1 else ''} of weight {STRICT_WEIGHT} or more "
                           "above")
