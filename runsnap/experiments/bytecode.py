"""Python's bytecode cache in a repository: an effect of the runs, never their input.

Python writes ``__pycache__/x.cpython-311.pyc`` when it imports ``x.py``, and reads it only
while the source's mtime and size recorded in it match (PEP 552's default), so a ``.pyc`` that
one run has and the other has not (the first run wrote it) changes nothing either run does.
A bisection skips such a difference without blocking; an edit of the source itself still
blocks."""

from __future__ import annotations

from typing import Any

from runsnap.snapshot import Snapshot
from runsnap.snapshot.records import GitRepo

__all__ = ["bytecode_only", "is_bytecode"]


def is_bytecode(rel: Any) -> bool:
    """Whether a repository file is Python's bytecode cache (``__pycache__/x.cpython-311.pyc``,
    a ``.pyc`` beside its source): Python writes it on import, and reads it only while the
    source's recorded mtime and size match, so it is an effect of a run, never its input."""
    text = str(rel)
    return "__pycache__/" in text or text.endswith((".pyc", ".pyo"))


def bytecode_only(good: Snapshot, bad: Snapshot, path: tuple[Any, ...]) -> bool:
    """Whether git difference ``path`` is only bytecode: an untracked ``.pyc``, or a dirty
    flag set by nothing else (no edit, every untracked file bytecode)."""
    if len(path) > 3 and path[2] == "untracked":
        return is_bytecode(path[3])
    if len(path) == 3 and path[2] == "dirty":
        repos = [s.records.git.repos.get(str(path[1])) or GitRepo() for s in (good, bad)]
        if any(r.diff or r.diff_truncated or r.changed for r in repos):
            return False
        files = [u.path for r in repos for u in r.untracked]
        return bool(files) and all(is_bytecode(f) for f in files) and not any(
            (r.untracked_count or 0) > len(r.untracked) for r in repos)
    return False
