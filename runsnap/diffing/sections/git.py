"""``[git]``: per repository, another commit (with the commits between, when the repository is
here: :mod:`runsnap.diffing.gitlog`), branch, dirty vs clean, which files' uncommitted changes
differ, untracked files, remotes and submodules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runsnap.diffing.gitlog import CommitLog
from runsnap.diffing.result import Difference
from runsnap.diffing.rules import RankContext, Verdict
from runsnap.diffing.walk import declared, declared_score, dedupe, dotted, locator, walk
from runsnap.diffing.written import record, written
from runsnap.knowledge.datafiles import compiled_cache
from runsnap.snapshot.records import Git, GitRepo, UntrackedFile

__all__ = ["compare", "score", "split_patch"]


def compare(
    a: Mapping[str, Any], b: Mapping[str, Any], commit_log: CommitLog | None = None
) -> list[Difference]:
    """Per repository: another commit (with the commits between when the repository is here),
    branch, dirty vs clean, which files' uncommitted changes differ (a diff of the two diffs,
    file by file), untracked files added / removed / changed, remotes."""
    out: list[Difference] = []
    ra, rb = record(Git, a).repos, record(Git, b).repos
    for name, x in ra.items():
        if name not in rb:
            out.append(Difference("git", name, "removed", x.commit or x.path, None,
                                  evidence=(f"repository at {x.path}",),
                                  path=("git", name)))
        else:
            out += _repo(name, x, rb[name], commit_log)
    out += [Difference("git", n, "added", None, y.commit or y.path,
                       evidence=(f"repository at {y.path}",), path=("git", n))
            for n, y in rb.items() if n not in ra]
    return out


def _repo(
    name: str, x: GitRepo, y: GitRepo, commit_log: CommitLog | None
) -> list[Difference]:
    out: list[Difference] = []
    ca, cb = x.commit or "", y.commit or ""
    if ca != cb:
        evidence: list[str] = []
        if x.describe or y.describe:
            evidence.append(f"describe: {written(x, 'describe')} -> {written(y, 'describe')}")
        if commit_log and ca and cb:
            for path in dedupe([str(y.path or ""), str(x.path or "")]):
                found = commit_log(path, ca, cb) if path else None
                if found is not None:
                    evidence += found or ["(no commits between: the same history)"]
                    break
        out.append(Difference("git", f"{name}.commit", "changed", ca or None, cb or None,
                              evidence=tuple(evidence), path=("git", name, "commit")))
    out += declared("git", x.raw, y.raw, "git.repos", under=(name,), key=f"{name}.")
    if bool(x.dirty) != bool(y.dirty):
        # in words: "clean -> uncommitted changes", not a truth value
        out.append(Difference("git", f"{name}.dirty", "changed", _state(x), _state(y),
                              path=("git", name, "dirty")))
    if x.diff_sha256 != y.diff_sha256 or x.diff != y.diff:
        out += _diff_of_diffs(name, x, y)
    out += _untracked(name, x, y)
    for parts, change, fx, fy in walk(_submodules(x), _submodules(y)):
        out.append(Difference("git", f"{name}.submodules.{dotted(parts)}", change, fx, fy,
                              path=locator("git", name, "submodules", *parts)))
    where = ("git", name, "errors")
    for e in x.errors:
        if e not in y.errors:
            out.append(Difference("git", f"{name}.errors", "removed", e, None, path=where))
    for e in y.errors:
        if e not in x.errors:
            out.append(Difference("git", f"{name}.errors", "added", None, e, path=where))
    return out


def _state(repo: GitRepo) -> str:
    return "uncommitted changes" if repo.dirty else "clean"



def _diff_of_diffs(name: str, x: GitRepo, y: GitRepo) -> list[Difference]:
    out: list[Difference] = []
    pa, pb = split_patch(x.diff or ""), split_patch(y.diff or "")
    for path, patch in pa.items():
        if path not in pb:
            out.append(Difference("git", f"{name}: {path}", "removed", _stat(patch), None,
                                  evidence=("uncommitted changes in A only", *hunks(patch)),
                                  path=("git", name, "diff", path)))
        elif pb[path] != patch:
            out.append(Difference("git", f"{name}: {path}", "changed", _stat(patch),
                                  _stat(pb[path]), evidence=_patch_evidence(patch, pb[path]),
                                  path=("git", name, "diff", path)))
    out += [Difference("git", f"{name}: {p}", "added", None, _stat(patch),
                       evidence=("uncommitted changes in B only", *hunks(patch)),
                       path=("git", name, "diff", p))
            for p, patch in pb.items() if p not in pa]
    if not out and (x.diff_truncated or y.diff_truncated):
        out.append(Difference(
            "git", f"{name}.diff", "changed", x.diff_sha256, y.diff_sha256,
            evidence=("the uncommitted diffs differ beyond the part stored in the snapshots",),
            path=("git", name, "diff")))
    return out


def split_patch(diff: str) -> dict[str, str]:
    """A unified ``git diff`` split by file: path -> that file's patch (``index`` lines dropped,
    as they name blobs, not changes).

    >>> split_patch("diff --git a/x.py b/x.py\\nindex 1..2\\n--- a/x.py\\n+++ b/x.py\\n+1\\n")
    {'x.py': 'diff --git a/x.py b/x.py\\n--- a/x.py\\n+++ b/x.py\\n+1'}
    """
    files: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            current = files.setdefault(_patch_path(line[len("diff --git "):]), [])
        if current is None or line.startswith("index "):
            continue
        current.append(line)
    return {path: "\n".join(lines).rstrip("\n") for path, lines in files.items()}


def _patch_path(rest: str) -> str:
    """The file a ``diff --git`` header names (the ``b/`` side).

    >>> _patch_path("a/x y.py b/x y.py"), _patch_path('"a/t\\tab" "b/t\\tab"')
    ('x y.py', 't\\tab')
    """
    if rest.endswith('"'):  # git quotes names with unusual characters, C-style
        idx = rest.rfind(' "b/')
        if idx >= 0:
            return rest[idx + 4 : -1]
    n = len(rest)
    if n % 2 == 1:  # "a/P b/P": both halves name the same file unless it was renamed
        half = (n - 1) // 2
        left, right = rest[:half], rest[half + 1 :]
        if left[2:] == right[2:]:
            return right[2:]
    idx = rest.rfind(" b/")
    return rest[idx + 3 :] if idx >= 0 else rest


def hunks(patch: str, limit: int = 40) -> tuple[str, ...]:
    """A file's patch from its first hunk on (``@@`` lines and their ``+``/``-``/`` `` lines,
    as ``git diff`` shows them), without the headers the difference already names.

    >>> hunks("diff --git a/x b/x\\n--- a/x\\n+++ b/x\\n@@ -1 +1 @@\\n-a\\n+b")
    ('@@ -1 +1 @@', '-a', '+b')
    """
    lines = patch.split("\n")
    start = next((i for i, line in enumerate(lines) if line.startswith("@@")), len(lines))
    body = lines[start:]
    if len(body) > limit:
        body = [*body[:limit], f"... {len(body) - limit} more lines"]
    return tuple(body)


def _patch_evidence(pa: str, pb: str, limit: int = 40) -> tuple[str, ...]:
    la, lb = pa.split("\n"), pb.split("\n")
    if len(la) + len(lb) > 4000:  # difflib is quadratic; say how big instead
        return (f"patch of {len(la)} lines in A, {len(lb)} lines in B",)
    import difflib  # only where two patches differ (~1.5 ms to import)

    lines = list(difflib.unified_diff(la, lb, "A", "B", n=1, lineterm=""))[2:]
    if len(lines) > limit:
        lines = [*lines[:limit], f"... {len(lines) - limit} more lines"]
    return tuple(lines)


def _stat(patch: str) -> str:
    """``+3 -1`` for one file's patch.

    >>> _stat("--- a/x\\n+++ b/x\\n@@ -1 +1 @@\\n-a\\n+b\\n+c")
    'uncommitted +2 -1'
    """
    plus = minus = 0
    for line in patch.split("\n"):
        if line.startswith("+") and not line.startswith("+++"):
            plus += 1
        elif line.startswith("-") and not line.startswith("---"):
            minus += 1
    return f"uncommitted +{plus} -{minus}"


def _untracked(name: str, x: GitRepo, y: GitRepo) -> list[Difference]:
    ua = {u.path: u for u in x.untracked}
    ub = {u.path: u for u in y.untracked}
    out: list[Difference] = []
    for path, u in ua.items():
        if path not in ub:
            out.append(Difference("git", f"{name}: {path}", "removed", _untracked_desc(u), None,
                                  evidence=("untracked file in A only",),
                                  path=locator("git", name, "untracked", str(path))))
        elif _untracked_desc(ub[path]) != _untracked_desc(u):
            out.append(Difference("git", f"{name}: {path}", "changed", _untracked_desc(u),
                                  _untracked_desc(ub[path]),
                                  evidence=("untracked file with other content",),
                                  path=locator("git", name, "untracked", str(path))))
    out += [Difference("git", f"{name}: {p}", "added", None, _untracked_desc(u),
                       evidence=("untracked file in B only",),
                       path=locator("git", name, "untracked", str(p)))
            for p, u in ub.items() if p not in ua]
    return out


def _untracked_desc(u: UntrackedFile) -> str:
    """``untracked, 12 bytes, sha256 ab12cd34ef56``."""
    parts = ["untracked"]
    if u.has("link"):
        parts.append(f"link to {u.link}")
    if u.has("size"):
        parts.append(f"{u.size} bytes")
    if u.sha256:
        parts.append(f"sha256 {str(u.sha256)[:12]}")
    if u.error:
        parts.append(str(u.error))
    return ", ".join(parts)


def _submodules(repo: GitRepo) -> dict[str, Any]:
    return {str(s.path if s.has("path") else i): written(s, "commit")
            for i, s in enumerate(repo.submodules)}


_CODE = (".py", ".so", ".pth", ".cu", ".cpp", ".c", ".h", ".pyx", ".sh")


def score(d: Difference, rules: RankContext) -> Verdict:
    """Another commit (82) and other uncommitted changes to a file (80): the code changed;
    a compiled cache (``__pycache__/*.pyc``) listed by git: hidden, never a candidate;
    submodules (78); untracked files (65 for code, 55 else); dirty vs clean (50); the fields
    compared from their declaration (branch 35: the commit decides the code; remotes 15...) as
    ``GitRepo`` in :mod:`runsnap.snapshot.shapes` scores them."""
    repo, sep, path = d.key.partition(": ")
    if sep and compiled_cache(path):
        return 0, "a compiled cache the interpreter writes (__pycache__, .pyc): not an input", True
    if sep:
        if any("uncommitted" in e for e in d.evidence) or "uncommitted" in str(d.a or d.b):
            what = "the code that runs" if path.endswith(_CODE) else "the file's content"
            return 80, f"uncommitted changes to this file differ: {what} differs", False
        if path.endswith((".py", ".so", ".pth", ".cu", ".cpp", ".yaml", ".json", ".toml")):
            return 65, "an untracked code or config file: it runs or is read if found", False
        return 55, "an untracked file differs", False
    if d.evidence and d.evidence[0].startswith("repository at"):
        return 70, "a repository present in one run only", False
    if ".submodules." in d.key:
        return 78, "a submodule at another commit", False
    by_declaration = declared_score("git.repos", d.path[2]) if len(d.path) > 2 else None
    if by_declaration is not None:  # branch, upstream, remotes...: runsnap/snapshot/shapes.py
        return (*by_declaration, False)
    field = d.key.rpartition(".")[2]
    table: dict[str, tuple[int, str]] = {
        "commit": (82, "another commit: the code changed"),
        "diff": (78, "the uncommitted changes differ"),
        "dirty": (50, "uncommitted changes in one working tree only"),
        "errors": (20, "the capture could not see something in one run"),
    }
    if field in table:
        return (*table[field], False)
    return 15, "repository metadata", False
