"""One difference, one line (issue 41 item 9): the text report at 80 columns says each thing
once, and folds what ranks lower on a line that says what it holds and how to unfold it; a
pipe or ``--all`` still gets every line. Real launches, traced."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import run_runsnap

#: Reads KNOB on the failing path, twelve READ_* variables at one place in both runs (in a
#: thread, off the failing path), and
#: never the twelve UNREAD_* ones.
CHILD = ("import os, threading\n"
         "def settings():\n"
         "    return [os.environ.get(f'READ_{i}') for i in range(12)]\n"
         "reader = threading.Thread(target=settings)  # off the failing path\n"
         "reader.start()\n"
         "reader.join()\n"
         "def check():\n"
         "    if os.environ.get('KNOB') == 'bad':\n"
         "        raise ValueError('the knob is bad')\n"
         "check()\n")


def _env(tmp: Path, value: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env.update({"RUNSNAP_KEY_FILE": str(tmp / "key"), "KNOB": value})
    env.update({f"READ_{i}": f"{value}{i}" for i in range(12)})
    env.update({f"UNREAD_{i}": f"{value}{i}" for i in range(12)})
    return env


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("oneline")
    (tmp / "app.py").write_text(CHILD)
    for name, value, status in (("good", "ok", 0), ("bad", "bad", 1)):
        done = run_runsnap("capture", "-o", f"{name}.toml", "--", sys.executable, "app.py",
                           cwd=tmp, env=_env(tmp, value))
        assert done.returncode == status, done.stderr
    return tmp


def _diff(where: Path, *args: str, columns: int | None = 80) -> str:
    env = _env(where, "ok")
    if columns:
        env["COLUMNS"] = str(columns)
    done = run_runsnap("diff", "--no-color", *args, "good.toml", "bad.toml", cwd=where, env=env)
    assert done.returncode == 1, done.stderr
    return done.stdout


def test_what_happened_is_one_line_a_field(pair: Path) -> None:
    lines = _diff(pair).splitlines()
    assert "  exit_status  A: 0  B: 1" in lines
    assert "  first_error  B only: ValueError: the knob is bad" in lines
    assert not any(line.strip() == "A: (unset)" for line in lines)


def test_the_cause_is_said_once(pair: Path) -> None:
    text = _diff(pair)
    assert "1. env KNOB  changed" in text
    assert "runtime env KNOB" not in text  # its run-time record only repeats it
    assert "runtime env KNOB" in _diff(pair, "--all")
    doc = json.loads(_diff(pair, "--format", "json"))
    knob = next(d for d in doc["differences"] if d["key"] == "KNOB")
    assert [r["path"] for r in knob["related"]] == [["runtime", "env", "KNOB"]]


def test_a_read_at_one_place_in_both_runs_is_one_evidence_line(pair: Path) -> None:
    doc = json.loads(_diff(pair, "--format", "json"))
    read = next(d for d in doc["differences"] if d["key"] == "READ_3")
    assert read["evidence_kind"] == "read"
    sites = [e for e in read["evidence"] if e.startswith("read in")]
    assert len(sites) == 1 and sites[0].startswith("read in A and B at app.py:3 in "), sites


def test_a_terminal_folds_what_ranks_lower_and_says_how_to_unfold_it(pair: Path) -> None:
    lines = _diff(pair).splitlines()
    assert len(lines) <= 40 and max(map(len, lines)) <= 80, "\n".join(lines)
    other = lines[lines.index("Other differences") + 1:]
    other = other[:other.index("")] if "" in other else other
    listed = [line for line in other if line.startswith("     ") and "READ_" in line]
    fold = next(line for line in other if line.startswith("  ... "))
    assert fold.startswith("  ... 4 more, ranked lower (--all lists them): READ_"), fold
    assert len(listed) == 8, other
    unread = next(i for i, line in enumerate(lines) if line.startswith("Read by no process: "))
    assert lines[unread + 1].endswith(", ...") and lines[unread + 2] == ""
    # a pipe keeps every line: all twelve, no fold
    whole = _diff(pair, columns=None)
    assert all(f"READ_{i}  changed" in whole for i in range(12))
    assert "ranked lower" not in whole
