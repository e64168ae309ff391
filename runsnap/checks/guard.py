"""The pre-launch guard: check's rules on what a capture collected, before the child starts.

``runsnap capture`` runs :func:`guard` on the snapshot it is about to save, prints each finding
on one line to stderr, and with ``--strict`` (or ``[tool.runsnap.capture] strict = true``)
refuses to launch when one weighs :data:`STRICT_WEIGHT` or more: a launch that would fail its
model load ten minutes in fails in a second instead.

Only rules that read the collected sections run here (``[env]``, ``[command]``, ``[models]``):
no run-time evidence exists yet, and the installed packages are never scanned on the capture
path (who-reads takes seconds), so a variable is judged against runsnap's lists only.
"""

from __future__ import annotations

from runsnap.base.terminal import clean
from runsnap.checks.config import alloc_conf_keys, context_length, job_transports
from runsnap.checks.finding import Finding
from runsnap.checks.rules import draft_target_disagreement, misspelled_variables, rejected_values

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from runsnap.snapshot import Snapshot

__all__ = ["GUARD_CHECKS", "STRICT_WEIGHT", "guard", "one_line"]

#: ``--strict`` refuses to launch on a finding of this weight or more.
STRICT_WEIGHT = 90

#: The rules the guard runs (what a capture has collected before the launch suffices).
GUARD_CHECKS: tuple[Callable[[Snapshot], list[Finding]], ...] = (
    misspelled_variables, rejected_values, draft_target_disagreement, alloc_conf_keys,
    context_length, job_transports,
)


def guard(snap: Snapshot) -> list[Finding]:
    """The findings of :data:`GUARD_CHECKS` on a snapshot not yet launched, heaviest first."""
    found: list[Finding] = []
    for rule in GUARD_CHECKS:
        found += rule(snap)
    found.sort(key=lambda f: -f.score)
    return found


def one_line(f: Finding) -> str:
    """A finding as the one stderr line the guard prints (terminal-safe).

    >>> one_line(Finding("misspelled-variable", 90, "NCCL_P2P_DISABEL is set\\x1b[2J", ("env",)))
    'runsnap: check [90] misspelled-variable: NCCL_P2P_DISABEL is set\\\\x1b[2J'
    """

    return clean(f"runsnap: check [{f.score}] {f.kind}: {f.message}").replace("\n", " ")
