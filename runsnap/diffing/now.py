"""What is left out when B is the current context, captured now (``runsnap diff A``): what only
a run has, since B has not run."""

from __future__ import annotations

from collections.abc import Sequence

from runsnap.diffing.result import Difference

__all__ = ["NOTE", "RUN_SECTIONS", "only_what_now_has"]

#: Sections only a run (or a running process) has: a context captured now has none of them,
#: so against now they are never differences (the outcome, ``capture --pid``'s facts of the
#: live process, run-time evidence).
RUN_SECTIONS = frozenset({"outcome", "process", "runtime"})

#: Said in the report when something was left out for that reason.
NOTE = "A's outcome and what only a run has are not compared: B has not run"



def only_what_now_has(found: Sequence[Difference]) -> list[Difference]:
    """``found`` without the differences in sections only a run has (:data:`RUN_SECTIONS`).

    >>> [d.key for d in only_what_now_has([Difference("outcome", "exit_status", "removed", 3,
    ...     None), Difference("env", "X", "added", None, "1")])]
    ['X']
    """
    return [d for d in found if d.section not in RUN_SECTIONS]
