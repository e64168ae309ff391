"""``who-reads`` over a real venv holding a package that declares variables SGLang-style."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runsnap.whoreads.search import Hit, who_reads
from tests.conftest import pip_install, run_runsnap

FLAG = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"

ENVIRON = f'''
import os


class EnvField:
    def __init__(self, default):
        self.default = default

    def __set_name__(self, owner, name):
        self.name = name

    def get(self):
        value = os.getenv(self.name)
        return self.default if value is None else self.parse(value)


class EnvBool(EnvField):
    def parse(self, value):
        return value.lower() in ("1", "true")


class Envs:
    {FLAG} = EnvBool(False)
    FAKESGL_OTHER = EnvBool(True)


envs = Envs()
'''

MODEL_CONFIG = f'''
from fakesgl.srt.environ import envs


def _derive_context_length(derived, given):
    if given > derived:
        if envs.{FLAG}.get():
            return given
        raise ValueError("... set the env var {FLAG}=1")
    return given
'''


def _fakesgl(proj: Path) -> Path:
    """The ``fakesgl`` package's sources (its environ and model config) in project ``proj``."""
    pkg = proj / "fakesgl" / "srt" / "configs"
    pkg.mkdir(parents=True)
    for d in (proj / "fakesgl", proj / "fakesgl" / "srt", pkg):
        (d / "__init__.py").write_text("")
    (proj / "fakesgl" / "srt" / "environ.py").write_text(ENVIRON)
    (pkg / "model_config.py").write_text(MODEL_CONFIG)
    return proj


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real venv with ``fakesgl`` installed by pip from a local project (with a shared
    library that reads a variable with getenv, when a C compiler is here)."""
    root = tmp_path_factory.mktemp("who")
    proj = _fakesgl(root / "fakesgl-src")
    (proj / "fakesgl" / "notes.py").write_text(f'"""Set {FLAG} only when you must."""\n')
    data = []
    if shutil.which("cc"):
        src = root / "knob.c"
        src.write_text('#include <stdlib.h>\nconst char *k(void) { return getenv("NCCL_FAKE_KNOB"); }\n')
        subprocess.run(["cc", "-shared", "-fPIC", "-o", str(proj / "fakesgl" / "libknob.so"),
                        str(src)], check=True)
        data = ["libknob.so"]
    (proj / "setup.py").write_text(textwrap.dedent(f"""
        from setuptools import setup, find_packages
        setup(name="fakesgl", version="0.5.23", packages=find_packages(),
              package_data={{"fakesgl": {data!r}}})
    """))
    env = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    pip_install(env / "bin" / "python", "--no-deps", str(proj), tmp=root)
    shutil.rmtree(proj)  # only the installed copy is left to find
    return env


def _mine(hits: list[Hit]) -> list[tuple[str, int | None, str]]:
    return [(h.path, h.line, h.kind) for h in hits if h.dist == "fakesgl"]


@pytest.mark.slow
def test_declaration_and_attribute_read_are_found(venv: Path) -> None:
    hits = who_reads(FLAG, str(venv / "bin" / "python"))
    assert _mine(hits) == [
        ("fakesgl/srt/environ.py", 23, "declaration"),
        ("fakesgl/srt/configs/model_config.py", 7, "read"),
        ("fakesgl/notes.py", 1, "mention"),
        ("fakesgl/srt/configs/model_config.py", 9, "mention"),
    ]
    assert {h.version for h in hits if h.dist == "fakesgl"} == {"0.5.23"}


def test_warm_search_reads_the_cached_index(venv: Path, monkeypatch) -> None:
    python = str(venv / "bin" / "python")
    cold = who_reads(FLAG, python)

    assert _mine(who_reads("FAKESGL_OTHER", python)) == [
        ("fakesgl/srt/environ.py", 24, "declaration")]

    def no_reading(path, *args, **kwargs):  # a warm search reads no installed file again
        assert "site-packages" not in str(path) or not str(path).endswith((".py", ".so")), path
        return real_open(path, *args, **kwargs)

    real_open = open
    monkeypatch.setattr("builtins.open", no_reading)
    assert who_reads(FLAG, python) == cold


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_shared_library_strings_are_found(venv: Path) -> None:
    hits = who_reads("NCCL_FAKE_KNOB", str(venv / "bin" / "python"))
    assert _mine(hits) == [("fakesgl/libknob.so", None, "library")]
    assert who_reads("NCCL_FAKE", str(venv / "bin" / "python")) == []  # whole strings only


def test_cli_text_json_and_exit_status(venv: Path, tmp_path: Path) -> None:
    env = {**os.environ, "RUNSNAP_CACHE_DIR": str(tmp_path / "cache")}
    python = ["--python", str(venv / "bin" / "python")]
    text = run_runsnap("who-reads", FLAG, *python, env=env)
    assert text.returncode == 0, text.stderr
    first = text.stdout.splitlines()[0].split()
    assert first == ["fakesgl", "0.5.23", "fakesgl/srt/environ.py:23", "declaration"]
    out = run_runsnap("who-reads", FLAG, *python, "--format", "json", env=env)
    data = json.loads(out.stdout)
    assert data["format"] == "runsnap-who-reads/1"
    assert data["hits"][0]["kind"] == "declaration" and data["hits"][0]["line"] == 23
    none = run_runsnap("who-reads", "NOBODY_READS_THIS_XYZ", *python, env=env)
    assert none.returncode == 1 and none.stdout == ""
    bad = run_runsnap("who-reads", FLAG, "--python", str(tmp_path / "nope"), env=env)
    assert bad.returncode == 2 and bad.stderr.startswith("runsnap: --python")
    assert "Traceback" not in bad.stderr


@pytest.fixture(scope="module")
def editable(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A real venv with ``fakesgl`` installed editable (``pip install -e``), as SGLang and vLLM
    developers install them: the site-packages hold only a hook, the code is in the checkout."""
    root = tmp_path_factory.mktemp("who-editable")
    proj = _fakesgl(root / "checkout" / "python")  # SGLang's layout: one level down
    (proj / "setup.py").write_text(
        'from setuptools import setup, find_packages\n'
        'setup(name="fakesgl", version="0.5.24.dev0", packages=find_packages())\n')
    env = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    pip_install(env / "bin" / "python", "--no-deps", "-e", str(proj), tmp=root)
    return env, proj


@pytest.mark.slow
def test_an_editable_install_is_searched_in_its_checkout(editable, tmp_path, monkeypatch) -> None:
    """The checkout's files are searched (shown by their path in it), and an edit there is seen
    by the next search although the version did not change."""
    monkeypatch.setenv("RUNSNAP_CACHE_DIR", str(tmp_path / "cache"))
    env, proj = editable
    python = str(env / "bin" / "python")
    assert _mine(who_reads(FLAG, python)) == [
        ("fakesgl/srt/environ.py", 23, "declaration"),
        ("fakesgl/srt/configs/model_config.py", 7, "read"),
        ("fakesgl/srt/configs/model_config.py", 9, "mention"),
    ]
    late = proj / "fakesgl" / "srt" / "late.py"
    late.write_text(f"import os\nCAP = os.environ.get('{FLAG}')\n")
    try:
        assert ("fakesgl/srt/late.py", 2, "read") in _mine(who_reads(FLAG, python))
    finally:
        late.unlink()


def test_a_legacy_egg_info_install_is_searched(tmp_path: Path) -> None:
    """pip 23.0 (Debian 12's) without the ``wheel`` package installs a project that has no
    pyproject.toml the legacy way: an ``.egg-info`` folder with no ``RECORD``, whose
    ``installed-files.txt`` lists the files relative to itself. The folder below is what that
    pip wrote for such a project (recorded on this machine with ``/usr/bin/python3``)."""
    env = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    site = next((env / "lib").glob("python3*/site-packages"))
    (site / "fakesgl").mkdir()
    (site / "fakesgl" / "__init__.py").write_text(f'import os\nX = os.environ.get("{FLAG}")\n')
    info = site / f"fakesgl-1-py{sys.version_info[0]}.{sys.version_info[1]}.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text("Metadata-Version: 2.4\nName: fakesgl\nVersion: 1\n")
    (info / "top_level.txt").write_text("fakesgl\n")
    (info / "dependency_links.txt").write_text("\n")
    (info / "SOURCES.txt").write_text(
        "setup.py\nfakesgl/__init__.py\nfakesgl.egg-info/PKG-INFO\nfakesgl.egg-info/SOURCES.txt\n"
        "fakesgl.egg-info/dependency_links.txt\nfakesgl.egg-info/top_level.txt\n")
    (info / "installed-files.txt").write_text(
        "../fakesgl/__init__.py\n../fakesgl/__pycache__/__init__.cpython-311.pyc\nPKG-INFO\n"
        "SOURCES.txt\ndependency_links.txt\ntop_level.txt\n")
    hits = who_reads(FLAG, str(env / "bin" / "python"))
    assert _mine(hits) == [("fakesgl/__init__.py", 2, "read")]
