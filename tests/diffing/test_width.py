"""The text report fits the terminal (COLUMNS counts): every line cut or wrapped to the width,
the first error given the whole width, in full with --all; Markdown folds the full error."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.conftest import run_runsnap

ERROR = "boom: " + " ".join(f"word{i}" for i in range(80))  # ~560 characters
CHILD = ("import os, sys\n"
         "for i in range(3): print('WARNING: ' + 'a long warning text ' * 20, file=sys.stderr)\n"
         "if os.environ.get('FAIL'): raise ValueError(" + repr(ERROR) + ")\n")


@pytest.fixture
def pair(tmp_path: Path) -> Path:
    env = {**os.environ, "RUNSNAP_KEY_FILE": str(tmp_path / "key")}
    env.pop("COLUMNS", None)
    (tmp_path / "app.py").write_text(CHILD)
    assert run_runsnap("capture", "-o", "good.toml", "--", sys.executable, "app.py",
                       cwd=tmp_path, env=env).returncode == 0
    assert run_runsnap("capture", "-o", "bad.toml", "--", sys.executable, "app.py",
                       cwd=tmp_path, env={**env, "FAIL": "1"}).returncode == 1
    return tmp_path


def _diff(where: Path, *args: str, columns: int | None = None) -> str:
    env = {**os.environ, "RUNSNAP_KEY_FILE": str(where / "key")}
    env.pop("COLUMNS", None)
    if columns:
        env["COLUMNS"] = str(columns)
    done = run_runsnap("diff", "good.toml", "bad.toml", *args, cwd=where, env=env)
    assert done.returncode == 1, done.stderr
    return done.stdout


@pytest.mark.parametrize("columns", [60, 80, 200])
def test_every_line_fits_and_the_first_error_gets_the_whole_width(pair: Path,
                                                                  columns: int) -> None:
    out = _diff(pair, columns=columns)
    assert max(len(line) for line in out.splitlines()) <= columns
    error_line = next(ln for ln in out.splitlines() if "boom: word0" in ln)
    assert len(error_line) == columns and error_line.endswith("…")


def test_widths_give_different_output_and_all_shows_the_whole_error(pair: Path) -> None:
    assert _diff(pair, columns=80) != _diff(pair, columns=200)
    full = _diff(pair, "--all", columns=80)
    assert max(len(line) for line in full.splitlines()) <= 80
    joined = " ".join(ln.strip() for ln in full.splitlines())
    assert ERROR in joined


def test_without_a_terminal_nothing_is_cut_from_the_error(pair: Path) -> None:
    assert ERROR in _diff(pair)


def test_markdown_folds_the_whole_error_in_details(pair: Path) -> None:
    md = _diff(pair, "--format", "markdown", columns=80)
    start = md.index("<details><summary>first error")
    assert ERROR in md[start:md.index("</details>", start)]
