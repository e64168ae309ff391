"""Shared inputs for the diff tests: real captures with controlled environments, real git
repositories and real model directories in tmp_path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

import runsnap
from runsnap.snapshot import Snapshot
from tests.conftest import asset

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def base_env(tmp_path: Path) -> dict[str, str]:
    """A small, fixed environment: the machine's PATH (for git and python), a private home, and a
    few NCCL_* variables that every run shares. (The fingerprint key is isolated per test by the
    top-level conftest.)"""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "NCCL_DEBUG": "INFO",
        "NCCL_IB_DISABLE": "1",
        "NCCL_SOCKET_IFNAME": "eth0",
        "LANG": "C.UTF-8",
    }


Capture = Callable[..., Snapshot]


@pytest.fixture
def cap(tmp_path: Path, base_env: dict[str, str]) -> Capture:
    """``cap(env={...}, argv=[...], cwd=..., models=[...], drop=[...])``: a real capture, its
    environment the base one updated with ``env`` and without the names in ``drop``."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)

    def capture(
        env: Mapping[str, str] | None = None,
        argv: Sequence[str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        drop: Sequence[str] = (),
        **kwargs: Any,
    ) -> Snapshot:
        full = {**base_env, **(env or {})}
        for name in drop:
            full.pop(name, None)
        return runsnap.capture(
            list(argv) if argv is not None else [sys.executable, "-c", "pass"],
            env=full, cwd=cwd if cwd is not None else work, **kwargs,
        )

    return capture


@pytest.fixture
def launched(tmp_path: Path, base_env: dict[str, str]) -> Capture:
    """``launched(env=..., argv=...)``: a real launch under runsnap (traced), saved in
    tmp_path, its environment the base one updated with ``env``."""
    from runsnap.capturing import run

    count = [0]

    def go(env: Mapping[str, str], argv: Sequence[str]) -> Snapshot:
        count[0] += 1
        out = tmp_path / f"run-{count[0]}.toml"
        return run(list(argv), env={**base_env, **env}, cwd=tmp_path, output=out).snapshot

    return go


def write_script(folder: Path, name: str, text: str) -> Path:
    """``text`` (dedented) written to ``folder/name``, its folders made."""
    import textwrap

    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def shared_library(folder: Path, name: str, source: str) -> Path:
    """``lib<name>.so`` built from C ``source`` with the machine's C compiler, in ``folder``."""
    src = folder / f"{name}.c"
    src.write_text(source)
    lib = folder / f"lib{name}.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return lib


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` and return its output."""
    env = {**os.environ, **GIT_ENV}
    out = subprocess.run(["git", "-C", str(repo), *args], env=env, check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A real repository with one commit on ``main``: app.py and conf.yaml."""
    path = tmp_path / "work"
    path.mkdir(exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    (path / "app.py").write_text("print('hello')\nLIMIT = 1\n")
    (path / "conf.yaml").write_text("a: 1\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "first")
    return path


@pytest.fixture
def model_dir(tmp_path: Path) -> Callable[[str], Path]:
    """``model_dir(name)``: a fresh copy of the Kimi-K2.5 target fixture under tmp_path."""

    def make(name: str) -> Path:
        dest = tmp_path / name
        shutil.copytree(asset("models", "kimi-k2.5-target"), dest)
        return dest

    return make


def counted(report: Any) -> list[tuple[str, str, str]]:
    """(section, key, change) of the differences that count, in report order."""
    return [(d.section, d.key, d.change) for d in report.counted]
