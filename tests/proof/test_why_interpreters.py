"""``runsnap why --prove`` where BAD ran another venv than GOOD, layered on the same base
Python (so the interpreter's version is the same, its environment is not): the venv's
packages follow what picked it, ``PATH`` (``python app.py``) or the interpreter's own path
(``/venv/bin/python app.py``), and that is applied to prove the cause; then the switch is
narrowed to the one package whose version differs, through overlays (2 launches more). Before,
both stopped at "packages prefix: cannot be applied to prove it (other packages or
interpreter)"; then at the switch itself (``PATH``, the program).

Seen in the diagnosis corpus (fresh6 ``numpy-two-on-path``, fresh4
``polars-old-project-venv``, benchmarks/RESULTS.md). Real venvs, real launches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.conftest import pip_install
from tests.proof.conftest import capture, child
from tests.proof.conftest import runsnap as run_runsnap

_APP = "import chunker\nchunker.check()\nprint('ok')\n"


def _venv(tmp_path: Path, name: str, version: str, body: str) -> Path:
    """A venv (no pip) holding ``chunker`` ``version``, installed as pip lays a wheel out."""
    venv = tmp_path / name
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "chunker").mkdir()
    (site / "chunker" / "__init__.py").write_text(body)
    meta = site / f"chunker-{version}.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: chunker\nVersion: {version}\n")
    (meta / "RECORD").write_text(f"chunker/__init__.py,,\nchunker-{version}.dist-info/METADATA,,\n")
    return venv


def _venvs(tmp_path: Path) -> tuple[Path, Path]:
    good = _venv(tmp_path, "venv-shared", "2.0", "def check():\n    return None\n")
    bad = _venv(tmp_path, "venv-old", "1.0",
                "def check():\n    raise AttributeError('chunker 1.0 has no check_all')\n")
    return good, bad


def _why(tmp_path: Path) -> dict[str, Any]:
    proc = run_runsnap("why", "--prove", "--yes", "--format", "json", cwd=tmp_path)
    assert proc.stdout, proc.stderr
    return dict(json.loads(proc.stdout))


def test_a_venv_path_picked_is_proven_by_applying_path(tmp_path: Path) -> None:
    venv_a, venv_b = _venvs(tmp_path)
    prog = child(tmp_path / "app.py", _APP)
    store = tmp_path / ".runsnap"
    base = os.environ["PATH"]
    capture(store / "good.toml", ["python", str(prog)], {"PATH": f"{venv_a / 'bin'}:{base}"})
    time.sleep(0.01)
    capture(store / "bad.toml", ["python", str(prog)], {"PATH": f"{venv_b / 'bin'}:{base}"})
    out = _why(tmp_path)
    assert out["status"] == "proven", (out["message"], out["cannot"])
    assert [(c["section"], c["key"]) for c in out["cause"]] == [("packages", "chunker")]
    assert "follows env PATH: proven by applying it" in str(out["how"])
    assert "narrowed to packages chunker" in str(out["how"]) and out["launches"] == 4


def test_a_venv_interpreter_named_by_path_is_proven_by_applying_it(tmp_path: Path) -> None:
    venv_a, venv_b = _venvs(tmp_path)
    prog = child(tmp_path / "app.py", _APP)
    store = tmp_path / ".runsnap"
    capture(store / "good.toml", [str(venv_a / "bin" / "python"), str(prog)])
    time.sleep(0.01)
    capture(store / "bad.toml", [str(venv_b / "bin" / "python"), str(prog)])
    out = _why(tmp_path)
    assert out["status"] == "proven", (out["message"], out["cannot"])
    assert [(c["section"], c["key"]) for c in out["cause"]] == [("packages", "chunker")]
    assert "follows command program: proven by applying it" in str(out["how"])
    assert "narrowed to packages chunker" in str(out["how"]) and out["launches"] == 4
    assert out["proof"]["applied"].startswith("bad: exit 1: AttributeError")


def test_a_venv_named_by_path_against_one_a_shell_put_on_path_is_proven(tmp_path: Path) -> None:
    # a service runs /opt/app/venv/bin/python; the engineer's shell activated another venv
    # and runs `python`: one interpreter for another, applied by the path PATH resolved
    venv_a, venv_b = _venvs(tmp_path)
    prog = child(tmp_path / "app.py", _APP)
    store = tmp_path / ".runsnap"
    base = os.environ["PATH"]
    capture(store / "good.toml", [str(venv_a / "bin" / "python"), str(prog)])
    time.sleep(0.01)
    capture(store / "bad.toml", ["python", str(prog)], {"PATH": f"{venv_b / 'bin'}:{base}"})
    out = _why(tmp_path)
    assert out["status"] == "proven", (out["message"], out["cannot"])
    assert [(c["section"], c["key"]) for c in out["cause"]] == [("packages", "chunker")]
    assert "follows command program: proven by applying it" in str(out["how"])
    assert out["proof"]["applied"].startswith("bad: exit 1: AttributeError")


def test_a_venv_with_an_editable_checkout_is_narrowed_to_that_package(tmp_path: Path) -> None:
    # the engineer's venv holds chunker installed editable from a dev checkout (a .pth puts
    # the checkout's src/ on the path): the overlay links what the run imported from it
    venv_a, _ = _venvs(tmp_path)
    src = tmp_path / "src" / "chunker"
    (src / "src" / "chunker").mkdir(parents=True)
    (src / "src" / "chunker" / "__init__.py").write_text(
        "def check():\n    raise AttributeError('chunker 1.1.dev0 has no check_all')\n")
    (src / "pyproject.toml").write_text(
        "[build-system]\nrequires = ['setuptools']\nbuild-backend = 'setuptools.build_meta'\n"
        "[project]\nname = 'chunker'\nversion = '1.1.dev0'\n"
        "[tool.setuptools.packages.find]\nwhere = ['src']\n")
    venv_b = tmp_path / "venv-dev"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv_b)], check=True)
    pip_install(venv_b / "bin" / "python", "--no-deps", "-e", str(src), tmp=tmp_path)
    prog = child(tmp_path / "app.py", _APP)
    store = tmp_path / ".runsnap"
    base = os.environ["PATH"]
    capture(store / "good.toml", [str(venv_a / "bin" / "python"), str(prog)])
    time.sleep(0.01)
    capture(store / "bad.toml", ["python", str(prog)], {"PATH": f"{venv_b / 'bin'}:{base}"})
    bad = (store / "bad.toml").read_text()
    assert "editable = true" in bad and "__editable__" in "".join(
        p.name for p in venv_b.glob("lib/python*/site-packages/*"))
    out = _why(tmp_path)
    assert out["status"] == "proven", (out["message"], out["cannot"])
    assert [(c["section"], c["key"]) for c in out["cause"]] == [("packages", "chunker")]
    assert "narrowed to packages chunker" in str(out["how"]) and out["launches"] == 4
    assert out["proof"]["applied"].startswith("bad: exit 1: AttributeError")


def test_a_copy_without_a_record_is_narrowed_by_what_the_run_imported(tmp_path: Path) -> None:
    # a hand-made (or legacy) install lists no files, only its top-level names: the run's
    # imports say what to link
    venv_a, venv_b = _venvs(tmp_path)
    for venv in (venv_a, venv_b):
        for record in venv.glob("lib/python*/site-packages/chunker-*.dist-info/RECORD"):
            (record.parent / "top_level.txt").write_text("chunker\n")
            record.unlink()
    prog = child(tmp_path / "app.py", _APP)
    store = tmp_path / ".runsnap"
    capture(store / "good.toml", [str(venv_a / "bin" / "python"), str(prog)])
    time.sleep(0.01)
    capture(store / "bad.toml", [str(venv_b / "bin" / "python"), str(prog)])
    out = _why(tmp_path)
    assert out["status"] == "proven", (out["message"], out["cannot"])
    assert [(c["section"], c["key"]) for c in out["cause"]] == [("packages", "chunker")]
    assert "narrowed to packages chunker" in str(out["how"]) and out["launches"] == 4
