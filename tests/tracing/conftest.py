"""Helpers for tracing tests: run a real Python child under runsnap and read its ``[runtime]``."""

from __future__ import annotations

import ctypes
import os
import sys
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from runsnap.capturing import RunRecord, run
from runsnap.snapshot.runtime import bulk_sites, variables


def mapped_library() -> Path:
    """The file of a real shared library this process has mapped (zlib's): copied under a
    GPU library's name, a run that ``dlopen``s it has that library loaded."""
    ctypes.CDLL("libz.so.1")
    for line in Path("/proc/self/maps").read_text().splitlines():
        if "/libz.so" in line:
            return Path(line[line.index("/"):].strip())
    raise AssertionError("zlib is not mapped")


def child_env(**extra: str) -> dict[str, str]:
    """A small, fixed environment for a child (plus ``extra``)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/"),
           "LANG": "C.UTF-8"}
    env.update(extra)
    return env


@pytest.fixture
def traced(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> Callable[..., tuple[
        RunRecord, dict[str, Any], str]]:
    """``traced(source, env=..., argv=..., trace=True, name=...)`` -> (record, [runtime],
    stdout); the program is written to ``name`` (default: a new file each time)."""
    counter = [0]

    def go(source: str, env: Mapping[str, str] | None = None, argv: list[str] | None = None,
           trace: bool = True, cwd: Path | None = None, name: str | None = None,
           ) -> tuple[RunRecord, dict[str, Any], str]:
        counter[0] += 1
        script = tmp_path / (name or f"prog{counter[0]}.py")
        script.write_text(textwrap.dedent(source))
        capfd.readouterr()
        record = run(argv or [sys.executable, str(script)], env=dict(env or child_env()),
                     cwd=cwd or tmp_path, output=tmp_path / f"snap{counter[0]}.toml", trace=trace)
        out = capfd.readouterr().out
        runtime = dict(record.snapshot.get("runtime") or {})
        # the records as the reader gives them, whatever the stored form (schema 2: compact)
        runtime["env"] = dict(variables(runtime))
        if "bulk_sites" in runtime:
            runtime["bulk_sites"] = bulk_sites(runtime)
        return record, runtime, out

    return go
