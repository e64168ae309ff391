"""``[git]`` takes git's own answers: where the work tree is, bare or shallow, remotes (with URL
rewrites), describe; in every layout git knows (linked worktrees, submodules, includes,
``core.worktree``, symlinked paths). Git started ahead is handed over to the capture."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import runsnap
from runsnap.base import programs
from runsnap.capturing.collectors import git as gitc
from runsnap.capturing.context import DEFAULT_MAX_DIFF_BYTES
from tests.conftest import git, make_repo


def _env(home: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(home)}


def _git_says(path: Path, home: Path) -> tuple[str, bool, dict[str, str], str]:
    """(toplevel, shallow, fetch remotes, describe --tags) as git itself answers."""
    def run(*args: str, check: bool = True) -> str:
        res = subprocess.run(["git", "-C", str(path), *args], env=_env(home), check=check,
                             capture_output=True, text=True)
        return res.stdout if res.returncode == 0 else ""

    top, shallow = run("rev-parse", "--show-toplevel", "--is-shallow-repository").split("\n")[:2]
    remotes = {}
    for line in run("remote", "-v").splitlines():
        name, url, kind = line.split()
        if kind == "(fetch)":
            remotes[name] = url
    return top, shallow == "true", remotes, run("describe", "--tags", check=False).strip()


def _capture_says(path: Path, home: Path) -> tuple[str, bool, dict[str, str], str]:
    snap = runsnap.capture([], env=_env(home), cwd=path)
    [repo] = [r for r in snap["git"]["repos"].values() if "cwd" in r["roles"]]
    describe = repo["describe"].removesuffix("-dirty")
    return repo["path"], repo["shallow"], repo["remotes"], describe


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


def test_plain_checkout_from_the_top_and_from_a_subdirectory(repo: Path, home: Path) -> None:
    git(repo, "remote", "add", "origin", "https://github.com/sgl-project/sglang.git")
    git(repo, "remote", "add", "MyFork", "git@github.com:me/sglang.git")
    for where in (repo, repo / "lib"):
        assert _capture_says(where, home) == _git_says(where, home)
    assert _capture_says(repo, home)[2] == {"origin": "https://github.com/sgl-project/sglang.git",
                                           "MyFork": "git@github.com:me/sglang.git"}


def test_describe_with_tags_without_and_unreachable(tmp_path: Path, repo: Path,
                                                    home: Path) -> None:
    assert _capture_says(repo, home)[3] == ""  # no tags: no description
    git(repo, "tag", "v0.4.1")
    git(repo, "pack-refs", "--all")
    assert _capture_says(repo, home) == _git_says(repo, home)
    assert _capture_says(repo, home)[3] == "v0.4.1"
    git(repo, "checkout", "-q", "--orphan", "fresh")
    git(repo, "commit", "-qm", "unrelated history")
    head = git(repo, "rev-parse", "--short", "HEAD").strip()
    assert _capture_says(repo, home)[3] == head  # tags, none reachable: the commit (--always)


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
        assert _capture_says(where, home) == _git_says(where, home), where
    assert _capture_says(shallow, home)[1] is True


def test_outside_any_repository_and_bare(tmp_path: Path, repo: Path, home: Path) -> None:
    (tmp_path / "plain").mkdir()
    snap = runsnap.capture([], env=_env(home), cwd=tmp_path / "plain")
    assert snap["git"]["repos"] == {} and snap["git"]["not_repositories"] == [
        str(tmp_path / "plain")]
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    [state] = runsnap.capture([], env=_env(home), cwd=bare)["git"]["repos"].values()
    assert state["bare"] is True and state["path"] == str(bare)
    assert state["commit"] == git(repo, "rev-parse", "HEAD").strip()


def test_includes_core_worktree_and_url_rewrites(tmp_path: Path, repo: Path, home: Path) -> None:
    (tmp_path / "extra.gitconfig").write_text('[remote "up"]\n\turl = https://example.com/up\n')
    git(repo, "config", "include.path", str(tmp_path / "extra.gitconfig"))
    git(repo, "remote", "add", "origin", "gh:sgl-project/sglang.git")
    (home / ".gitconfig").write_text('[url "https://github.com/"]\n\tinsteadOf = gh:\n')
    says = _capture_says(repo, home)
    assert says == _git_says(repo, home)
    assert says[2] == {"origin": "https://github.com/sgl-project/sglang.git",
                       "up": "https://example.com/up"}
    moved = make_repo(tmp_path / "moved")
    elsewhere = tmp_path / "tree"
    elsewhere.mkdir()
    git(moved, "config", "core.worktree", str(elsewhere))
    assert _capture_says(moved, home)[0] == _git_says(moved, home)[0] == str(elsewhere)


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
    """The git subcommands run (after ``-C DIR`` and any ``-c`` setting)."""
    out = []
    for line in log.read_text().splitlines() if log.exists() else []:
        words = line.split()[2:]
        while words[:1] == ["-c"]:
            words = words[2:]
        out.append(words[0])
    return sorted(out)


def test_a_capture_asks_git_once_and_reads_state_side_by_side(
    tmp_path: Path, repo: Path
) -> None:
    env, log = _logging_git(tmp_path)
    snap = runsnap.capture([], env=env, cwd=repo)
    # no tag: describe would have nothing to say, and is not run
    assert _commands(log) == ["diff", "remote", "rev-parse", "status"]
    assert snap["git"]["repos"]["proj"]["remotes"] == {}
    assert snap["git"]["repos"]["proj"]["describe"] == ""


def test_describe_runs_where_the_repository_has_a_tag(tmp_path: Path, repo: Path) -> None:
    git(repo, "tag", "-a", "v1.2", "-m", "release")
    env, log = _logging_git(tmp_path)
    snap = runsnap.capture([], env=env, cwd=repo)
    assert _commands(log) == ["describe", "diff", "remote", "rev-parse", "status"]
    assert snap["git"]["repos"]["proj"]["describe"] == "v1.2"
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    assert runsnap.capture([], env=env, cwd=bare)["git"]["repos"]["bare.git"]["describe"] == "v1.2"


def test_git_started_ahead_is_taken_over_by_the_capture_it_is_handed_to(
    tmp_path: Path, repo: Path
) -> None:
    env, log = _logging_git(tmp_path)
    plan = gitc.prestart(env, str(repo), (), DEFAULT_MAX_DIFF_BYTES)
    assert plan is not None
    snap = runsnap.capture([], env=env, cwd=repo, started={"git": plan})
    assert _commands(log) == ["diff", "remote", "rev-parse", "status"]  # once
    assert snap["git"]["repos"]["proj"]["commit"] == git(repo, "rev-parse", "HEAD").strip()


def test_git_started_ahead_runs_in_the_background(repo: Path) -> None:
    # git's answers are wanted only after runsnap's own work, which a capture waits for
    plan = gitc.prestart(_env(repo), str(repo), (), DEFAULT_MAX_DIFF_BYTES)
    assert plan is not None
    want = (programs.BACKGROUND_NICE if programs.spare_core()
            else os.getpriority(os.PRIO_PROCESS, 0))
    try:
        (cand,) = plan.candidates
        started = [cand.discovery, *(cand.state or {}).values()]
        assert len(started) == 4
        assert [os.getpriority(os.PRIO_PROCESS, p.pid) for p in started] == [want] * 4
    finally:
        plan.cancel()


def test_a_head_start_that_fails_is_no_failure(repo: Path) -> None:
    assert gitc.prestart(None, str(repo), (), DEFAULT_MAX_DIFF_BYTES) is None  # type: ignore[arg-type]
    assert runsnap.capture([], cwd=repo)["git"]["repos"]["proj"]["errors"] == []


def test_git_started_ahead_for_another_capture_is_cancelled(tmp_path: Path, repo: Path) -> None:
    other = make_repo(tmp_path / "other")
    env, _log = _logging_git(tmp_path)
    plan = gitc.prestart(env, str(other), (), DEFAULT_MAX_DIFF_BYTES)
    assert plan is not None
    pids = [p.pid for cand in plan.candidates
            for p in (cand.discovery, *(cand.state or {}).values())]
    snap = runsnap.capture([], env=env, cwd=repo, started={"git": plan})
    assert list(snap["git"]["repos"]) == ["proj"]
    for pid in pids:  # the cancelled programs were reaped (other children of the test's
        with pytest.raises(ChildProcessError):  # process, a fixture's server, are not ours)
            os.waitpid(pid, os.WNOHANG)
    (repo / "app.py").write_text("print('changed')\n")
    plan = gitc.prestart(env, str(repo), (), DEFAULT_MAX_DIFF_BYTES)
    capped = runsnap.capture([], env=env, cwd=repo, max_diff_bytes=5,  # another cap: not taken
                             started={"git": plan})
    assert capped["git"]["repos"]["proj"]["diff_truncated"] is True
