"""The peak memory of the child's process tree is read from /proc (psutil's import competed with
writing a short child's outcome): the same sum psutil gives, grandchildren included."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from runsnap.launch.watch import RssSampler, tree_rss

_TREE = """
import subprocess, sys, time
hold = bytearray(40 << 20)  # touched: resident
kid = subprocess.Popen([sys.executable, "-c",
                        "import sys, time; b = bytearray(60 << 20); print('up', flush=True); "
                        "time.sleep(30)"], stdout=subprocess.PIPE)
kid.stdout.readline()
kid.stdout.close()
print("ready", flush=True)
time.sleep(30)
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc (Linux)")
def test_the_tree_rss_is_what_psutil_sums_grandchildren_included(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _TREE], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        root = psutil.Process(proc.pid)
        kids = root.children(recursive=True)
        assert len(kids) == 1
        ours = tree_rss(proc.pid)
        theirs = sum(p.memory_info().rss for p in [root, *kids])
        assert ours is not None and ours > 100 << 20  # 40 MiB + 60 MiB, both processes
        assert abs(ours - theirs) < 4 << 20  # sampled a moment apart: a page or two of drift
        sampler = RssSampler(proc.pid, 0.05)
        sampler.start()
        time.sleep(0.3)
        sampler.stop.set()
        sampler.join()
        assert sampler.samples >= 2 and sampler.peak is not None and sampler.peak > 100 << 20
    finally:
        for p in psutil.Process(proc.pid).children(recursive=True):
            p.kill()
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    assert tree_rss(proc.pid) is None  # reaped: gone
