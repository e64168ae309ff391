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

from runsnap.base import programs
from runsnap.base.paths import resolve_path
from runsnap.base.pythons import editable_source
from runsnap.base.records import Record
from runsnap.capturing.collectors.git_state import (
    Repo,
    cancel,
    finish_state,
    start_describe,
    start_state,
    unique_name,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from runsnap.capturing.context import CaptureContext


#: Past this many variables, git gets only those it or the programs it may start read
#: (:func:`_git_env`): git looks variables up with ``getenv``, one pass over the environment
#: each, and with 10,000 variables each of the 15 git processes of a capture cost ~40 ms more.
GIT_ENV_MAX = 1000
#: The variables git and its helpers (credential, ssh, gpg, LFS filters) read, by name and by
#: prefix (git's own ``GIT_*`` are the child's and never passed: see :func:`_git_env`).
_GIT_READS = frozenset({
    "HOME", "PATH", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "TERM", "LANG", "LANGUAGE",
    "PWD", "EMAIL", "EDITOR", "VISUAL", "PAGER", "NO_COLOR", "COLUMNS", "DISPLAY",
    "GNUPGHOME", "PREFIX", "SYSTEMROOT"})
_GIT_READS_PREFIX = ("XDG_", "LC_", "SSH_", "GPG_", "CURL_", "SSL_", "LFS_")


def _git_reads(name: str) -> bool:
    """Whether git or a program it may start reads the variable ``name``.

    >>> [_git_reads(n) for n in ("HOME", "LC_ALL", "https_proxy", "APP_SETTING_01")]
    [True, True, True, False]
    """
    return (name in _GIT_READS or name.startswith(_GIT_READS_PREFIX)
            or name.lower().endswith("_proxy"))


def _git_env(child_env: Mapping[str, str]) -> dict[str, str]:
    """The environment runsnap's git runs with: the child's, less its ``GIT_*`` variables,
    with git's messages in English and no locks or prompts; of a very large environment (over
    :data:`GIT_ENV_MAX` variables) only what git reads."""
    env = {k: v for k, v in child_env.items() if not k.startswith("GIT_")}
    if len(env) > GIT_ENV_MAX:
        env = {k: v for k, v in env.items() if _git_reads(k)}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    # The child's PATH decides which git, but fall back to ours if the child has none.
    env.setdefault("PATH", os.environ.get("PATH", os.defpath))
    return env


def _editable_candidates(ctx: CaptureContext) -> list[tuple[str, str]]:
    """(path, role) for the source checkout of every editable install (needs the probe)."""
    return [
        (source, f"editable install of {d['name']}")
        for d in ctx.probe["distributions"] if (source := editable_source(d))
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
        parsed = _discovered(res.text())
        # A bare repository has no work tree, so --show-toplevel (the last question) fails
        # after the others were answered: judge by what was printed, not only by the status.
        if parsed is None:
            return None
        bare, git_dir, shallow, _tags, top = parsed
        if not (bare or (res.ok and top)):
            return None
        return (git_dir if bare else top), git_dir, bare, shallow

    def has_tags(self) -> bool:
        """Whether the repository has a tag (``--tags`` lists one object name a line between
        the shallow flag and the top): without one, ``describe --tags`` has nothing to say,
        and is not run."""
        parsed = _discovered(self.discovery.wait().text())
        return self.answer() is not None and parsed is not None and parsed[3] > 0


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
            cancel(self.state)
            self.state = None


def _discovered(text: str) -> tuple[bool, str, bool, int, str] | None:
    """``(bare, git_dir, shallow, tags, top)`` from :data:`DISCOVER`'s answer, one line each,
    paths whole even when they hold a newline (git prints them as they are): the git folder
    runs up to the shallow flag, the tags are object names (hex), and the top is the absolute
    path after them. None when git said too little.

    >>> _discovered("false\\n/r/a\\nb/.git\\nfalse\\n/r/a\\nb\\n")
    (False, '/r/a\\nb/.git', False, 0, '/r/a\\nb')
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    flag = next((i for i in range(2, len(lines)) if lines[i] in ("true", "false")), None)
    if flag is None:
        return None
    rest = lines[flag + 1:]
    at = next((j for j, line in enumerate(rest) if line.startswith("/")), len(rest))
    return (lines[0] == "true", "\n".join(lines[1:flag]), lines[flag] == "true", at,
            "\n".join(rest[at:]))

#: What git is asked about every candidate directory, in one call (``--tags``: whether
#: ``describe`` is worth a process of its own; see :meth:`Candidate.has_tags`).
DISCOVER = ("rev-parse", "--is-bare-repository", "--absolute-git-dir",
            "--is-shallow-repository", "--tags", "--show-toplevel")


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
        self._made_from = dict(child_env)  # os.environ read once (it decodes each item)
        """The environment :attr:`env` was made from (comparing it is cheaper than making
        :attr:`env` again: with 10,000 variables, ~10 ms a time)."""
        self.env = _git_env(self._made_from)
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
                and (ctx.env == self._made_from or self.env == _git_env(ctx.env)))

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
        state = start_state(self.git, path, False, self.env) if speculative else None
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
                cancel(cand.state)
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
                started = start_state(plan.git, top, bare, plan.env)
            if cand.has_tags():
                started["describe"] = start_describe(plan.git, top, plan.env)
            repo = repos[top] = Repo(top, bare, shallow, started, git_dir=git_dir)
            _start_submodules(plan, repo)
        if cand.state:
            cancel(cand.state)  # a second name for a repository already being read
            cand.state = None
        if cand.role not in repo.roles:
            repo.roles.append(cand.role)

    # 2. Each repository's state.
    out: dict[str, dict[str, Any]] = {}
    for repo in repos.values():
        state = finish_state(plan.git, repo, plan.env, plan.max_diff_bytes)
        name = unique_name(out, os.path.basename(repo.path.rstrip(os.sep)) or "repo")
        out[name] = state
    section: dict[str, Any] = {"repos": out}
    if not_repos:
        section["not_repositories"] = not_repos
    section["errors"] = plan.errors
    return section


def _start_submodules(plan: GitPlan, repo: Repo) -> None:
    if plan.git and not repo.bare and os.path.exists(os.path.join(repo.path, ".gitmodules")):
        repo.started["submodules"] = programs.start(
            [plan.git, "-C", repo.path, "submodule", "status", "--recursive"], env=plan.env,
            background=True)


def _work_tree_top(cand: Candidate) -> str:
    """The work tree's top of a candidate ("" when none: bare, or no repository)."""
    found = cand.answer()
    return found[0] if found and not found[2] else ""


