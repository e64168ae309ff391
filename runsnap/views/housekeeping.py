"""What a snapshot folder holds, and ``runsnap gc``: removing old snapshots and bisect trials.

A folder (``.runsnap`` by default) holds snapshots (``*.toml``) and the trials of each bisection
(``bisect-<id>/``, a few MB each). :func:`usage` counts both; :func:`plan` chooses what to
remove (keep the newest N, older than a time, bisect trials only) and :func:`remove` removes
it. Nothing outside the folder is touched, and only snapshots and ``bisect-*`` folders are;
a snapshot pinned with ``runsnap pin`` never is.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil

from runsnap.base.records import FrozenRecord
from runsnap.snapshot.store import list_snapshots

__all__ = ["Item", "Usage", "parse_age", "plan", "remove", "size_text", "usage"]


class Item(FrozenRecord):
    """One thing gc may remove: a snapshot file or a bisect folder."""

    path: str
    kind: str
    """``snapshot`` or ``bisect``."""
    when: str
    """Captured (snapshot) or last changed (folder), UTC ISO 8601; empty when unknown."""
    size: int
    """Bytes on disk (a folder: everything in it)."""
    pinned: bool = False
    """A snapshot pinned with ``runsnap pin``: gc never removes it."""


class Usage(FrozenRecord):
    """What a folder holds."""

    snapshots: int
    snapshot_bytes: int
    bisects: int
    bisect_bytes: int

    def line(self, folder: str) -> str:
        """``.runsnap: 12 snapshots (1.2 MB), 3 bisect folders (11.4 MB)``."""
        text = (f"{folder}: {self.snapshots} snapshot{'s' if self.snapshots != 1 else ''} "
                f"({size_text(self.snapshot_bytes)})")
        if self.bisects:
            text += (f", {self.bisects} bisect folder{'s' if self.bisects != 1 else ''} "
                     f"({size_text(self.bisect_bytes)}; runsnap gc --bisect removes them)")
        return text


def size_text(n: int) -> str:
    """Bytes as people read them (powers of 1000, as ``du --si``).

    >>> size_text(999), size_text(3_800_000), size_text(21_000_000_000)
    ('999 B', '3.8 MB', '21.0 GB')
    """
    for unit, div in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} B"


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def _tree_size(path: str) -> int:
    return sum(_size(os.path.join(root, f)) for root, _dirs, files in os.walk(path)
               for f in files)


def _mtime(path: str) -> str:
    try:
        stamp = os.stat(path).st_mtime
    except OSError:
        return ""
    return dt.datetime.fromtimestamp(stamp, dt.timezone.utc).isoformat(timespec="milliseconds")


def _bisects(folder: str) -> list[Item]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    out = []
    for n in names:
        path = os.path.join(folder, n)
        if n.startswith("bisect-") and os.path.isdir(path) and not os.path.islink(path):
            out.append(Item(path, "bisect", _mtime(path), _tree_size(path)))
    out.sort(key=lambda i: i.when, reverse=True)
    return out


def _snapshots(folder: str) -> list[Item]:
    out = []
    for e in list_snapshots(folder):
        if e.error:
            continue
        try:
            size = os.lstat(e.path).st_size
        except OSError:
            continue
        out.append(Item(e.path, "snapshot", e.captured_at, size, pinned=e.pinned))
    return out  # newest first, as ls lists them


def usage(folder: str) -> Usage:
    """What ``folder`` holds: snapshots and bisect folders, counted and sized."""
    snaps, bis = _snapshots(folder), _bisects(folder)
    return Usage(len(snaps), sum(i.size for i in snaps), len(bis), sum(i.size for i in bis))


_AGE = re.compile(r"^(\d+)\s*([smhdw])$")


def parse_age(text: str, now: dt.datetime | None = None) -> str:
    """``--older-than``: an ISO date or time (``2026-11-30``, ``2026-11-30T12:00``; UTC unless
    it says otherwise) or an age (``90m``, ``12h``, ``7d``, ``2w``) -> the UTC instant as
    runsnap writes times. ValueError when it is neither.

    >>> parse_age("2026-11-30")
    '2026-11-30T00:00:00.000+00:00'
    >>> parse_age("7d", dt.datetime(2026, 12, 8, tzinfo=dt.timezone.utc))
    '2026-12-01T00:00:00.000+00:00'
    """
    now = now or dt.datetime.now(dt.timezone.utc)
    m = _AGE.match(text.strip())
    if m:
        seconds = int(m[1]) * {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[m[2]]
        when = now - dt.timedelta(seconds=seconds)
    else:
        try:
            when = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{text!r} is neither a date (2026-11-30) nor an age (7d, 12h)"
                             ) from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
    return when.astimezone(dt.timezone.utc).isoformat(timespec="milliseconds")


def plan(folder: str, keep: int | None = None, older_than: str | None = None,
         bisect_only: bool = False) -> list[Item]:
    """What gc removes from ``folder``: of its snapshots (or, with ``bisect_only``, its bisect
    folders), those beyond the newest ``keep`` and those from before ``older_than`` (a UTC
    instant from :func:`parse_age`); with ``bisect_only`` and no other criterion, every bisect
    folder. Newest first. A pinned snapshot is never among them (it still counts as one of
    the newest ``keep``)."""
    items = _bisects(folder) if bisect_only else _snapshots(folder)
    if keep is None and older_than is None:
        return items if bisect_only else []
    out = []
    for i, item in enumerate(items):
        if item.pinned:
            continue
        beyond = keep is not None and i >= keep
        old = older_than is not None and bool(item.when) and _key(item.when) < _key(older_than)
        if beyond or old:
            out.append(item)
    return out


def _key(stamp: str) -> str:
    try:
        return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(
            dt.timezone.utc).isoformat(timespec="milliseconds")
    except ValueError:
        return stamp


def remove(items: list[Item]) -> int:
    """Remove ``items``; returns the bytes freed. A file gone meanwhile is skipped."""
    freed = 0
    for item in items:
        try:
            if item.kind == "bisect":
                shutil.rmtree(item.path)
            else:
                os.unlink(item.path)
        except FileNotFoundError:
            continue
        freed += item.size
    return freed
