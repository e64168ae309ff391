"""A CUDA home that differs because ``PATH`` finds another ``nvcc`` follows ``PATH``: bisect
applies it with ``PATH`` instead of refusing it as another host's, and starts with every
change applied, not with GOOD's launch alone.

Seen in the diagnosis corpus (fresh5, every incident whose shells put another CUDA toolkit on
``PATH``: "system toolchain.cuda_home: another host, driver or GPU", one launch more each,
benchmarks/RESULTS.md). No CUDA toolkit can exist on this machine: each ``nvcc`` is a script
that prints what nvcc 12.4 prints for ``--version``; the launches are real."""

from __future__ import annotations

import os
from pathlib import Path

from tests.proof.conftest import bisect, capture, child, keys

_NVCC = """#!/bin/sh
echo 'nvcc: NVIDIA (R) Cuda compiler driver'
echo 'Copyright (c) 2005-2024 NVIDIA Corporation'
echo 'Cuda compilation tools, release 12.4, V12.4.131'
"""


def _toolkit(root: Path) -> Path:
    (root / "bin").mkdir(parents=True)
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text(_NVCC)
    nvcc.chmod(0o755)
    return root / "bin"


def test_a_cuda_home_found_through_path_follows_path(tmp_path: Path) -> None:
    prog = child(tmp_path / "launch.py",
                 "sys.exit(3 if os.environ.get('KNOB') == 'b' else 0)\n")
    base = os.environ["PATH"]
    good = capture(tmp_path / "good.toml", ["python3", str(prog)],
                   {"PATH": f"{_toolkit(tmp_path / 'cuda-12.1')}:{base}", "KNOB": "a",
                    "CUDA_HOME": None, "CUDA_PATH": None})
    bad = capture(tmp_path / "bad.toml", ["python3", str(prog)],
                  {"PATH": f"{_toolkit(tmp_path / 'cuda-12.4')}:{base}", "KNOB": "b",
                   "CUDA_HOME": None, "CUDA_PATH": None})
    assert 'cuda_home_from = "nvcc on PATH"' in bad.read_text()
    proc, answer = bisect(good, bad)  # no --force: nothing blocks
    assert proc.returncode == 0, proc.stderr
    assert keys(answer["cause"]) == ["env KNOB"]
    (skipped,) = [s for s in answer["skipped"] if s["key"] == "toolchain.cuda_home"]
    assert skipped["why"] == "follows env PATH (applied with it)" and not skipped["blocking"]
    assert answer["runs"][0]["applied"] != []  # no trial of GOOD's launch alone first
