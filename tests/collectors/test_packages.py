"""[packages] from a real second virtual environment, probed in its own interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

import runsnap
from runsnap.capturing.context import CaptureContext
from tests.conftest import git, make_repo, pip_install


def write_dist(site: Path, name: str, version: str, direct_url: dict | None = None) -> None:
    """A distribution's metadata exactly as pip writes it (the parts the probe reads)."""
    d = site / f"{name.replace('-', '_')}-{version}.dist-info"
    d.mkdir()
    (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nBody\n")
    (d / "INSTALLER").write_text("pip\n")
    if direct_url is not None:
        (d / "direct_url.json").write_text(json.dumps(direct_url))


def bare_venv(env_dir: Path) -> tuple[Path, Path]:
    """A real virtual environment without pip (fast to make): its python and site-packages."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(env_dir)
    py = env_dir / "bin" / "python"
    site = Path(subprocess.check_output(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
    ).strip())
    return py, site


@pytest.fixture(scope="module")
def second_venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A real venv (no pip: fast) with three distributions, one an editable git checkout."""
    root = tmp_path_factory.mktemp("venv2")
    env_dir = root / "venv"
    py, site = bare_venv(env_dir)
    src = make_repo(root / "mylib-src", {"mylib/__init__.py": "V = 1\n"})
    write_dist(site, "torch", "2.13.0")
    write_dist(site, "sglang", "0.5.23")
    write_dist(site, "mylib", "0.1.dev0",
               {"url": src.as_uri(), "dir_info": {"editable": True}})
    (site / "__editable__.mylib-0.1.dev0.pth").write_text(str(src) + "\n")
    return env_dir, py, src


def base_env(env_dir: Path | None = None) -> dict[str, str]:
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")}
    if env_dir is not None:
        env["PATH"] = f"{env_dir / 'bin'}:{env['PATH']}"
        env["VIRTUAL_ENV"] = str(env_dir)
    return env


def test_packages_come_from_the_childs_interpreter_not_runsnaps(second_venv, tmp_path) -> None:
    env_dir, py, src = second_venv
    snap = runsnap.capture([str(py), "-m", "sglang.launch_server"], env=base_env(), cwd=tmp_path)
    pk = snap["packages"]
    assert pk["errors"] == []
    assert pk["interpreter"] == str(py)
    assert pk["reason"] == "argv[0] is a Python interpreter"
    assert pk["prefix"] == str(env_dir)
    assert pk["python_version"] == ".".join(map(str, sys.version_info[:3]))
    dists = pk["distributions"]
    assert set(dists) == {"mylib", "sglang", "torch"}  # not runsnap's click, psutil, ...
    assert pk["count"] == 3
    assert dists["torch"]["version"] == "2.13.0"
    assert dists["torch"]["location"].startswith(str(env_dir))
    assert dists["mylib"]["editable"] is True
    assert dists["mylib"]["source"] == str(src)
    assert dists["mylib"]["direct_url"] == {"url": src.as_uri(), "editable": True}


def test_editable_install_sources_are_recorded_as_repositories(second_venv, tmp_path) -> None:
    env_dir, py, src = second_venv
    (src / "mylib/__init__.py").write_text("V = 2\n")
    try:
        snap = runsnap.capture([str(py), "-c", "pass"], env=base_env(), cwd=tmp_path)
        repo = snap["git"]["repos"]["mylib-src"]
        assert repo["roles"] == ["editable install of mylib"]
        assert repo["dirty"] is True and "+V = 2" in repo["diff"]
    finally:
        git(src, "checkout", "--", ".")


def test_console_script_shebang_names_the_interpreter(second_venv, tmp_path) -> None:
    env_dir, py, _ = second_venv
    script = env_dir / "bin" / "torchrun"
    script.write_text(f"#!{py}\nimport sys\n")
    script.chmod(0o755)
    snap = runsnap.capture(["torchrun", "train.py"], env=base_env(env_dir), cwd=tmp_path)
    assert snap["packages"]["interpreter"] == str(py)
    assert snap["packages"]["reason"] == "the shebang of torchrun names it"
    assert snap["command"]["executable"] == str(script)


def test_env_shebang_is_followed_on_the_childs_path(second_venv, tmp_path) -> None:
    env_dir, py, _ = second_venv
    script = tmp_path / "launch.py"
    script.write_text("#!/usr/bin/env python\nprint(1)\n")
    script.chmod(0o755)
    snap = runsnap.capture(["./launch.py"], env=base_env(env_dir), cwd=tmp_path)
    assert snap["packages"]["interpreter"] == str(env_dir / "bin" / "python")
    assert snap["packages"]["count"] == 3


def test_non_python_command_uses_the_active_virtual_environment(second_venv, tmp_path) -> None:
    env_dir, py, _ = second_venv
    snap = runsnap.capture(["true"], env=base_env(env_dir), cwd=tmp_path)
    assert snap["packages"]["reason"] == "VIRTUAL_ENV is set (the active environment)"
    assert snap["packages"]["interpreter"] == str(env_dir / "bin" / "python")


def test_python_option_wins(second_venv, tmp_path) -> None:
    _, py, _ = second_venv
    snap = runsnap.capture(["bash", "run.sh"], env=base_env(), cwd=tmp_path, python=str(py))
    assert snap["packages"]["reason"] == "--python"
    assert set(snap["packages"]["distributions"]) == {"mylib", "sglang", "torch"}


def test_a_shadowed_second_copy_is_reported(second_venv, tmp_path) -> None:
    _, py, _ = second_venv
    extra = tmp_path / "extra"
    extra.mkdir()
    write_dist(extra, "torch", "2.9.1")
    env = {**base_env(), "PYTHONPATH": str(extra)}
    pk = runsnap.capture([str(py), "-c", "pass"], env=env, cwd=tmp_path)["packages"]
    assert pk["distributions"]["torch"]["version"] == "2.9.1"  # PYTHONPATH comes first
    assert [(s["name"], s["version"]) for s in pk["shadowed"]] == [("torch", "2.13.0")]


def test_a_broken_interpreter_is_an_error_entry_not_a_crash(tmp_path) -> None:
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
    fake.chmod(0o755)
    snap = runsnap.capture([str(fake), "x.py"], env=base_env(), cwd=tmp_path)
    assert snap["packages"]["count"] == 0
    assert "package probe" in snap["packages"]["errors"][0]
    assert "broken" in snap["packages"]["errors"][0]
    assert snap["command"]["argv"] == [str(fake), "x.py"]


def test_interpreter_falls_back_to_python_on_path(tmp_path) -> None:
    ctx = CaptureContext(argv=("true",), env={"PATH": os.environ["PATH"]}, cwd=str(tmp_path))
    assert ctx.interpreter.reason in ("'python' on the child's PATH", "'python3' on the child's PATH")


@pytest.mark.slow
def test_a_real_pip_editable_install_in_a_second_venv(tmp_path) -> None:
    """End to end with pip itself: pip writes the metadata, the probe reads it."""
    env_dir = tmp_path / "pipvenv"
    venv.EnvBuilder(with_pip=True, symlinks=True).create(env_dir)
    py = env_dir / "bin" / "python"
    src = make_repo(tmp_path / "tinypkg", {
        "pyproject.toml": '[build-system]\nrequires = ["setuptools"]\n'
                          'build-backend = "setuptools.build_meta"\n'
                          '[project]\nname = "tiny-pkg"\nversion = "1.2.3"\n',
        "tiny_pkg/__init__.py": "",
    })
    # Offline: no index, no build isolation (setuptools from this test environment).
    pip_install(py, "--no-deps", "-e", str(src), tmp=tmp_path)
    snap = runsnap.capture([str(py), "-c", "import tiny_pkg"], env=base_env(), cwd=tmp_path)
    dists = snap["packages"]["distributions"]
    assert dists["tiny-pkg"]["version"] == "1.2.3"
    assert dists["tiny-pkg"]["editable"] is True
    assert dists["tiny-pkg"]["source"] == str(src)
    assert "pip" in dists
    assert snap["git"]["repos"]["tinypkg"]["roles"] == ["editable install of tiny-pkg"]


def test_vcs_direct_url_is_read_without_the_probe_parsing_json(tmp_path) -> None:
    py, site = bare_venv(tmp_path / "venv")
    url = "https://github.com/sgl-project/sglang.git"
    write_dist(site, "sglang", "0.5.23", {"url": url, "vcs_info": {
        "vcs": "git", "commit_id": "a" * 40, "requested_revision": "v0.5.23"}})
    write_dist(site, "broken", "1.0")
    (site / "broken-1.0.dist-info" / "direct_url.json").write_text("{not json")
    dists = runsnap.capture([str(py)], env=base_env(), cwd=tmp_path)["packages"]["distributions"]
    assert dists["sglang"]["direct_url"] == {"url": url, "vcs": "git", "commit_id": "a" * 40,
                                             "requested_revision": "v0.5.23"}
    assert "editable" not in dists["sglang"] and "source" not in dists["sglang"]
    assert dists["broken"]["direct_url"]["error"].startswith("direct_url.json is not JSON")


def test_packages_are_those_on_the_childs_sys_path(tmp_path: Path) -> None:
    """`python app/run.py` has app/ first on sys.path, not the working directory (which only
    `python -c` and `-m` have): a distribution lying in the working directory, as a source
    checkout's egg-info does, is neither listed nor reported as a shadowed copy for it."""
    py, site = bare_venv(tmp_path / "venv")
    work = tmp_path / "work"
    (work / "app").mkdir(parents=True)
    (work / "app" / "__init__.py").write_text("")
    (work / "app" / "run.py").write_text("print('ran')\n")
    write_dist(work, "checkout-only", "1.0")
    write_dist(work / "app", "beside-script", "2.0")
    env = {"PATH": os.environ["PATH"], "RUNSNAP_NO_CACHE": "1"}

    def dists(*argv: str) -> set[str]:
        snap = runsnap.capture([str(py), *argv], cwd=work, env=env)
        return set(snap["packages"]["distributions"])

    as_script = dists("app/run.py")
    assert "beside-script" in as_script and "checkout-only" not in as_script
    as_module = dists("-m", "app.run")
    assert "checkout-only" in as_module and "beside-script" not in as_module
    assert not {"checkout-only", "beside-script"} & dists("-I", "app/run.py")


def test_a_direct_url_json_pep_610_does_not_allow_is_one_error_naming_the_field(tmp_path) -> None:
    """A string where PEP 610 has true or false is no editable install, and a number where it
    has a commit id is not passed on into the snapshot: each is the one error of its document,
    naming the field, and the capture goes on."""
    py, site = bare_venv(tmp_path / "venv")
    src = tmp_path / "src"
    src.mkdir()
    write_dist(site, "notedit", "1.0", {"url": src.as_uri(), "dir_info": {"editable": "false"}})
    write_dist(site, "badvcs", "1.0", {"url": "https://h/x.git",
                                       "vcs_info": {"vcs": "git", "commit_id": 7}})
    write_dist(site, "nourl", "1.0", {"dir_info": {}})
    write_dist(site, "fine", "1.0", {"url": src.as_uri(), "dir_info": {"editable": True}})
    dists = runsnap.capture([str(py)], env=base_env(), cwd=tmp_path)["packages"]["distributions"]
    assert dists["notedit"]["direct_url"] == {
        "error": "direct_url.json does not follow PEP 610: dir_info.editable is not true or false"}
    assert "editable" not in dists["notedit"] and "source" not in dists["notedit"]
    assert dists["badvcs"]["direct_url"] == {
        "error": "direct_url.json does not follow PEP 610: vcs_info.commit_id is not a string"}
    assert dists["nourl"]["direct_url"] == {
        "error": "direct_url.json does not follow PEP 610: url is missing"}
    assert dists["fine"]["editable"] is True and dists["fine"]["source"] == str(src)
