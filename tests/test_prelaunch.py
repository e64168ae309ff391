"""check's rules on real configs and real runs, and the pre-launch guard of ``runsnap capture``
(one line per finding on stderr; ``--strict`` refuses to launch on a weight of 90 or more)."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import pytest

import runsnap
from runsnap.checks.rules import check
from runsnap.snapshot import load
from tests.conftest import asset, pip_install, run_runsnap

DEMO = asset("demo", "launch_server.py")
#: The real Kimi-K2.5 target and its EAGLE-3 draft (fixtures/models holds copies of
#: ../shared/data/model-configs, see fixtures/models/README.md).
KIMI = ["--model-path", str(asset("models", "kimi-k2.5-target")), "--speculative-algorithm",
        "EAGLE3", "--speculative-draft-model-path", str(asset("models", "kimi-k2.5-eagle3-draft"))]


def _env(tmp: Path, **more: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(tmp), **more}


def _demo(tmp: Path, *extra: str, options: tuple[str, ...] = (), **env: str
          ) -> subprocess.CompletedProcess[str]:
    marker = tmp / "launched"
    code = (f"import runpy, sys; open({str(marker)!r}, 'w').close(); "
            f"sys.argv = [{str(DEMO)!r}] + sys.argv[1:]; sys.path.insert(0, {str(DEMO.parent)!r}); "
            f"runpy.run_path({str(DEMO)!r}, run_name='__main__')")
    return run_runsnap("capture", *options, "-o", str(tmp / "s.toml"), "--", sys.executable,
                       "-c", code, *KIMI, *extra, cwd=tmp, env=_env(tmp, **env))


def _check_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("runsnap: check [")]


def _as_pip_check(python: Path, tmp_path: Path) -> list[Any]:
    """check's unmet-requirement findings for ``python``'s packages, asserted to be what a real
    ``pip check`` of the same interpreter lists (which finds problems: status 1)."""
    pip_check = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "check"],
                               capture_output=True, text=True, check=False)
    assert pip_check.returncode == 1, pip_check.stdout
    snap = runsnap.capture([str(python), "-c", "pass"], cwd=tmp_path, env=_env(tmp_path))
    found = [f for f in check(snap, installed=True).findings if f.kind == "unmet-requirement"]
    assert sorted(f.message.lower() for f in found) == sorted(
        line.strip().lower() for line in pip_check.stdout.splitlines() if line.strip())
    return found


def test_strict_refuses_the_incidents_launch(tmp_path: Path) -> None:
    res = _demo(tmp_path, options=("--strict",))
    assert res.returncode == 2
    assert not (tmp_path / "launched").exists()  # the child never started
    lines = _check_lines(res.stderr)
    assert len(lines) == 1 and lines[0].startswith("runsnap: check [92] draft-target: ")
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in lines[0]
    assert res.stderr.splitlines()[-1] == ("runsnap: not launched (--strict): 1 finding of "
                                           "weight 90 or more above")


def test_without_strict_the_guard_only_speaks(tmp_path: Path) -> None:
    res = _demo(tmp_path)
    assert res.returncode == 1 and (tmp_path / "launched").exists()
    assert len(_check_lines(res.stderr)) == 1
    assert "ValueError: Warning: Target model's context_length (262144)" in res.stderr


def test_strict_from_pyproject_and_a_harmless_finding_launches(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.runsnap.capture]\nstrict = true\n")
    assert _demo(tmp_path).returncode == 2
    res = _demo(tmp_path, SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN="1")
    assert res.returncode == 0 and (tmp_path / "launched").exists()
    assert [line[:31] for line in _check_lines(res.stderr)] == [
        "runsnap: check [60] draft-targe"]


def test_context_length_longer_than_the_targets_own(tmp_path: Path) -> None:
    res = _demo(tmp_path, "--context-length", "300000", options=("--strict",))
    lines = _check_lines(res.stderr)
    assert res.returncode == 2 and lines[0] == (
        "runsnap: check [93] context-length: --context-length 300000 is longer than the target "
        "model's own text_config.max_position_embeddings (262144): SGLang's "
        "ModelConfig._derive_context_length raises ValueError unless "
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")


def test_alloc_conf_key_typo(tmp_path: Path) -> None:
    snap = runsnap.capture([sys.executable, "-c", "pass"], cwd=tmp_path, env=_env(
        tmp_path, PYTORCH_CUDA_ALLOC_CONF="expandable_segment:True,"
                                          "roundup_power2_divisions:[256:1,512:2]"))
    found = [f for f in check(snap).findings if f.kind == "alloc-conf-key"]
    assert [(f.score, f.path) for f in found] == [(92, ("env", "PYTORCH_CUDA_ALLOC_CONF"))]
    assert "a misspelling of 'expandable_segments'?" in found[0].message


def test_a_bulk_copy_of_the_environment_knows_no_name(tmp_path: Path) -> None:
    """torch and every launcher copy os.environ for their children: the misspelt name is in
    that copy, and still a misspelling."""
    prog = tmp_path / "launch.py"
    prog.write_text("import os, subprocess, sys\n"
                    "env = dict(os.environ)\n"
                    "subprocess.run([sys.executable, '-c', 'pass'], env=env, check=True)\n")
    out = tmp_path / "s.toml"
    res = run_runsnap("capture", "-o", str(out), "--", sys.executable, str(prog), cwd=tmp_path,
                      env=_env(tmp_path, NCCL_P2P_DISABEL="1"))
    assert res.returncode == 0, res.stderr
    snap = load(out)
    from runsnap.snapshot.runtime import variable

    read = variable(snap["runtime"], "NCCL_P2P_DISABEL")
    assert read is not None and read["bulk"] is True
    found = [f for f in check(snap).findings if f.kind == "misspelled-variable"]
    assert [f.path for f in found] == [("env", "NCCL_P2P_DISABEL")]


def test_a_misspelling_of_a_name_the_run_read(tmp_path: Path) -> None:
    prog = tmp_path / "serve.py"
    prog.write_text("import os\nprint(os.environ.get('SERVE_KV_CACHE_DTYPE', 'auto'))\n")
    out = tmp_path / "s.toml"
    run_runsnap("capture", "-o", str(out), "--", sys.executable, str(prog), cwd=tmp_path,
                env=_env(tmp_path, SERVE_KV_CACHE_DTPYE="fp8"))
    found = [f for f in check(load(out)).findings if f.kind == "misspelled-variable"]
    assert len(found) == 1 and found[0].message.startswith(
        "SERVE_KV_CACHE_DTPYE is set, but the run never read it, and read a name one letter "
        "away instead: a misspelling of SERVE_KV_CACHE_DTYPE?")


def _dist(root: Path, name: str, version: str, requires: list[str]) -> Path:
    src = root / f"{name}-{version}"
    (src / name).mkdir(parents=True)
    (src / name / "__init__.py").write_text("")
    reqs = ", ".join(repr(r) for r in requires)
    (src / "setup.py").write_text(
        "from setuptools import setup\n"
        f"setup(name={name!r}, version={version!r}, packages=[{name!r}], "
        f"install_requires=[{reqs}])\n")
    return src


@pytest.mark.parametrize("seed", [0])
def test_unmet_requirements_are_what_pip_check_says(tmp_path: Path, seed: int) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)  # pip runs from here (pip --python)
    python = env_dir / "bin" / "python"
    pkgs = tmp_path / "src"
    pip_install(python, "--no-deps", str(_dist(pkgs, "betalib", "1.0", [])), tmp=tmp_path)
    pip_install(python, "--no-deps", str(_dist(pkgs, "alphalib", "2.0", [
        "betalib>=1.5", "gammalib", "deltalib; python_version < '3'",
        "epsilonlib; extra == 'extras'"])), tmp=tmp_path)
    pip_check = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "check"],
                               capture_output=True, text=True, check=False)
    assert pip_check.returncode == 1
    snap = runsnap.capture([str(python), "-c", "pass"], cwd=tmp_path, env=_env(tmp_path))
    found = [f for f in check(snap, installed=True).findings if f.kind == "unmet-requirement"]
    assert sorted(f.message.lower() for f in found) == sorted(
        line.strip().lower() for line in pip_check.stdout.splitlines() if line.strip())
    assert not [f for f in check(snap).findings if f.kind == "unmet-requirement"]


#: What pip 23.0 (Debian 12's, without ``wheel``) wrote for ``alphalib`` installed the legacy
#: way, recorded on this machine: no ``METADATA``, the requirements in ``requires.txt``, by
#: section (``[extra]``, ``[:marker]``, ``[extra:marker]``).
_EGG_REQUIRES = """betalib>=1.5
gammalib

[:extra == "extras"]
epsilonlib

[:python_version < "3"]
deltalib

[extras]
zetalib>=2

[gpu:sys_platform == 'linux']
etalib
"""


def test_unmet_requirements_of_legacy_egg_info_installs_are_what_pip_check_says(
        tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = next((env_dir / "lib").glob("python3*/site-packages"))
    py = f"py{sys.version_info[0]}.{sys.version_info[1]}"
    for name, version, requires in (("alphalib", "2.0", _EGG_REQUIRES), ("betalib", "1.0", "")):
        (site / name).mkdir()
        (site / name / "__init__.py").write_text("")
        info = site / f"{name}-{version}-{py}.egg-info"
        info.mkdir()
        (info / "PKG-INFO").write_text(f"Metadata-Version: 2.4\nName: {name}\nVersion: {version}\n")
        (info / "top_level.txt").write_text(f"{name}\n")
        (info / "installed-files.txt").write_text(f"../{name}/__init__.py\nPKG-INFO\n")
        if requires:
            (info / "requires.txt").write_text(requires)
    found = _as_pip_check(python, tmp_path)
    assert len(found) == 2  # betalib too old, gammalib missing; the rest never applies


#: A METADATA header as sglang's wheel has it: a License field whose continuation lines include
#: one of spaces only (the license text's blank line), before the Requires-Dist fields.
_FOLDED_METADATA = """Metadata-Version: 2.4
Name: {name}
Version: {version}
License: Apache License
        Version 2.0, January 2004
{blank}
        TERMS AND CONDITIONS FOR USE
Requires-Dist: betalib>=1.5
Requires-Dist: gammalib
Requires-Dist:
  thetalib
Requires-Dist: epsilonlib; extra == "extras"

A description, whose lines are never fields:
Requires-Dist: kappalib
"""


@pytest.mark.parametrize("blank", ["        ", "\t"])
def test_a_metadata_header_with_blank_continuation_lines_is_read_as_pip_reads_it(
        tmp_path: Path, blank: str) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = next((env_dir / "lib").glob("python3*/site-packages"))
    for name, version in (("alphalib", "2.0"), ("betalib", "1.0")):
        (site / name).mkdir()
        (site / name / "__init__.py").write_text("")
        info = site / f"{name}-{version}.dist-info"
        info.mkdir()
        meta = _FOLDED_METADATA if name == "alphalib" else "Metadata-Version: 2.4\nName: {name}\n" \
            "Version: {version}\n"
        (info / "METADATA").write_text(meta.format(name=name, version=version, blank=blank))
        (info / "RECORD").write_text(f"{name}/__init__.py,,\n{info.name}/METADATA,,\n")
        (info / "INSTALLER").write_text("pip\n")
    found = _as_pip_check(python, tmp_path)
    assert len(found) == 3  # betalib too old, gammalib and thetalib missing


def test_a_config_json_value_of_the_wrong_type_does_not_stop_the_guard(tmp_path: Path) -> None:
    # the rules read [models] as records, but config.json is a third-party file kept as
    # written: a string where engines write a list is read as it is, and the guard goes on
    draft = tmp_path / "draft"
    draft.mkdir()
    (draft / "config.json").write_text(
        '{"architectures": "LlamaForCausalLMEagle3", "model_type": 7, "text_config": "none",'
        ' "max_position_embeddings": 2048, "hidden_size": 7168}')
    res = run_runsnap("capture", "--no-run", "-o", str(tmp_path / "s.toml"), "--",
                      sys.executable, "-c", "pass", *KIMI[:2],
                      "--speculative-draft-model-path", str(draft), cwd=tmp_path,
                      env=_env(tmp_path))
    assert "Traceback" not in res.stderr
    (line,) = _check_lines(res.stderr)
    assert line.startswith("runsnap: check [92] draft-target: the draft model's context length "
                           "(max_position_embeddings = 2048) is shorter than the target's")
