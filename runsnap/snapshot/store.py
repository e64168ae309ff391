"""The snapshots of a folder: listed newest first, and named by position or label.

``runsnap ls`` lists them; wherever a snapshot path is taken, ``@1`` is the newest snapshot of
the folder, ``@2`` the one before, and ``@good`` the newest labelled ``good`` (or, failing
that, the newest whose file name is ``good.toml`` or ends in ``-good.toml``); ``@pinned`` is
the newest snapshot pinned with ``runsnap pin`` (:mod:`runsnap.snapshot.pins`). A file that
really is named ``@1`` wins over the reference.

    >>> is_reference("@1"), is_reference("@good"), is_reference("runs/@1.toml")
    (True, True, False)
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from runsnap.base.jsonform import json_form
from runsnap.base.options import DEFAULT_DIR
from runsnap.base.records import FrozenRecord
from runsnap.errors import SnapshotError, UsageError
from runsnap.snapshot import load as load_path
from runsnap.snapshot.folders import snapshot_paths
from runsnap.snapshot.pins import pinned_names

if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = [
    "bisect_folder_state",
    "claim_bisect_folder",
    "release_bisect_folder",
    "DEFAULT_DIR",
    "PINNED",
    "Entry",
    "default_dir",
    "is_bisect_folder",
    "is_reference",
    "list_snapshots",
    "load",
    "newest",
    "resolve",
]


#: ``@pinned``: the newest pinned snapshot (a label ``pinned`` is reached when none is pinned).
PINNED = "pinned"

_REF = re.compile(r"^@(?:[1-9][0-9]*|[A-Za-z0-9._-]+)$")

# The folder of one bisection's trials, in the snapshot folder: ``bisect-<UTC time>-<4 hex>``.
_BISECT = re.compile(r"bisect-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{4}")


#: The file a running bisection keeps in its folder: its pid and the process's start time
#: (``/proc``), so that ``gc`` leaves a folder in use alone (a reused pid is not taken for it).
BISECT_RUNNING = "running.pid"
#: The file a finished bisection leaves in its folder.
BISECT_RESULT = "bisect.json"


def _started(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot, ``/proc/PID/stat`` field 22);
    empty when unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return ""


def claim_bisect_folder(folder: str) -> None:
    """Mark ``folder`` as used by this process until :func:`release_bisect_folder`."""
    try:
        with open(os.path.join(folder, BISECT_RUNNING), "w", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()} {_started(os.getpid())}\n")
    except OSError:
        pass


def release_bisect_folder(folder: str) -> None:
    """The bisection in ``folder`` has ended (its result is written)."""
    try:
        os.unlink(os.path.join(folder, BISECT_RUNNING))
    except OSError:
        pass


def bisect_folder_state(path: str) -> str | None:
    """``running`` (a live bisection uses it), ``done`` (its result is written), ``left`` (its
    bisection died), or None: not a folder runsnap made (a name ``bisect-<time>-<hex>`` and
    one of those two files), which ``gc`` never touches."""
    if not _BISECT.fullmatch(os.path.basename(path)):
        return None
    try:
        with open(os.path.join(path, BISECT_RUNNING), encoding="utf-8") as fh:
            pid_text, _, started = fh.read().strip().partition(" ")
    except OSError:
        return "done" if os.path.isfile(os.path.join(path, BISECT_RESULT)) else None
    try:
        pid = int(pid_text)
    except ValueError:
        return "left"
    alive = os.path.exists(f"/proc/{pid}") if os.path.isdir("/proc") else True
    return "running" if alive and (not started or _started(pid) == started) else "left"


def bisect_folder_name(when: str, tag: str) -> str:
    """The name of a bisection's folder of trials, from its start (``%Y%m%dT%H%M%SZ``, UTC)
    and 4 hex digits.

    >>> bisect_folder_name("20261202T040000Z", "0a1b")
    'bisect-20261202T040000Z-0a1b'
    """
    name = f"bisect-{when}-{tag}"
    if not _BISECT.fullmatch(name):
        raise ValueError(f"not a bisect folder name: {name!r}")
    return name


def is_bisect_folder(name: str) -> bool:
    """Whether a folder's name is one :func:`bisect_folder_name` makes: its snapshots are a
    bisection's trials, not ranks of a job, and a folder's diff leaves them out.

    >>> is_bisect_folder("bisect-20261202T040000Z-0a1b"), is_bisect_folder("bisect-logs")
    (True, False)
    """
    return _BISECT.fullmatch(name) is not None


def default_dir() -> str:
    """``RUNSNAP_DIR``, else ``.runsnap`` (in the current directory)."""
    return os.environ.get("RUNSNAP_DIR") or DEFAULT_DIR


def is_reference(text: str) -> bool:
    """Whether ``text`` names a snapshot by position (``@1``) or label (``@good``)."""
    return bool(_REF.match(text))


class Entry(FrozenRecord):
    """One snapshot of a folder, as ``ls`` shows it."""

    ref: str
    """``@N``: its position, newest first."""

    path: str
    """The file."""

    captured_at: str
    """When it was captured (UTC, ISO 8601); empty when unreadable."""

    label: str
    """The run's label."""

    command: tuple[str, ...]
    """The command line (empty: the current context, no command)."""

    exit_status: int | None
    """How the command ended; None when it did not run (or has not ended)."""

    host: str
    """Where it was captured."""

    id: str
    """The snapshot's id."""

    error: str = ""
    """Why the file could not be read as a snapshot (then only ``path`` is known)."""

    pinned: bool = False
    """Pinned with ``runsnap pin``: ``gc`` keeps it, ``@pinned`` names the newest such."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``runsnap ls --format json``)."""
        return json_form(self)


def _read(path: str) -> Entry:
    try:
        snap = load_path(path)
    except SnapshotError as exc:
        return Entry("", path, "", "", (), None, "", "", error=str(exc))
    rec = snap.records
    return Entry(
        ref="", path=path, captured_at=rec.meta.captured_at or "", label=snap.label,
        command=tuple(str(a) for a in rec.command.argv), exit_status=rec.outcome.exit_status,
        host=rec.meta.host or "", id=snap.id,
    )


def list_snapshots(folder: str | os.PathLike[str] | None = None) -> list[Entry]:
    """The snapshots in ``folder`` (default :func:`default_dir`), newest first.

    Newest by capture time (a run that ends late does not move ahead of one started after
    it), then by the file's modification time. Files that are not snapshots are listed last
    with their ``error``. Raises :class:`~runsnap.errors.UsageError` when the folder is
    missing.
    """
    base = os.fspath(folder) if folder is not None else default_dir()
    try:
        paths = snapshot_paths(base)
    except FileNotFoundError:
        raise UsageError(f"{base}: no such directory (capture a run first: runsnap capture "
                         f"-- COMMAND)") from None
    except NotADirectoryError:
        raise UsageError(f"{base}: not a directory") from None
    except OSError as exc:
        raise UsageError(f"{base}: {exc.strerror or exc}") from None
    entries = [_read(p) for p in paths if os.path.isfile(p)]

    def mtime(e: Entry) -> int:
        try:
            return os.stat(e.path).st_mtime_ns
        except OSError:
            return 0

    entries.sort(key=lambda e: (not e.error, _utc_key(e.captured_at), mtime(e), e.path),
                 reverse=True)
    pins = set(pinned_names(base))
    return [e.replace(ref=f"@{i}", pinned=os.path.basename(e.path) in pins)
            for i, e in enumerate(entries, 1)]


def _utc_key(stamp: str) -> str:
    """A sortable form of an ISO 8601 time in UTC as runsnap writes it (``+00:00``)."""
    return stamp.replace("Z", "+00:00")


def resolve(ref: str, folder: str | os.PathLike[str] | None = None) -> str:
    """The file ``ref`` names: a path as it is, or ``@N`` / ``@label`` in ``folder``.

    Raises :class:`~runsnap.errors.UsageError` when the reference names no snapshot.
    """
    if not is_reference(ref) or os.path.exists(ref):
        return ref
    entries = [e for e in list_snapshots(folder) if not e.error]
    base = os.fspath(folder) if folder is not None else default_dir()
    key = ref[1:]
    if key.isdigit():
        n = int(key)
        if n < 1:
            raise UsageError(f"{ref}: positions start at @1 (the newest)")
        if n > len(entries):
            raise UsageError(f"{ref}: {base} holds {len(entries)} snapshot"
                             f"{'s' if len(entries) != 1 else ''} (runsnap ls)")
        return entries[n - 1].path
    if key == PINNED:
        for e in entries:
            if e.pinned:
                return e.path
    for e in entries:
        if e.label == key:
            return e.path
    for e in entries:
        name = os.path.basename(e.path)[: -len(".toml")]
        if name == key or name.endswith(f"-{key}"):
            return e.path
    if key == PINNED:
        raise UsageError(f"{ref}: no snapshot is pinned in {base} (runsnap pin @N)")
    raise UsageError(f"{ref}: no snapshot labelled {key!r} in {base} (runsnap ls)")


def load(ref: str | os.PathLike[str], folder: str | os.PathLike[str] | None = None) -> Snapshot:
    """The snapshot at a path, or named ``@N`` / ``@label`` in ``folder`` (default
    :func:`default_dir`); :class:`~runsnap.errors.SnapshotError` when it is not one."""
    return load_path(resolve(ref, folder) if isinstance(ref, str) else ref)


def newest(folder: str | os.PathLike[str] | None = None, count: int = 2) -> list[str]:
    """The ``count`` newest snapshots of ``folder``, oldest of them first (so that
    ``diff(*newest())`` compares the run before the last with the last)."""
    entries = [e for e in list_snapshots(folder) if not e.error]
    if len(entries) < count:
        base = os.fspath(folder) if folder is not None else default_dir()
        raise UsageError(f"{base}: {len(entries)} snapshot{'s' if len(entries) != 1 else ''} "
                         f"found, {count} needed to compare")
    return [e.path for e in reversed(entries[:count])]
