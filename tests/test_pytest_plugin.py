"""``pytest --runsnap`` (issue 38, item 6): real pytest sessions of a small real project, in a
real venv with a real package installed by pip, under two environments ("CI" and "local");
``runsnap diff`` then names the planted cause of a test that fails in one of them only: a
variable, a time zone, a package version. With pytest-xdist too, and off by default."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import pip_install, run_runsnap

pytestmark = pytest.mark.slow

TESTS = '''
import os
import time

import pytest


def mode():
    return os.environ.get("APP_MODE", "fast")


def test_mode_is_fast():
    assert mode() == "fast"


def test_epoch_hour_is_midnight():
    assert time.strftime("%H", time.localtime(0)) == "00"


def test_cost_split():
    from tinycalc import split_cost

    assert split_cost(10.0, 4) == 2.5


def test_sum():
    assert sum([1, 2]) == 3


@pytest.mark.skip(reason="not on this platform")
def test_skipped():
    pass


@pytest.mark.xfail(reason="known bug")
def test_known_bug():
    assert 1 == 2
'''

TINYCALC = {
    "1.0": "def split_cost(total, n):\n    return total / n\n",
    "2.0": ("def split_cost(total, n):\n    if not isinstance(total, int):\n"
            "        raise TypeError('split_cost() takes whole cents since 2.0')\n"
            "    return total // n\n"),
}

#: What differs between any CI runner and a laptop, besides the planted cause.
CI = {"CI": "true", "GITHUB_ACTIONS": "true", "RUNNER_OS": "Linux", "TZ": "UTC"}
LOCAL = {"TERM_PROGRAM": "vscode", "EDITOR": "vim", "TZ": "UTC"}


def _tinycalc(root: Path, version: str) -> Path:
    proj = root / f"tinycalc-{version}"
    (proj / "tinycalc").mkdir(parents=True, exist_ok=True)
    (proj / "tinycalc" / "__init__.py").write_text(TINYCALC[version])
    (proj / "setup.py").write_text(textwrap.dedent(f"""
        from setuptools import setup
        setup(name="tinycalc", version={version!r}, packages=["tinycalc"])
    """))
    return proj


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The project, and a venv with pytest, pytest-xdist and runsnap (this environment's, by
    a .pth line) and tinycalc 1.0 installed by pip."""
    root = tmp_path_factory.mktemp("plugin")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['purelib'])"], capture_output=True, text=True, check=True)
    ours = [p for p in site.getsitepackages() if "site-packages" in p]
    Path(purelib.stdout.strip(), "zz-test-env.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in ours))
    pip_install(python, "--no-deps", str(_tinycalc(root, "1.0")), tmp=root)
    work = root / "work"
    (work / "tests").mkdir(parents=True)
    (work / "tests" / "test_app.py").write_text(TESTS)
    return {"root": root, "python": python, "work": work}


def _session(project: dict[str, Any], out: str, extra: dict[str, str], *args: str
             ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **extra}
    env.pop("RUNSNAP_DIR", None)
    return subprocess.run([str(project["python"]), "-m", "pytest", "-p", "no:cacheprovider",
                           f"--runsnap={out}", *args, "tests"], cwd=project["work"], env=env,
                          capture_output=True, text=True, timeout=300)


def _diff(project: dict[str, Any], a: str, b: str) -> dict[str, Any]:
    r = run_runsnap("diff", "--format", "json", a, b, cwd=project["work"])
    assert r.returncode == 1, r.stderr
    return json.loads(r.stdout)


def _top(doc: dict[str, Any]) -> tuple[str, str]:
    first = next(d for d in doc["differences"] if d["section"] != "outcome")
    return first["section"], first["key"]


def _tests(doc: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    return {d["key"][len("test "):]: (d["a"], d["b"]) for d in doc["differences"]
            if d["section"] == "outcome" and d["key"].startswith("test ")}


def test_the_diff_of_two_sessions_names_each_planted_cause(project: dict[str, Any]) -> None:
    work = project["work"]
    local = _session(project, "local.toml", LOCAL)
    assert local.returncode == 0, local.stdout + local.stderr
    assert "runsnap: snapshot " in local.stdout
    snap = run_runsnap("show", "--section", "tests", "--format", "json", "local.toml", cwd=work)
    tests = json.loads(snap.stdout)
    assert tests["counts"] == {"passed": 4, "skipped": 1, "xfailed": 1}
    assert tests["cases"]["tests/test_app.py::test_skipped"]["error"] == "not on this platform"
    command = json.loads(run_runsnap("show", "--section", "command", "--format", "json",
                                     "local.toml", cwd=work).stdout)
    assert command["argv"][0] == str(project["python"])
    assert not any("--runsnap" in a for a in command["argv"])  # runsnap's own option

    # 1. a variable: set on the CI runner only, read by the failing test
    ci = _session(project, "ci-var.toml", {**CI, "APP_MODE": "slow"})
    assert ci.returncode == 1
    doc = _diff(project, "local.toml", "ci-var.toml")
    assert _top(doc) == ("env", "APP_MODE") and doc["confidence"] == "confident", doc["verdict"]
    assert _tests(doc) == {"tests/test_app.py::test_mode_is_fast": ("passed", "failed")}
    shown = run_runsnap("show", "ci-var.toml", cwd=work, env={**os.environ, "COLUMNS": "100"})
    lines = shown.stdout.splitlines()
    at = lines.index("tests")  # after the outcome, before git
    assert lines.index("outcome") < at < lines.index("git")
    assert lines[at + 1].endswith(": 1 failed, 3 passed, 1 skipped, 1 xfailed")
    assert lines[at + 2] == ("  failed tests/test_app.py::test_mode_is_fast: AssertionError: "
                             "assert 'slow' == 'fast'")

    # 2. a time zone: read inside the C library, by the call the failing test makes
    ci = _session(project, "ci-tz.toml", {**CI, "TZ": "Asia/Tokyo"})
    assert ci.returncode == 1
    doc = _diff(project, "local.toml", "ci-tz.toml")
    assert _top(doc) == ("env", "TZ") and doc["confidence"] == "confident", doc["verdict"]
    assert _tests(doc) == {"tests/test_app.py::test_epoch_hour_is_midnight": ("passed", "failed")}

    # 3. a package version: tinycalc upgraded by pip, its new code raising in the failing test
    pip_install(project["python"], "--no-deps", str(_tinycalc(project["root"], "2.0")),
                tmp=project["root"])
    try:
        ci = _session(project, "ci-pkg.toml", CI)
    finally:
        pip_install(project["python"], "--no-deps", str(_tinycalc(project["root"], "1.0")),
                    tmp=project["root"])
    assert ci.returncode == 1
    doc = _diff(project, "local.toml", "ci-pkg.toml")
    assert _top(doc) == ("packages", "tinycalc") and doc["confidence"] == "confident", \
        doc["verdict"]
    assert _tests(doc) == {"tests/test_app.py::test_cost_split": ("passed", "failed")}
    text = run_runsnap("diff", "local.toml", "ci-pkg.toml", cwd=work).stdout
    assert "TypeError: split_cost() takes whole cents since 2.0" in text


def test_xdist_workers_report_to_one_snapshot(project: dict[str, Any]) -> None:
    r = _session(project, "xdist.toml", {**CI, "APP_MODE": "slow"}, "-n", "2")
    assert r.returncode == 1, r.stdout + r.stderr
    snaps = list(project["work"].glob("xdist*.toml")) + list(
        (project["work"] / ".runsnap").glob("*.toml") if (project["work"] / ".runsnap").exists()
        else [])
    assert [s.name for s in snaps] == ["xdist.toml"]  # one snapshot, the controller's
    tests = json.loads(run_runsnap("show", "--section", "tests", "--format", "json", "xdist.toml",
                                   cwd=project["work"]).stdout)
    assert tests["counts"] == {"failed": 1, "passed": 3, "skipped": 1, "xfailed": 1}
    assert "xdist (2 workers)" in tests["runner"]
    runtime = json.loads(run_runsnap("show", "--section", "runtime", "--format", "json",
                                     "xdist.toml", cwd=project["work"]).stdout)
    assert runtime["traced"] and len(runtime["processes"]) >= 3  # controller and two workers
    if (project["work"] / "local.toml").exists():
        doc = _diff(project, "local.toml", "xdist.toml")
        assert _top(doc) == ("env", "APP_MODE"), doc["verdict"]


def test_off_by_default_it_imports_nothing_of_runsnap(project: dict[str, Any]) -> None:
    probe = project["work"] / "conftest.py"
    probe.write_text("import sys\n\ndef pytest_sessionfinish(session):\n"
                     "    mods = sorted(m for m in sys.modules if m.split('.')[0] == 'runsnap')\n"
                     "    open('mods.txt', 'w').write(' '.join(mods))\n")
    try:
        env = {**os.environ}
        r = subprocess.run([str(project["python"]), "-m", "pytest", "-q", "-p",
                            "no:cacheprovider", "tests/test_app.py::test_sum"],
                           cwd=project["work"], env=env, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        loaded = (project["work"] / "mods.txt").read_text().split()
    finally:
        probe.unlink()
    assert set(loaded) <= {"runsnap", "runsnap._version", "runsnap.base", "runsnap.base.lazy",
                           "runsnap.pytestplugin"}, loaded
    assert "runsnap.pytestplugin" in loaded  # registered through pytest11, off
    assert "runsnap:" not in r.stdout


def test_a_file_that_is_no_toml_is_a_usage_error(project: dict[str, Any]) -> None:
    r = subprocess.run([str(project["python"]), "-m", "pytest", "-p", "no:cacheprovider",
                        "--runsnap", "tests"], cwd=project["work"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 4 and "--runsnap=tests: FILE is a .toml" in r.stderr, r.stderr


def test_a_secret_a_test_prints_never_reaches_the_snapshot(project: dict[str, Any],
                                                           tmp_path: Path) -> None:
    (tmp_path / "test_login.py").write_text(
        "import os\n\ndef test_login():\n    assert os.environ['API_TOKEN'] == 'expected'\n")
    secret = "hunter2-Zq8vX3kP9wL2mN7"
    r = subprocess.run([str(project["python"]), "-m", "pytest", "-p", "no:cacheprovider",
                        "--runsnap=s.toml", "test_login.py"], cwd=tmp_path,
                       env={**os.environ, "API_TOKEN": secret}, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 1 and secret in r.stdout  # pytest prints it; runsnap does not write it
    text = (tmp_path / "s.toml").read_text()
    assert secret not in text and "<redacted:hmac-sha256:" in text
    tests = json.loads(run_runsnap("show", "--section", "tests", "--format", "json", "s.toml",
                                   cwd=tmp_path).stdout)
    assert [c["outcome"] for c in tests["cases"].values()] == ["failed"]


def test_bare_option_and_a_session_inside_a_capture(project: dict[str, Any],
                                                    tmp_path: Path) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert True\n")
    env = {**os.environ}
    env.pop("RUNSNAP_DIR", None)
    r = subprocess.run([str(project["python"]), "-m", "pytest", "-p", "no:cacheprovider",
                        "test_one.py", "--runsnap"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    made = list((tmp_path / ".runsnap").glob("*-pytest.toml"))
    assert len(made) == 1 and f"runsnap: snapshot {made[0]}" in r.stdout
    assert (tmp_path / ".runsnap" / ".gitignore").read_text().splitlines()[-1] == "*"
    # under `runsnap capture`, the capture's trace keeps the session's reads
    outer = run_runsnap("capture", "-o", "outer.toml", "--", str(project["python"]), "-m",
                        "pytest", "-p", "no:cacheprovider", "--runsnap=inner.toml", "test_one.py",
                        cwd=tmp_path)
    assert outer.returncode == 0, outer.stderr
    show = {name: json.loads(run_runsnap("show", "--section", "runtime", "--format", "json",
                                         f"{name}.toml", cwd=tmp_path).stdout)
            for name in ("outer", "inner")}
    assert show["outer"]["traced"] and not show["inner"]["traced"]
    assert "enclosing `runsnap capture`" in show["inner"]["reason"]
