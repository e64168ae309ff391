"""A file one run alone found: opened by that run alone, under its own git tree, where the
other run could not have found it (written after it started, or in another checkout of the same
repository), while the other ran to its end. What that run found is an input, not only where it
went (:mod:`runsnap.diffing.datafiles` takes it as ``read`` evidence)."""

from __future__ import annotations

import os
from datetime import datetime

from runsnap.diffing.result import Difference

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["found_alone"]


def found_alone(d: Difference, a: Snapshot, b: Snapshot) -> str | None:
    """The sentence when ``d`` is a file one run alone opened for reading, under a git tree of
    that run, last modified after the other run had started (``[runtime.data_files]
    modified``: written between the runs, or while the other ran), while the other run ran to
    its end (exit 0: it had every chance to open it too): what that run found in its tree and
    the other could not (``configs/local.yaml`` a notebook left, git-ignored), an input, not
    only where the run went. So too when the other run ran in another checkout of the same
    repository and ran to its end without opening the file of that name in its own tree
    (``checkpoints/last.ckpt`` an old experiment left in one checkout, which the fit resumed
    from), however old the file. A file the other run wrote is its output; a file some differing
    input's value names is that input's doing (:func:`by_named_file` groups it there)."""
    if d.path[:2] != ("runtime", "data_files") or len(d.path) < 3 or d.change not in (
            "added", "removed"):
        return None
    mine, other, side = (b, a, "B") if d.change == "added" else (a, b, "A")
    if other.records.outcome.exit_status != 0:
        return None
    path = str(d.path[2])
    got = other.records.runtime.data_files.get(path)
    if path in other.records.runtime.data_files_written or (got is not None and got.written):
        return None  # the other run wrote it (a tracker's store, a cache): its output
    found = mine.records.runtime.data_files.get(path)
    modified, started = (str(found.modified or "") if found is not None else "",
                         str(other.records.outcome.started_at or ""))
    when, began = _instant(modified), _instant(started)
    later = not (when == float("-inf") or began == float("-inf") or when <= began)
    for name, repo in mine.records.git.repos.items():
        root = str(repo.path or "").rstrip("/")
        if not root or not path.startswith(root + "/"):
            continue
        rel = path[len(root) + 1:]
        if later:
            return (f"only {side} opened {rel}, under its git tree {root}, a file last "
                    f"modified {modified}, after the other run started ({started}), which ran "
                    f"to its end without it: a file {side} found, an input")
        theirs = other.records.git.repos.get(name)
        elsewhere = str(theirs.path or "").rstrip("/") if theirs is not None else ""
        if elsewhere and elsewhere != root and not path.startswith(elsewhere + "/") and (
                os.path.join(elsewhere, rel) not in other.records.runtime.data_files):
            # another checkout of the same repository: the other run could not find this
            # file, and ran to its end without opening its own tree's file of that name
            return (f"only {side} opened {rel}, under its checkout {root}; the other run ran "
                    f"in another checkout of {name} ({elsewhere}) and ran to its end without "
                    f"opening {rel} there: a file {side} found, an input")
    return None  # the other run could have found it as well


def _instant(stamp: str) -> float:
    """An ISO 8601 time stamp (runsnap writes ``2026-12-05T10:28:31.233+00:00``) as seconds
    since the epoch; ``-inf`` when it is none (an untrusted snapshot's, a mistake).

    >>> _instant("1970-01-01T00:01:00.500+00:00"), _instant("yesterday")
    (60.5, -inf)
    """
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return float("-inf")
