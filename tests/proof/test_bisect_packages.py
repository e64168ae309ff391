"""``runsnap bisect`` where the shells differ in ``PATH`` and one interpreter's packages
changed between the runs: the packages are the interpreter's own, not another interpreter's
that ``PATH`` picked, so they block, and the refusal names the package and the ``.pth``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.proof.conftest import capture, child, runsnap


@pytest.mark.slow
def test_packages_inside_one_interpreter_block_though_path_moved(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    prog = child(tmp_path / "app.py", "import chunker\nsys.exit(chunker.check())\n")
    lib = tmp_path / "lib-good"
    lib.mkdir()
    (lib / "chunker.py").write_text("def check():\n    return 0\n")
    (site / "chunker.pth").write_text(f"{lib}\n")
    path = f"{venv / 'bin'}:{os.environ['PATH']}"
    good = capture(tmp_path / "good.toml", ["python", str(prog)], {"PATH": path})
    # the same interpreter, its packages changed: a release of the library, found through
    # a .pth of site-packages as pip's editable installs write them
    new = tmp_path / "lib-new"
    new.mkdir()
    (new / "chunker.py").write_text("def check():\n    return 3\n")
    (site / "chunker.pth").write_text(f"{new}\n")
    meta = site / "chunker-2.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: chunker\nVersion: 2.0\n")
    (meta / "RECORD").write_text("chunker.pth,,\nchunker-2.0.dist-info/METADATA,,\n")
    bad = capture(tmp_path / "bad.toml", ["python", str(prog)],
                  {"PATH": f"{tmp_path / 'tools'}:{path}"})
    refused = runsnap("bisect", str(good), str(bad))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "cannot be applied" in refused.stderr and "packages chunker" in refused.stderr, \
        refused.stderr
    assert "runsnap does not install packages" in refused.stderr
    assert "lib-new" in refused.stderr  # the folder the .pth added to sys.path
