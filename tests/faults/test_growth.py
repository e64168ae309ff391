"""Class 9: output and cost stay bounded by what is shown, not by what a snapshot holds."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from runsnap.render.listing import CELL_CHARS, COMMAND_CHARS, render_listing
from runsnap.snapshot.store import list_snapshots

from .conftest import bare_env, runsnap


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("ls")
    env = bare_env(RUNSNAP_KEY_FILE=str(tmp / "key"), RUNSNAP_CACHE_DIR=str(tmp / "cache"))
    proc = runsnap("capture", "-o", "small.toml", "--no-run", "--", "true", cwd=tmp, env=env)
    assert proc.returncode == 0, proc.stderr
    text = (tmp / "small.toml").read_text()
    label = 'label = ""'
    assert label in text
    (tmp / "big.toml").write_text(text.replace(label, f'label = "{"L" * 5_000_000}"', 1)
                                  .replace('argv = [\n    "true",',
                                           f'argv = [\n    "true",\n    "{"a" * 2_000_000}",', 1))
    return tmp


@pytest.mark.parametrize("width", [0, 80])
def test_ls_rows_are_not_padded_to_the_longest_label(folder: Path, width: int) -> None:
    text = render_listing(list_snapshots(str(folder)), "text", width)
    lines = text.splitlines()
    assert len(lines) == 3
    limit = width or (COMMAND_CHARS + 5 * (CELL_CHARS + 2) + 40)
    assert max(len(line) for line in lines) <= limit, [len(line) for line in lines]


def test_ls_process_output_is_bounded(folder: Path) -> None:
    proc = runsnap("ls", "--dir", str(folder), cwd=folder)
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout) < 4 * (COMMAND_CHARS + 5 * (CELL_CHARS + 2) + 40)
    assert "…" in proc.stdout


@pytest.mark.slow
def test_diff_with_many_variables_searches_each_file_once(tmp_path: Path, stack_venv: Path
                                                         ) -> None:
    """Many variables are searched in one pass over the installed files: a distribution's
    index is loaded once per diff, whatever the number of variables. The runs' interpreter is
    a small venv's (a few distributions), so that the pass reads little."""
    env = {**bare_env(), **{f"MANYVAR_{i:05d}": str(i) for i in range(3000)}}
    python = str(stack_venv / "bin" / "python")
    for name, extra in (("normal.toml", {}), ("many.toml", env)):
        proc = subprocess.run([sys.executable, "-m", "runsnap", "capture", "-o", name,
                               "--no-run", "--", python, "-c", "pass"],
                              cwd=tmp_path, env={**bare_env(), **extra}, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
    code = ("import sys, runsnap.whoreads.index as s\n"
            "n = [0]\n"
            "old = s.Index._load\n"
            "def load(self):\n"
            "    n[0] += 1\n"
            "    old(self)\n"
            "s.Index._load = load\n"
            "from runsnap.cli.app import cli\n"
            "try:\n"
            "    cli(['diff', 'normal.toml', 'many.toml'], standalone_mode=False)\n"
            "except SystemExit:\n"
            "    pass\n"
            "print(n[0])\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=bare_env(),
                          capture_output=True, text=True, timeout=600)
    loads = int(proc.stdout.split()[-1])
    from runsnap.snapshot.store import load

    dists = len(load(str(tmp_path / "many.toml"))["packages"]["distributions"])
    assert "sglang" in load(str(tmp_path / "many.toml"))["packages"]["distributions"]
    assert 0 < loads <= dists, (loads, dists)  # once each at most, not once a variable


def test_the_text_report_finds_its_candidates_without_comparing_every_pair(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An undecided verdict among many variables: the candidates shown in detail are found
    by section, key and change, not by comparing each difference with every candidate
    (5,000 variables took 12.5M comparisons, ~60 s)."""
    from runsnap.diffing.result import Difference, Report, SnapInfo
    from runsnap.render.diff import CANDIDATES_DETAILED, render_text

    diffs = tuple(Difference("env", f"MANYVAR_{i:05d}", "added", None, [str(i)], score=40)
                  for i in range(3000))
    report = Report(SnapInfo(None, "a", "", ""), SnapInfo(None, "b", "", ""), diffs,
                    outcome="different", confidence="undecided",
                    candidates=tuple(d.replace() for d in diffs[::-1]))
    calls = [0]
    eq = Difference.__eq__

    def counted(self: Difference, other: object) -> bool:
        calls[0] += 1
        return eq(self, other)

    monkeypatch.setattr(Difference, "__eq__", counted)
    text = render_text(report)
    assert calls[0] <= 10 * len(diffs), calls[0]  # linear (was 4.5M: every pair)
    numbered = re.findall(r"^ +\d+\. env (MANYVAR_\d+)", text, re.MULTILINE)
    assert numbered == [f"MANYVAR_{i:05d}" for i in range(CANDIDATES_DETAILED)], text[:2000]
