"""``runsnap scrub``: today's secret rules applied again to a snapshot written before them."""

from __future__ import annotations

import os

from runsnap.redact import Redactor, load_key, load_policy
from runsnap.snapshot import load

__all__ = ["scrub_file", "scrub_snapshot"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from runsnap.snapshot import Snapshot


def scrub_snapshot(snap: Snapshot, redactor: Redactor) -> Snapshot:
    """``snap`` with every section and ``[meta]`` passed through ``redactor`` again.

    ``[env]`` and ``[command]`` go first, so that a value redacted there is also hidden where
    it reappears in the other sections (an output line, a diff)."""
    order = sorted(snap.sections, key=lambda n: (n not in ("env", "command"), n))
    sections = {name: redactor.sections({name: snap.sections[name]})[name] for name in order}
    meta = redactor.sections({"meta": snap.meta})["meta"]
    meta["redacted"] = sorted(set(meta.get("redacted") or ()) | set(redactor.redacted))
    return snap.replace(meta=meta, sections={n: sections[n] for n in snap.sections})


def scrub_file(path: str | os.PathLike[str], redact: Sequence[str] = ()) -> int:
    """Rewrite the snapshot at ``path`` with today's rules; return how many places changed."""
    snap = load(path)
    redactor = Redactor(load_key(), load_policy(None, redact))
    clean = scrub_snapshot(snap, redactor)
    changed = len(set(redactor.redacted))
    if clean.to_document() != snap.to_document():
        clean.save(os.fspath(path))
    return changed
