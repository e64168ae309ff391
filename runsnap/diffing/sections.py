"""What "different" means for each snapshot section.

Each comparer takes the two sections (``{}`` when a snapshot lacks one) and returns a list of
unranked :class:`Difference` records (score 0, no reason: :mod:`runsnap.diffing.rank` fills
those in). They are pure functions over plain data, except :func:`commits_between`, the one
optional look at this machine: ``git log A..B`` in a repository that is here.

Speed: a plain recursive walk, not DeepDiff. On two 250 KB sections DeepDiff costs ~100 ms to
import and ~24 ms to compare, the walk ~0.4 ms, and the walk yields the exact keys and change
kinds the report needs without translating DeepDiff's tree.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from runsnap.argv import positionals
from runsnap.diffing.report import Difference
from runsnap.knowledge.env import list_separator, split_list

__all__ = [
    "COMPARERS",
    "compare_section",
    "CommitLog",
    "command",
    "commits_between",
    "env",
    "errors",
    "generic",
    "git",
    "models",
    "outcome",
    "packages",
    "system",
    "walk",
]

#: ``commits_between(repo_path, sha_a, sha_b)`` -> evidence lines, or None when unknown.
CommitLog = Callable[[str, str, str], "list[str] | None"]

def compare_lists(xs: Sequence[str], ys: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """The change kind and evidence lines for two lists whose order matters.

    >>> compare_lists(["/a", "/b", "/c"], ["/b", "/a", "/c"])
    ('reordered', ('moved: /b (position 2 in A, 1 in B)',))
    >>> compare_lists(["0", "1"], ["0", "1", "2"])
    ('changed', ('added: 2 (position 3)',))
    """
    in_a, in_b = set(xs), set(ys)
    lines: list[str] = []
    lines += [f"added: {y} (position {i + 1})" for i, y in enumerate(ys) if y not in in_a]
    lines += [f"removed: {x} (was position {i + 1})" for i, x in enumerate(xs) if x not in in_b]
    common_a = _dedupe(x for x in xs if x in in_b)
    common_b = _dedupe(y for y in ys if y in in_a)
    moved: list[str] = []
    if common_a != common_b:
        matcher = difflib.SequenceMatcher(None, common_a, common_b, autojunk=False)
        kept = {common_a[blk.a + k] for blk in matcher.get_matching_blocks()
                for k in range(blk.size)}
        pos_a = {x: i + 1 for i, x in reversed(list(enumerate(xs)))}
        pos_b = {y: i + 1 for i, y in reversed(list(enumerate(ys)))}
        moved = [f"moved: {x} (position {pos_a[x]} in A, {pos_b[x]} in B)"
                 for x in common_a if x not in kept]
    if not lines and not moved and list(xs) != list(ys):
        lines.append("the same entries, repeated differently")
    change = "reordered" if moved and not lines else "changed"
    return change, tuple(lines + moved)


def _dedupe(items: Any) -> list[str]:
    seen: set[str] = set()
    return [x for x in items if not (x in seen or seen.add(x))]  # type: ignore[func-returns-value]


# --------------------------------------------------------------------------- generic walk


def walk(a: Any, b: Any, path: str = "") -> Iterator[tuple[str, str, Any, Any]]:
    """``(path, change, a, b)`` for every leaf that differs between two plain values.

    Tables are walked key by key (``text_config.rope_scaling.factor``); lists of equal length
    item by item (``architectures[0]``); lists of other lengths are one change.

    >>> list(walk({"x": {"y": 1, "z": [1, 2]}}, {"x": {"y": 2, "z": [1, 3]}, "w": True}))
    [('x.y', 'changed', 1, 2), ('x.z[1]', 'changed', 2, 3), ('w', 'added', None, True)]
    """
    if a == b:
        return
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for k in a:
            sub = f"{path}.{k}" if path else str(k)
            if k not in b:
                yield sub, "removed", a[k], None
            else:
                yield from walk(a[k], b[k], sub)
        for k in b:
            if k not in a:
                yield (f"{path}.{k}" if path else str(k)), "added", None, b[k]
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from walk(x, y, f"{path}[{i}]")
        return
    yield path, "changed", a, b


def generic(section: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """A section this runsnap has no special rules for: every leaf that differs."""
    a = {k: v for k, v in a.items() if k != "errors"}
    b = {k: v for k, v in b.items() if k != "errors"}
    return [Difference(section, key, change, x, y) for key, change, x, y in walk(a, b)]


def errors(section: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Collector errors present in one snapshot only: the capture could not see something."""
    ea, eb = list(a.get("errors") or []), list(b.get("errors") or [])
    out = [Difference(section, "errors", "removed", e, None) for e in ea if e not in eb]
    out += [Difference(section, "errors", "added", None, e) for e in eb if e not in ea]
    return out


def keyed(section: str, a: Mapping[str, Any], b: Mapping[str, Any], label: str = "{}",
          changed_evidence: tuple[str, ...] = ()) -> list[Difference]:
    """Entries of a table keyed by name: removed (in A only), changed, then added (in B only).

    >>> [(d.key, d.change) for d in keyed("command", {"tp": "8", "x": True}, {"tp": "4"},
    ...                                   "--{}")]
    [('--tp', 'changed'), ('--x', 'removed')]
    """
    out: list[Difference] = []
    for k, x in a.items():
        if k not in b:
            out.append(Difference(section, label.format(k), "removed", x, None))
        elif b[k] != x:
            out.append(Difference(section, label.format(k), "changed", x, b[k],
                                  evidence=changed_evidence))
    out += [Difference(section, label.format(k), "added", None, y) for k, y in b.items()
            if k not in a]
    return out


# --------------------------------------------------------------------------- env


def env(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Variables added, removed, changed; list-like values (``PATH``, ``CUDA_VISIBLE_DEVICES``)
    compared entry by entry, so a reordering is called ``reordered``."""
    va: Mapping[str, Any] = a.get("vars") or {}
    vb: Mapping[str, Any] = b.get("vars") or {}
    out: list[Difference] = []
    for name, x in va.items():
        y = vb.get(name)
        if y is None:
            out.append(Difference("env", name, "removed", x, None))
        elif x != y:
            out.append(_env_changed(name, x, y))
    out += [Difference("env", n, "added", None, y) for n, y in vb.items() if n not in va]
    return out


def _env_changed(name: str, x: Any, y: Any) -> Difference:
    if isinstance(x, str) and isinstance(y, str):
        sep = list_separator(name, x, y)
        if sep:
            change, evidence = compare_lists(split_list(x, sep), split_list(y, sep))
            return Difference("env", name, change, x, y, evidence=evidence)
    return Difference("env", name, "changed", x, y)


# --------------------------------------------------------------------------- command


def command(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """argv option by option (``--tp`` added, removed, given another value), the remaining
    arguments position by position, the resolved executable (same ``python``, another
    interpreter) and the working directory."""
    out = keyed("command", a.get("options") or {}, b.get("options") or {}, "--{}")
    pa, pb = positionals(a.get("argv") or []), positionals(b.get("argv") or [])
    if pa != pb:
        if len(pa) == len(pb):
            for i, (x, y) in enumerate(zip(pa, pb, strict=True)):
                if x != y:
                    out.append(Difference("command", "program" if i == 0 else f"argument {i}",
                                          "changed", x, y))
        else:
            evidence = tuple(line for line in difflib.ndiff(pa, pb) if line[:1] in "+-")
            out.append(Difference("command", "arguments", "changed", pa, pb, evidence=evidence))
    ra, rb = a.get("executable_real") or "", b.get("executable_real") or ""
    if (ra or rb) and ra != rb:
        ea, eb = a.get("executable") or "", b.get("executable") or ""
        evidence = (f"A: {ea} -> {ra}", f"B: {eb} -> {rb}")
        out.append(Difference("command", "executable", "changed", ra or None, rb or None,
                              evidence=evidence))
    if a.get("cwd") != b.get("cwd") and (a.get("cwd") or b.get("cwd")):
        out.append(Difference("command", "cwd", "changed", a.get("cwd"), b.get("cwd")))
    return out


# --------------------------------------------------------------------------- packages

_NORMALIZE = re.compile(r"[-_.]+")


def _norm(name: str) -> str:
    return _NORMALIZE.sub("-", name).lower()


def version_change(x: str, y: str) -> str:
    """``upgraded``, ``downgraded`` or ``changed`` (PEP 440; unparsable versions: ``changed``).

    >>> version_change("2.9.0", "2.10.0"), version_change("1.0", "1.0rc1"), version_change("a", "b")
    ('upgraded', 'downgraded', 'changed')
    """
    from packaging.version import InvalidVersion, Version

    try:
        va, vb = Version(x), Version(y)
    except InvalidVersion:
        return "changed"
    if vb > va:
        return "upgraded"
    if vb < va:
        return "downgraded"
    return "changed"  # equal by PEP 440 but spelt differently (1.0 vs 1.0.0)


def packages(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """The interpreter, then distributions added / removed / upgraded / downgraded (PEP 440), and
    an install location or editable source that moved even when the version is equal."""
    out: list[Difference] = []
    for key, label in (("interpreter_real", "interpreter"), ("python_version", "python_version"),
                       ("implementation", "implementation")):
        x, y = a.get(key), b.get(key)
        if x != y and (x or y):
            ev: tuple[str, ...] = ()
            if key == "interpreter_real":
                ev = (f"A: {a.get('interpreter')} ({a.get('reason', '')})",
                      f"B: {b.get('interpreter')} ({b.get('reason', '')})")
            out.append(Difference("packages", label, "changed", x, y, evidence=ev))
    sa, sb = list(a.get("sys_path") or []), list(b.get("sys_path") or [])
    if sa != sb and (sa or sb) and a.get("distributions") is not None:
        change, ev = compare_lists(sa, sb)
        out.append(Difference("packages", "sys.path", change, sa, sb, evidence=ev))
    da = {_norm(k): (k, v) for k, v in (a.get("distributions") or {}).items()}
    db = {_norm(k): (k, v) for k, v in (b.get("distributions") or {}).items()}
    for norm, (name, x) in da.items():
        if norm not in db:
            out.append(Difference("packages", name, "removed", x.get("version"), None,
                                  evidence=(f"was at {x.get('location', '?')}",)))
            continue
        y = db[norm][1]
        vx, vy = str(x.get("version", "")), str(y.get("version", ""))
        moved = list(_dist_fields(x, y))
        if vx != vy:  # where the other version lives is evidence, not another difference
            ev = tuple(f"{field}: {fx} -> {fy}" for field, fx, fy in moved)
            out.append(Difference("packages", name, version_change(vx, vy), vx, vy, evidence=ev))
            continue
        for field, fx, fy in moved:
            out.append(Difference("packages", f"{name}.{field}", "changed", fx, fy))
    for norm, (name, y) in db.items():
        if norm not in da:
            out.append(Difference("packages", name, "added", None, y.get("version"),
                                  evidence=(f"at {y.get('location', '?')}",)))
    shadow_a = {(_norm(s.get("name", "")), s.get("location", "")): s
                for s in a.get("shadowed") or []}
    shadow_b = {(_norm(s.get("name", "")), s.get("location", "")): s
                for s in b.get("shadowed") or []}
    for k, s in shadow_a.items():
        if k not in shadow_b:
            out.append(Difference("packages", f"{s.get('name')}.shadowed", "removed",
                                  f"{s.get('version')} at {k[1]}", None))
    for k, s in shadow_b.items():
        if k not in shadow_a:
            out.append(Difference("packages", f"{s.get('name')}.shadowed", "added", None,
                                  f"{s.get('version')} at {k[1]}"))
    return out


def _dist_fields(x: Mapping[str, Any], y: Mapping[str, Any]) -> Iterator[tuple[str, Any, Any]]:
    for field in ("location", "editable", "source"):
        if x.get(field) != y.get(field):
            yield field, x.get(field), y.get(field)
    # direct_url.url and .editable are already compared as source and editable.
    skip = {"editable", "url"} if "source" in x and "source" in y else {"editable"}
    for path, _change, fx, fy in walk(x.get("direct_url") or {}, y.get("direct_url") or {}):
        if path not in skip:
            yield f"direct_url.{path}", fx, fy


# --------------------------------------------------------------------------- git


def commits_between(path: str, sha_a: str, sha_b: str) -> list[str] | None:
    """Commits in B not in A (``+``) and in A not in B (``-``), like ``git log --oneline A..B``.

    The one place diff looks at this machine: it runs only when the repository is here and both
    commits are in it; otherwise None.
    """
    from runsnap import shell

    if not os.path.isdir(path):
        return None
    git = shell.which("git")
    if git is None:
        return None
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    base = [git, "-C", path, "-c", "core.quotepath=off"]
    check = shell.run([*base, "cat-file", "-e", f"{sha_a}^{{commit}}"], env=env)
    check_b = shell.run([*base, "cat-file", "-e", f"{sha_b}^{{commit}}"], env=env)
    if not (check.ok and check_b.ok):
        return None
    lines: list[str] = []
    for sign, rng in (("+", f"{sha_a}..{sha_b}"), ("-", f"{sha_b}..{sha_a}")):
        res = shell.run([*base, "log", "--oneline", "--no-decorate", "-n", "51", rng], env=env)
        if not res.ok:
            return None
        found = res.text().splitlines()
        lines += [f"{sign} {c}" for c in found[:50]]
        if len(found) > 50:
            lines.append(f"{sign} ... (more)")
    return lines


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


def _patch_evidence(pa: str, pb: str, limit: int = 40) -> tuple[str, ...]:
    la, lb = pa.split("\n"), pb.split("\n")
    if len(la) + len(lb) > 4000:  # difflib is quadratic; say how big instead
        return (f"patch of {len(la)} lines in A, {len(lb)} lines in B",)
    lines = list(difflib.unified_diff(la, lb, "A", "B", n=1, lineterm=""))[2:]
    if len(lines) > limit:
        lines = [*lines[:limit], f"... {len(lines) - limit} more lines"]
    return tuple(lines)


def git(
    a: Mapping[str, Any], b: Mapping[str, Any], commit_log: CommitLog | None = None
) -> list[Difference]:
    """Per repository: another commit (with the commits between when the repository is here),
    branch, dirty vs clean, which files' uncommitted changes differ (a diff of the two diffs,
    file by file), untracked files added / removed / changed, remotes."""
    out: list[Difference] = []
    ra: Mapping[str, Any] = a.get("repos") or {}
    rb: Mapping[str, Any] = b.get("repos") or {}
    for name, x in ra.items():
        if name not in rb:
            out.append(Difference("git", name, "removed", x.get("commit") or x.get("path"), None,
                                  evidence=(f"repository at {x.get('path')}",)))
        else:
            out += _repo(name, x, rb[name], commit_log)
    out += [Difference("git", n, "added", None, y.get("commit") or y.get("path"),
                       evidence=(f"repository at {y.get('path')}",))
            for n, y in rb.items() if n not in ra]
    return out


def _repo(
    name: str, x: Mapping[str, Any], y: Mapping[str, Any], commit_log: CommitLog | None
) -> list[Difference]:
    out: list[Difference] = []
    ca, cb = x.get("commit") or "", y.get("commit") or ""
    if ca != cb:
        evidence: list[str] = []
        if x.get("describe") or y.get("describe"):
            evidence.append(f"describe: {x.get('describe', '')} -> {y.get('describe', '')}")
        if commit_log and ca and cb:
            for path in _dedupe([str(y.get("path") or ""), str(x.get("path") or "")]):
                found = commit_log(path, ca, cb) if path else None
                if found is not None:
                    evidence += found or ["(no commits between: the same history)"]
                    break
        out.append(Difference("git", f"{name}.commit", "changed", ca or None, cb or None,
                              evidence=tuple(evidence)))
    out += [Difference("git", f"{name}.{field}", "changed", x.get(field), y.get(field))
            for field in ("branch", "detached", "dirty", "upstream")
            if x.get(field) != y.get(field)]
    if x.get("diff_sha256") != y.get("diff_sha256") or x.get("diff") != y.get("diff"):
        out += _diff_of_diffs(name, x, y)
    out += _untracked(name, x, y)
    for key, change, fx, fy in walk(x.get("remotes") or {}, y.get("remotes") or {}):
        out.append(Difference("git", f"{name}.remotes.{key}", change, fx, fy))
    for key, change, fx, fy in walk(_submodules(x), _submodules(y)):
        out.append(Difference("git", f"{name}.submodules.{key}", change, fx, fy))
    for e in x.get("errors") or []:
        if e not in (y.get("errors") or []):
            out.append(Difference("git", f"{name}.errors", "removed", e, None))
    for e in y.get("errors") or []:
        if e not in (x.get("errors") or []):
            out.append(Difference("git", f"{name}.errors", "added", None, e))
    return out


def _diff_of_diffs(name: str, x: Mapping[str, Any], y: Mapping[str, Any]) -> list[Difference]:
    out: list[Difference] = []
    pa, pb = split_patch(x.get("diff") or ""), split_patch(y.get("diff") or "")
    for path, patch in pa.items():
        if path not in pb:
            out.append(Difference("git", f"{name}: {path}", "removed", _stat(patch), None,
                                  evidence=("uncommitted changes in A only",)))
        elif pb[path] != patch:
            out.append(Difference("git", f"{name}: {path}", "changed", _stat(patch),
                                  _stat(pb[path]), evidence=_patch_evidence(patch, pb[path])))
    out += [Difference("git", f"{name}: {p}", "added", None, _stat(patch),
                       evidence=("uncommitted changes in B only",))
            for p, patch in pb.items() if p not in pa]
    if not out and (x.get("diff_truncated") or y.get("diff_truncated")):
        out.append(Difference(
            "git", f"{name}.diff", "changed", x.get("diff_sha256"), y.get("diff_sha256"),
            evidence=("the uncommitted diffs differ beyond the part stored in the snapshots",)))
    return out


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


def _untracked(name: str, x: Mapping[str, Any], y: Mapping[str, Any]) -> list[Difference]:
    ua = {u.get("path"): u for u in x.get("untracked") or []}
    ub = {u.get("path"): u for u in y.get("untracked") or []}
    out: list[Difference] = []
    for path, u in ua.items():
        if path not in ub:
            out.append(Difference("git", f"{name}: {path}", "removed", _untracked_desc(u), None,
                                  evidence=("untracked file in A only",)))
        elif _untracked_desc(ub[path]) != _untracked_desc(u):
            out.append(Difference("git", f"{name}: {path}", "changed", _untracked_desc(u),
                                  _untracked_desc(ub[path]),
                                  evidence=("untracked file with other content",)))
    out += [Difference("git", f"{name}: {p}", "added", None, _untracked_desc(u),
                       evidence=("untracked file in B only",))
            for p, u in ub.items() if p not in ua]
    return out


def _untracked_desc(u: Mapping[str, Any]) -> str:
    """``untracked, 12 bytes, sha256 ab12cd34ef56``."""
    parts = ["untracked"]
    if "link" in u:
        parts.append(f"link to {u['link']}")
    if "size" in u:
        parts.append(f"{u['size']} bytes")
    if u.get("sha256"):
        parts.append(f"sha256 {str(u['sha256'])[:12]}")
    if u.get("error"):
        parts.append(str(u["error"]))
    return ", ".join(parts)


def _submodules(repo: Mapping[str, Any]) -> dict[str, Any]:
    return {str(s.get("path", i)): s.get("commit", "")
            for i, s in enumerate(repo.get("submodules") or [])}


# --------------------------------------------------------------------------- models


def models(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Per model (matched by where it came from, e.g. ``--model-path``): ``config.json`` field
    by field with the full path of each field, weight files added / removed / resized, side
    files whose hash changed, another Hugging Face revision, another directory."""
    out: list[Difference] = []
    ma: Mapping[str, Any] = a.get("models") or {}
    mb: Mapping[str, Any] = b.get("models") or {}
    for src, x in ma.items():
        if src not in mb:
            out.append(Difference("models", src, "removed", x.get("path"), None))
        else:
            out += _model(src, x, mb[src])
    out += [Difference("models", s, "added", None, y.get("path")) for s, y in mb.items()
            if s not in ma]
    return out


def _model(src: str, x: Mapping[str, Any], y: Mapping[str, Any]) -> list[Difference]:
    out = [Difference("models", f"{src}: {field}", "changed", x.get(field), y.get(field))
           for field in ("repo_id", "revision") if x.get(field) != y.get(field)]
    for key, change, fx, fy in walk(x.get("config") or {}, y.get("config") or {}):
        out.append(Difference("models", f"{src}: {key}", change, fx, fy))
    out += keyed("models", x.get("weights") or {}, y.get("weights") or {},
                 f"{src}: weights {{}}", changed_evidence=("resized (bytes)",))
    out += keyed("models", x.get("files_sha256") or {}, y.get("files_sha256") or {},
                 f"{src}: file {{}}")
    if x.get("real_path") != y.get("real_path"):
        out.append(Difference("models", f"{src}: path", "changed", x.get("real_path"),
                              y.get("real_path")))
    return out


# --------------------------------------------------------------------------- system

_SYSTEM_FIELDS = (
    ("host", ("host",)), ("os", ("os",)), ("kernel", ("kernel",)), ("machine", ("machine",)),
    ("cpu.model", ("cpu", "model")), ("cpu.logical", ("cpu", "logical")),
    ("cpu.affinity", ("cpu", "affinity")), ("memory.total_bytes", ("memory", "total_bytes")),
    ("runsnap_python", ("python", "version")),
    ("gpu.available", ("gpu", "available")), ("gpu.driver_version", ("gpu", "driver_version")),
    ("gpu.cuda_version", ("gpu", "cuda_version")), ("gpu.count", ("gpu", "count")),
)


def _get(data: Any, path: Sequence[str]) -> Any:
    for p in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(p)
    return data


def _gpu_models(section: Mapping[str, Any]) -> list[str]:
    """``['8 x NVIDIA H100 80GB HBM3 (81559 MiB)']``."""
    counts: dict[str, int] = {}
    for dev in _get(section, ("gpu", "devices")) or []:
        label = f"{dev.get('name', '?')} ({dev.get('memory_mib', '?')} MiB)"
        counts[label] = counts.get(label, 0) + 1
    return [f"{n} x {label}" for label, n in sorted(counts.items())]


def system(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Host, OS, kernel, CPU, memory; GPU: availability, driver, CUDA version, model and count,
    and which physical devices (UUIDs)."""
    out: list[Difference] = []
    for key, path in _SYSTEM_FIELDS:
        x, y = _get(a, path), _get(b, path)
        if x != y:
            out.append(Difference("system", key, "changed", x, y))
    ga, gb = _gpu_models(a), _gpu_models(b)
    if ga != gb:
        out.append(Difference("system", "gpu.models", "changed", ga, gb))
    ua = [d.get("uuid") for d in _get(a, ("gpu", "devices")) or []]
    ub = [d.get("uuid") for d in _get(b, ("gpu", "devices")) or []]
    if ua != ub:
        change, ev = compare_lists([str(u) for u in ua], [str(u) for u in ub])
        out.append(Difference("system", "gpu.uuids", change, ua, ub, evidence=ev))
    return out


# --------------------------------------------------------------------------- outcome


def outcome(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Exit status, signal, the first error line and the warnings of each run; timings last."""
    out: list[Difference] = []
    for key in ("exit_status", "signal", "first_error"):
        x, y = a.get(key), b.get(key)
        if x != y:
            out.append(Difference("outcome", key, "changed" if x is not None and y is not None
                                  else "added" if x is None else "removed", x, y))
    wa, wb = list(a.get("warnings") or []), list(b.get("warnings") or [])
    if wa != wb:
        ev = tuple([f"A only: {w}" for w in wa if w not in wb]
                   + [f"B only: {w}" for w in wb if w not in wa])
        out.append(Difference("outcome", "warnings", "changed", wa, wb, evidence=ev))
    for key in ("duration_s", "started_at", "ended_at"):
        x, y = a.get(key), b.get(key)
        if x != y:
            out.append(Difference("outcome", key, "changed", x, y))
    return out


#: Section name -> comparer, for sections with their own rules (others use :func:`generic`).
COMPARERS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], list[Difference]]] = {
    "command": command,
    "env": env,
    "packages": packages,
    "models": models,
    "system": system,
    "outcome": outcome,
}


def compare_section(
    name: str, a: Mapping[str, Any], b: Mapping[str, Any], commit_log: CommitLog | None = None
) -> list[Difference]:
    """Every difference between two versions of section ``name``, its collector errors
    included (``commit_log``: see :func:`git`)."""
    if a is b:
        return []
    if name == "git":
        out = git(a, b, commit_log)
    elif name in COMPARERS:
        out = COMPARERS[name](a, b)
    else:
        out = generic(name, a, b)
    return out + errors(name, a, b)
