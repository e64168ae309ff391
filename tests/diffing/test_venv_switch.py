"""Another virtual environment is one cause: shown once (interpreter and prefix, A -> B), the
package versions that changed with it under it, stack packages first; packages that only moved
with the environment are not causes; sys.path shows what differs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import runsnap
from runsnap.render import render

SHARED = {"certifi": "2024.2.2", "idna": "3.6", "urllib3": "2.2.1", "pip": "24.0"}


def _venv(where: Path, dists: dict[str, str]) -> Path:
    """A real virtual environment holding ``dists`` (their metadata, as pip leaves it)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    site = next(where.glob("lib/python*/site-packages"))
    for name, version in dists.items():
        info = site / f"{name}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        (info / "RECORD").write_text("")
        (site / name).mkdir()
        (site / name / "__init__.py").write_text(f"__version__ = {version!r}\n")
    return where / "bin" / "python"


@pytest.fixture
def switch(tmp_path: Path) -> runsnap.Report:
    py_a = _venv(tmp_path / "venvA", {**SHARED, "requests": "2.31.0", "torch": "2.5.0",
                                      "zzlib": "1.0"})
    py_b = _venv(tmp_path / "venvB", {**SHARED, "requests": "2.32.3", "torch": "2.6.0",
                                      "zzlib": "1.1"})
    (tmp_path / "app.py").write_text("import requests\n")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["RUNSNAP_NO_CACHE"] = "1"
    a = runsnap.capture([str(py_a), "app.py"], env=env, cwd=tmp_path, label="a")
    b = runsnap.capture([str(py_b), "app.py"], env={**env, "SGLANG_FLAG": "1"}, cwd=tmp_path,
                        label="b")
    report = runsnap.diff(a, b)
    assert isinstance(report, runsnap.Report)
    return report


def test_the_switch_is_one_cause_with_the_versions_under_it(switch: runsnap.Report) -> None:
    top = [d for d in switch.counted if d.section in ("packages", "command")]
    assert len(top) == 1, [d.where for d in top]
    cause = top[0]
    assert cause.key in ("prefix", "interpreter")
    assert "venvA" in str(cause.a) and "venvB" in str(cause.b)
    shown = [r.key for r in cause.related if not r.hidden]
    assert shown.index("torch") < shown.index("requests")  # the stack first
    assert shown.index("requests") < shown.index("zzlib")
    moved = [r for r in cause.related if r.key.endswith(".location")]
    assert {r.key for r in moved} == {f"{n}.location" for n in SHARED}
    assert all(r.hidden for r in moved)
    assert not [d for d in switch.counted if d.key.endswith(".location")]
    # the variable changed on purpose is a cause of its own
    assert any(d.key == "SGLANG_FLAG" for d in switch.counted)


def test_the_text_shows_the_switch_once_and_sys_path_by_what_differs(
        switch: runsnap.Report) -> None:
    text = render(switch, "text", width=200)
    assert "certifi.location" not in text
    assert "4 packages at the same version moved with it" in text
    line = next(ln for ln in text.splitlines() if " sys.path " in ln)
    assert "venvA" in line and "venvB" in line, line
    shared = f"python{sys.version_info.major}{sys.version_info.minor}.zip"
    assert shared not in line, line  # entries both have are not repeated


def test_traced_runs_show_the_switch_once(tmp_path: Path) -> None:
    """With run-time evidence, modules imported from the other environment at the same version
    are not causes either; the imported package that changed version ranks first under it."""
    py_a = _venv(tmp_path / "venvA", {**SHARED, "requests": "2.31.0", "torch": "2.5.0"})
    py_b = _venv(tmp_path / "venvB", {**SHARED, "requests": "2.32.3", "torch": "2.6.0"})
    (tmp_path / "app.py").write_text("import certifi, idna, requests\n")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    runs = [runsnap.run([str(py), "app.py"], env=env, cwd=tmp_path, label=label,
                        output=tmp_path / f"{label}.toml").snapshot
            for label, py in (("a", py_a), ("b", py_b))]
    assert all((s.get("runtime") or {}).get("traced") for s in runs), "runs were not traced"
    report = runsnap.diff(*runs)
    assert isinstance(report, runsnap.Report)
    top = [d.where for d in report.counted if d.section in ("packages", "command", "runtime")
           and not d.where.startswith("runtime env")]
    assert len(top) == 1, top
    cause = report.counted[0]
    shown = [r.where for r in cause.related if not r.hidden]
    assert shown[0] == "packages requests", shown  # imported, and changed: first
    hidden = {r.where for r in cause.related if r.hidden}
    assert {"runtime module certifi", "runtime module idna"} <= hidden


def test_the_activated_path_moves_with_the_environment(tmp_path: Path) -> None:
    """A shell that activated the project's venv: PATH gained its bin folder and lost the
    other environment's. The PATH difference is the switch's, under it, not a cause of its own
    beside it (its name rule's "also:" line is no PATH entry)."""
    py_a = _venv(tmp_path / "venvA", {**SHARED, "requests": "2.31.0"})
    py_b = _venv(tmp_path / "venvB", {**SHARED, "requests": "2.32.3"})
    (tmp_path / "app.py").write_text("import requests\n")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    rest = "/usr/local/bin:/usr/bin:/bin"
    a, b = (runsnap.run([str(py), "app.py"], env={**env, "PATH": f"{py.parent}:{rest}"},
                        cwd=tmp_path, label=label, output=tmp_path / f"{label}.toml").snapshot
            for label, py in (("a", py_a), ("b", py_b)))
    report = runsnap.diff(a, b)
    assert isinstance(report, runsnap.Report)
    assert not any(d.key == "PATH" for d in report.counted), [d.where for d in report.counted]
    cause = next(d for d in report.counted if d.key in ("prefix", "interpreter"))
    assert any(r.key == "PATH" for r in cause.related), [r.where for r in cause.related]
