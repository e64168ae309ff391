"""Files no launch can put back: one both runs read with other content, outside any git tree
or untracked in one, rewritten between the runs. Only its digest is recorded, so no trial holds
GOOD's content; ``why`` says what the user does (put GOOD's content back, named by its digest,
or keep the file under git) and gives a line that checks the digest before it launches
(:mod:`runsnap.experiments.yourself`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from runsnap.snapshot import Snapshot

__all__ = ["DATA_FILE", "good_content", "rewritten_untracked", "what_to_do"]

#: Why a file the runs read, with other content, is not applied.
DATA_FILE = "a file the runs read, with other content: only its digest is recorded"


def _untracked(snap: Snapshot, repo: str, rel: str) -> tuple[str, str, int | None] | None:
    """The untracked file ``rel`` of ``repo`` as ``snap`` recorded it: path, sha256, size."""
    r = snap.records.git.repos.get(repo)
    if r is None or not r.path:
        return None
    for u in r.untracked:
        if str(u.path or "") == rel and u.sha256:
            return os.path.join(str(r.path), rel), str(u.sha256), u.size
    return None


def good_content(good: Snapshot, bad: Snapshot, path: Sequence[Any]
                 ) -> tuple[str, str, int | None] | None:
    """GOOD's content of the file a difference is about (its path, sha256 and size), where
    no launch can put it back: a file both runs read with other content (``runtime
    data_files``), or an untracked file both runs' trees held with other content; else
    None. A model's file other than ``config.json`` edited in place is such a file too."""
    path = tuple(path)
    if path[:2] == ("runtime", "data_files") and len(path) > 2:
        f = good.records.runtime.data_files.get(str(path[2]))
        return (str(path[2]), str(f.sha256), f.size) if f is not None and f.sha256 else None
    if len(path) == 4 and path[:1] == ("models",) and path[2] == "files":  # in the folder
        model = good.records.models.models.get(str(path[1]))
        sha = model.files_sha256.get(str(path[3])) if model is not None else None
        if model is None or not model.path or not isinstance(sha, str):
            return None
        full = os.path.join(str(model.path), str(path[3]))
        read = good.records.runtime.data_files.get(full)
        return full, sha, read.size if read is not None else None
    if len(path) == 4 and path[0] == "git" and path[2] == "untracked":
        mine = _untracked(good, str(path[1]), str(path[3]))
        theirs = _untracked(bad, str(path[1]), str(path[3]))
        return mine if mine is not None and theirs is not None and mine[1] != theirs[1] \
            else None
    return None


def what_to_do(found: tuple[str, str, int | None]) -> str:
    """What the user does so that a launch reads GOOD's content again, in words.

    >>> what_to_do(("/d/dev.jsonl", "5efce4807513ca71", 4038))[:73]
    "put GOOD's content back in /d/dev.jsonl (sha256 5efce4807513, 4038 bytes)"
    """
    size = f", {found[2]} bytes" if found[2] is not None else ""
    return (f"put GOOD's content back in {found[0]} (sha256 {found[1][:12]}{size}) and run "
            "why again, or keep the file under git")


def rewritten_untracked(good: Snapshot, bad: Snapshot, path: Sequence[Any]) -> str:
    """Why an untracked file both runs' trees held, rewritten between them, is not applied
    (no commit holds GOOD's content, and only its digest is recorded); "" when the git
    difference ``path`` is no such file."""
    found = good_content(good, bad, path) if tuple(path)[:1] == ("git",) else None
    if found is None:
        return ""
    return (f"untracked, rewritten between the runs: no commit holds GOOD's content and only "
            f"its digest is recorded; {what_to_do(found)}")
