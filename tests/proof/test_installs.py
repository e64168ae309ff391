"""Trials run however runsnap is installed: a source checkout reached through ``PYTHONPATH``
and a built wheel installed in a fresh venv, each in real processes, find the planted cause;
a trial whose runsnap cannot start is an error with its reason, never a verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path

import pytest

import runsnap
from runsnap.experiments.trials import Criteria, TrialError, run_trial
from runsnap.launch import LaunchSpec
from tests.proof.conftest import capture, child

ROOT = Path(runsnap.__file__).resolve().parent.parent
#: Where the development venv keeps runsnap's dependencies (click, deepdiff, ...).
DEPS = sysconfig.get_paths()["purelib"]


def _incident(tmp_path: Path) -> tuple[Path, Path]:
    """GOOD and BAD: the same program, MODE=x planted among three harmless differences."""
    prog = child(tmp_path / "launch.py",
                 "if os.environ.get('MODE') == 'x':\n"
                 "    sys.exit('ValueError: mode x is not supported')\n"
                 "print('ok')\n")
    good = capture(tmp_path / "good.toml", ["python3", str(prog)],
                   {"MODE": "y", "KNOB_A": "1", "KNOB_B": "1", "KNOB_C": "1"})
    bad = capture(tmp_path / "bad.toml", ["python3", str(prog)],
                  {"MODE": "x", "KNOB_A": "2", "KNOB_B": "2", "KNOB_C": "2"})
    return good, bad


def _bare_venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    return where / "bin" / "python"


def _bisect_with(argv: list[str], good: Path, bad: Path, env: dict[str, str], cwd: Path
                 ) -> dict[str, object]:
    proc = subprocess.run([*argv, "bisect", str(good), str(bad), "--yes", "--format", "json"],
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return dict(json.loads(proc.stdout))


def _why_proves(argv: list[str], good: Path, bad: Path, env: dict[str, str], cwd: Path
                ) -> None:
    """``runsnap why BAD --against GOOD --prove``: proven in two launches (or found by bisect
    when the evidence leaves it undecided), the planted cause."""
    proc = subprocess.run([*argv, "why", str(bad), "--against", str(good), "--prove", "--yes",
                           "--format", "json"], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    answer = json.loads(proc.stdout)
    assert answer["status"] in ("proven", "found") and answer["launches"] >= 2
    assert [c["key"] for c in answer["cause"]] == ["MODE"]


def _site(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                          "['purelib'])"], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


@pytest.mark.slow
def test_a_source_checkout_on_pythonpath_finds_the_cause(tmp_path: Path,
                                                          hermetic_env: dict[str, str]) -> None:
    """``python -m runsnap`` from an interpreter that has no runsnap installed, reaching the
    checkout (and its dependencies) only through ``PYTHONPATH``: isolated trials used to drop
    it and every trial died unclear ("applying all changes did not reproduce BAD")."""
    good, bad = _incident(tmp_path)
    python = _bare_venv(tmp_path / "bare")
    env = {**hermetic_env, "PYTHONPATH": f"{ROOT}{os.pathsep}{DEPS}"}
    found = subprocess.run([str(python), "-c", "import runsnap; print(runsnap.__file__)"],
                           env=env, capture_output=True, text=True, check=True).stdout
    assert found.startswith(str(ROOT))
    answer = _bisect_with([str(python), "-m", "runsnap"], good, bad, env, tmp_path)
    assert answer["status"] == "found"
    assert [c["key"] for c in answer["cause"]] == ["MODE"]  # type: ignore[attr-defined]
    _why_proves([str(python), "-m", "runsnap"], good, bad, env, tmp_path)


@pytest.mark.slow
def test_a_wheel_installed_in_a_fresh_venv_finds_the_cause(tmp_path: Path,
                                                            hermetic_env: dict[str, str]) -> None:
    """The wheel as users get it: built from this tree, installed into a venv of its own (its
    dependencies from the development venv through a .pth), run as the ``runsnap`` script."""
    good, bad = _incident(tmp_path)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels),
                    str(ROOT)], check=True, env=hermetic_env, capture_output=True)
    [wheel] = wheels.glob("runsnap-*.whl")
    python = _bare_venv(tmp_path / "venv")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", str(wheel)], check=True, env=hermetic_env, capture_output=True)
    site = _site(python)
    (site / "deps.pth").write_text(DEPS + "\n")
    where = subprocess.run([str(python), "-c", "import runsnap; print(runsnap.__file__)"],
                           env=hermetic_env, capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(site))  # the wheel's copy, not the checkout
    answer = _bisect_with([str(python.parent / "runsnap")], good, bad, hermetic_env, tmp_path)
    assert answer["status"] == "found"
    assert [c["key"] for c in answer["cause"]] == ["MODE"]  # type: ignore[attr-defined]
    _why_proves([str(python.parent / "runsnap")], good, bad, hermetic_env, tmp_path)


def test_a_trial_whose_runsnap_cannot_start_is_an_error_with_its_reason(tmp_path: Path) -> None:
    """GOOD was captured with ``--python`` naming an interpreter that is gone: the trial's
    ``runsnap capture`` refuses, and the trial says so instead of judging the launch unclear."""
    spec = LaunchSpec.of(["python3", "-c", "pass"], env=dict(os.environ), cwd=tmp_path,
                         python=str(tmp_path / "gone" / "python"))
    with pytest.raises(TrialError, match=r"trial-01: runsnap could not run the trial "
                                         r"\(runsnap: --python .*: no such interpreter\)"):
        run_trial(spec, name="trial-01", folder=str(tmp_path), criteria=Criteria(),
                  judge=None, stop=threading.Event())
    assert (tmp_path / "trial-01.log").read_bytes() == b""  # the program never ran


def test_the_trial_log_holds_only_what_the_program_printed(tmp_path: Path) -> None:
    """A ``--test`` that greps the log for a word of runsnap's own (its command, its pattern)
    cannot match: runsnap's lines and the test's output go to ``trial-NN.runsnap.txt``."""
    prog = child(tmp_path / "launch.py", "print('loss 0.5')\n")
    spec = LaunchSpec.of(["python3", str(prog)], env=dict(os.environ), cwd=tmp_path)
    test = 'grep -q "runsnap\\|snapshot\\|NEVER_PRINTED" "$RUNSNAP_TRIAL_LOG"'
    out = run_trial(spec, name="trial-01", folder=str(tmp_path), criteria=Criteria(test=test),
                    judge=None, stop=threading.Event())
    assert out.verdict == "bad"  # grep found nothing: exit 1
    assert (tmp_path / "trial-01.log").read_text() == "loss 0.5\n"
    own = (tmp_path / "trial-01.runsnap.txt").read_text()
    assert f"# runsnap: --test {test}" in own and "runsnap: snapshot" in own


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throwaway venv with pipx and shiv from PyPI (the ordinary way people get them); the
    tests that need them skip, saying so, when PyPI cannot be reached."""
    where = tmp_path_factory.mktemp("tools") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    proc = subprocess.run([str(where / "bin" / "python"), "-m", "pip", "install", "-q",
                           "pipx", "shiv"], capture_output=True, text=True, check=False,
                          timeout=300)
    if proc.returncode != 0:
        pytest.skip(f"pipx and shiv cannot be installed from PyPI here: {proc.stderr[-300:]}")
    return where / "bin"


def _gone_python(tmp_path: Path) -> tuple[Path, Path]:
    """GOOD and BAD captured with ``--python`` naming an interpreter removed since: no trial
    of them can start, whichever runsnap runs it."""
    import shutil  # only this test removes a venv
    python = _bare_venv(tmp_path / "gone")
    prog = child(tmp_path / "launch.py", "sys.exit(os.environ['MODE'] == 'x')\n")
    out = []
    for name, mode in (("good", "y"), ("bad", "x")):
        full = {**os.environ, "MODE": mode}
        proc = subprocess.run([sys.executable, "-m", "runsnap", "capture", "--python",
                               str(python), "-o", str(tmp_path / f"{name}.toml"), "--",
                               "python3", str(prog)], env=full, capture_output=True, text=True,
                              check=False, timeout=120)
        assert (tmp_path / f"{name}.toml").exists(), proc.stderr
        out.append(tmp_path / f"{name}.toml")
    shutil.rmtree(tmp_path / "gone")
    return out[0], out[1]


def _cannot_start(argv: list[str], tmp_path: Path, env: dict[str, str]) -> None:
    """A trial that cannot start is exit 2 with its reason, from bisect and from why."""
    good, bad = _gone_python(tmp_path / "gone-case")
    for args in (["bisect", str(good), str(bad)],
                 ["why", str(bad), "--against", str(good), "--prove"]):
        proc = subprocess.run([*argv, *args, "--yes"], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL, check=False)
        assert proc.returncode == 2, proc.stderr + proc.stdout
        assert "could not run the trial" in proc.stderr and "no such interpreter" in proc.stderr
        assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_a_pipx_install_finds_the_cause(tmp_path: Path, tools: Path,
                                        hermetic_env: dict[str, str]) -> None:
    """``pipx install .`` of this checkout (pipx's own venv, with the dependencies pip
    resolves), run as the ``runsnap`` script pipx puts in its bin folder."""
    env = {**hermetic_env, "PIPX_HOME": str(tmp_path / "pipx"),
           "PIPX_BIN_DIR": str(tmp_path / "bin"), "PIPX_MAN_DIR": str(tmp_path / "man")}
    proc = subprocess.run([str(tools / "pipx"), "install", str(ROOT)], env=env,
                          capture_output=True, text=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    script = tmp_path / "bin" / "runsnap"
    venv = tmp_path / "pipx" / "venvs" / "runsnap"
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import runsnap; print(runsnap.__file__)"], env=env,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(venv))  # pipx's copy, not the checkout
    good, bad = _incident(tmp_path)
    answer = _bisect_with([str(script)], good, bad, env, tmp_path)
    assert answer["status"] == "found"
    assert [c["key"] for c in answer["cause"]] == ["MODE"]  # type: ignore[attr-defined]
    _why_proves([str(script)], good, bad, env, tmp_path)
    _cannot_start([str(script)], tmp_path, env)


@pytest.mark.slow
def test_a_zipapp_finds_the_cause(tmp_path: Path, tools: Path,
                                  hermetic_env: dict[str, str]) -> None:
    """runsnap as a zipapp is shiv's layout (docs/bisect.md): one ``.pyz`` holding runsnap
    and its dependencies, unpacked on first run into ``SHIV_ROOT``, run by an interpreter
    that has none of them. A plain zipimport archive cannot serve: the probe and the tracing
    hook run in the program's interpreter, from files."""
    pyz = tmp_path / "runsnap.pyz"
    proc = subprocess.run([str(tools / "shiv"), "-c", "runsnap", "-o", str(pyz), str(ROOT)],
                          env=hermetic_env, capture_output=True, text=True, check=False,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    python = _bare_venv(tmp_path / "bare")
    env = {**hermetic_env, "SHIV_ROOT": str(tmp_path / "shiv")}
    none = subprocess.run([str(python), "-c", "import runsnap"], env=env, capture_output=True,
                          check=False)
    assert none.returncode == 1  # only the archive holds runsnap
    argv = [str(python), str(pyz)]
    good, bad = _incident(tmp_path)
    answer = _bisect_with(argv, good, bad, env, tmp_path)
    assert answer["status"] == "found"
    assert [c["key"] for c in answer["cause"]] == ["MODE"]  # type: ignore[attr-defined]
    assert list((tmp_path / "shiv").glob("*/site-packages/runsnap/probe"))  # unpacked there
    _why_proves(argv, good, bad, env, tmp_path)
    _cannot_start(argv, tmp_path, env)


def test_runsnap_imported_from_a_plain_zip_archive_says_why_it_cannot_launch(
        tmp_path: Path, hermetic_env: dict[str, str]) -> None:
    """``python -m zipapp`` of runsnap alone, run by an interpreter that has its
    dependencies: runsnap imports from the archive, but the probe and the tracing hook cannot
    run from it in the program's interpreter. One line says so, exit 2, nothing launched."""
    import shutil  # only this test copies the package
    stage = tmp_path / "stage"
    shutil.copytree(ROOT / "runsnap", stage / "runsnap",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (stage / "__main__.py").write_text("from runsnap.cli import main\nmain()\n")
    pyz = tmp_path / "runsnap.pyz"
    subprocess.run([sys.executable, "-m", "zipapp", str(stage), "-o", str(pyz)], check=True)
    marker = tmp_path / "ran"
    proc = subprocess.run([sys.executable, str(pyz), "capture", "-o", str(tmp_path / "a.toml"),
                           "--", "touch", str(marker)], env=hermetic_env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (f"runsnap: runsnap is imported from the zip archive '{pyz}'; its "
                           "data, probe and tracing hook must be files the program's "
                           "interpreter reads: unpack it (shiv's layout, see docs/bisect.md) "
                           "or install it\n")
    assert not marker.exists() and not (tmp_path / "a.toml").exists()
    diff = subprocess.run([sys.executable, str(pyz), "diff", "a.toml", "b.toml"], env=hermetic_env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert (diff.returncode, diff.stderr) == (2, proc.stderr)
