"""[git] from real repositories built in tmp_path."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import runsnap
from tests.conftest import git, make_repo, no_git_path


def capture_git(cwd: Path, env: dict[str, str] | None = None, **kw: Any) -> dict[str, Any]:
    env = env if env is not None else {"PATH": os.environ["PATH"], "HOME": str(cwd)}
    return dict(runsnap.capture([], env=env, cwd=cwd, **kw)["git"])


def test_dirty_repository_records_commit_branch_diff_and_untracked(repo: Path) -> None:
    (repo / "app.py").write_text("print('v3 unstaged')\n")
    (repo / "lib/util.py").write_text("X = 2\n")
    git(repo, "add", "lib/util.py")  # staged
    (repo / "notes.txt").write_text("scratch\n")
    (repo / "data").mkdir()
    (repo / "data/big.bin").write_bytes(b"\0" * 300_000)
    head = git(repo, "rev-parse", "HEAD").strip()

    section = capture_git(repo)
    assert section["errors"] == []
    r = section["repos"]["proj"]
    assert r["path"] == str(repo)
    assert r["roles"] == ["cwd"]
    assert r["commit"] == head
    assert r["branch"] == "main"
    assert r["detached"] is False
    assert r["dirty"] is True
    assert r["describe"] == ""  # no tags: describe would only repeat the commit
    assert {c["path"]: c["status"] for c in r["changed"]} == {"app.py": ".M", "lib/util.py": "M."}
    assert "+print('v3 unstaged')" in r["diff"] and "+X = 2" in r["diff"]
    assert r["diff_sha256"] == hashlib.sha256(r["diff"].encode()).hexdigest()
    assert "diff_truncated" not in r
    untracked = {u["path"]: u for u in r["untracked"]}
    assert untracked["notes.txt"] == {
        "path": "notes.txt", "size": 8, "sha256": hashlib.sha256(b"scratch\n").hexdigest()}
    assert untracked["data/big.bin"]["size"] == 300_000
    assert "sha256" not in untracked["data/big.bin"]  # too big to hash on every launch
    assert r["untracked_count"] == 2


def test_clean_repository(repo: Path) -> None:
    r = capture_git(repo)["repos"]["proj"]
    assert r["dirty"] is False
    assert r["diff"] == "" and r["changed"] == [] and r["untracked"] == []


def test_diff_over_the_cap_keeps_hash_stat_and_head(repo: Path) -> None:
    (repo / "app.py").write_text("".join(f"line {i}\n" for i in range(5000)))
    r = capture_git(repo, max_diff_bytes=2000)["repos"]["proj"]
    assert r["diff_truncated"] is True
    assert r["diff_bytes"] > 2000
    assert len(r["diff"].encode()) == 2000
    assert "app.py" in r["diff_stat"] and "5000" in r["diff_stat"]
    full = git(repo, "diff", "HEAD", "--no-color").encode()
    assert r["diff_sha256"] == hashlib.sha256(full).hexdigest()


def test_detached_head_tags_remotes_and_upstream(tmp_path: Path, repo: Path) -> None:
    git(repo, "tag", "v1.0")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    (clone / "new.py").write_text("n\n")
    git(clone, "add", "new.py")
    git(clone, "commit", "-qm", "local")
    r = capture_git(clone)["repos"]["clone"]
    assert r["upstream"] == "origin/main"
    assert (r["ahead"], r["behind"]) == (1, 0)
    assert r["remotes"] == {"origin": str(repo)}
    assert r["describe"].startswith("v1.0-1-g")

    git(clone, "checkout", "-q", "--detach", "HEAD~1")
    r = capture_git(clone)["repos"]["clone"]
    assert r["detached"] is True and r["branch"] == ""
    assert r["describe"] == "v1.0"


def test_remote_credentials_never_reach_the_snapshot(repo: Path) -> None:
    git(repo, "remote", "add", "origin", "https://alice:s3cretpass@git.example.com/x.git")
    r = capture_git(repo)["repos"]["proj"]
    assert "s3cretpass" not in str(r)
    assert r["remotes"]["origin"].startswith("https://<redacted:hmac-sha256:")
    assert r["remotes"]["origin"].endswith("@git.example.com/x.git")


def test_not_a_repository_is_recorded(tmp_path: Path) -> None:
    section = capture_git(tmp_path)
    assert section["repos"] == {}
    assert section["not_repositories"] == [str(tmp_path)]
    assert section["errors"] == []


def test_no_git_on_path_is_recorded_not_fatal(tmp_path: Path, repo: Path) -> None:
    snap = runsnap.capture([], env={"PATH": no_git_path(tmp_path)}, cwd=repo)
    assert snap["git"]["repos"] == {}
    assert snap["git"]["errors"] == ["git not found on PATH: repositories not recorded"]
    assert snap["env"]["count"] == 1  # the rest of the snapshot is still there


def test_bare_and_shallow_repositories(tmp_path: Path, repo: Path) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))

    section = capture_git(tmp_path, repos=[str(bare), str(shallow)])
    b = section["repos"]["bare.git"]
    assert b["bare"] is True and b["branch"] == "main"
    assert b["commit"] == git(repo, "rev-parse", "HEAD").strip()
    s = section["repos"]["shallow"]
    assert s["shallow"] is True and s["bare"] is False
    assert s["roles"] == ["--repo"]


def test_submodules_are_listed(tmp_path: Path, repo: Path) -> None:
    outer = make_repo(tmp_path / "outer")
    git(outer, "submodule", "add", "-q", str(repo), "vendor/proj")
    git(outer, "commit", "-qm", "add submodule")
    r = capture_git(outer)["repos"]["outer"]
    assert r["submodules"] == [{
        "path": "vendor/proj", "commit": git(repo, "rev-parse", "HEAD").strip(),
        "state": "in sync"}]


def test_repository_without_commits(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    (empty / "a.txt").write_text("a")
    r = capture_git(empty)["repos"]["empty"]
    assert r["unborn"] is True and r["commit"] == ""
    assert r["untracked_count"] == 1


def test_one_repository_named_twice_is_recorded_once(repo: Path) -> None:
    section = capture_git(repo / "lib", repos=[str(repo)])
    assert list(section["repos"]) == ["proj"]
    assert section["repos"]["proj"]["roles"] == ["cwd", "--repo"]


def test_missing_repo_path_is_an_error_entry(tmp_path: Path) -> None:
    section = capture_git(tmp_path, repos=[str(tmp_path / "nope")])
    assert section["errors"] == [f"{tmp_path / 'nope'} (--repo): no such directory"]


def test_a_very_large_environment_records_the_same_git_state(repo: Path) -> None:
    """Past GIT_ENV_MAX variables git gets only those it reads (each getenv scans the whole
    environment: 15 git processes with 10,000 variables cost over half a second of CPU); what
    the snapshot records of the repository does not change, and what git does read (its
    configuration under XDG_CONFIG_HOME here) is still passed."""
    from runsnap.capturing.collectors.git import GIT_ENV_MAX, _git_env

    git(repo, "tag", "v1.0")
    (repo / "app.py").write_text("print('v3')\n")
    xdg = repo.parent / "xdg"
    (xdg / "git").mkdir(parents=True)
    (xdg / "git" / "config").write_text('[url "https://mirror.example/"]\n'
                                        "\tinsteadOf = https://origin.example/\n")
    git(repo, "remote", "add", "origin", "https://origin.example/proj.git")
    small = {"PATH": os.environ["PATH"], "HOME": str(repo), "XDG_CONFIG_HOME": str(xdg)}
    large = {**small, **{f"APP_SETTING_{i:05d}": f"value-{i}" for i in range(GIT_ENV_MAX + 500)}}
    assert set(_git_env(large)) == set(_git_env(small))
    assert set(_git_env(small)) >= set(small)  # a normal environment is passed whole
    a, b = capture_git(repo, small)["repos"]["proj"], capture_git(repo, large)["repos"]["proj"]
    assert a == b
    assert a["remotes"] == {"origin": "https://mirror.example/proj.git"}
    assert a["describe"] == "v1.0-dirty" and a["dirty"] is True
