"""runsnap never sees its own output: two identical captures in an unchanged repository are the
same, whether the snapshots go to the default folder or to ``-o`` inside the repository."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.conftest import git, make_repo, run_runsnap


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RUNSNAP_DIR", "NO_COLOR")}
    env["RUNSNAP_KEY_FILE"] = str(tmp_path / "key")
    return env


def test_two_identical_captures_in_a_repository_diff_as_the_same(tmp_path: Path) -> None:
    proj = make_repo(tmp_path / "proj", {"app.py": "print('hello')\n"})
    env = _env(tmp_path)
    for label in ("c1", "c2"):
        done = run_runsnap("capture", "--label", label, "--", sys.executable, "app.py",
                           cwd=proj, env=env)
        assert done.returncode == 0, done.stderr
    assert (proj / ".runsnap" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert git(proj, "status", "--porcelain") == ""
    same = run_runsnap("diff", cwd=proj, env=env)
    assert same.returncode == 0, same.stdout + same.stderr
    assert same.stdout.startswith("runsnap diff: the same outcome (both exited 0): no differences")


def test_snapshots_written_with_o_inside_the_repository_are_not_untracked(tmp_path: Path) -> None:
    proj = make_repo(tmp_path / "proj", {"app.py": "print('hello')\n"})
    env = _env(tmp_path)
    (proj / "notes.txt").write_text("mine\n")  # the user's own untracked file stays visible
    for name in ("a.toml", "snaps/b.toml"):
        done = run_runsnap("capture", "-o", name, "--", sys.executable, "app.py", cwd=proj,
                           env=env)
        assert done.returncode == 0, done.stderr
    from runsnap import load

    for name in ("a.toml", "snaps/b.toml"):
        repo = next(iter(load(proj / name).sections["git"]["repos"].values()))
        assert [u["path"] for u in repo["untracked"]] == ["notes.txt"]
        assert repo["untracked_count"] == 1
    same = run_runsnap("diff", "a.toml", "snaps/b.toml", cwd=proj, env=env)
    assert same.returncode == 0, same.stdout + same.stderr


def test_a_clean_repository_stays_clean_when_only_snapshots_are_new(tmp_path: Path) -> None:
    proj = make_repo(tmp_path / "proj", {"app.py": "print('hello')\n"})
    env = _env(tmp_path)
    assert run_runsnap("capture", "--no-run", "-o", "first.toml", "--", sys.executable, "app.py",
                       cwd=proj, env=env).returncode == 0
    assert run_runsnap("capture", "--no-run", "-o", "second.toml", "--", sys.executable,
                       "app.py", cwd=proj, env=env).returncode == 0
    from runsnap import load

    repo = next(iter(load(proj / "second.toml").sections["git"]["repos"].values()))
    assert repo["dirty"] is False
    assert repo["untracked"] == []


@pytest.mark.slow
def test_the_runs_own_log_files_do_not_make_them_differ(tmp_path: Path) -> None:
    """``--log`` inside the work tree: run A's log is an untracked file when B is captured
    (and each run's own log, empty, when it is). Neither is a difference of the two runs, nor
    is B's log when A is compared with a later C; a file the program itself wrote still is."""
    proj = make_repo(tmp_path / "proj", {"app.py": "import sys\nprint('hello')\n"})
    env = {**_env(tmp_path), "RUNSNAP_CACHE_DIR": str(tmp_path / "cache")}
    for name in ("a", "b"):
        done = run_runsnap("capture", "-o", f"{name}.toml", "--log", f"run-{name}.log", "--",
                           sys.executable, "app.py", cwd=proj, env=env)
        assert done.returncode == 0, done.stderr
    assert {"?? run-a.log", "?? run-b.log"} <= set(git(proj, "status", "--porcelain").split("\n"))
    same = run_runsnap("diff", "a.toml", "b.toml", cwd=proj, env=env)
    assert same.returncode == 0, same.stdout
    assert same.stdout.startswith(
        "runsnap diff: the same outcome (both exited 0): no differences that count"), same.stdout
    (proj / "out.csv").write_text("1,2\n")  # written by the program, not by runsnap
    done = run_runsnap("capture", "-o", "c.toml", "--log", "run-c.log", "--",
                       sys.executable, "app.py", cwd=proj, env=env)
    assert done.returncode == 0, done.stderr
    other = run_runsnap("diff", "a.toml", "c.toml", cwd=proj, env=env)
    assert other.returncode == 1
    assert "out.csv" in other.stdout and "run-" not in other.stdout
