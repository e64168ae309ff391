"""``[git]``, one repository: the commands reading its state, started side by side, and their
answers parsed (status, describe, remotes, submodules, the uncommitted diff, untracked files).

:mod:`runsnap.capturing.collectors.git` finds the repositories and starts these."""

from __future__ import annotations

import os
import stat

from runsnap.base import programs
from runsnap.base.cache import OwnFiles
from runsnap.base.digest import sha256, text_sha256
from runsnap.base.files import file_kind, read_head, read_regular
from runsnap.base.records import Record, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


#: Untracked files up to this size get a sha256.
UNTRACKED_HASH_MAX = 256 * 1024
#: At most this many untracked files are listed per repository (a data directory can hold
#: millions); the count is always exact.
UNTRACKED_LIST_MAX = 2000
#: How much of an over-cap diff is kept.
DIFF_HEAD_BYTES = 64 * 1024
#: How every snapshot file begins (:func:`runsnap.snapshot.dumps`): runsnap's own output is
#: never part of the state it records (``-o snap.toml`` inside the repository, an old
#: ``.runsnap/`` without its ``.gitignore``, the temporary file of an atomic write).
SNAPSHOT_HEAD = b"schema = "
SNAPSHOT_META = b"\n[meta]\nrunsnap_version = "


class Repo(Record):
    """One repository found, and the commands reading its state."""

    path: str
    """Its top (the work tree; the git directory when bare)."""
    bare: bool
    shallow: bool
    started: dict[str, programs.Pending]
    roles: list[str] = field(default_factory=list)
    git_dir: str = ""
    """Its git directory (where an operation in progress leaves its files)."""


#: Files an operation in progress leaves in the git directory, and its name (the order of
#: git's own wt-status.c: a rebase's folders first, then the sequencer's heads, then bisect).
IN_PROGRESS = (("rebase-merge", "rebase"), ("rebase-apply/applying", "am"),
               ("rebase-apply", "rebase"), ("MERGE_HEAD", "merge"),
               ("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert"),
               ("BISECT_LOG", "bisect"))


def in_progress(git_dir: str) -> str | None:
    """The operation under way in a repository (``rebase``, ``am``, ``merge``,
    ``cherry-pick``, ``revert``, ``bisect``), or None."""
    if not git_dir:
        return None
    for name, what in IN_PROGRESS:
        if os.path.lexists(os.path.join(git_dir, name)):
            return what
    return None


def cancel(started: dict[str, programs.Pending]) -> None:
    for p in started.values():
        p.cancel()


def unique_name(taken: dict[str, Any], name: str) -> str:
    if name not in taken:
        return name
    i = 2
    while f"{name}-{i}" in taken:
        i += 1
    return f"{name}-{i}"


def start_state(git: str, path: str, bare: bool, env: dict[str, str]) -> dict[str, programs.Pending]:
    """Start the commands that read one repository's state; ``path`` may be inside it.

    A work tree: ``status --porcelain=v2 --branch`` (commit, branch, upstream, ahead/behind,
    changed and untracked files) and ``diff HEAD``; every repository: ``remote -v`` (which
    applies ``url.*.insteadOf``). ``describe`` is started by :func:`start_describe` once git
    said the repository has a tag.
    """
    base = [git, "-C", path, "-c", "core.quotepath=off"]
    cmds = {}  # the long ones first
    if not bare:
        cmds["diff"] = [*base, "diff", "HEAD", "--no-color", "--no-ext-diff"]
        cmds["status"] = [*base, "status", "--porcelain=v2", "--branch",
                          "--untracked-files=all", "-z"]
    else:
        cmds["head"] = [*base, "rev-parse", "--verify", "-q", "HEAD"]
        cmds["branch"] = [*base, "symbolic-ref", "-q", "--short", "HEAD"]
    cmds["remotes"] = [*base, "remote", "-v"]
    return {name: programs.start(argv, env=env, background=True) for name, argv in cmds.items()}


def start_describe(git: str, path: str, env: dict[str, str]) -> programs.Pending:
    """``describe --tags`` (without ``--always``: a repository whose tags are not ancestors of
    HEAD is described by its commit only then, see :func:`_describe`). Not ``--dirty``: that
    refreshes the index a third time, and the status already says whether tracked files
    changed. Only for a repository with a tag: without one it says nothing (one git process
    less per repository, a few ms of a capture)."""
    return programs.start([git, "-C", path, "-c", "core.quotepath=off", "describe", "--tags"],
                          env=env, background=True)


def finish_state(git: str, repo: Repo, env: dict[str, str], max_diff_bytes: int
                  ) -> dict[str, Any]:
    res = {name: p.wait() for name, p in repo.started.items()}
    errors: list[str] = []
    state: dict[str, Any] = {"path": repo.path, "roles": repo.roles}
    status: dict[str, Any] = {}
    if repo.bare:
        state["commit"] = res["head"].text().strip() if res["head"].ok else ""
    else:
        st = res["status"]
        if st.ok:
            status = _parse_status(st.stdout, repo.path)
        else:  # a corrupt index, HEAD naming a missing object: an error, not "no commit yet"
            errors.append(st.error_text())
        state["commit"] = status.pop("commit", "")
    if not state["commit"] and (repo.bare or res["status"].ok):
        state["unborn"] = True  # a repository with no commit yet
    doing = in_progress(repo.git_dir)
    if doing:
        state["in_progress"] = doing
    describe = (_describe(git, repo, res["describe"], env)
                if state["commit"] and "describe" in res else "")  # no tag: nothing to say
    if describe and status.get("changed"):
        describe += "-dirty"  # what `git describe --dirty` says: tracked files changed
    state["describe"] = describe
    state["bare"] = repo.bare
    state["shallow"] = repo.shallow

    if repo.bare:
        state["branch"] = res["branch"].text().strip()
        state["detached"] = not state["branch"]
    else:
        state.update(status)
        diff = res["diff"]
        if diff.ok:
            state.update(_diff_fields(git, repo.path, diff.stdout, env, max_diff_bytes))
        elif state.get("unborn"):
            state["diff"] = ""
        elif res["status"].ok:  # else the status's error says it
            errors.append(diff.error_text())
        if "submodules" in res:
            state["submodules"] = _parse_submodules(res["submodules"], errors)
    state["remotes"] = _parse_remotes(res["remotes"].text()) if res["remotes"].ok else {}
    state["errors"] = errors
    return state


def _describe(git: str, repo: Repo, res: programs.Result, env: dict[str, str]) -> str:
    """``git describe --tags``; where tags exist but none is an ancestor of HEAD, the
    abbreviated commit (what ``--always`` gives); empty without tags."""
    if res.ok:
        return res.text().strip()
    if b"No names found" in res.stderr:
        return ""  # no tags at all
    again = programs.run([git, "-C", repo.path, "describe", "--tags", "--always"], env=env)
    return again.text().strip() if again.ok else ""


def _parse_status(raw: bytes, top: str) -> dict[str, Any]:
    """Fields from ``git status --porcelain=v2 --branch --untracked-files=all -z``."""
    out: dict[str, Any] = {"branch": "", "detached": False, "upstream": "", "ahead": 0,
                           "behind": 0}
    changed: list[dict[str, str]] = []
    untracked: list[str] = []
    records = raw.decode("utf-8", "surrogateescape").split("\0")
    i = 0
    while i < len(records):
        rec = records[i]
        i += 1
        if not rec:
            continue
        if rec.startswith("# branch.oid "):
            oid = rec[len("# branch.oid "):]
            out["commit"] = "" if oid == "(initial)" else oid
        elif rec.startswith("# branch.head "):
            head = rec[len("# branch.head "):]
            out["detached"] = head == "(detached)"
            out["branch"] = "" if out["detached"] else head
        elif rec.startswith("# branch.upstream "):
            out["upstream"] = rec[len("# branch.upstream "):]
        elif rec.startswith("# branch.ab "):
            a, b = rec[len("# branch.ab "):].split()
            out["ahead"], out["behind"] = int(a), -int(b)
        elif rec[0] == "1":
            parts = rec.split(" ", 8)
            changed.append({"path": parts[8], "status": parts[1]})
        elif rec[0] == "2":
            parts = rec.split(" ", 9)
            orig = records[i] if i < len(records) else ""
            i += 1
            changed.append({"path": parts[9], "status": parts[1], "from": orig})
        elif rec[0] == "u":
            parts = rec.split(" ", 10)
            changed.append({"path": parts[10], "status": parts[1]})
        elif rec[0] == "?":
            untracked.append(rec[2:])
    own = OwnFiles() if untracked else None  # read only when there is something to check
    untracked = [u for u in untracked if not is_snapshot_file(os.path.join(top, u))
                 and not (own is not None and own.holds(os.path.join(top, u)))]
    out["dirty"] = bool(changed or untracked)
    out["changed"] = changed
    out["untracked_count"] = len(untracked)
    out["untracked"] = [_untracked(top, p) for p in untracked[:UNTRACKED_LIST_MAX]]
    if len(untracked) > UNTRACKED_LIST_MAX:
        out["untracked_truncated"] = True
    return out


def is_snapshot_file(path: str) -> bool:
    """Whether ``path`` is a snapshot runsnap wrote (read from its first bytes; only files
    named ``*.toml`` or ``*.tmp``, so a folder of data files costs no reads)."""
    if not path.endswith((".toml", ".tmp")):
        return False
    try:
        head = read_head(path, 64)
    except OSError:
        return False
    return head.startswith(SNAPSHOT_HEAD) and SNAPSHOT_META in head


def _untracked(top: str, rel: str) -> dict[str, Any]:
    full = os.path.join(top, rel)
    rec: dict[str, Any] = {"path": rel}
    try:
        st = os.lstat(full)
    except OSError as exc:
        rec["error"] = exc.strerror or str(exc)
        return rec
    rec["size"] = st.st_size
    if os.path.islink(full):
        rec["link"] = os.readlink(full)
    elif not stat.S_ISREG(st.st_mode):  # a FIFO or a device: never opened
        rec["kind"] = file_kind(st.st_mode)
    elif st.st_size <= UNTRACKED_HASH_MAX:
        try:
            rec["sha256"] = sha256(read_regular(full, UNTRACKED_HASH_MAX)).hexdigest()
        except OSError as exc:
            rec["error"] = exc.strerror or str(exc)
    return rec


def _diff_fields(
    git: str, top: str, raw: bytes, env: dict[str, str], cap: int
) -> dict[str, Any]:
    text = raw.decode("utf-8", "surrogateescape")
    # the sha256 of the text is the raw diff's (surrogateescape gives the bytes back); taken
    # through text_sha256, redaction finds it again instead of hashing the diff a second time
    fields: dict[str, Any] = {"diff_bytes": len(raw), "diff_sha256": text_sha256(text)}
    if len(raw) <= cap:
        fields["diff"] = text
        return fields
    stat = programs.run([git, "-C", top, "diff", "HEAD", "--stat=200", "--no-color"], env=env)
    head = raw[: min(cap, DIFF_HEAD_BYTES)].decode("utf-8", "surrogateescape")
    fields.update(diff=head, diff_truncated=True, diff_stat=stat.text() if stat.ok else "")
    return fields


def _parse_remotes(text: str) -> dict[str, str]:
    remotes: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and (len(parts) < 3 or parts[2] == "(fetch)"):
            remotes[parts[0]] = parts[1]
    return remotes


def _parse_submodules(res: programs.Result, errors: list[str]) -> list[dict[str, str]]:
    if not res.ok:
        errors.append(res.error_line())
        return []
    subs = []
    for line in res.text().splitlines():
        if not line.strip():
            continue
        flag = line[0] if line[0] in "-+U " else " "
        parts = line[1:].split()
        state = {"-": "not initialized", "+": "checked out at another commit",
                 "U": "merge conflicts", " ": "in sync"}[flag]
        subs.append({"path": parts[1] if len(parts) > 1 else "", "commit": parts[0],
                     "state": state})
    return subs
