"""Shell completion (issue 38, item 2): snapshot arguments complete files, ``@N``, ``@LABEL``
and ``@pinned`` from the snapshot folder. Driven through click's completion protocol by a real
``runsnap`` process, and through bash's own completion function as ``bash_source`` writes it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_runsnap


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Three real captures in ./.runsnap (good, bad, a context with no label), good pinned."""
    env = _env()
    for label, code in (("good", "0"), ("bad", "3")):
        r = run_runsnap("capture", "--label", label, "--", sys.executable, "-c",
                        f"raise SystemExit({code})", cwd=tmp_path, env=env)
        assert r.returncode == int(code), r.stderr
    assert run_runsnap("capture", "--no-run", cwd=tmp_path, env=env).returncode == 0
    assert run_runsnap("pin", "@good", cwd=tmp_path, env=env).returncode == 0
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "old.toml").write_text("")
    return tmp_path


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, **extra}
    env.pop("RUNSNAP_DIR", None)
    return env


def _complete(cwd: Path, shell: str, words: str, cword: str) -> list[str]:
    r = run_runsnap(cwd=cwd, env=_env(_RUNSNAP_COMPLETE=f"{shell}_complete", COMP_WORDS=words,
                                      COMP_CWORD=cword))
    assert r.returncode == 0 and not r.stderr, r.stderr
    return [line for line in r.stdout.splitlines() if line]


def test_snapshot_arguments_complete_positions_labels_and_pins(folder: Path) -> None:
    assert _complete(folder, "bash", "runsnap diff @", "2") == [
        "plain,@1", "plain,@2", "plain,@3", "plain,@bad", "plain,@good", "plain,@pinned"]
    assert _complete(folder, "bash", "runsnap show @g", "2") == ["plain,@good"]
    assert _complete(folder, "bash", "runsnap bisect @good @b", "3") == ["plain,@bad"]
    assert _complete(folder, "bash", "runsnap diff notes/o", "2") == ["file,notes/o"]
    # nothing typed: files too (bash's script then lists the names alone)
    assert _complete(folder, "bash", "runsnap unpin ", "2")[:2] == ["file,", "plain,@1"]
    # zsh: type, value, help; the help of @N says which run it is
    zsh = _complete(folder, "zsh", "runsnap replay @", "2")
    at1 = zsh.index("@1")
    assert zsh[at1 - 1] == "plain" and "(context only)" not in zsh[at1 + 1]
    assert zsh[zsh.index("@3") + 1].startswith("good 20")  # oldest: the pinned good run
    # fish: the incomplete word itself in COMP_CWORD; value and help split by a tab
    fish = _complete(folder, "fish", "runsnap check @p", "@p")
    assert fish == ["plain,@pinned\tnewest pinned"]
    # --dir is honoured, and a folder that does not exist completes to nothing, quietly
    assert _complete(folder, "bash", "runsnap show --dir nowhere @", "4") == []
    other = folder / "elsewhere"
    shutil.copytree(folder / ".runsnap", other)
    assert "plain,@good" in _complete(folder, "bash", "runsnap diff --dir elsewhere @", "4")


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completes_through_the_script_runsnap_writes(folder: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "runsnap"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} -m runsnap \"$@\"\n")
    script.chmod(0o755)
    env = _env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    source = run_runsnap(env={**env, "_RUNSNAP_COMPLETE": "bash_source"}).stdout
    assert "complete -o nosort -F _runsnap_completion runsnap" in source
    program = (source + '\nCOMP_WORDS=(runsnap diff "@go"); COMP_CWORD=2; '
               '_runsnap_completion runsnap; printf "%s\\n" "${COMPREPLY[@]}"\n')
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], cwd=folder, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == "@good\n", r.stderr


def test_the_documented_lines_give_each_shell_its_script() -> None:
    import re

    doc = (Path(__file__).parent.parent / "docs" / "commands.md").read_text()
    shells = re.findall(r"_RUNSNAP_COMPLETE=(\w+)_source runsnap", doc)
    assert {"bash", "zsh", "fish"} <= set(shells)
    for shell in set(shells):
        r = run_runsnap(env=_env(_RUNSNAP_COMPLETE=f"{shell}_source"))
        assert r.returncode == 0 and f"_RUNSNAP_COMPLETE={shell}_complete" in r.stdout, shell
