"""What a git repository's own files say, read without starting ``git``.

A capture reads three repositories on a typical launch (the cwd's and two editable checkouts),
and each small ``git`` process costs ~2 ms of CPU plus a fork of runsnap; three of the five per
repository only answered questions the files answer directly: where the work tree and its git
directory are (``rev-parse``), which remotes are configured (``remote -v``), and whether
``describe`` has any tag to work from. This module answers them from the files, for the plain
layouts that nearly every checkout has, and says ``"ask"`` (let ``git`` decide) for anything
it does not fully understand: bare repositories, ``core.worktree``, config includes,
``url.*.insteadOf`` rewrites, reftable, a filesystem boundary, a repository owned by another
user (git's ``safe.directory`` check). Nothing here writes.
"""

from __future__ import annotations

import os
import re
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Literal

#: ``find_work_tree``'s answer when git itself must be asked.
ASK: Literal["ask"] = "ask"


class WorkTree:
    """A work tree found from the files: where it is and what its files say."""

    __slots__ = ("top", "git_dir", "common_dir", "shallow", "remotes", "has_tags", "started")

    def __init__(self, top: str, git_dir: str, common_dir: str) -> None:
        self.top = top
        """The top of the work tree (a physical path, as ``rev-parse --show-toplevel``)."""
        self.git_dir = git_dir
        """Its git directory (``.git``, or where a ``.git`` file points: worktree, submodule)."""
        self.common_dir = common_dir
        """The directory holding objects, refs and config (differs for linked worktrees)."""
        self.shallow = os.path.isfile(os.path.join(common_dir, "shallow"))
        self.remotes: dict[str, str] | None = None
        """Remote name -> fetch URL from the config, or None when ``git remote -v`` must say."""
        self.has_tags: bool | None = None
        """Whether any tag exists (None: unknown, ask ``git describe``)."""
        self.started: Any = None
        """The state commands started for it, if any (see ``git._start_state``)."""


def find_work_tree(path: str, env: Mapping[str, str]) -> WorkTree | Literal["ask"] | None:
    """The work tree that ``path`` lies in, None when it lies in none, ``"ask"`` when unsure.

    Walks up from ``path`` as git's discovery does (``.git`` directory or ``gitdir:`` file at
    each level), stopping at the root or, as git does by default, at a filesystem boundary.
    """
    d = os.path.realpath(path)
    try:
        dev = os.stat(d).st_dev
    except OSError:
        return ASK
    while True:
        dot = os.path.join(d, ".git")
        try:
            st = os.stat(dot)
        except FileNotFoundError:
            st = None
        except OSError:
            return ASK
        if st is not None:
            return _work_tree(d, dot, st, env)
        if _is_git_dir(d):
            return ASK  # a bare repository, or a place inside a .git directory
        parent = os.path.dirname(d)
        if parent == d:
            return None
        try:
            if os.stat(parent).st_dev != dev:
                return ASK  # git stops here and says why; let it
        except OSError:
            return ASK
        d = parent


def _is_git_dir(d: str) -> bool:
    return (os.path.isfile(os.path.join(d, "HEAD")) and os.path.isdir(os.path.join(d, "objects"))
            and os.path.isdir(os.path.join(d, "refs")))


def _read(path: str, limit: int = 1 << 20) -> str | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:
        return None
    return data.decode("utf-8", "surrogateescape")


def _work_tree(
    top: str, dot: str, st: os.stat_result, env: Mapping[str, str]
) -> WorkTree | Literal["ask"]:
    if stat.S_ISDIR(st.st_mode):
        git_dir = dot
    elif stat.S_ISREG(st.st_mode):
        text = _read(dot, 4096)
        if text is None or not text.startswith("gitdir:"):
            return ASK
        git_dir = os.path.normpath(os.path.join(top, text[len("gitdir:"):].strip()))
    else:
        return ASK
    try:
        if os.stat(top).st_uid != os.geteuid():
            return ASK  # git's safe.directory check decides, and says so
    except OSError:
        return ASK
    if not os.path.isfile(os.path.join(git_dir, "HEAD")):
        return ASK
    common = git_dir
    pointer = _read(os.path.join(git_dir, "commondir"), 4096)
    if pointer is not None:
        common = os.path.normpath(os.path.join(git_dir, pointer.strip()))
    text = _read(os.path.join(common, "config"))
    entries = parse_config(text) if text is not None else None
    if entries is None:
        return ASK
    for section, _sub, key, value in entries:
        if section in ("include", "includeif"):
            return ASK
        if section == "core" and key == "bare" and _true(value):
            return ASK
        if section == "core" and key == "worktree" and not _same_dir(
                os.path.join(git_dir, value), top):
            return ASK  # a submodule's points back at where it is checked out; others: git
        if section == "extensions" and key == "worktreeconfig" and _true(value):
            return ASK
    tree = WorkTree(top, git_dir, common)
    tree.remotes = _remotes(entries, common, env)
    tree.has_tags = _has_tags(common, entries)
    return tree


def _entries(path: str) -> bool:
    """Whether a directory holds anything (True when it cannot be read: be careful)."""
    try:
        return bool(os.listdir(path))
    except FileNotFoundError:
        return False
    except OSError:
        return True


def _same_dir(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _true(value: str) -> bool:
    return value.lower() not in ("false", "no", "off", "0", "")


def _remotes(entries: list[tuple[str, str | None, str, str]], common: str,
             env: Mapping[str, str]) -> dict[str, str] | None:
    """Remote name -> URL as ``git remote -v`` shows for fetch, or None when git must say."""
    if _entries(os.path.join(common, "remotes")) or _entries(os.path.join(common, "branches")):
        return None  # remotes defined by files, as old git versions did
    # URL rewrites (url.<base>.insteadOf) change what `git remote -v` shows, and the user's
    # and system's config files may hold them (or include files that do).
    home = env.get("HOME", "")
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    for path in (os.path.join(home, ".gitconfig"), os.path.join(xdg, "git", "config"),
                 "/etc/gitconfig"):
        text = _read(path)
        if text is None:
            if os.path.exists(path):
                return None
            continue
        lowered = text.lower()
        if "insteadof" in lowered or "[include" in lowered:
            return None
    remotes: dict[str, str] = {}
    for section, sub, key, value in entries:
        if section == "url":
            return None
        if section == "remote" and sub is not None and key == "url":
            remotes.setdefault(sub, value)
    return remotes


def _has_tags(common: str, entries: list[tuple[str, str | None, str, str]]) -> bool | None:
    """Whether the repository has any tag; None when the refs are not in files git 2.x wrote."""
    if os.path.exists(os.path.join(common, "reftable")) or any(
            s == "extensions" and k == "refstorage" for s, _, k, _ in entries):
        return None
    for _root, _dirs, files in os.walk(os.path.join(common, "refs", "tags")):
        if files:
            return True
    try:
        with open(os.path.join(common, "packed-refs"), "rb") as fh:
            return any(b" refs/tags/" in line for line in fh)
    except FileNotFoundError:
        return False
    except OSError:
        return None


_SECTION = re.compile(r'\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\\n]|\\.)*)")?\s*\]\s*(?:[#;].*)?$')
_KEY = re.compile(r"([A-Za-z][A-Za-z0-9-]*)\s*(?:=(.*))?$")


def parse_config(text: str) -> list[tuple[str, str | None, str, str]] | None:
    """``(section, subsection, key, value)`` of each entry of a git config file, or None.

    Section and key names are lowercased (git treats them so); subsections keep their case
    (``[remote "Origin"]``), except in the old ``[remote.origin]`` form, which git lowercases.
    A key without ``=`` is ``"true"``. None when the file holds anything this reader does not
    handle exactly (a line continued with a backslash, an unknown escape, a malformed line).
    """
    out: list[tuple[str, str | None, str, str]] = []
    section: tuple[str, str | None] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line[0] == "[":
            m = _SECTION.match(line)
            if m is None:
                return None
            name, sub = m.group(1).lower(), m.group(2)
            if sub is not None:
                sub = re.sub(r"\\(.)", r"\1", sub)
            elif "." in name:
                name, _, sub = name.partition(".")
            section = (name, sub)
            continue
        m = _KEY.match(line)
        if m is None or section is None:
            return None
        value = _value(m.group(2)) if m.group(2) is not None else "true"
        if value is None:
            return None
        out.append((section[0], section[1], m.group(1).lower(), value))
    return out


_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "b": "\b"}


def _value(raw: str) -> str | None:
    """A config value as git reads it: quotes removed, escapes applied, comments cut."""
    out: list[str] = []
    pending_space = ""
    quoted = False
    i = 0
    raw = raw.strip()
    while i < len(raw):
        c = raw[i]
        i += 1
        if c == "\\":
            if i >= len(raw) or raw[i] not in _ESCAPES:
                return None  # a continued line or an escape git would refuse
            out.append(pending_space + _ESCAPES[raw[i]])
            pending_space = ""
            i += 1
        elif c == '"':
            out.append(pending_space)
            pending_space = ""
            quoted = not quoted
        elif not quoted and c in "#;":
            break
        elif not quoted and c.isspace():
            pending_space += c
        else:
            out.append(pending_space + c)
            pending_space = ""
    if quoted:
        return None
    return "".join(out)
