"""``runsnap.collectors.gitfiles``: what the files say must be what git says, or "ask"."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import runsnap
from runsnap.capturing.context import DEFAULT_MAX_DIFF_BYTES
from runsnap.collectors import git as gitc
from runsnap.collectors.gitfiles import ASK, WorkTree, find_work_tree, parse_config
from tests.conftest import git, make_repo


def _env(home: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(home)}


def _git_says(path: Path, home: Path) -> tuple[str, bool, dict[str, str], bool]:
    """(toplevel, shallow, remotes, has tags) as git itself answers, for comparison."""
    def run(*args: str) -> str:
        return subprocess.run(["git", "-C", str(path), *args], env=_env(home), check=True,
                              capture_output=True, text=True).stdout

    top, shallow = run("rev-parse", "--show-toplevel", "--is-shallow-repository").split("\n")[:2]
    remotes = {}
    for line in run("remote", "-v").splitlines():
        name, url, kind = line.split()
        if kind == "(fetch)":
            remotes[name] = url
    return top, shallow == "true", remotes, bool(run("tag").strip())


def _files_say(path: Path, home: Path) -> tuple[str, bool, dict[str, str] | None, bool | None]:
    tree = find_work_tree(str(path), _env(home))
    assert isinstance(tree, WorkTree), tree
    return tree.top, tree.shallow, tree.remotes, tree.has_tags


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


def test_plain_checkout_from_the_top_and_from_a_subdirectory(repo: Path, home: Path) -> None:
    git(repo, "remote", "add", "origin", "https://github.com/sgl-project/sglang.git")
    git(repo, "remote", "add", "MyFork", "git@github.com:me/sglang.git")
    git(repo, "config", "--add", "remote.origin.url", "https://mirror.example.com/sglang.git")
    for where in (repo, repo / "lib"):
        assert _files_say(where, home) == _git_says(where, home)
    assert _files_say(repo, home)[2] == {"origin": "https://github.com/sgl-project/sglang.git",
                                        "MyFork": "git@github.com:me/sglang.git"}


def test_tags_loose_packed_and_none(repo: Path, home: Path) -> None:
    assert _files_say(repo, home)[3] is False
    git(repo, "tag", "v0.4.1")
    assert _files_say(repo, home) == _git_says(repo, home)
    git(repo, "pack-refs", "--all")
    assert not list((repo / ".git/refs/tags").iterdir())
    assert _files_say(repo, home) == _git_says(repo, home)
    assert _files_say(repo, home)[3] is True


def test_linked_worktree_submodule_shallow_clone_and_symlinked_path(
    tmp_path: Path, repo: Path, home: Path
) -> None:
    git(repo, "tag", "v1")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))
    outer = make_repo(tmp_path / "outer")
    git(outer, "submodule", "add", "-q", str(repo), "vendor/proj")
    link = tmp_path / "link-to-repo"
    link.symlink_to(repo)
    for where in (linked, shallow, outer / "vendor/proj", outer / "vendor", link / "lib"):
        assert _files_say(where, home) == _git_says(where, home), where
    tree = find_work_tree(str(linked), _env(home))
    assert isinstance(tree, WorkTree)
    assert tree.common_dir == str(repo / ".git") and tree.git_dir != tree.common_dir


def test_outside_any_repository(tmp_path: Path, home: Path) -> None:
    (tmp_path / "plain").mkdir()
    assert find_work_tree(str(tmp_path / "plain"), _env(home)) is None


def test_what_the_files_cannot_settle_is_left_to_git(tmp_path: Path, repo: Path,
                                                      home: Path) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    assert find_work_tree(str(bare), _env(home)) == ASK
    assert find_work_tree(str(repo / ".git" / "refs"), _env(home)) == ASK

    other = make_repo(tmp_path / "other")
    git(other, "config", "include.path", str(tmp_path / "extra.gitconfig"))
    assert find_work_tree(str(other), _env(home)) == ASK

    moved = make_repo(tmp_path / "moved")
    git(moved, "config", "core.worktree", str(tmp_path))
    assert find_work_tree(str(moved), _env(home)) == ASK


def test_url_rewrites_leave_the_remotes_to_git(tmp_path: Path, repo: Path, home: Path) -> None:
    git(repo, "remote", "add", "origin", "gh:sgl-project/sglang.git")
    assert _files_say(repo, home)[2] == {"origin": "gh:sgl-project/sglang.git"}
    (home / ".gitconfig").write_text('[url "https://github.com/"]\n\tinsteadOf = gh:\n')
    tree = find_work_tree(str(repo), _env(home))
    assert isinstance(tree, WorkTree) and tree.remotes is None  # git remote -v will say
    (home / ".gitconfig").unlink()
    git(repo, "config", "url.https://github.com/.insteadOf", "gh:")
    tree = find_work_tree(str(repo), _env(home))
    assert isinstance(tree, WorkTree) and tree.remotes is None
    legacy = make_repo(tmp_path / "legacy")
    (legacy / ".git/remotes").mkdir(exist_ok=True)
    (legacy / ".git/remotes/old").write_text("URL: https://example.com/old.git\n")
    tree = find_work_tree(str(legacy), _env(home))
    assert isinstance(tree, WorkTree) and tree.remotes is None


def _logging_git(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose ``git`` logs each call's arguments, then runs the real git."""
    log = tmp_path / "git.log"
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True,
                          check=True).stdout.strip()
    (bindir / "git").write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    (bindir / "git").chmod(0o755)
    return {"PATH": f"{bindir}:{os.environ['PATH']}", "HOME": str(tmp_path)}, log


def _commands(log: Path) -> list[str]:
    return sorted(c.split()[4] for c in log.read_text().splitlines()) if log.exists() else []


def test_a_capture_starts_two_git_processes_per_tagless_repository(
    tmp_path: Path, repo: Path
) -> None:
    env, log = _logging_git(tmp_path)
    snap = runsnap.capture([], env=env, cwd=repo)
    assert _commands(log) == ["diff", "status"]
    assert snap["git"]["repos"]["proj"]["remotes"] == {}
    git(repo, "tag", "v1")
    log.unlink()
    runsnap.capture([], env=env, cwd=repo)
    assert _commands(log) == ["describe", "diff", "status"]


def test_git_started_ahead_is_taken_over_by_the_capture_it_was_started_for(
    tmp_path: Path, repo: Path
) -> None:
    env, log = _logging_git(tmp_path)
    gitc.prestart(env, str(repo), (), DEFAULT_MAX_DIFF_BYTES)
    snap = runsnap.capture([], env=env, cwd=repo)
    assert _commands(log) == ["diff", "status"]  # not started a second time
    assert snap["git"]["repos"]["proj"]["commit"] == git(repo, "rev-parse", "HEAD").strip()


def test_a_head_start_that_fails_is_no_failure(repo: Path) -> None:
    gitc.prestart(None, str(repo), (), DEFAULT_MAX_DIFF_BYTES)  # type: ignore[arg-type]
    assert gitc._prestarted is None
    assert runsnap.capture([], cwd=repo)["git"]["repos"]["proj"]["errors"] == []


def test_git_started_ahead_for_another_capture_is_cancelled(tmp_path: Path, repo: Path) -> None:
    other = make_repo(tmp_path / "other")
    env, log = _logging_git(tmp_path)
    gitc.prestart(env, str(other), (), DEFAULT_MAX_DIFF_BYTES)
    snap = runsnap.capture([], env=env, cwd=repo)
    assert list(snap["git"]["repos"]) == ["proj"]
    with pytest.raises(ChildProcessError):  # the cancelled programs were reaped
        os.waitpid(-1, os.WNOHANG)
    (repo / "app.py").write_text("print('changed')\n")
    gitc.prestart(env, str(repo), (), DEFAULT_MAX_DIFF_BYTES)
    capped = runsnap.capture([], env=env, cwd=repo, max_diff_bytes=5)  # another cap: not taken
    assert capped["git"]["repos"]["proj"]["diff_truncated"] is True


# -- the config reader against `git config --list`

_WORDS = st.sampled_from(["a", "b c", "  x  ", 'q"uo"te', "semi;colon", "hash#tag", "back\\\\slash",
                          "tab\\t", "nl\\n", '"quoted # not comment"', "é", "", "=", "url = y"])


@st.composite
def _config_texts(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        head = draw(st.sampled_from(['[core]', '[remote "origin"]', '[remote "My Fork"]',
                                     '[Remote "x"]', '[remote.legacy]', '[branch "main"] # c',
                                     '[url "https://e.com/"]']))
        lines.append(head)
        for _ in range(draw(st.integers(0, 3))):
            key = draw(st.sampled_from(["url", "URL", "fetch", "bare", "flag", "pushurl"]))
            value = draw(_WORDS)
            sep = draw(st.sampled_from([" = ", "=", "\t=\t"]))
            comment = draw(st.sampled_from(["", " # note", " ; note"]))
            lines.append(f"\t{key}{sep}{value}{comment}" if key != "flag" else "\tflag")
        if draw(st.booleans()):
            lines.append("# a comment line")
    return "\n".join(lines) + "\n"


def _git_list(path: Path) -> list[str] | None:
    res = subprocess.run(["git", "config", "--file", str(path), "--list", "-z"], capture_output=True,
                         text=True, env={"PATH": os.environ["PATH"], "HOME": str(path.parent)})
    if res.returncode != 0:
        return None
    # "key\nvalue" records; a key given without "=" is listed bare, and means true
    return ["=".join(r.split("\n", 1)) if "\n" in r else f"{r}=true"
            for r in res.stdout.split("\0") if r]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_config_texts())
def test_the_config_reader_reads_what_git_reads(text: str, tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(text)
    entries = parse_config(text)
    expected = _git_list(path)
    if entries is None:
        return  # left to git: allowed, never wrong
    assert expected is not None, text
    got = []
    for section, sub, key, value in entries:
        name = f"{section}.{sub}.{key}" if sub is not None else f"{section}.{key}"
        got.append(f"{name}={value}")
    assert got == expected, text
