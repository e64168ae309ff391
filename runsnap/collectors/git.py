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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runsnap import shell
from runsnap.context import resolve_path

if TYPE_CHECKING:
    from runsnap.context import CaptureContext

#: Untracked files up to this size get a sha256.
UNTRACKED_HASH_MAX = 256 * 1024
#: At most this many untracked files are listed per repository (a data directory can hold
#: millions); the count is always exact.
UNTRACKED_LIST_MAX = 2000
#: How much of an over-cap diff is kept.
DIFF_HEAD_BYTES = 64 * 1024


def _git_env(ctx: CaptureContext) -> dict[str, str]:
    env = {k: v for k, v in ctx.env.items() if not k.startswith("GIT_")}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    # The child's PATH decides which git, but fall back to ours if the child has none.
    env.setdefault("PATH", os.environ.get("PATH", os.defpath))
    return env


def _candidates(ctx: CaptureContext) -> list[tuple[str, str]]:
    """(path, role) pairs: where to look for repositories and why."""
    out = [(ctx.cwd, "cwd")]
    out += [(str(resolve_path(r, ctx.cwd)), "--repo") for r in ctx.repos]
    dists = ctx.probe.get("distributions", [])
    out += [
        (d["source"], f"editable install of {d['name']}")
        for d in dists
        if d.get("editable") and d.get("source")
    ]
    return out


def collect(ctx: CaptureContext) -> dict[str, Any]:
    """``{"repos": {name: {...}}, "not_repositories": [...], "errors": [...]}``."""
    errors: list[str] = []
    env = _git_env(ctx)
    git = shell.which("git", path=env["PATH"])
    if git is None:
        return {"repos": {}, "errors": ["git not found on PATH: repositories not recorded"]}

    # 1. Where is each candidate's repository? (one rev-parse each, side by side)
    pending = []
    for path, role in _candidates(ctx):
        if not os.path.isdir(path):
            errors.append(f"{path} ({role}): no such directory")
            continue
        argv = [git, "-C", path, "rev-parse", "--is-bare-repository", "--absolute-git-dir",
                "--is-shallow-repository", "--show-toplevel"]
        pending.append((path, role, shell.start(argv, env=env)))
    repos: dict[str, dict[str, Any]] = {}  # keyed by toplevel (or git dir, when bare)
    not_repos: list[str] = []
    for path, role, p in pending:
        res = p.wait()
        lines = res.text().splitlines()
        # A bare repository has no work tree, so --show-toplevel fails after the other three
        # answers were printed: judge by what was printed, not only by the exit status.
        bare = bool(lines) and lines[0] == "true"
        if len(lines) < 3 or not (bare or (res.ok and len(lines) >= 4)):
            if b"not a git repository" in res.stderr:
                not_repos.append(path)
            else:
                errors.append(f"{path} ({role}): {res.error_line()}")
            continue
        top = lines[1] if bare else lines[3]
        entry = repos.setdefault(
            top, {"path": top, "roles": [], "bare": bare, "shallow": lines[2] == "true"}
        )
        if role not in entry["roles"]:
            entry["roles"].append(role)

    # 2. Each repository's state, all repositories side by side.
    started = {key: _start_state(git, entry, env) for key, entry in repos.items()}
    out: dict[str, dict[str, Any]] = {}
    for key, entry in repos.items():
        state = _finish_state(git, entry, started[key], env, ctx.max_diff_bytes)
        name = _unique(out, Path(entry["path"]).name or "repo")
        out[name] = state
    section: dict[str, Any] = {"repos": out}
    if not_repos:
        section["not_repositories"] = not_repos
    section["errors"] = errors
    return section


def _unique(taken: dict[str, Any], name: str) -> str:
    if name not in taken:
        return name
    i = 2
    while f"{name}-{i}" in taken:
        i += 1
    return f"{name}-{i}"


def _start_state(git: str, entry: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    path = entry["path"]
    base = [git, "-C", path, "-c", "core.quotepath=off"]
    cmds = {
        "head": [*base, "rev-parse", "--verify", "-q", "HEAD"],
        "describe": [*base, "describe", "--always", "--tags", "--dirty"],
        "remotes": [*base, "remote", "-v"],
    }
    if not entry["bare"]:
        cmds["status"] = [*base, "status", "--porcelain=v2", "--branch",
                          "--untracked-files=all", "-z"]
        cmds["diff"] = [*base, "diff", "HEAD", "--no-color", "--no-ext-diff"]
        if os.path.exists(os.path.join(path, ".gitmodules")):
            cmds["submodules"] = [*base, "submodule", "status", "--recursive"]
    else:
        cmds["branch"] = [*base, "symbolic-ref", "-q", "--short", "HEAD"]
        cmds["describe"] = [*base, "describe", "--always", "--tags"]
    return {name: shell.start(argv, env=env) for name, argv in cmds.items()}


def _finish_state(
    git: str, entry: dict[str, Any], started: dict[str, Any], env: dict[str, str],
    max_diff_bytes: int,
) -> dict[str, Any]:
    res = {name: p.wait() for name, p in started.items()}
    errors: list[str] = []
    state: dict[str, Any] = {
        "path": entry["path"],
        "roles": entry["roles"],
        "commit": res["head"].text().strip() if res["head"].ok else "",
    }
    if not state["commit"]:
        state["unborn"] = True  # a repository with no commit yet
    state["describe"] = res["describe"].text().strip() if res["describe"].ok else ""
    state["bare"] = entry["bare"]
    state["shallow"] = entry["shallow"]

    if entry["bare"]:
        state["branch"] = res["branch"].text().strip()
        state["detached"] = not state["branch"]
    else:
        st = res["status"]
        if st.ok:
            state.update(_parse_status(st.stdout, entry["path"]))
        else:
            errors.append(st.error_line())
        diff = res["diff"]
        if diff.ok:
            state.update(_diff_fields(git, entry["path"], diff.stdout, env, max_diff_bytes))
        elif state.get("unborn"):
            state["diff"] = ""
        else:
            errors.append(diff.error_line())
        if "submodules" in res:
            state["submodules"] = _parse_submodules(res["submodules"], errors)
    state["remotes"] = _parse_remotes(res["remotes"].text()) if res["remotes"].ok else {}
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
        if rec.startswith("# branch.head "):
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
    out["dirty"] = bool(changed or untracked)
    out["changed"] = changed
    out["untracked_count"] = len(untracked)
    out["untracked"] = [_untracked(top, p) for p in untracked[:UNTRACKED_LIST_MAX]]
    if len(untracked) > UNTRACKED_LIST_MAX:
        out["untracked_truncated"] = True
    return out


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
