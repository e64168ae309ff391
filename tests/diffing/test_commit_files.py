"""A repository at another commit, and what of it the run used: the files the commits between
change (``git diff --name-only``, the repository being on this machine) against the files the
program opened and the modules it imported (runsnap/diffing/commitfiles.py). Seen in fresh15
``session-features-dropped-commit-metric``: a commit dropped two features from
``configs/features.yaml``; the diff was undecided between the file's other content and "another
commit: the code changed", two views of one change.

Real git repositories, real captures."""

from __future__ import annotations

import sys
from pathlib import Path

import runsnap
from runsnap.capturing import run
from tests.conftest import git
from tests.tracing.conftest import child_env

PROGRAM = """
import yaml_free as cfg
names = [line.strip("- ").strip() for line in open("configs/features.yaml") if line.startswith("-")]
print(f"eval features={len(names)} mae={cfg.scale(len(names)):.4f}")
"""
HELPER = "def scale(n):\n    return 1.0 / n\n"


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "basket"
    (repo / "configs").mkdir(parents=True)
    (repo / "fit.py").write_text(PROGRAM)
    (repo / "yaml_free.py").write_text(HELPER)
    (repo / "README.md").write_text("basket value model\n")
    (repo / "configs" / "features.yaml").write_text("- a\n- b\n- c\n- d\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "four features")
    return repo


def _runs(repo: Path) -> runsnap.Report:
    env = child_env()
    run([sys.executable, "fit.py"], cwd=repo, output=repo.parent / "a.toml", env=env)
    return runsnap.load(repo.parent / "a.toml")


def _after(repo: Path) -> runsnap.Report:
    env = child_env()
    run([sys.executable, "fit.py"], cwd=repo, output=repo.parent / "b.toml", env=env)
    a, b = runsnap.load(repo.parent / "a.toml"), runsnap.load(repo.parent / "b.toml")
    return runsnap.diff(a, b)


def test_a_commit_that_changes_a_file_the_program_opened_is_read(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _runs(repo)
    (repo / "configs" / "features.yaml").write_text("- a\n- b\n")
    (repo / "README.md").write_text("basket value model, two features\n")
    git(repo, "commit", "-qam", "drop the stale features")
    report = _after(repo)
    top = report.differences[0]
    assert top.key == "basket.commit" and report.confidence == "confident", report.candidates
    assert "files changed: README.md, configs/features.yaml" in top.evidence
    assert top.evidence_kind == "read", top.reason
    assert "the program opened configs/features.yaml for reading in B" in top.reason
    under = [d.key for d in top.related]
    assert any(k.endswith("configs/features.yaml") and "file" in k for k in under), under
    assert not any(d.path[:2] == ("runtime", "data_files") for d in report.differences)


def test_a_commit_that_changes_a_module_the_program_imported_is_read(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _runs(repo)
    (repo / "yaml_free.py").write_text("def scale(n):\n    return 2.0 / n\n")
    git(repo, "commit", "-qam", "rescale")
    report = _after(repo)
    top = report.differences[0]
    assert top.key == "basket.commit" and top.evidence_kind == "read", top.reason
    assert "the program imported yaml_free.py in B" in top.reason


def test_a_commit_that_changes_only_what_the_program_never_used_is_no_read(
        tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _runs(repo)
    (repo / "README.md").write_text("basket value model, now documented\n")
    git(repo, "commit", "-qam", "docs")
    report = _after(repo)
    commit = next(d for d in report.differences if d.key == "basket.commit")
    assert "files changed: README.md" in commit.evidence
    assert commit.evidence_kind != "read", commit.reason


def test_a_commit_that_changes_the_script_the_command_ran_is_read(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _runs(repo)
    (repo / "fit.py").write_text(PROGRAM.replace("len(names)", "len(names) + 1", 1))
    git(repo, "commit", "-qam", "count one more")
    report = _after(repo)
    top = report.differences[0]
    assert top.key == "basket.commit" and top.evidence_kind == "read", top.reason
    assert "the program ran fit.py in B" in top.reason
