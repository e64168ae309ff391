"""``--python``: a missing or non-Python interpreter is a usage error before anything launches;
one that is Python but fails while probing is recorded in one line with its exit status."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.conftest import run_runsnap


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RUNSNAP_DIR"}
    return {**env, "RUNSNAP_KEY_FILE": str(tmp_path / "key")}


@pytest.mark.parametrize("given", ["/nonexistent/python", "/bin/ls", "no-such-python3.99",
                                   "."])
def test_a_missing_or_non_python_interpreter_is_a_usage_error(given: str, tmp_path: Path) -> None:
    marker = tmp_path / "launched"
    for args in (["--no-run", "-o", "x.toml"],
                 ["-o", "x.toml", "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"]):
        done = run_runsnap("capture", "--python", given, *args, cwd=tmp_path, env=_env(tmp_path))
        assert done.returncode == 2, done.stderr
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("runsnap: --python "), done.stderr
        assert given in lines[0]
        assert not (tmp_path / "x.toml").exists()
        assert not marker.exists()


def test_a_python_that_fails_while_probing_is_recorded_in_one_line(tmp_path: Path) -> None:
    fake = tmp_path / "venv" / "bin" / "python3"
    fake.parent.mkdir(parents=True)
    # a broken interpreter: it answers the check of --python but fails on anything longer
    fake.write_text(f"#!/bin/sh\ncase \"$2\" in 'import sys'*) exec {sys.executable} \"$@\";; esac\n"
                    "echo 'Fatal Python error: init_fs_encoding: failed to get the codec' >&2\n"
                    "echo 'ModuleNotFoundError: No module named encodings' >&2\nexit 3\n")
    fake.chmod(0o755)
    done = run_runsnap("capture", "--python", str(fake), "--no-run", "-o", "x.toml",
                       cwd=tmp_path, env=_env(tmp_path))
    assert done.returncode == 0, done.stderr
    from runsnap import load

    packages = load(tmp_path / "x.toml").sections["packages"]
    assert packages["probe_exit_status"] == 3
    assert packages["errors"] == [f"package probe in {fake} failed with exit status 3: Fatal "
                                  "Python error: init_fs_encoding: failed to get the codec"]
    shown = run_runsnap("show", "x.toml", cwd=tmp_path, env=_env(tmp_path))
    assert "List the distributions" not in shown.stdout
    # the summary stays short (the environment block after it lists the host's facts)
    summary = shown.stdout.split("environment (in torch.utils.collect_env's order)", 1)[0]
    assert len(summary.splitlines()) < 40
