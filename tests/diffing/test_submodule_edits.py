"""An uncommitted edit to a submodule of the program's own package is ranked by whether it ran
(``[runtime.submodules]``, noted by the trace hook; runsnap/diffing/edits.py): an edit to
``lm/attention.py``, which the program imported, is ``read`` evidence and the verdict commits
on it when the metric moved; an edit to ``lm/unused.py``, which neither run imported while
both imported other modules of ``lm``, did not run. Installed packages' submodules are not
noted (their versions are compared in ``[packages]``).

Real git repositories, real programs, real captures."""

from __future__ import annotations

import subprocess
from pathlib import Path

import runsnap
from runsnap.capturing import run

INIT = '"""A tiny model package."""\n'
ATTENTION = """
def scale(width):
    return width ** -0.5
"""
UNUSED = """
def old_scale(width):
    return 1.0 / width
"""
APP = """
import json.decoder  # a submodule of Python's own library: not noted

from lm.attention import scale

print(f"score={scale(64) * 1000:.4f}")
"""


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                   check=True, capture_output=True)


def _repo(root: Path) -> Path:
    repo = root / "tinylm"
    (repo / "lm").mkdir(parents=True)
    (repo / "lm" / "__init__.py").write_text(INIT)
    (repo / "lm" / "attention.py").write_text(ATTENTION)
    (repo / "lm" / "unused.py").write_text(UNUSED)
    (repo / "score.py").write_text(APP)
    _git("init", "-q", "-b", "main", cwd=repo)
    _git("add", ".", cwd=repo)
    _git("commit", "-q", "-m", "tiny lm", cwd=repo)
    return repo


def _pair(tmp_path: Path, base_env: dict[str, str], edit: str, text: str) -> runsnap.Report:
    repo = _repo(tmp_path)
    env = {**base_env, "PYTHONDONTWRITEBYTECODE": "1"}  # no __pycache__ in the tree
    run(["python3", "score.py"], cwd=repo, env=env, output=tmp_path / "a.toml")
    (repo / "lm" / edit).write_text(text)
    run(["python3", "score.py"], cwd=repo, env=env, output=tmp_path / "b.toml")
    a, b = runsnap.load(tmp_path / "a.toml"), runsnap.load(tmp_path / "b.toml")
    for snap in (a, b):
        assert dict(snap.records.runtime.submodules) == {
            "lm.attention": str(repo / "lm" / "attention.py")}
    report = runsnap.diff(a, b)
    assert isinstance(report, runsnap.Report)
    return report


def test_an_edit_to_a_submodule_the_program_imported_is_read_and_decides(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    report = _pair(tmp_path, base_env, "attention.py", ATTENTION.replace("-0.5", "0.5"))
    top = report.counted[0]
    assert (top.section, top.key) == ("git", "tinylm: lm/attention.py"), \
        [(d.section, d.key, d.evidence_kind) for d in report.counted[:3]]
    assert top.evidence_kind == "read" and "imported lm.attention" in top.reason, top.reason
    assert report.confidence == "confident", report.verdict


def test_an_edit_to_a_submodule_neither_run_imported_did_not_run(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    report = _pair(tmp_path, base_env, "unused.py", UNUSED.replace("1.0", "2.0"))
    edit = next(d for d in report.differences if d.key == "tinylm: lm/unused.py")
    assert edit.evidence_kind == "unread", (edit.evidence_kind, edit.reason)
    assert "neither run imported lm/unused.py" in edit.reason
