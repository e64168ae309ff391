"""What a user of ``git diff`` expects: ``--stat`` (how many differences per section, one
line each) and ``--quiet`` (nothing printed, the exit status says it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.conftest import run_runsnap


def _pair(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "RUNSNAP_KEY_FILE": str(tmp_path / "key")}
    env.pop("COLUMNS", None)
    for name, extra in (("a", {}), ("b", {"NCCL_ALGO": "Tree", "SGLANG_X": "1"})):
        done = run_runsnap("capture", "--no-run", "-o", f"{name}.toml", "--", sys.executable,
                           "serve.py", "--tp", "8" if name == "a" else "4", cwd=tmp_path,
                           env={**env, **extra})
        assert done.returncode == 0, done.stderr
    return env


def test_stat_counts_per_section(tmp_path: Path) -> None:
    env = _pair(tmp_path)
    out = run_runsnap("diff", "a.toml", "b.toml", "--stat", cwd=tmp_path, env=env)
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    assert lines[0].startswith("runsnap diff: 3 differences")
    rows = {ln.split()[0]: ln.split()[1] for ln in lines[1:] if ln.startswith(" ")}
    assert rows == {"env": "2", "command": "1"}, out.stdout
    assert "NCCL_ALGO" in out.stdout and "--tp" in out.stdout


@pytest.mark.slow
def test_quiet_prints_nothing_and_exits_with_the_answer(tmp_path: Path) -> None:
    env = _pair(tmp_path)
    differ = run_runsnap("diff", "a.toml", "b.toml", "--quiet", cwd=tmp_path, env=env)
    same = run_runsnap("diff", "a.toml", "a.toml", "-q", cwd=tmp_path, env=env)
    assert (differ.returncode, differ.stdout, same.returncode, same.stdout) == (1, "", 0, "")
