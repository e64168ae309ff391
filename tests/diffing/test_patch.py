"""The code itself in ``diff``: an uncommitted edit shows as ``git diff`` shows it, under its
difference in the text report when short, and in full with ``diff --patch`` (issue 27, item 5)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.conftest import git, make_repo, run_runsnap

TRAIN = "import os\n\nlr = 0.1\nepochs = 3\nprint(lr, epochs)\n"


def _two_runs(tmp_path: Path) -> tuple[Path, Path, Path, str]:
    repo = make_repo(tmp_path / "work", {"train.py": TRAIN})
    env = {**os.environ, "COLUMNS": "120"}
    good, bad = tmp_path / "good.toml", tmp_path / "bad.toml"
    assert run_runsnap("capture", "-o", str(good), "--", sys.executable, "train.py",
                       cwd=repo, env=env).returncode == 0
    (repo / "train.py").write_text(TRAIN.replace("lr = 0.1", "lr = 0.2"))
    assert run_runsnap("capture", "-o", str(bad), "--", sys.executable, "train.py",
                       cwd=repo, env=env).returncode == 0
    return repo, good, bad, git(repo, "diff")


def test_the_text_report_shows_a_short_hunk_under_the_difference(tmp_path: Path) -> None:
    repo, good, bad, real = _two_runs(tmp_path)
    r = run_runsnap("diff", str(good), str(bad), cwd=repo, env={**os.environ, "COLUMNS": "120"})
    assert r.returncode == 1, r.stderr
    lines = [ln.strip() for ln in r.stdout.splitlines()]
    at = next(i for i, ln in enumerate(lines) if "train.py" in ln)
    hunk = [h.strip() for h in real[real.index("@@"):].rstrip("\n").split("\n")]
    starts = [i for i in range(at, len(lines)) if lines[i] == hunk[0]]
    assert any(lines[i:i + len(hunk)] == hunk for i in starts), r.stdout


def test_diff_patch_shows_the_edit_as_git_diff_shows_it(tmp_path: Path) -> None:
    repo, good, bad, real = _two_runs(tmp_path)
    r = run_runsnap("diff", "--patch", str(good), str(bad), cwd=repo)
    assert r.returncode == 1, r.stderr
    body = r.stdout[r.stdout.index("Uncommitted edits"):]
    assert "work: train.py (edited in B only)" in body, body
    shown = body.split("\n")
    expected = [ln for ln in real.rstrip("\n").split("\n") if not ln.startswith("index ")]
    start = shown.index(expected[0])
    assert shown[start:start + len(expected)] == expected, body
    same = run_runsnap("diff", "--patch", str(good), str(good), cwd=repo)
    assert "no uncommitted edit differs" in same.stdout, same.stdout


def test_diff_name_only_lists_the_locators_as_git_diff_name_only_lists_files(
        tmp_path: Path) -> None:
    repo, good, bad, _real = _two_runs(tmp_path)
    r = run_runsnap("diff", "--name-only", str(good), str(bad), cwd=repo)
    assert r.returncode == 1, r.stderr
    assert r.stdout.splitlines() == ["git.work.diff.train.py", "git.work.dirty"], r.stdout
    same = run_runsnap("diff", "--name-only", str(good), str(good), cwd=repo)
    assert same.returncode == 0 and same.stdout == ""


def test_diff_patch_wraps_a_long_code_line_instead_of_cutting_it(tmp_path: Path) -> None:
    """issue 38: a change past column 80 was invisible on both the ``-`` and the ``+`` line."""
    long = "config = dict(" + ", ".join(f"knob_{i}={i}" for i in range(12)) + ", lr=0.1)\n"
    repo = make_repo(tmp_path / "work", {"train.py": "import os\n" + long})
    good, bad = tmp_path / "good.toml", tmp_path / "bad.toml"
    for out, text in ((good, long.replace("lr=0.1", "lr=0.3")),
                      (bad, long.replace("lr=0.1", "lr=0.2\tdrop=0.5"))):
        (repo / "train.py").write_text("import os\n" + text)
        assert run_runsnap("capture", "--no-run", "-o", str(out), cwd=repo).returncode == 0
    r = run_runsnap("diff", "--patch", str(good), str(bad), cwd=repo,
                    env={**os.environ, "COLUMNS": "80"})
    assert r.returncode == 1, r.stderr
    body = r.stdout[r.stdout.index("Uncommitted edits"):].split("\n")
    assert max(len(line) for line in r.stdout.split("\n")) <= 80
    for side, new in (("A", "lr=0.3"), ("B", "lr=0.2\tdrop=0.5")):
        at = body.index(f"{side}'s edit:")
        first = next(i for i in range(at, len(body)) if body[i].startswith("+config = dict("))
        parts = [body[first]]
        while body[first + len(parts)].startswith("+↪"):
            parts.append(body[first + len(parts)][2:])
        # tabs as a terminal shows them, from the marker's column as git diff prints them
        whole = ("+" + long.rstrip("\n").replace("lr=0.1", new)).expandtabs(8)
        assert "".join(parts) == whole and len(parts) == 2 + (side == "B"), parts
    piped = run_runsnap("diff", "--patch", str(good), str(bad), cwd=repo)  # no width: whole
    assert "+" + long.rstrip("\n").replace("lr=0.1", "lr=0.3") in piped.stdout.split("\n")
