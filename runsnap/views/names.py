"""Every name a snapshot goes by, in one place: a file, ``@N`` / ``@LABEL`` in the snapshot
folder (:mod:`runsnap.snapshot.store`), or a tracked run (``mlflow:RUN_ID``,
``wandb:ENTITY/PROJECT/RUN_ID``, ``wandb:RUN_ID``, ``wandb:FOLDER``: :mod:`runsnap.track`,
fetched once into runsnap's cache). Every command that takes a snapshot resolves it here; the
tracker's module is imported only when such a reference is used.

    >>> resolve("runs/a.toml")
    'runs/a.toml'
"""

from __future__ import annotations

import os
import shlex

from runsnap.errors import RunsnapError
from runsnap.snapshot import load as load_path
from runsnap.snapshot.store import PINNED, Entry, default_dir, is_reference, list_snapshots
from runsnap.snapshot.store import resolve as in_folder
from runsnap.track import fetch, tracked_runs
from runsnap.track import is_reference as is_tracked

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["load", "references", "resolve", "tracked_entries"]

#: The most ``@N`` positions :func:`references` offers (a folder of thousands: its newest).
POSITIONS = 20


def resolve(ref: str, folder: str | os.PathLike[str] | None = None) -> str:
    """The file ``ref`` names: a path as it is, ``@N`` / ``@label`` in ``folder``, or a tracked
    run's snapshot fetched into the cache (a file of that name wins, as for ``@N``).

    Raises :class:`~runsnap.errors.UsageError` when the reference names no snapshot and
    :class:`~runsnap.errors.TrackerError` when the tracker cannot give it."""
    if is_tracked(ref) and not os.path.exists(ref):
        return fetch(ref)
    return in_folder(ref, folder)


def load(ref: str | os.PathLike[str], folder: str | os.PathLike[str] | None = None) -> Snapshot:
    """The snapshot ``ref`` names (see :func:`resolve`); :class:`~runsnap.errors.SnapshotError`
    when it is not one."""

    return load_path(resolve(ref, folder) if isinstance(ref, str) else ref)


def tracked_entries(tracker: str, experiment: str = "") -> list[Entry]:
    """The runs of an experiment tracker holding a snapshot, as
    :func:`runsnap.snapshot.store.list_snapshots` lists a folder's (``ref``: ``mlflow:RUN_ID``
    ...; ``path``: the run's page or folder)."""
    entries = []
    for run in tracked_runs(tracker, experiment):
        try:
            command = tuple(shlex.split(run.command))
        except ValueError:  # cut at the tag's length inside a quote
            command = (run.command,)
        entries.append(Entry(ref=run.ref, path=run.where, captured_at=run.captured_at,
                             label=run.label, command=command, exit_status=run.exit_status,
                             host=run.host, id=run.id))
    return entries


def references(folder: str | None, start: str = "") -> list[tuple[str, str]]:
    """The ``@`` names of ``folder``'s snapshots that begin with ``start``, each with a few
    words on it (shell completion): ``@1``, ``@2`` ... with the run's label, time and command,
    then ``@LABEL`` and ``@pinned``. None when the folder does not exist (yet).

    >>> references("/nonexistent-folder")
    []
    """
    try:
        entries = [e for e in list_snapshots(folder or default_dir()) if not e.error]
    except RunsnapError:
        return []
    out = []
    for e in entries[:POSITIONS]:
        command = shlex.join(e.command)[:60] if e.command else ""
        out.append((e.ref, " ".join(x for x in (e.label, e.captured_at[:19], command) if x)))
    seen = set()
    for e in entries:
        if is_reference(f"@{e.label}") and e.label not in seen and not e.label.isdigit():
            seen.add(e.label)
            out.append((f"@{e.label}", f"newest labelled {e.label}"))
    if any(e.pinned for e in entries):
        out.append((f"@{PINNED}", "newest pinned"))
    return [(ref, words) for ref, words in out if ref.startswith(start)]
