"""Git-ignored files the runs read with other content, applied from the kept copies.

A ``settings.local.toml`` that git ignores, read by both runs, rewritten between them: the
snapshots hold only its digests, but the capture kept a copy of each content in the user's cache
when it held no secret (:mod:`runsnap.base.keptfiles`). Where both contents are at hand (the
kept copy, or the file as it is now when its digest is one of the two) and the file lies in a
repository both runs ran at one commit, a trial runs in a copy of that repository
(:mod:`runsnap.experiments.gittrees`) and the copy holds the content the trial asks for: BAD's
when the change is applied, else GOOD's. The user's file is never written. Otherwise the
difference blocks as before (:mod:`runsnap.experiments.filestate`).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from typing import Any

from runsnap.base.digest import sha256
from runsnap.base.keptfiles import kept
from runsnap.snapshot import Snapshot

__all__ = ["content_of", "ignored_files", "repo_of", "write_into"]

#: The largest file read back to compare its digest (the kept copies are this small too).
_MAX = 256 << 10


def repo_of(good: Snapshot, bad: Snapshot, path: str) -> tuple[str, str] | None:
    """The repository (its name in ``[git]``) and the path inside it of the git-ignored file
    ``path`` (absolute) that both runs read with other content, when a trial can hold either
    content (see the module's text); else None."""
    g_row = good.records.runtime.data_files.get(path)
    b_row = bad.records.runtime.data_files.get(path)
    if g_row is None or b_row is None or not g_row.sha256 or not b_row.sha256 \
            or g_row.sha256 == b_row.sha256:
        return None
    real = os.path.realpath(path)
    for name, repo in bad.records.git.repos.items():
        other = good.records.git.repos.get(name)
        if not repo.path or other is None or not repo.commit or other.commit != repo.commit \
                or repo.diff_truncated or other.diff_truncated:
            continue  # a tree no trial copies (runsnap.experiments.gittrees)
        top = os.path.realpath(str(repo.path))
        if not real.startswith(top + os.sep):
            continue
        rel = os.path.relpath(real, top)
        if not _ignored(top, rel):
            return None
        if content_of(path, str(g_row.sha256), good, bad) is None or \
                content_of(path, str(b_row.sha256), good, bad) is None:
            return None
        return str(name), rel
    return None


def _ignored(top: str, rel: str) -> bool:
    try:
        res = subprocess.run(["git", "-C", top, "check-ignore", "-q", "--", rel],
                             capture_output=True, timeout=60, check=False,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return res.returncode == 0


def content_of(path: str, digest: str, *snaps: Snapshot) -> bytes | None:
    """The content whose sha256 is ``digest``: the file at ``path`` as it is now when it has
    it, else the copy kept here or by the captures of ``snaps``; None when neither."""
    try:
        if os.path.getsize(path) <= _MAX:
            with open(path, "rb") as fh:
                data = fh.read()
            if sha256(data).hexdigest() == digest:
                return data
    except OSError:
        pass
    return kept(digest, [{str(k): str(v) for k, v in s.records.env.vars.items()} for s in snaps])


def ignored_files(good: Snapshot, bad: Snapshot, name: str, changes: Sequence[Any]
                  ) -> dict[str, bytes]:
    """The git-ignored files of repository ``name`` a trial writes into its copy (path inside
    it -> content): each runtime file of ``changes`` (the trial's own, applied: BAD's
    content; see :func:`repo_of`) and every other such file the runs read (GOOD's)."""
    repo = bad.records.git.repos.get(name)
    top = os.path.realpath(str(repo.path)) if repo is not None and repo.path else ""
    chosen = {str(c.path[2]) for c in changes if tuple(c.path[:2]) == ("runtime", "data_files")}
    out: dict[str, bytes] = {}
    for path in sorted(set(good.records.runtime.data_files) & set(bad.records.runtime.data_files)):
        if not top or not os.path.realpath(path).startswith(top + os.sep):
            continue
        found = repo_of(good, bad, path)
        if found is None or found[0] != name:
            continue
        side = bad if path in chosen else good
        data = content_of(path, str(side.records.runtime.data_files[path].sha256), good, bad)
        if data is not None:
            out[found[1]] = data
    return out


def write_into(dest: str, top: str, rel: str, data: bytes) -> None:
    """``data`` at ``rel`` in the copy ``dest`` of the tree ``top``, whose ignored entries are
    links to the originals: each linked folder on the way becomes a folder of links (its
    entries linked to the original's), so only the file itself is new and nothing is written
    through a link into the user's tree."""
    parts = rel.split(os.sep)
    here, there = dest, top
    for part in parts[:-1]:
        here, there = os.path.join(here, part), os.path.join(there, part)
        if os.path.islink(here):
            os.unlink(here)
            os.makedirs(here)
            for entry in os.listdir(there):
                os.symlink(os.path.join(there, entry), os.path.join(here, entry))
        else:
            os.makedirs(here, exist_ok=True)
    target = os.path.join(here, parts[-1])
    if os.path.islink(target) or os.path.exists(target):
        os.unlink(target)
    with open(target, "wb") as fh:
        fh.write(data)
