"""The first save of a rank's capture into a shared folder, deferred past the job's start.

A wrapped capture saves its snapshot before the child starts (a launch that takes the machine
down still leaves it), then rewrites it with ``[outcome]``: two files created and renamed into
the folder. For one rank of a job among thousands writing into one folder (a template name, a
launcher's ranks: :attr:`runsnap.capturing.output.Target.shared`) that is twice the metadata
load, all of the first half at the job's start, when every rank starts at once. So there the
first save waits: the child is launched, and the snapshot as it was before the launch is saved
only if the child still runs :data:`FIRST_SAVE_DELAY` seconds later. A child that ends first
gets one write, the final snapshot, its name claimed exclusively as the first save does; a
longer one gets two, the first of them out of the job's start, and the second written into
the same file from its end marker on (:mod:`runsnap.base.inplace`): one file created and
linked per rank either way.

One lock and one state make the timer and the outcome write exclusive: whichever takes the
lock first decides, so the final snapshot is claimed once, or replaces the deferred one.
"""

from __future__ import annotations

import os
import threading

from runsnap.base.faults import reached
from runsnap.base.inplace import extend_in_place
from runsnap.capturing.output import save_first
from runsnap.errors import CaptureError, UsageError, describe
from runsnap.snapshot import dumps

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from runsnap.capturing.output import Target
    from runsnap.snapshot import Snapshot

__all__ = ["DELAY_ENV", "FIRST_SAVE_DELAY", "DeferredFirstSave", "first_save_delay"]

#: Seconds a child of a shared-folder capture runs before its pre-launch snapshot is saved.
#: Long enough to cover what ends early (a failed import, a wrong flag, a short tool: an
#: interpreter start and ``import torch`` take 1-3 s, more while a whole job imports from one
#: shared file system) and to leave the job's start, where every rank launches within a second
#: or two of the others; short enough that a hang or a machine taken down later still finds the
#: snapshot on disk. What it costs: a node lost within these seconds leaves no snapshot of
#: that rank (docs/launchers.md).
FIRST_SAVE_DELAY = 5.0

#: A test hook, as ``RUNSNAP_TEST_FAULT`` is (runsnap.base.faults): seconds that replace
#: :data:`FIRST_SAVE_DELAY` in runsnap's own environment, so the suite's long commands need not
#: outlive the full delay. Not a user's setting: docs/development.md lists it with the faults.
DELAY_ENV = "RUNSNAP_TEST_FIRST_SAVE_DELAY"


def first_save_delay() -> float:
    """:data:`FIRST_SAVE_DELAY`, or the seconds :data:`DELAY_ENV` says (a number, 0 or more;
    anything else is a usage error, never silently the default)."""
    text = os.environ.get(DELAY_ENV)
    if not text:
        return FIRST_SAVE_DELAY
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise UsageError(f"{DELAY_ENV}: {text!r} is not a number of seconds (0 or more)")
    return seconds

_PENDING, _SAVED, _FAILED, _FINAL = "pending", "saved", "failed", "final"


class DeferredFirstSave:
    """The first save of ``snapshot`` to ``target``, made by :meth:`start`'s timer when the
    child outlives ``delay`` (by default :func:`first_save_delay`), or by :meth:`final` with
    the outcome, never by both; ``on_saved`` gets the first snapshot saved, whichever it is."""

    def __init__(self, snapshot: Snapshot, target: Target,
                 on_saved: Callable[[Snapshot], None] | None = None,
                 delay: float | None = None) -> None:
        self.snapshot = snapshot
        """The snapshot as last saved (its ``path`` set), or the pre-launch one, unsaved."""
        self.errors: list[str] = []
        """The deferred save's failure, if it failed (the launch went on)."""
        self._target, self._on_saved = target, on_saved
        self._delay = first_save_delay() if delay is None else delay
        self._lock = threading.Lock()
        self._state = _PENDING
        self._timer: threading.Timer | None = None

    def start(self) -> None:
        """Arm the timer (once the child runs): the pre-launch snapshot is saved ``delay``
        seconds from now unless :meth:`final` came first."""
        timer = threading.Timer(self._delay, self.save_now)
        timer.daemon = True  # never keeps runsnap alive
        self._timer = timer
        timer.start()

    def save_now(self) -> None:
        """Save the pre-launch snapshot if nothing was saved yet (the timer; and runsnap's
        own failure before the outcome, so the launch still leaves its record). A failure is
        kept in :attr:`errors`; :meth:`final` then claims the name itself."""
        with self._lock:
            if self._state != _PENDING:
                return
            try:
                self.snapshot = save_first(self.snapshot, self._target)
            except CaptureError as exc:
                self._state = _FAILED
                self.errors.append(f"the snapshot was not written while the command ran: {exc}")
                return
            self._state = _SAVED
            try:  # on the timer's thread too: what fails here is told, never a thread's traceback
                reached("capture.saved")
                if self._on_saved is not None:
                    self._on_saved(self.snapshot)
            except Exception as exc:  # noqa: BLE001 - saved; the command runs on regardless
                self.errors.append(f"after the snapshot was saved: {describe(exc)}")

    def final(self, snapshot: Snapshot) -> Snapshot:
        """Save the final ``snapshot``: over the deferred one if it was saved, else as the
        first save (one file created, ``on_saved`` told). Raises
        :class:`~runsnap.errors.CaptureError`."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            saved = self.snapshot.path_text
            if self._state == _SAVED and saved is not None:
                self.snapshot = _extend(snapshot, saved)
                return self.snapshot
            self._state = _FINAL
            self.snapshot = save_first(snapshot, self._target)
            if self._on_saved is not None:
                self._on_saved(self.snapshot)
            return self.snapshot


def _extend(snapshot: Snapshot, path: str) -> Snapshot:
    """``snapshot`` saved over the pre-launch one at ``path``: in place, from the end marker
    on, when the file still holds that snapshot (no file created, no rename:
    :mod:`runsnap.base.inplace`), else replaced. Raises :class:`CaptureError`."""
    try:
        grown = extend_in_place(path, dumps(snapshot).encode("utf-8"), points="snapshot")
    except OSError as exc:
        raise CaptureError(f"cannot write {path}: {exc.strerror or exc}") from None
    if grown:
        return snapshot.replace(path=path)
    return snapshot.save(path, sweep=False)
