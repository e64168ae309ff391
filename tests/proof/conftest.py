"""Real launches for replay and bisect: small children written for each case, captured with
the real ``runsnap capture`` in a scratch directory."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_runsnap

#: A service that refuses MODE=x (``runsnap why`` tests: a failing launch and its cause).
SERVE = ("def check():\n"
         "    if os.environ.get('MODE') == 'x':\n"
         "        raise ValueError('mode x is not supported')\n"
         "check()\n"
         "print('ok')\n")
#: A training step whose loss LR decides; two knobs it reads and does not use.
TRAIN = ("knobs = [os.environ.get('KNOB_A'), os.environ.get('KNOB_B')]\n"
         "lr = float(os.environ.get('LR', '0.1'))\n"
         "print(f'step 100 loss={0.5 + 4 * lr:.4f}')\n")


@pytest.fixture(autouse=True)
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test in its own directory (not a git repo) with its own fingerprint key."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RUNSNAP_KEY_FILE", str(tmp_path / "key"))
    monkeypatch.delenv("RUNSNAP_DIR", raising=False)
    return tmp_path


def child(path: Path, body: str) -> Path:
    """A Python child program at ``path``."""
    path.write_text("import json, os, sys, time\n" + body)
    return path


def runsnap(*args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m runsnap ARGS`` as a real process."""
    return run_runsnap(*args, env=env, cwd=cwd, timeout=timeout)


def capture(out: Path, argv: Sequence[str], env: Mapping[str, str | None] | None = None,
            run: bool = True) -> Path:
    """Capture ``argv`` to ``out`` with this environment changed by ``env`` (None: unset)."""
    full = dict(os.environ)
    for k, v in (env or {}).items():
        if v is None:
            full.pop(k, None)
        else:
            full[k] = v
    args = ["capture", "-o", str(out)] + ([] if run else ["--no-run"]) + ["--", *argv]
    runsnap(*args, env=full)
    assert out.exists(), f"capture of {argv} wrote nothing"
    return out


def bisect(good: Path, bad: Path, *args: str, env: Mapping[str, str] | None = None
           ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``runsnap bisect GOOD BAD --format json ARGS``: the process and its JSON answer."""
    proc = runsnap("bisect", str(good), str(bad), "--format", "json", *args, env=env)
    try:
        answer = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"not JSON: {proc.stdout!r}\nstderr: {proc.stderr}") from None
    return proc, answer


def keys(items: Sequence[Mapping[str, Any]]) -> list[str]:
    return [f"{c['section']} {c['key']}" for c in items]
