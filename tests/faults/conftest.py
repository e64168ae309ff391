"""The fault corpus (issue 24): hostile files, environments, pipes, disks, snapshots and
repositories, each met by a real runsnap process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bare_env(**extra: str) -> dict[str, str]:
    """A small, fixed environment for a runsnap under test (never the caller's)."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"),
           "LANG": "C.UTF-8"}
    for key in ("RUNSNAP_KEY_FILE", "RUNSNAP_CACHE_DIR"):  # the test's own (tests/conftest.py)
        if key in os.environ:
            env[key] = os.environ[key]
    env.update(extra)
    return env


def runsnap_argv(*args: str) -> list[str]:
    """The argv of ``python -m runsnap ARGS`` with this test's interpreter."""
    return [sys.executable, "-m", "runsnap", *args]


def runsnap(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 120, stdin: int | None = subprocess.DEVNULL,
            ) -> subprocess.CompletedProcess[str]:
    """Run runsnap as a real process; text output, bounded in time."""
    return subprocess.run(runsnap_argv(*args), cwd=cwd, env=env if env is not None else bare_env(),
                          capture_output=True, text=True, timeout=timeout, stdin=stdin)


def assert_clean_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    """One ``runsnap: ...`` line, exit status 2, no traceback."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("runsnap: "), proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr
