"""Class 10: git states recorded exactly: a broken repository is an error, not "unborn"; git's
whole refusal is kept; an operation under way is flagged, shown and compared."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
import tomllib

from ..conftest import git, make_repo
from .conftest import runsnap


def _repo_state(cwd: Path, name: str = "x.toml") -> dict:
    proc = runsnap("capture", "-o", name, "--no-run", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    snap = tomllib.loads((cwd / name).read_text())
    (state,) = snap["git"]["repos"].values()
    return state


def test_a_corrupt_index_is_an_error_not_unborn(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    (repo / ".git" / "index").write_bytes(b"garbage")
    state = _repo_state(repo)
    assert "unborn" not in state
    assert any("index file" in e for e in state["errors"]), state["errors"]


def test_head_naming_a_missing_object_is_an_error_not_unborn(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    branch = git(repo, "symbolic-ref", "--short", "HEAD").strip()
    (repo / ".git" / "refs" / "heads" / branch).write_text("1234567890" * 4 + "\n")
    state = _repo_state(repo)
    assert "unborn" not in state
    assert any("bad object HEAD" in e for e in state["errors"]), state["errors"]


def test_a_repository_without_commits_is_unborn(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    state = _repo_state(repo)
    assert state.get("unborn") is True and state["errors"] == []


def test_safe_directory_refusal_keeps_the_whole_message(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a repository to another user needs root")
    repo = make_repo(tmp_path / "r")
    shutil.chown(repo, "nobody")
    for path in repo.rglob("*"):
        os.lchown(path, 65534, -1)
    proc = runsnap("capture", "-o", str(tmp_path / "x.toml"), "--no-run", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    errors = tomllib.loads((tmp_path / "x.toml").read_text())["git"]["errors"]
    text = " ".join(errors)
    assert "dubious ownership" in text and "safe.directory" in text, errors


def _conflict(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "README").write_text("other\n")
    git(repo, "commit", "-qam", "other")
    git(repo, "checkout", "-q", "-")
    (repo / "README").write_text("mine\n")
    git(repo, "commit", "-qam", "mine")


OPERATIONS = {
    "merge": ["merge", "other"],
    "rebase": ["rebase", "other"],
    "cherry-pick": ["cherry-pick", "other"],
    "revert": ["revert", "--no-edit", "HEAD~1"],  # the README "mine" changed: a conflict
}


@pytest.mark.parametrize("what", sorted(OPERATIONS) + ["bisect"])
def test_an_operation_under_way_is_flagged_shown_and_compared(tmp_path: Path, what: str) -> None:
    repo = make_repo(tmp_path / "r")
    _conflict(repo)
    _repo_state(repo, "before.toml")
    if what == "bisect":
        git(repo, "bisect", "start")
    else:
        with pytest.raises(Exception):  # noqa: B017 - the conflict stops it half-way
            git(repo, *OPERATIONS[what])
    state = _repo_state(repo, "during.toml")
    assert state["in_progress"] == what
    shown = runsnap("show", "during.toml", "--section", "git", cwd=repo)
    assert re.search(rf'in_progress = "?{what}"?$', shown.stdout, re.M), shown.stdout
    diff = runsnap("diff", "before.toml", "during.toml", cwd=repo)
    assert "in_progress" in diff.stdout, diff.stdout
