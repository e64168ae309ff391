"""Named fault points: where a test makes runsnap fail on purpose, instead of guessing a delay.

runsnap calls :func:`reached` at the points where an interruption matters (a half-written
temporary file, a file renamed but its folder not yet synced, a snapshot saved before the
child starts, ...). Normally that is one dictionary look-up. With
``RUNSNAP_TEST_FAULT=SPEC`` in runsnap's own environment, the point the spec names fails:

``NAME``
    runsnap kills itself with SIGKILL the first time it reaches ``NAME`` (what a power cut,
    the OOM killer or ``kill -9`` does there);
``NAME#N``
    the same, the N-th time (``snapshot.renamed#2``: the rewrite with the outcome, not the first
    save);
``NAME=ENOSPC`` (any errno name), also with ``#N``
    :class:`OSError` with that errno is raised there instead (a full disk, an I/O error).

Several specs are separated by commas. The points are listed in :data:`POINTS`, so a test
can ask for every one of them; a spec naming no point is an error (a usage error, exit 2),
never silently inert. With ``RUNSNAP_TEST_FAULT_LOG=FILE``, every point reached is appended to
``FILE`` as ``NAME#N``, one a line: a test learns which points a kind of capture passes, and
how often, before it fails each of them.
"""

from __future__ import annotations

import errno
import os

from runsnap.errors import UsageError

__all__ = ["ENV", "LOG_ENV", "POINTS", "reached"]

#: The variable that arms the fault points.
ENV = "RUNSNAP_TEST_FAULT"

#: The variable naming a file that records each point reached (``NAME#N`` lines).
LOG_ENV = "RUNSNAP_TEST_FAULT_LOG"

#: Every fault point, in the order a wrapped capture reaches them, with what holds there.
POINTS = {
    "capture.context": "the capture context is built; nothing is written yet",
    "snapshot.partial": "a temporary file holds half the snapshot; the target is untouched",
    "snapshot.written": "the temporary file is complete and synced; the target is untouched",
    "snapshot.renamed": "the new snapshot is in place; its folder is not synced yet",
    "snapshot.claimed": "a new snapshot's name is claimed, its whole content in it (first save)",
    "capture.saved": "the snapshot is saved; the child has not started",
    "capture.ended": "the child has ended; its outcome is not written yet",
    "snapshot.extending": "a rank's snapshot in a shared folder is half rewritten in place with "
                          "its outcome (runsnap.base.inplace): its end marker is gone",
}

_counts: dict[str, int] = {}


def reached(name: str) -> None:
    """Fail here if ``RUNSNAP_TEST_FAULT`` names this point (see the module docstring)."""
    spec = os.environ.get(ENV)
    if spec or os.environ.get(LOG_ENV):
        _trip(name, spec or "")


def _trip(name: str, spec: str) -> None:

    count = _counts[name] = _counts.get(name, 0) + 1
    log = os.environ.get(LOG_ENV)
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{name}#{count}\n")
    for one in filter(None, (one.strip() for one in spec.split(","))):
        where, _, action = one.partition("=")
        point, _, nth = where.partition("#")
        if point not in POINTS or not (nth.isdigit() or not nth):
            raise UsageError(f"{ENV}: no fault point {where!r} (there are: {', '.join(POINTS)}, "
                             "each with an optional #N)")
        if point != name or count != (int(nth) if nth else 1):
            continue
        if not action or action == "kill":
            # deferred: signal, ~17 ms measured under load; only _trip() needs it
            import signal

            os.kill(os.getpid(), signal.SIGKILL)

        code = getattr(errno, action, None)
        if not isinstance(code, int):
            raise UsageError(f"{ENV}: {action!r} is neither 'kill' nor an errno name")
        raise OSError(code, f"{os.strerror(code)} (fault injected at {name})")
