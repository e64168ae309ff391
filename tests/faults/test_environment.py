"""Class 2: the child's environment is byte for byte what it would be without runsnap, and
the snapshot records that environment, not what runsnap's own interpreter made of it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import tomllib

from .conftest import runsnap_argv

_KEYS = ("RUNSNAP_KEY_FILE", "RUNSNAP_CACHE_DIR")

CASES = {
    "empty": {},
    "C locale": {"LC_ALL": "C"},
    "LANG=C": {"LANG": "C"},
    "POSIX": {"LC_CTYPE": "POSIX"},
    "coercion off": {"PYTHONCOERCECLOCALE": "0"},
    "coercion warned": {"PYTHONCOERCECLOCALE": "warn", "LANG": "C"},
    "UTF-8 mode": {"PYTHONUTF8": "1"},
    "UTF-8 mode off": {"PYTHONUTF8": "0", "LC_ALL": "POSIX"},
    "odd values": {"A": "", "B": "x=y=z", "C": " spaced ", "LANG": "de_DE.ISO-8859-1"},
}


def _run(argv: list[str], env: dict[bytes, bytes], cwd: Path) -> bytes:
    return subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, timeout=120, check=True).stdout


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_child_gets_the_environment_runsnap_was_given(case: str, tmp_path: Path) -> None:
    env = {k.encode(): v.encode() for k, v in CASES[case].items()}
    env[b"RAW"] = b"\xff\xfe not utf-8"
    for key in _KEYS:  # runsnap's own key and cache, never the user's
        env[key.encode()] = os.environ[key].encode()
    bare = _run(["/usr/bin/env"], env, tmp_path)
    wrapped = _run(runsnap_argv("capture", "-o", "x.toml", "--", "/usr/bin/env"), env, tmp_path)
    assert wrapped == bare
    recorded = tomllib.loads((tmp_path / "x.toml").read_text())["env"]
    assert ("LC_CTYPE" in recorded["vars"]) == (b"LC_CTYPE" in env)


def test_env_dash_i_prints_what_env_prints(tmp_path: Path) -> None:
    keys = [f"{key}={os.environ[key]}" for key in _KEYS]
    r = runsnap_argv("capture", "-o", str(tmp_path / "x.toml"), "--", "/usr/bin/env")
    out = subprocess.run(["env", "-i", *keys, *r], capture_output=True, timeout=120, cwd=tmp_path)
    bare = subprocess.run(["env", "-i", *keys, "/usr/bin/env"], capture_output=True, timeout=60)
    assert out.stdout == bare.stdout
    assert b"LC_CTYPE" not in out.stdout
