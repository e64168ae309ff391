"""Class 7: no control character from a snapshot reaches the terminal, whatever prints it."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from ..conftest import git, make_repo
from .conftest import bare_env, runsnap

#: What a stranger's snapshot may carry: OSC 52 (clipboard), OSC 0 (title), CSI 2J (clear),
#: a C1 CSI, a CR, bidirectional overrides and isolates, marks.
EVIL = ("\x1b]52;c;aGk=\x07\x1b]0;pwned\x07\x1b[2J\x9b31m\r\u202e\u2066\u2067\u2068\u2069"
        "\u200e\u200f\u061c")
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                       "\u2066-\u2069]")


def _toml_str(text: str) -> str:
    return json.dumps(text)  # JSON escapes are TOML basic-string escapes for these


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real capture in a real repository, then made hostile as a stranger could."""
    tmp = tmp_path_factory.mktemp("hostile")
    repo = make_repo(tmp / "repo")
    git(repo, "checkout", "-q", "-b", "fix\u202eexe.\u2066x")
    prog = repo / "run"
    prog.write_text("#!/bin/sh\nprintf 'ValueError: bad \\342\\200\\256 \\302\\233 x\\n' >&2\n"
                    "exit 3\n")
    prog.chmod(0o755)
    env = bare_env(EVIL_VALUE=EVIL, RUNSNAP_KEY_FILE=str(tmp / "key"),
                   RUNSNAP_CACHE_DIR=str(tmp / "cache"))
    for name in ("good", "bad"):
        proc = runsnap("capture", "-o", f"{name}.toml", "--label", "x" + EVIL, "--", "./run",
                       "--opt", EVIL, cwd=repo, env=env)
        assert proc.returncode == 3, proc.stderr
    text = (repo / "bad.toml").read_text()
    text = text.replace('argv = [\n    "./run",', f'argv = [\n    {_toml_str("./run" + EVIL)},', 1)
    text = text.replace("[packages.distributions.", f"[packages.distributions.{_toml_str(EVIL)}]\n"
                        'version = "1"\n\n[packages.distributions.', 1)
    text = text.replace('[env.vars]\n', f'[env.vars]\n{_toml_str("N" + EVIL)} = "1"\n', 1)
    (repo / "bad.toml").write_text(text)
    return repo


def _check(proc_out: str) -> None:
    found = FORBIDDEN.findall(proc_out)
    assert not found, f"raw controls reached the terminal: {found!r}"


CASES = [
    ("show", "bad.toml"),
    *[("show", "bad.toml", "--section", s) for s in ("command", "env", "git", "outcome",
                                                     "packages")],
    ("show", "bad.toml", "--format", "markdown"),
    ("report", "bad.toml"),
    ("report", "good.toml", "bad.toml"),
    ("diff", "good.toml", "bad.toml"),
    ("diff", "good.toml", "bad.toml", "--format", "markdown"),
    ("ls", "--dir", "."),
    ("check", "bad.toml"),
]


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a))
def test_views_escape_everything(hostile: Path, args: tuple[str, ...]) -> None:
    proc = runsnap(*args, cwd=hostile, env=bare_env(COLUMNS="300"))
    assert proc.returncode in (0, 1), proc.stderr
    assert "\\x1b" in proc.stdout + proc.stderr or "\\u202e" in proc.stdout + proc.stderr \
        or args[0] in ("check", "ls")
    _check(proc.stdout)
    _check(proc.stderr)


def test_bisect_progress_and_result_escape_everything(hostile: Path) -> None:
    proc = runsnap("bisect", "good.toml", "bad.toml", "--dry-run", "--force", "--test", "false",
                   cwd=hostile, env=bare_env(COLUMNS="300"))
    _check(proc.stdout)
    _check(proc.stderr)
    assert os.path.exists(hostile / "bad.toml")
