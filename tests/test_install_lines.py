"""README's install lines (issue 38, item 1), run as written in a fresh clone with a fresh HOME:
the virtual environment's lines always; pipx's and uv's where that tool is already installed
(a test installs nothing from an index; their first line, getting the tool, is pip's own)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from runsnap import __version__
from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def install_lines() -> list[str]:
    """The commands of README's install block (comments dropped), in order."""
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- install-lines -->", 1)[1].split("<!-- /install-lines -->", 1)[0]
    lines = [ln.split("  #", 1)[0].strip() for ln in block.strip().strip("`").splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#")]


def test_the_block_says_only_what_was_tried() -> None:
    lines = install_lines()
    assert lines == [
        "python3 -m pip install --user pipx", "python3 -m pipx install .",
        "~/.local/bin/runsnap --version",
        "python3 -m pip install --user uv", "~/.local/bin/uv tool install .",
        "~/.local/bin/runsnap --version",
        "python3 -m venv .venv && .venv/bin/pip install .", ".venv/bin/runsnap --version",
        ".venv/bin/python -m runsnap --version"]
    assert "pip install runsnap" not in (ROOT / "README.md").read_text()  # not published


def _run(line: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


def test_the_venv_lines_install_a_runsnap_that_runs(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    home = tmp_path / "home"
    home.mkdir()
    lines = install_lines()
    at = lines.index("python3 -m venv .venv && .venv/bin/pip install .")
    made = _run(lines[at], clone, home)
    if made.returncode and "hatchling" in made.stderr and "No matching distribution" in made.stderr:
        pytest.skip("no index to build from here: pip cannot get hatchling")
    assert made.returncode == 0, made.stderr[-2000:]
    for line in lines[at + 1:]:
        r = _run(line, clone, home)
        assert r.returncode == 0 and r.stdout == f"runsnap, version {__version__}\n", (line, r)
    # with the venv active, as a new user types it
    active = _run(". .venv/bin/activate && runsnap --version && python -m runsnap --version",
                  clone, home)
    assert active.stdout == f"runsnap, version {__version__}\n" * 2, active.stderr


@pytest.mark.parametrize("tool", ["pipx", "uv"])
def test_the_tool_lines_install_a_runsnap_that_runs(tool: str, tmp_path: Path) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed here (the README's first line gets it from PyPI)")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / tool).symlink_to(shutil.which(tool) or tool)
    lines = install_lines()
    install = lines.index("python3 -m pipx install ." if tool == "pipx"
                          else "~/.local/bin/uv tool install .")
    line = f"{tool} install ." if tool == "pipx" else lines[install]
    assert _run(line, clone, home).returncode == 0
    r = _run(lines[install + 1], clone, home)
    assert r.stdout == f"runsnap, version {__version__}\n", r.stderr
