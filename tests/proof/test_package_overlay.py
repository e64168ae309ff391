"""Another version of one package, installed between the runs into the project's venv ahead
of the shared one: ``runsnap why`` proves it by an overlay on ``PYTHONPATH`` of the other run's
installed copy, the venvs untouched; where the old version was replaced in place, it says
precisely why no trial can apply it.

Seen in the diagnosis corpus (fresh5 ``pydantic-downgraded-between``, benchmarks/RESULTS.md):
``packages pydantic: cannot be applied to prove it (other packages or interpreter: runsnap
does not install packages)``. Real pip installs (their RECORD), real venvs, real launches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.proof.conftest import capture, child
from tests.proof.conftest import runsnap as run_runsnap

#: Version 2 has ``parse_json``; version 1 (the legacy pin) does not.
CODE = {"2.0": "def parse_json(text):\n    return text.strip()\n",
        "1.0": "def parse(text):\n    return text\n"}


def _install(tmp_path: Path, version: str, target: Path) -> None:
    """``pip install --target TARGET`` of ``evalschema`` VERSION built from a source tree."""
    src = tmp_path / f"src-{version}"
    (src / "evalschema").mkdir(parents=True, exist_ok=True)
    (src / "evalschema" / "__init__.py").write_text(f"__version__ = {version!r}\n"
                                                    + CODE[version])
    (src / "pyproject.toml").write_text(
        "[build-system]\nrequires = ['setuptools']\nbuild-backend = 'setuptools.build_meta'\n"
        f"[project]\nname = 'evalschema'\nversion = '{version}'\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--no-build-isolation", "--upgrade", "--target", str(target), str(src)],
                   check=True, capture_output=True)


def _project(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A project venv layered (a .pth) on a shared folder that holds evalschema 2.0: its
    python, its own site-packages, the shared folder."""
    venv = tmp_path / "proj" / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    shared = tmp_path / "shared-site"
    _install(tmp_path, "2.0", shared)
    (site / "_shared.pth").write_text(f"{shared}\n")
    return venv / "bin" / "python", site, shared


def _listing(*folders: Path) -> list[tuple[str, float]]:
    return sorted((str(p), p.stat().st_mtime) for f in folders for p in f.rglob("*")
                  if "__pycache__" not in p.parts)


@pytest.mark.slow
def test_another_version_in_the_project_venv_is_proven_through_an_overlay(
        tmp_path: Path) -> None:
    python, site, shared = _project(tmp_path)
    prog = child(tmp_path / "proj" / "run_eval.py",
                 "import evalschema\nprint(evalschema.parse_json(' ok '))\n")
    store = tmp_path / ".runsnap"
    capture(store / "good.toml", [str(python), str(prog)])
    _install(tmp_path, "1.0", site)  # pip install -r requirements-legacy.txt, for a notebook
    time.sleep(0.01)
    capture(store / "bad.toml", [str(python), str(prog)])
    before = _listing(site, shared)
    proc = run_runsnap("why", "--prove", "--yes", "--format", "json", cwd=tmp_path)
    out = json.loads(proc.stdout)
    assert out["status"] == "proven", out
    assert [f"{c['section']} {c['key']}" for c in out["cause"]] == ["packages evalschema"]
    assert out["proof"]["holds"] and out["launches"] == 2
    assert _listing(site, shared) == before  # neither the venv nor the shared folder written
    logs = sorted(store.glob("bisect-*/trial-0*.log"))
    assert "AttributeError" in logs[0].read_text() and "ok" in logs[1].read_text()


@pytest.mark.slow
def test_a_version_replaced_in_place_is_named_with_what_to_do(tmp_path: Path) -> None:
    python, site, _shared = _project(tmp_path)
    _install(tmp_path, "2.0", site)  # the project's own copy, upgraded in place below
    prog = child(tmp_path / "proj" / "run_eval.py",
                 "import evalschema\nprint(evalschema.parse_json(' ok '))\n")
    store = tmp_path / ".runsnap"
    capture(store / "good.toml", [str(python), str(prog)])
    _install(tmp_path, "1.0", site)
    time.sleep(0.01)
    capture(store / "bad.toml", [str(python), str(prog)])
    raw = run_runsnap("why", "--prove", "--yes", "--format", "json", cwd=tmp_path).stdout
    (tmp_path / "out.json").write_text(raw)
    out = json.loads(raw)
    assert out["launches"] == 0 and out["status"] == "confident", out
    # pip --target --upgrade replaced the package's folder and left 2.0's .dist-info: the
    # files no longer match its RECORD
    assert any(c.startswith("packages evalschema: ") and f"evalschema/__init__.py in {site} "
               "is no longer as evalschema-2.0.dist-info installed it" in c
               for c in out["cannot"]), out["cannot"]
    assert any("pip install evalschema==2.0" in line for line in out["experiment"])


@pytest.mark.slow
def test_a_venv_switch_is_narrowed_to_the_package_the_error_names(tmp_path: Path) -> None:
    """Two venvs on one base Python, picked by PATH: the switch is proven by applying PATH,
    then narrowed to the package whose version differs, through overlays (4 launches)."""
    sites = {}
    for name, version in (("shared", "2.0"), ("project", "1.0")):
        venv = tmp_path / name / ".venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        sites[name] = next(venv.glob("lib/python*/site-packages"))
        _install(tmp_path, version, sites[name])
    prog = child(tmp_path / "run_eval.py",
                 "import evalschema\nprint(evalschema.parse_json(' ok '))\n")
    store = tmp_path / ".runsnap"
    path = os.environ["PATH"]
    capture(store / "good.toml", ["python", str(prog)],
            {"PATH": f"{tmp_path / 'shared' / '.venv' / 'bin'}:{path}", "VIRTUAL_ENV": None})
    time.sleep(0.01)
    capture(store / "bad.toml", ["python", str(prog)],
            {"PATH": f"{tmp_path / 'project' / '.venv' / 'bin'}:{path}", "VIRTUAL_ENV": None})
    before = _listing(*sites.values())
    out = json.loads(run_runsnap("why", "--prove", "--yes", "--format", "json",
                                 cwd=tmp_path).stdout)
    assert out["status"] == "proven", out
    assert [f"{c['section']} {c['key']}" for c in out["cause"]] == ["packages evalschema"], out
    assert out["launches"] == 4 and "narrowed to packages evalschema" in out["how"], out["how"]
    assert _listing(*sites.values()) == before


def _dist(tmp_path: Path, name: str, files: dict[str, str], target: Path) -> None:
    """``pip install --prefix PREFIX`` of distribution NAME 1.0 holding ``files`` (pip merges
    a folder two distributions fill, as in any venv; its site-packages: :func:`_site`)."""
    src = tmp_path / f"src-{name}"
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    top = sorted({rel.split("/")[0] for rel in files})
    (src / "pyproject.toml").write_text(
        "[build-system]\nrequires = ['setuptools']\nbuild-backend = 'setuptools.build_meta'\n"
        f"[project]\nname = '{name}'\nversion = '1.0'\n"
        f"[tool.setuptools]\npackages = {top!r}\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--no-build-isolation", "--prefix", str(target), str(src)],
                   check=True, capture_output=True)


def _site(prefix: Path) -> Path:
    return next(prefix.glob("lib/python*/site-packages"))


def test_a_folder_without_init_is_linked_unless_another_distribution_shares_it(
        tmp_path: Path) -> None:
    """A folder with no ``__init__.py`` that only its distribution fills (numpy's
    ``numpy.libs``: fresh6 ``numpy-two-on-path`` was refused) is linked; one another
    distribution also fills (a namespace package) is refused: a link would hide its part."""
    from runsnap.experiments.overlay import installed_copy
    from runsnap.snapshot import Snapshot

    prefix = tmp_path / "prefix"
    _dist(tmp_path, "acme-a", {"acme/a.py": "A = 1\n"}, prefix)
    site = _site(prefix)

    def snap(name: str) -> Snapshot:
        return Snapshot({}, {"packages": {"distributions": {
            name: {"version": "1.0", "location": str(site)}}}})

    found = installed_copy(snap("acme-a"), "acme-a", "1.0")
    assert not isinstance(found, str) and found[1] == [str(site / "acme")], found
    _dist(tmp_path, "acme-b", {"acme/b.py": "B = 1\n"}, prefix)
    assert (site / "acme" / "a.py").exists() and (site / "acme" / "b.py").exists()
    refused = installed_copy(snap("acme-a"), "acme-a", "1.0")
    assert isinstance(refused, str) and "acme/ holds files of other distributions" in refused
