"""Uncommitted edits as changes a trial applies: each trial runs in a copy of the repository.

GOOD ran a clean tree; BAD ran the same commit with ``config.yaml`` edited (or a new
``data/eval.jsonl`` beside it). Launched in place, every trial would read the tree as it is now,
BAD's, and GOOD's own launch would already go bad. So each trial, the one with nothing applied
too, runs in a copy of the repository under its trial folder, made from the tree as it is now:
the files neither run edited are copies (those over :data:`COPY_MAX_BYTES` hard links to the
originals, a copy across file systems: a trial that writes into one writes the original),
each file some run edited is written in the state the trial asks for (the edit applied: BAD's;
else GOOD's: the commit's content, or absent for a new file), and what git ignores (a venv,
data, weights) is a link to the original. The launch's arguments, working directory and
variables that name paths under the repository name the copy instead; the interpreter is left
as it is. The user's tree is never written.

An edit is applied only where the snapshots say exactly what it was: both runs at one commit,
the other run's tree clean of tracked edits, the edit's patch stored whole (not truncated) and
the file in the tree now in BAD's state (its patch against the commit, or its untracked file's
digest, the same as BAD recorded). Otherwise the difference blocks as before (another commit or
uncommitted state) and the trial runs in place.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from runsnap.diffing.sections.git import split_patch
from runsnap.experiments.bytecode import is_bytecode
from runsnap.experiments.ignoredfiles import ignored_files, repo_of, write_into
from runsnap.snapshot import Snapshot
from runsnap.snapshot.records import GitRepo

__all__ = ["COPY_MAX_BYTES", "MAX_FILES", "applied_edits", "copy_trees", "edit_of", "searched"]

#: Files of a repository up to this size are copied into a trial's copy; bigger ones are hard
#: links to the originals.
COPY_MAX_BYTES = 1024 * 1024

#: Repositories with more files than this (tracked and untracked, not ignored) are not
#: copied: the edit blocks, as before.
MAX_FILES = 20000


def _git(top: str, *args: str) -> bytes | None:
    try:
        res = subprocess.run(["git", "-C", top, *args], capture_output=True, timeout=60,
                             check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout if res.returncode == 0 else None


def _repos(good: Snapshot, bad: Snapshot, name: str) -> tuple[GitRepo, GitRepo] | None:
    g, b = (s.records.git.repos.get(name) for s in (good, bad))
    if g is None or b is None or not g.commit or g.commit != b.commit or not b.path:
        return None
    if g.diff_truncated or b.diff_truncated or not os.path.isdir(str(b.path)):
        return None
    return g, b


def _state_now(repo: GitRepo, rel: str) -> bool:
    """Whether ``rel`` in the tree now is as ``repo`` (a snapshot's record) saw it: its patch
    against the commit (tracked) or its digest (untracked) the same."""
    top, commit = str(repo.path), str(repo.commit)
    recorded = split_patch(str(repo.diff or "")).get(rel)
    if recorded is not None:
        now = _git(top, "diff", commit, "--no-color", "--no-ext-diff", "--", rel)
        return now is not None and split_patch(now.decode("utf-8", "replace")).get(rel) \
            == recorded
    for u in repo.untracked:
        if str(u.path) == rel and u.sha256:
            try:
                with open(os.path.join(top, rel), "rb") as fh:
                    return hashlib.sha256(fh.read()).hexdigest() == u.sha256
            except OSError:
                return False
    return False


def edit_of(good: Snapshot, bad: Snapshot, path: Sequence[Any]) -> str:
    """How git difference ``path`` goes into a trial: ``apply`` (an edit, see the module's
    text), a reason it is skipped without blocking (``dirty``, which follows the edits), or ""
    (it blocks, as before)."""
    if len(path) < 3 or _repos(good, bad, str(path[1])) is None:
        return ""
    g, b = _repos(good, bad, str(path[1])) or (GitRepo(), GitRepo())
    if len(path) == 3 and path[2] == "dirty":
        return "follows the edits of its files (applied with them)" if _edits(g, b) else ""
    if len(path) == 4 and path[2] in ("diff", "untracked") and not is_bytecode(path[3]):
        files = _edits(g, b)
        return "apply" if files and str(path[3]) in files else ""
    return ""


def _edits(g: GitRepo, b: GitRepo) -> set[str]:
    """The files BAD edited or added that a copy can hold in either state; empty when any of
    BAD's edits cannot be (then none is applied: the tree would be neither run's)."""
    if g.diff or g.changed:  # GOOD's own edits: no commit holds its state
        return set()
    good_new = {str(u.path) for u in g.untracked}
    files = set(split_patch(str(b.diff or "")))
    files |= {str(u.path) for u in b.untracked if str(u.path) not in good_new
              and not is_bytecode(u.path)}
    if not files or not all(_state_now(b, f) for f in files):
        return set()
    return files


def searched(changes: Sequence[Any], good: Snapshot, bad: Snapshot
             ) -> tuple[list[str], list[str]]:
    """The model sources whose config fields, and the repositories whose edits or git-ignored
    files read (:mod:`runsnap.experiments.ignoredfiles`), a bisection searches: every trial
    reads them through copies."""
    models = sorted({str(c.path[1]) for c in changes
                     if c.path[0] == "models" and c.path[2:3] == ("config",)})
    trees = {str(c.path[1]) for c in changes if c.path[0] == "git"}
    for c in changes:
        if tuple(c.path[:2]) == ("runtime", "data_files") and \
                (found := repo_of(good, bad, str(c.path[2]))) is not None:
            trees.add(found[0])
    return models, sorted(trees)


def _listing(top: str, *args: str) -> list[str] | None:
    out = _git(top, "ls-files", "-z", *args)
    return None if out is None else [p for p in out.decode("utf-8", "replace").split("\0") if p]


def _link_or_copy(src: str, dest: str) -> None:
    """A copy of ``src`` at ``dest``, a hard link when it is large (a copy across file
    systems): a trial that writes a small file in place never writes the user's."""
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    if os.path.getsize(src) <= COPY_MAX_BYTES:
        shutil.copy2(src, dest)
        return
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def _one_tree(good: Snapshot, bad: Snapshot, name: str, changes: Sequence[Any], dest: str
              ) -> str:
    """The copy of repository ``name`` at ``dest``: the files ``changes`` name in BAD's state,
    the other edited files (and git-ignored files read) in GOOD's (see the module's text)."""
    chosen = {str(c.path[3]) for c in changes
              if tuple(c.path[:2]) == ("git", name) and len(c.path) > 3}
    g, b = _repos(good, bad, name) or (GitRepo(), GitRepo())
    top, commit = str(b.path), str(b.commit)
    edited = _edits(g, b) if g.commit else set()
    ignored_read = ignored_files(good, bad, name, changes)
    if not edited and not _edits(b, g) and not ignored_read:
        raise ValueError(f"git {name}: the edits cannot be applied here")
    edited = edited or _edits(b, g)  # reverted: BAD is the clean side, GOOD the edited one
    files = _listing(top, "--cached", "--others", "--exclude-standard")
    ignored = _listing(top, "--others", "--ignored", "--exclude-standard", "--directory")
    if files is None or ignored is None or len(files) > MAX_FILES:
        raise ValueError(f"git {name}: cannot list its files (or more than {MAX_FILES})")
    clean = not (g.diff or g.untracked and edited & {str(u.path) for u in g.untracked})
    avoid = os.path.realpath(os.path.dirname(os.path.dirname(dest)))  # the trials' folder
    for rel in files:
        src = os.path.join(top, rel)
        if rel in edited or is_bytecode(rel) or not os.path.isfile(src) \
                or os.path.realpath(src).startswith(avoid + os.sep):
            continue
        _link_or_copy(os.path.join(top, rel), os.path.join(dest, rel))
    for rel in ignored:
        if is_bytecode(rel.rstrip("/")) or rel.rstrip("/").endswith("__pycache__") \
                or avoid.startswith(os.path.realpath(os.path.join(top, rel.rstrip("/")))):
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, rel.rstrip("/"))), exist_ok=True)
        os.symlink(os.path.join(top, rel.rstrip("/")), os.path.join(dest, rel.rstrip("/")))
    for rel in edited:
        edited_side = (rel in chosen) == clean  # the state the trial wants is the edited one
        target = os.path.join(dest, rel)
        if edited_side:
            if os.path.isfile(os.path.join(top, rel)):  # an edit that deleted it: no file
                _link_or_copy(os.path.join(top, rel), target)
            continue
        committed = _git(top, "show", f"{commit}:{rel}")
        if committed is not None:  # a new file's committed state is no file at all
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as fh:
                fh.write(committed)
    for rel, data in ignored_read.items():
        write_into(dest, os.path.realpath(top), rel, data)
    return dest


def _moved(text: str, top: str, dest: str) -> str:
    root = top.rstrip("/")
    if text == root or text.startswith(root + "/"):
        return dest + text[len(root):]
    if os.pathsep in text:  # a path list (PYTHONPATH): each entry moved
        return os.pathsep.join(_moved(p, top, dest) for p in text.split(os.pathsep))
    return text


def copy_trees(argv: Sequence[str], cwd: str, env: Mapping[str, str],
               trees: Sequence[str], changes: Sequence[Any], good: Snapshot, bad: Snapshot,
               workdir: str) -> tuple[list[str], str, dict[str, str]]:
    """The launch with each repository of ``trees`` copied under ``workdir`` (its edits among
    ``changes`` applied) and every path under it moved into the copy; the interpreter
    (``argv[0]``) is left alone."""
    argv, env = list(argv), dict(env)
    for name in trees:
        top = str((bad.records.git.repos.get(name) or GitRepo()).path or "")
        dest = _one_tree(good, bad, name, changes, os.path.join(workdir, f"tree-{name}"))
        argv = argv[:1] + [_moved(a, top, dest) for a in argv[1:]]
        cwd = _moved(cwd, top, dest) if cwd else cwd
        env = {k: _moved(v, top, dest) for k, v in env.items()}
    return argv, cwd, env


def applied_edits(good: Snapshot, bad: Snapshot, diffs: Sequence[Any]
                   ) -> dict[str, str]:
    """Files whose uncommitted edit a trial applies (real path -> the change's ``where``,
    ``git proj: model/tokenizer.json``), among ``diffs`` (the diff's differences): a model's
    file that is one of them follows the edit."""
    out: dict[str, str] = {}
    for d in diffs:
        path = tuple(d.path)
        if d.section != "git" or len(path) < 4 or path[2] not in ("diff", "untracked") or \
                edit_of(good, bad, path) != "apply":
            continue
        repo = bad.records.git.repos.get(str(path[1])) or GitRepo()
        if repo.path:
            out[os.path.realpath(os.path.join(str(repo.path), str(path[3])))] = \
                f"{d.section} {d.key}"
    return out
