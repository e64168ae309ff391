"""A package installed editable from another checkout in another venv is one cause
(runsnap/diffing/editables.py, grouping.by_interpreter): the two checkouts, each a repository
one run alone has, go under the package, the package under the environment; and ``PATH``,
which differs in the venv's ``bin`` and in entries the shells add that resolved nothing the
runs ran, is how the environment was chosen, not a candidate of its own. (A service's venv
with the team's library editable from its release checkout, against an engineer's venv with
it editable from a dev checkout where a feature was renamed: undecided between ``PATH``, the
environment and both repositories.)

Real venvs, real ``pip install -e`` from real git repositories, real captures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import runsnap
from runsnap.capturing import run
from tests.conftest import pip_install

LIB = '''"""Feature engineering."""
__version__ = "{version}"
FEATURES = {features!r}
'''

APP = """
from featlib import FEATURES

print("column", FEATURES.index("amount_log"))
"""


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                   check=True, capture_output=True)


def _checkout(where: Path, version: str, features: list[str]) -> Path:
    (where / "featlib").mkdir(parents=True)
    (where / "featlib" / "__init__.py").write_text(LIB.format(version=version, features=features))
    (where / "setup.py").write_text(
        f'from setuptools import setup\nsetup(name="featlib", version="{version}", '
        f'packages=["featlib"])\n')
    _git("init", "-q", "-b", "main", cwd=where)
    _git("add", ".", cwd=where)
    _git("commit", "-q", "-m", f"featlib {version}", cwd=where)
    return where


def _venv(where: Path, checkout: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    pip_install(where / "bin" / "python", "--no-deps", "-e", str(checkout), tmp=where.parent)
    return where / "bin"


def test_another_venv_with_the_package_editable_from_another_checkout_is_one_cause(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    release = _checkout(tmp_path / "srv" / "featlib-release", "0.4.0",
                        ["amount_log", "hour_sin"])
    dev = _checkout(tmp_path / "home" / "src" / "featlib", "0.5.0.dev3",
                    ["log_amount", "hour_sin"])
    svc_bin = _venv(tmp_path / "opt" / "svc" / "venv", release)
    dev_bin = _venv(tmp_path / "home" / "venvs" / "feat", dev)
    app = tmp_path / "app"
    app.mkdir()
    (app / "report.py").write_text(APP)
    _git("init", "-q", "-b", "main", cwd=app)
    _git("add", ".", cwd=app)
    _git("commit", "-q", "-m", "report", cwd=app)
    tools = tmp_path / "opt" / "svc" / "bin"  # a service's own folder: no python in it
    tools.mkdir()
    local = tmp_path / "home" / ".local" / "bin"  # a login shell's: no python either
    local.mkdir(parents=True)
    path = base_env["PATH"]
    run(["python", "report.py"], cwd=app, output=tmp_path / "a.toml",
        env={**base_env, "PATH": f"{svc_bin}:{tools}:{path}"})
    run(["python", "report.py"], cwd=app, output=tmp_path / "b.toml",
        env={**base_env, "PATH": f"{dev_bin}:{local}:{path}",
             "VIRTUAL_ENV": str(dev_bin.parent)})
    a, b = runsnap.load(tmp_path / "a.toml"), runsnap.load(tmp_path / "b.toml")
    assert a.records.outcome.exit_status == 0 and b.records.outcome.exit_status == 1
    report = runsnap.diff(a, b)
    assert isinstance(report, runsnap.Report)
    top = report.counted[0]
    assert (top.section, top.key) in (("packages", "prefix"), ("packages", "interpreter")), \
        [(d.section, d.key, d.score) for d in report.counted[:4]]
    assert report.confidence == "confident", report.verdict
    package = next(r for r in top.related if r.section == "packages" and r.key == "featlib")
    repos = {r.key for r in package.related if r.section == "git"}
    assert repos == {"featlib", "featlib-release"}, [(r.section, r.key) for r in package.related]
    path_diff = next(r for r in top.related if r.section == "env" and r.key == "PATH")
    assert "activation of the other environment" in path_diff.reason
    assert not [d for d in report.counted if d.section == "git"]
