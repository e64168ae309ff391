"""``runsnap scrub``: today's secret rules applied again to a snapshot written before them."""

from __future__ import annotations

import os

from runsnap.redact import Redactor, load_key, load_policy
from runsnap.snapshot import load

__all__ = ["scrub_file", "scrub_snapshot"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from runsnap.snapshot import Snapshot


def scrub_snapshot(snap: Snapshot, redactor: Redactor) -> Snapshot:
    """``snap`` with every section and ``[meta]`` passed through ``redactor`` again, in the
    same two passes as a capture: every secret found first, then each replaced wherever it
    stands, whatever the order of the sections."""
    sections = redactor.find(dict(snap.sections))
    meta = redactor.find({"meta": snap.meta})["meta"]
    sections, meta = redactor.finish(sections), redactor.finish(meta, "meta")
    meta["redacted"] = sorted(set(snap.records.meta.redacted) | set(redactor.redacted))
    return snap.replace(meta=meta, sections={n: sections[n] for n in snap.sections})


def scrub_file(path: str | os.PathLike[str], redact: Sequence[str] = ()) -> int:
    """Rewrite the snapshot at ``path`` with today's rules; return how many places changed
    (values whose text is not the same as before: a value fingerprinted again to the same
    placeholder, or ``meta.redacted`` itself, is no change)."""
    snap = load(path)
    redactor = Redactor(load_key(), load_policy(None, redact))
    clean = scrub_snapshot(snap, redactor)
    before, after = snap.to_document(), clean.to_document()
    if before == after:
        return 0
    changed = _changed_places(before, after, skip=("meta", "redacted"))
    if changed:
        clean.save(os.fspath(path))
    return changed


def _changed_places(a: Any, b: Any, path: tuple[str, ...] = (),
                    skip: tuple[str, ...] = ()) -> int:
    """How many leaves differ between two plain documents (a key added or gone: one each).

    >>> _changed_places({"x": 1, "y": ["a", "b"]}, {"x": 1, "y": ["a", "c"], "z": 2})
    2
    """
    if skip and path == skip:
        return 0
    if isinstance(a, dict) and isinstance(b, dict):
        return sum(_changed_places(a.get(k), b.get(k), (*path, str(k)), skip)
                   for k in dict.fromkeys([*a, *b]))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return sum(_changed_places(x, y, (*path, str(i)), skip)
                   for i, (x, y) in enumerate(zip(a, b, strict=True)))
    return int(a != b)
