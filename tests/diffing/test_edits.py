"""Uncommitted edits ranked by whether the runs ran them (runsnap/diffing/edits.py): the
module a run imported over the one neither imported, from ``[runtime.modules]`` of two real
traced launches in a real git repository."""

from __future__ import annotations

import sys
from pathlib import Path

from runsnap.capturing import run
from runsnap.diffing import compare
from tests.diffing.conftest import git


def test_an_edit_to_an_imported_module_ranks_above_one_never_imported(
        repo: Path, tmp_path: Path, base_env: dict[str, str]) -> None:
    (repo / "limits.py").write_text("LIMIT = 3\n")
    (repo / "plotting.py").write_text("COLOUR = 'blue'\n")
    (repo / "app.py").write_text(
        "import sys\nimport limits\n"
        "if limits.LIMIT < 1:\n    sys.exit('the limit is too small')\nprint('ok')\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "modules")
    argv = [sys.executable, str(repo / "app.py")]
    # no bytecode cache: limits.py is rewritten within the second at the same size, which the
    # cache's (mtime, size) check cannot tell from the first version
    base_env = {**base_env, "PYTHONDONTWRITEBYTECODE": "1"}
    (repo / "plotting.py").write_text("COLOUR = 'red'\n")
    a = run(argv, env=base_env, cwd=repo, output=tmp_path / "a.toml").snapshot
    (repo / "limits.py").write_text("LIMIT = 0\n")
    (repo / "plotting.py").write_text("COLOUR = 'green'\n")
    b = run(argv, env=base_env, cwd=repo, output=tmp_path / "b.toml").snapshot
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    ranked = {d.key.rpartition(": ")[2]: d for d in report.counted if d.section == "git"}
    assert "limits.py" in ranked, [(d.key, d.reason) for d in report.differences]
    used, unused = ranked["limits.py"], ranked["plotting.py"]
    assert used.evidence_kind == "read" and "imported limits" in used.reason, used.reason
    assert unused.evidence_kind == "unread" and "did not run" in unused.reason, unused.reason
    assert report.candidates[0] is used or report.candidates[0].key == used.key
    assert unused not in report.candidates


def test_an_edit_inside_an_imported_package_is_never_called_unread(
        repo: Path, tmp_path: Path, base_env: dict[str, str]) -> None:
    """``[runtime.modules]`` lists top-level modules: the run imported the package ``lm``, and
    whether it imported ``lm/attention.py`` the runs cannot say, so the edit there has no
    evidence either way (never "did not run"), while an edit outside any imported package
    still is unread."""
    (repo / "lm").mkdir()
    (repo / "lm" / "__init__.py").write_text("from lm.attention import SCALE\n")
    (repo / "lm" / "attention.py").write_text("SCALE = 1.0\n")
    (repo / "plotting.py").write_text("COLOUR = 'blue'\n")
    (repo / "app.py").write_text("import lm\nprint(f'perplexity={51.2 * lm.SCALE:.3f}')\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "package")
    argv = [sys.executable, str(repo / "app.py")]
    base_env = {**base_env, "PYTHONDONTWRITEBYTECODE": "1"}
    a = run(argv, env=base_env, cwd=repo, output=tmp_path / "a.toml").snapshot
    (repo / "lm" / "attention.py").write_text("SCALE = 1.5\n")
    (repo / "plotting.py").write_text("COLOUR = 'red'\n")
    b = run(argv, env=base_env, cwd=repo, output=tmp_path / "b.toml").snapshot
    report = compare(a, b)
    ranked = {d.key.rpartition(": ")[2]: d for d in report.counted if d.section == "git"}
    edit = ranked["lm/attention.py"]
    assert edit.evidence_kind == "name" and "did not run" not in edit.reason, edit.reason
    assert ranked["plotting.py"].evidence_kind == "unread"
    assert report.candidates[0].key == edit.key, report.verdict()
