"""``[git]``: the repositories in play and their exact state.

Repositories: the cwd's, every ``--repo``, and the source of every editable install in the
child's environment. For each: commit, branch or detached HEAD, ``describe``, dirty flag, the
uncommitted diff against HEAD (staged and unstaged), untracked files, remotes, upstream
ahead/behind, submodules, bare and shallow flags.

Git itself answers every question (where the work tree and git directory are, shallow or bare,
remotes with their URL rewrites): no re-implementation of its discovery or config rules. The
``git`` command line is used directly, not GitPython (an import far costlier than the call;
figures in benchmarks/RESULTS.md), and each repository's commands run side by side: one
``status --porcelain=v2`` gives branch, upstream, ahead/behind, changed and untracked files at
once.
"""

from __future__ import annotations

import os
import stat

from runsnap.base import programs
from runsnap.base.cache import OwnFiles
from runsnap.base.digest import sha256, text_sha256
from runsnap.base.files import file_kind, read_head, read_regular
from runsnap.base.paths import resolve_path
from runsnap.base.records import Record, field

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


class Candidate(Record):
    """A directory that may be in a repository, and the git commands started for it."""

    path: str
    role: str
    """Why it is looked at: ``cwd``, ``--repo``, ``editable install of X``."""
    discovery: programs.Pending
    """``git rev-parse``: whether the directory is in a repository, and where (see
    :data:`DISCOVER`)."""
    state: dict[str, programs.Pending] | None = None
    """The repository's state commands, started speculatively from the directory (``git -C``
    reports the whole repository, with paths from its top); None when not started."""

    def answer(self) -> tuple[str, str, bool, bool] | None:
        """``(top, git_dir, bare, shallow)`` once git answered; None when the directory is in
        no repository or git failed (:meth:`problem` says which)."""
        res = self.discovery.wait()
        lines = res.text().splitlines()
        # A bare repository has no work tree, so --show-toplevel fails after the other three
        # answers were printed: judge by what was printed, not only by the exit status.
        bare = bool(lines) and lines[0] == "true"
        if len(lines) < 3 or not (bare or (res.ok and len(lines) >= 4)):
            return None
        return (lines[1] if bare else lines[3]), lines[1], bare, lines[2] == "true"

    def problem(self) -> str | None:
        """Why :meth:`answer` is None: None when the directory is simply in no repository."""
        res = self.discovery.wait()
        if b"not a git repository" in res.stderr:
            return None
        return f"{self.path} ({self.role}): {res.error_text()}"

    def cancel(self) -> None:
        """Stop what was started for this candidate."""
        self.discovery.cancel()
        if self.state:
            _cancel(self.state)
            self.state = None


#: What git is asked about every candidate directory, in one call.
DISCOVER = ("rev-parse", "--is-bare-repository", "--absolute-git-dir",
            "--is-shallow-repository", "--show-toplevel")


class GitPlan:
    """The git commands of one capture, started as early as each is known.

    The cwd's repository and every ``--repo`` are known before anything has run, so a plan
    begins their commands while the package probe and the other collectors work: the
    discovery ``rev-parse`` and, speculatively, the state commands run side by side. The
    editable installs' checkouts are known only from the probe; :func:`collect` adds them.
    ``runsnap capture`` makes one with :func:`prestart` before the rest of runsnap is imported
    and hands it to the capture (``CaptureContext.started["git"]``).
    """

    def __init__(self, child_env: Mapping[str, str], cwd: str, repos: Sequence[str],
                 max_diff_bytes: int) -> None:
        self.env = _git_env(child_env)
        self.git = programs.which("git", path=self.env["PATH"])
        self.errors: list[str] = []
        self.candidates: list[Candidate] = []
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
            cand.cancel()

    def add_editables(self, ctx: CaptureContext) -> None:
        """Add the editable installs' checkouts (needs the probe's answer); once."""
        if self.editables_added:
            return
        self.editables_added = True
        # An editable checkout is usually a repository of its own: read it speculatively too,
        # unless it lies inside a work tree already being read (then it may be the same one).
        tops = [_work_tree_top(c) for c in self.candidates]
        for path, role in _editable_candidates(ctx):
            inside = any(t and (path == t or path.startswith(t.rstrip(os.sep) + os.sep))
                         for t in tops)
            self.add(path, role, speculative=not inside)

    def add(self, path: str, role: str, speculative: bool) -> None:
        """Start asking git about ``path`` (and, if ``speculative``, reading its state)."""
        if self.git is None:
            return
        if not os.path.isdir(path):
            self.errors.append(f"{path} ({role}): no such directory")
            return
        discovery = programs.start([self.git, "-C", path, *DISCOVER], env=self.env, background=True)
        state = _start_state(self.git, path, False, self.env) if speculative else None
        self.candidates.append(Candidate(path, role, discovery, state))


def prestart(child_env: Mapping[str, str], cwd: str, repos: Sequence[str],
             max_diff_bytes: int) -> GitPlan | None:
    """Start git for a capture that is about to be made, before the rest of runsnap is imported.

    ``runsnap capture`` calls this first thing, so that ``git diff`` and ``git status`` run on
    the other core while runsnap imports and collects, and hands the plan to the capture
    (``started={"git": plan}``). :func:`start` takes it over when the capture's context is the
    same (cwd, ``--repo``, the environment git sees, the diff cap), and cancels it otherwise.
    None when it could not start (the capture then starts git itself).
    """
    try:
        return GitPlan(child_env, os.path.abspath(cwd), repos, max_diff_bytes)
    except Exception:  # noqa: BLE001
        # Only a head start: the capture starts git itself and records any failure in [git].
        return None


def start(ctx: CaptureContext) -> None:
    """Start git in the repositories known before the collectors run: the cwd's, every
    ``--repo``, and the editable installs' when the probe's answer is already at hand. A plan
    handed over in ``ctx.started["git"]`` (:func:`prestart`) is taken over if it suits."""
    plan = ctx.started.get("git")
    if isinstance(plan, GitPlan) and not plan.suits(ctx):
        plan.cancel()
        plan = None
    if not isinstance(plan, GitPlan):
        plan = GitPlan(ctx.env, ctx.cwd, ctx.repos, ctx.max_diff_bytes)
    if ctx.probe_ready():
        plan.add_editables(ctx)
    ctx.started["git"] = plan


def collect(ctx: CaptureContext) -> dict[str, Any]:
    """``{"repos": {name: {...}}, "not_repositories": [...], "errors": [...]}``."""
    if not isinstance(ctx.started.get("git"), GitPlan) or not ctx.started["git"].suits(ctx):
        start(ctx)
    plan: GitPlan = ctx.started.pop("git")
    if plan.git is None:
        return {"repos": {}, "errors": ["git not found on PATH: repositories not recorded"]}
    plan.add_editables(ctx)

    # 1. Which repository is each candidate in? Start each repository's state commands once
    #    (or keep the speculative ones), all repositories side by side.
    repos: dict[str, Repo] = {}  # keyed by toplevel (or git dir, when bare)
    not_repos: list[str] = []
    for cand in plan.candidates:
        found = cand.answer()
        if found is None:
            if cand.state:
                _cancel(cand.state)
            problem = cand.problem()
            if problem is None:
                not_repos.append(cand.path)
            else:
                plan.errors.append(problem)
            continue
        top, git_dir, bare, shallow = found
        repo = repos.get(top)
        if repo is None:
            if cand.state and not bare:
                started, cand.state = cand.state, None
            else:
                started = _start_state(plan.git, top, bare, plan.env)
            repo = repos[top] = Repo(top, bare, shallow, started, git_dir=git_dir)
            _start_submodules(plan, repo)
        if cand.state:
            _cancel(cand.state)  # a second name for a repository already being read
            cand.state = None
        if cand.role not in repo.roles:
            repo.roles.append(cand.role)

    # 2. Each repository's state.
    out: dict[str, dict[str, Any]] = {}
    for repo in repos.values():
        state = _finish_state(plan.git, repo, plan.env, plan.max_diff_bytes)
        name = _unique(out, os.path.basename(repo.path.rstrip(os.sep)) or "repo")
        out[name] = state
    section: dict[str, Any] = {"repos": out}
    if not_repos:
        section["not_repositories"] = not_repos
    section["errors"] = plan.errors
    return section


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


def _start_submodules(plan: GitPlan, repo: Repo) -> None:
    if plan.git and not repo.bare and os.path.exists(os.path.join(repo.path, ".gitmodules")):
        repo.started["submodules"] = programs.start(
            [plan.git, "-C", repo.path, "submodule", "status", "--recursive"], env=plan.env,
            background=True)


def _work_tree_top(cand: Candidate) -> str:
    """The work tree's top of a candidate ("" when none: bare, or no repository)."""
    found = cand.answer()
    return found[0] if found and not found[2] else ""


def _cancel(started: dict[str, programs.Pending]) -> None:
    for p in started.values():
        p.cancel()


def _unique(taken: dict[str, Any], name: str) -> str:
    if name not in taken:
        return name
    i = 2
    while f"{name}-{i}" in taken:
        i += 1
    return f"{name}-{i}"


def _start_state(git: str, path: str, bare: bool, env: dict[str, str]) -> dict[str, programs.Pending]:
    """Start the commands that read one repository's state; ``path`` may be inside it.

    A work tree: ``status --porcelain=v2 --branch`` (commit, branch, upstream, ahead/behind,
    changed and untracked files) and ``diff HEAD``; every repository: ``describe --tags``
    (without ``--always``: a repository without tags has no description, not the commit again)
    and ``remote -v`` (which applies ``url.*.insteadOf``). ``describe --dirty`` is not used: it
    refreshes the index a third time, and the status already says whether tracked files
    changed.
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
    cmds["describe"] = [*base, "describe", "--tags"]
    cmds["remotes"] = [*base, "remote", "-v"]
    return {name: programs.start(argv, env=env, background=True) for name, argv in cmds.items()}


def _finish_state(git: str, repo: Repo, env: dict[str, str], max_diff_bytes: int
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
    describe = _describe(git, repo, res["describe"], env) if state["commit"] else ""
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
