"""Class 1: a FIFO, a device, a symbolic link loop or a directory where runsnap expects a file
never blocks the launch, is never read without end, and becomes an error in its section."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import tomllib

from runsnap.base.files import NotRegularFile, TooLarge, read_regular
from runsnap.capturing.collectors.cgroup import read_cgroup

from ..conftest import make_repo
from .conftest import runsnap

ODD: dict[str, Callable[[Path], None]] = {
    "fifo": lambda p: os.mkfifo(p),
    "directory": lambda p: p.mkdir(),
    "link loop": lambda p: p.symlink_to(p.name),
    "/dev/zero": lambda p: p.symlink_to("/dev/zero"),
    "/dev/urandom": lambda p: p.symlink_to("/dev/urandom"),
}
WORDS = {"fifo": "a FIFO", "directory": "a directory", "link loop": "symbolic links",
         "/dev/zero": "a character device", "/dev/urandom": "a character device"}


def _capture(tmp_path: Path, *args: str) -> dict:
    proc = runsnap("capture", "-o", "x.toml", *args, "--", "touch", "ran", cwd=tmp_path,
                   timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "ran").exists()
    return tomllib.loads((tmp_path / "x.toml").read_text())


@pytest.mark.parametrize("kind", sorted(ODD))
@pytest.mark.parametrize("how", ["--model", "argv"])
def test_model_config_that_is_not_a_file(tmp_path: Path, kind: str, how: str) -> None:
    (tmp_path / "m").mkdir()
    ODD[kind](tmp_path / "m" / "config.json")
    args = ("--model", "m") if how == "--model" else ("--label", "x")
    if how == "argv":
        proc = runsnap("capture", "-o", "x.toml", "--", "touch", "ran", "m", cwd=tmp_path,
                       timeout=60)
        assert proc.returncode == 0, proc.stderr
        snap = tomllib.loads((tmp_path / "x.toml").read_text())
    else:
        snap = _capture(tmp_path, *args)
    (model,) = snap["models"]["models"].values()
    assert any(e.startswith("config.json: ") and WORDS[kind] in e for e in model["errors"]), model


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "link loop"])
def test_untracked_file_that_is_not_a_file(tmp_path: Path, kind: str) -> None:
    repo = make_repo(tmp_path / "r")
    ODD[kind](repo / "odd")
    proc = runsnap("capture", "-o", "x.toml", "--", "touch", "ran", cwd=repo, timeout=60)
    assert proc.returncode == 0, proc.stderr
    (info,) = tomllib.loads((repo / "x.toml").read_text())["git"]["repos"].values()
    assert all("sha256" not in u for u in info.get("untracked", []) if u["path"] == "odd")


@pytest.mark.parametrize("name", ["pyproject.toml", ".runsnap.toml"])
def test_config_files_that_are_fifos(tmp_path: Path, name: str) -> None:
    os.mkfifo(tmp_path / name)
    _capture(tmp_path)


def test_a_fifo_as_the_program(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "prog")
    proc = runsnap("capture", "-o", "x.toml", "--", "./prog", cwd=tmp_path, timeout=60)
    assert proc.returncode == 126, proc.stderr


def test_cgroup_files_that_are_fifos(tmp_path: Path) -> None:
    (tmp_path / "proc/self").mkdir(parents=True)
    os.mkfifo(tmp_path / "proc/self/cgroup")
    done: list[dict] = []
    t = threading.Thread(target=lambda: done.append(read_cgroup(str(tmp_path))), daemon=True)
    t.start()
    t.join(20)
    assert done, "read_cgroup blocked on a FIFO"


@pytest.mark.parametrize("kind", sorted(ODD))
def test_read_regular_refuses(tmp_path: Path, kind: str) -> None:
    ODD[kind](tmp_path / "f")
    with pytest.raises(OSError) as info:
        read_regular(tmp_path / "f", 100)
    assert WORDS[kind] in str(info.value)
    if kind != "link loop":
        assert isinstance(info.value, NotRegularFile)
    (tmp_path / "big").write_bytes(b"x" * 101)
    with pytest.raises(TooLarge):
        read_regular(tmp_path / "big", 100)
    assert read_regular(tmp_path / "big", 101) == b"x" * 101


