"""Bytes that are not UTF-8, and paths that hold a newline (issue 37, class 2).

A variable holding ``\\xff`` is kept by the snapshot (as bytes); every output written from it
must still be valid UTF-8 (JSON readers fail on anything else), the byte shown as an escape.
A repository whose path holds a newline is recorded whole, its untracked files read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import RUNSNAP, git, make_repo


def _capture(out: Path, cwd: Path, extra: dict[bytes, bytes]) -> None:
    env = {k.encode(): v.encode() for k, v in os.environ.items()}
    env.update(extra)
    done = subprocess.run([*RUNSNAP, "capture", "-o", str(out), "--", sys.executable, "-c",
                           "import os; os.environ.get('ODD_BYTES')"], cwd=cwd, env=env,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def odd_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("bytes")
    repo = make_repo(tmp / "line\nbreak" / "proj", {"app.py": "print('ok')\n"})
    (repo / "notes.txt").write_text("untracked\n")
    _capture(tmp / "a.toml", repo, {b"ODD_BYTES": b"plain"})
    _capture(tmp / "b.toml", repo, {b"ODD_BYTES": b"a\xffb\xc3(", b"ODD_\xfeNAME": b"x"})
    return tmp / "a.toml", tmp / "b.toml"


@pytest.mark.parametrize("args", [
    ("report", "B"), ("report", "--format", "json", "B"), ("report", "--format", "text", "B"),
    ("report", "A", "B"), ("show", "B"), ("show", "--format", "markdown", "B"),
    ("show", "--format", "json", "B"), ("show", "--section", "env", "B"),
    ("diff", "A", "B"), ("diff", "--all", "A", "B"), ("diff", "--format", "markdown", "--all", "A", "B"),
    ("diff", "--format", "json", "--all", "A", "B"), ("check", "B"),
    ("check", "--format", "json", "B"), ("check", "--format", "markdown", "B"),
], ids=lambda a: " ".join(a))
def test_every_output_is_valid_utf8(args: tuple[str, ...], odd_pair: tuple[Path, Path],
                                    tmp_path: Path) -> None:
    a, b = odd_pair
    argv = [str(a) if x == "A" else str(b) if x == "B" else x for x in args]
    for to_file in (False, True):
        extra = ["-o", str(tmp_path / "out")] if to_file and args[0] in ("report", "diff") else []
        done = subprocess.run([*RUNSNAP, *argv, *extra], capture_output=True, timeout=120)
        assert done.returncode in (0, 1), done.stderr
        raw = (tmp_path / "out").read_bytes() if extra else done.stdout
        text = raw.decode("utf-8")  # raises on invalid UTF-8
        done.stderr.decode("utf-8")
        if "json" in args:
            json.loads(text)
    if "--all" in args and "json" not in args or args[:2] == ("show", "--section"):
        assert "a\\xffb\\xc3(" in text  # the bytes shown as the snapshot keeps them


def test_a_repository_path_with_a_newline_is_recorded_whole(odd_pair: tuple[Path, Path]) -> None:
    from runsnap.snapshot import load

    repo = load(odd_pair[1])["git"]["repos"]["proj"]
    assert repo["path"].endswith("line\nbreak/proj")
    assert os.path.isdir(repo["path"])
    assert [u["path"] for u in repo["untracked"]] == ["notes.txt"]
    assert "error" not in repo["untracked"][0]
    assert git(Path(repo["path"]), "rev-parse", "HEAD").strip() == repo["commit"]
