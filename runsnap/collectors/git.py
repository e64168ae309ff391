"""``[git]``: the repositories in play and their exact state.

Repositories: the cwd's, every ``--repo``, and the source of every editable install in the
child's environment. For each: commit, branch or detached HEAD, ``describe``, dirty flag, the
uncommitted diff against HEAD (staged and unstaged), untracked files, remotes, upstream
ahead/behind, submodules, bare and shallow flags.

Speed: the ``git`` command line is used directly (GitPython costs ~110 ms to import and several
times the time of the same ``git`` call), and each repository's commands run side by side:
one ``status --porcelain=v2`` gives branch, upstream, ahead/behind, changed and untracked
files at once.
"""

from __future__ import annotations

import hashlib
import os

from runsnap import shell
from runsnap._paths import resolve_path
from runsnap.collectors.gitfiles import ASK, WorkTree, find_work_tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from runsnap.capturing.context import CaptureContext

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


def _git_env(child_env: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in child_env.items() if not k.startswith("GIT_")}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    # The child's PATH decides which git, but fall back to ours if the child has none.
    env.setdefault("PATH", os.environ.get("PATH", os.defpath))
    return env


def _editable_candidates(ctx: CaptureContext) -> list[tuple[str, str]]:
    """(path, role) for the source checkout of every editable install (needs the probe)."""
    dists = ctx.probe.get("distributions", [])
    return [
        (d["source"], f"editable install of {d['name']}")
        for d in dists
        if d.get("editable") and d.get("source")
    ]


class _Plan:
    """The git commands of one capture, started as early as each is known.

    The cwd's repository and every ``--repo`` are known before anything has run, so
    :func:`start` begins their commands while the package probe and the other collectors work:
    the discovery ``rev-parse`` and, speculatively, the state commands run side by side (``git
    -C <dir inside the work tree>`` reports the whole repository, with paths from its top). The
    editable installs' checkouts are known only from the probe; :func:`collect` adds them.
    """

    def __init__(self, child_env: Mapping[str, str], cwd: str, repos: Sequence[str],
                 max_diff_bytes: int) -> None:
        self.env = _git_env(child_env)
        self.git = shell.which("git", path=self.env["PATH"])
        self.errors: list[str] = []
        self.candidates: list[dict[str, Any]] = []
        self.max_diff_bytes = max_diff_bytes
        self.made_for = (cwd, tuple(repos), max_diff_bytes)
        self.editables_added = False
        self.add(cwd, "cwd", speculative=True)
        for r in repos:
            self.add(resolve_path(r, cwd), "--repo", speculative=True)

    def suits(self, ctx: CaptureContext) -> bool:
        """Whether this plan was made for exactly this capture's repositories and environment."""
        return (self.made_for == (ctx.cwd, tuple(ctx.repos), ctx.max_diff_bytes)
                and self.env == _git_env(ctx.env))

    def cancel(self) -> None:
        """Stop every program this plan started (it was made for another capture)."""
        for cand in self.candidates:
            for pending in (cand.get("discovery"), cand.get("found") and cand["found"].started,
                            cand.get("state")):
                if isinstance(pending, shell.Pending):
                    pending.cancel()
                elif isinstance(pending, dict):
                    _cancel(pending)

    def add_editables(self, ctx: CaptureContext) -> None:
        """Add the editable installs' checkouts (needs the probe's answer); once."""
        if self.editables_added:
            return
        self.editables_added = True
        # An editable checkout is usually a repository of its own: read it speculatively too,
        # unless it lies inside a work tree already being read (then it may be the same one).
        tops = [_candidate_top(c) for c in self.candidates]
        for path, role in _editable_candidates(ctx):
            inside = any(t and (path == t or path.startswith(t.rstrip(os.sep) + os.sep))
                         for t in tops)
            self.add(path, role, speculative=not inside)

    def add(self, path: str, role: str, speculative: bool) -> None:
        if self.git is None:
            return
        if not os.path.isdir(path):
            self.errors.append(f"{path} ({role}): no such directory")
            return
        found = find_work_tree(path, self.env)
        if found is None:
            self.candidates.append({"path": path, "role": role, "found": None})
            return
        if found != ASK:
            top = found.top
            if not any(c.get("found") and c["found"].top == top for c in self.candidates):
                found.started = _start_state(self.git, top, False, self.env, found)
            self.candidates.append({"path": path, "role": role, "found": found})
            return
        argv = [self.git, "-C", path, "rev-parse", "--is-bare-repository", "--absolute-git-dir",
                "--is-shallow-repository", "--show-toplevel"]
        self.candidates.append({
            "path": path, "role": role, "discovery": shell.start(argv, env=self.env),
            "state": _start_state(self.git, path, False, self.env) if speculative else None,
        })


#: Git started by :func:`prestart` for the capture about to be made (see runsnap.cli.main).
_prestarted: _Plan | None = None


def prestart(child_env: Mapping[str, str], cwd: str, repos: Sequence[str],
             max_diff_bytes: int) -> None:
    """Start git for a capture that is about to be made, before the rest of runsnap is imported.

    ``runsnap capture`` calls this first thing, so that ``git diff`` and ``git status`` run on
    the other core while runsnap imports and collects. :func:`start` takes the plan over when
    the capture's context is the same (cwd, ``--repo``, the environment git sees, the diff cap),
    and cancels it otherwise.
    """
    global _prestarted
    if _prestarted is not None:
        _prestarted.cancel()
    _prestarted = None
    try:
        _prestarted = _Plan(child_env, os.path.abspath(cwd), repos, max_diff_bytes)
    except Exception:  # noqa: BLE001
        # Only a head start: the capture starts git itself and records any failure in [git].
        _prestarted = None


def start(ctx: CaptureContext) -> None:
    """Start git in the repositories known before the collectors run: the cwd's, every
    ``--repo``, and the editable installs' when the probe's answer is already at hand."""
    global _prestarted
    plan, _prestarted = _prestarted, None
    if plan is not None and not plan.suits(ctx):
        plan.cancel()
        plan = None
    if plan is None:
        plan = _Plan(ctx.env, ctx.cwd, ctx.repos, ctx.max_diff_bytes)
    if ctx.probe_ready():
        plan.add_editables(ctx)
    ctx.started["git"] = plan


def collect(ctx: CaptureContext) -> dict[str, Any]:
    """``{"repos": {name: {...}}, "not_repositories": [...], "errors": [...]}``."""
    if "git" not in ctx.started:
        start(ctx)
    plan: _Plan = ctx.started.pop("git")
    if plan.git is None:
        return {"repos": {}, "errors": ["git not found on PATH: repositories not recorded"]}
    plan.add_editables(ctx)

    # 1. Which repository is each candidate in? Start each repository's state commands once
    #    (or keep the speculative ones), all repositories side by side.
    repos: dict[str, dict[str, Any]] = {}  # keyed by toplevel (or git dir, when bare)
    not_repos: list[str] = []
    for cand in plan.candidates:
        if "found" in cand:  # found from the files, without running git
            tree: WorkTree | None = cand["found"]
            if tree is None:
                not_repos.append(cand["path"])
                continue
            entry = repos.get(tree.top)
            if entry is None:
                entry = repos[tree.top] = {"path": tree.top, "roles": [], "bare": False,
                                           "shallow": tree.shallow, "tree": tree,
                                           "started": tree.started}
                tree.started = None
                _start_submodules(plan, entry)
            elif tree.started:
                _cancel(tree.started)
                tree.started = None
            if cand["role"] not in entry["roles"]:
                entry["roles"].append(cand["role"])
            continue
        res = cand["discovery"].wait()
        lines = res.text().splitlines()
        # A bare repository has no work tree, so --show-toplevel fails after the other three
        # answers were printed: judge by what was printed, not only by the exit status.
        bare = bool(lines) and lines[0] == "true"
        if len(lines) < 3 or not (bare or (res.ok and len(lines) >= 4)):
            if cand["state"]:
                _cancel(cand["state"])
            if b"not a git repository" in res.stderr:
                not_repos.append(cand["path"])
            else:
                plan.errors.append(f"{cand['path']} ({cand['role']}): {res.error_line()}")
            continue
        top = lines[1] if bare else lines[3]
        entry = repos.get(top)
        if entry is None:
            entry = repos[top] = {"path": top, "roles": [], "bare": bare,
                                  "shallow": lines[2] == "true"}
            if cand["state"] and not bare:
                entry["started"] = cand["state"]
                cand["state"] = None
            else:
                entry["started"] = _start_state(plan.git, top, bare, plan.env)
            _start_submodules(plan, entry)
        if cand["state"]:
            _cancel(cand["state"])  # a second name for a repository already being read
        if cand["role"] not in entry["roles"]:
            entry["roles"].append(cand["role"])

    # 2. Each repository's state.
    out: dict[str, dict[str, Any]] = {}
    for entry in repos.values():
        state = _finish_state(plan.git, entry, entry.pop("started"), plan.env,
                              plan.max_diff_bytes)
        name = _unique(out, os.path.basename(entry["path"].rstrip(os.sep)) or "repo")
        out[name] = state
    section: dict[str, Any] = {"repos": out}
    if not_repos:
        section["not_repositories"] = not_repos
    section["errors"] = plan.errors
    return section


def _start_submodules(plan: _Plan, entry: dict[str, Any]) -> None:
    top = entry["path"]
    if plan.git and not entry["bare"] and os.path.exists(os.path.join(top, ".gitmodules")):
        entry["started"]["submodules"] = shell.start(
            [plan.git, "-C", top, "submodule", "status", "--recursive"], env=plan.env)


def _candidate_top(cand: dict[str, Any]) -> str:
    """The work tree's top of a candidate ("" when none: bare, or no repository)."""
    if "found" in cand:
        return cand["found"].top if cand["found"] else ""
    res = cand["discovery"].wait()
    lines = res.text().splitlines()
    return lines[3] if res.ok and len(lines) >= 4 and lines[0] == "false" else ""


def _cancel(started: dict[str, shell.Pending]) -> None:
    for p in started.values():
        p.cancel()


def _unique(taken: dict[str, Any], name: str) -> str:
    if name not in taken:
        return name
    i = 2
    while f"{name}-{i}" in taken:
        i += 1
    return f"{name}-{i}"


def _start_state(
    git: str, path: str, bare: bool, env: dict[str, str], tree: WorkTree | None = None
) -> dict[str, Any]:
    """Start the commands that read one repository's state; ``path`` may be inside it.

    A work tree needs two: ``status --porcelain=v2 --branch`` (commit, branch, upstream,
    ahead/behind, changed and untracked files) and ``diff HEAD``. ``describe`` runs only when
    the repository has tags (without tags it would only repeat the commit), and ``remote -v``
    only when the remotes cannot be read from the config files (``tree``: what the files say).
    ``describe --dirty`` is not used: it refreshes the index a third time, and the status
    already says whether tracked files changed.
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
    if tree is None or tree.has_tags is not False:
        cmds["describe"] = [*base, "describe", "--always", "--tags"]
    if tree is None or tree.remotes is None:
        cmds["remotes"] = [*base, "remote", "-v"]
    return {name: shell.start(argv, env=env) for name, argv in cmds.items()}


def _finish_state(
    git: str, entry: dict[str, Any], started: dict[str, Any], env: dict[str, str],
    max_diff_bytes: int,
) -> dict[str, Any]:
    res = {name: p.wait() for name, p in started.items()}
    errors: list[str] = []
    state: dict[str, Any] = {"path": entry["path"], "roles": entry["roles"]}
    status: dict[str, Any] = {}
    if entry["bare"]:
        state["commit"] = res["head"].text().strip() if res["head"].ok else ""
    else:
        st = res["status"]
        if st.ok:
            status = _parse_status(st.stdout, entry["path"])
        else:
            errors.append(st.error_line())
        state["commit"] = status.pop("commit", "")
    if not state["commit"]:
        state["unborn"] = True  # a repository with no commit yet
    describe = res["describe"].text().strip() if "describe" in res and res["describe"].ok else ""
    if describe and status.get("changed"):
        describe += "-dirty"  # what `git describe --dirty` says: tracked files changed
    state["describe"] = describe
    state["bare"] = entry["bare"]
    state["shallow"] = entry["shallow"]

    if entry["bare"]:
        state["branch"] = res["branch"].text().strip()
        state["detached"] = not state["branch"]
    else:
        state.update(status)
        diff = res["diff"]
        if diff.ok:
            state.update(_diff_fields(git, entry["path"], diff.stdout, env, max_diff_bytes))
        elif state.get("unborn"):
            state["diff"] = ""
        else:
            errors.append(diff.error_line())
        if "submodules" in res:
            state["submodules"] = _parse_submodules(res["submodules"], errors)
    if "remotes" in res:
        state["remotes"] = _parse_remotes(res["remotes"].text()) if res["remotes"].ok else {}
    else:
        state["remotes"] = dict(entry["tree"].remotes)
    state["errors"] = errors
    return state


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
    untracked = [u for u in untracked if not is_snapshot_file(os.path.join(top, u))]
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
        with open(path, "rb") as fh:
            head = fh.read(64)
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
    elif st.st_size <= UNTRACKED_HASH_MAX:
        try:
            with open(full, "rb") as fh:
                rec["sha256"] = hashlib.sha256(fh.read()).hexdigest()
        except OSError as exc:
            rec["error"] = exc.strerror or str(exc)
    return rec


def _diff_fields(
    git: str, top: str, raw: bytes, env: dict[str, str], cap: int
) -> dict[str, Any]:
    text = raw.decode("utf-8", "surrogateescape")
    fields: dict[str, Any] = {"diff_bytes": len(raw), "diff_sha256": hashlib.sha256(raw).hexdigest()}
    if len(raw) <= cap:
        fields["diff"] = text
        return fields
    stat = shell.run([git, "-C", top, "diff", "HEAD", "--stat=200", "--no-color"], env=env)
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


def _parse_submodules(res: shell.Result, errors: list[str]) -> list[dict[str, str]]:
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
