"""When a wrapped capture writes its snapshot: before the launch (so that a launch that hangs
or takes the machine down still leaves it), or, for a rank writing into a shared folder, once
the child has run a few seconds (:mod:`runsnap.capturing.firstsave`); then again, complete,
with the outcome. With ``-o -`` nothing is written to a file: the snapshot goes to standard
output once, complete, when the command ends."""

from __future__ import annotations

from runsnap.base.faults import reached
from runsnap.capturing.firstsave import DeferredFirstSave
from runsnap.capturing.output import save_first
from runsnap.errors import describe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from runsnap.capturing.output import Target
    from runsnap.snapshot import Snapshot

__all__ = ["SnapshotWrites"]


class SnapshotWrites:
    """The writes of one wrapped capture to ``target`` (``None``: standard output);
    ``on_saved`` is told of the first snapshot saved. ``deferred``: the first save may wait
    for the child (a launch that runs on: not ``--exec``), which it does in a shared folder."""

    def __init__(self, target: Target | None, on_saved: Callable[[Snapshot], None] | None,
                 deferred: bool) -> None:
        self._target, self._on_saved = target, on_saved
        self._defer = deferred and target is not None and target.shared
        self._first: DeferredFirstSave | None = None
        self._path: str | None = None

    def before_launch(self, snap: Snapshot) -> Snapshot:
        """``snap`` saved before the launch (or kept for the deferred save)."""
        if self._defer:
            self._first = DeferredFirstSave(snap, self._target, self._on_saved)  # type: ignore[arg-type]
            return snap
        if self._target is not None:
            snap = save_first(snap, self._target)
            self._path = snap.path_text
        reached("capture.saved")
        if self._on_saved is not None:
            self._on_saved(snap)
        return snap

    def started(self) -> None:
        """The child runs: the deferred save's delay starts."""
        if self._first is not None:
            self._first.start()

    def final(self, snap: Snapshot) -> Snapshot:
        """The complete snapshot saved over the first (or as the first). Raises
        :class:`~runsnap.errors.CaptureError`."""
        if self._target is None:
            return snap
        if self._first is not None:
            return self._first.final(snap)
        return snap.save(self._path or self._target.path, sweep=not self._target.shared)

    def not_written(self, exc: Exception, before: Snapshot) -> tuple[Snapshot, str]:
        """What stays on disk when writing the outcome failed (``before``: the snapshot saved
        before the launch), and the line that says so."""
        if self._first is None:
            return before, f"the outcome was not written: {describe(exc)}"
        self._first.save_now()  # the launch's record, unless the final save claimed the name
        kept = self._first.snapshot  # the deferred save's, or none on disk
        what = "the outcome" if kept.path_text else "the snapshot"
        return kept, f"{what} was not written: {describe(exc)}"

    def ended(self) -> list[str]:
        """After the launch, also when runsnap failed before the outcome: a deferred save not
        made yet is made (the launch's record); what went wrong with it."""
        if self._first is None:
            return []
        self._first.save_now()
        return self._first.errors
