"""Tracebacks and first errors seen through a launcher's mark on each line: c10d's ``[rank0]: ``
(init_process_group's excepthook), torchrun's ``[default0]:`` (``--tee``), nested, and
interleaved with other processes' lines; Open MPI's and Slurm's marks are in
tests/launchers/test_prefixes.py, with the real launchers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runsnap.launch.streams import StreamWatch
from runsnap.launch.tracebacks import parse
from runsnap.snapshot import load
from tests.conftest import run_runsnap

PROGRAM = """
    import datetime, socket
    import torch.distributed as dist

    def check(width):
        if width % 3:
            raise ValueError(f"width {width} does not divide the {dist.get_world_size()} heads")

    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0,
                            world_size=1, timeout=datetime.timedelta(seconds=20))
    check(64)
    """


def torch_python() -> str:
    """An interpreter with torch (CPU is enough), or the test is skipped."""
    found = subprocess.run([sys.executable, "-c", "import importlib.util as u, sys; "
                            "sys.exit(u.find_spec('torch') is None)"], capture_output=True)
    if found.returncode != 0:
        pytest.skip(f"torch is not installed for {sys.executable}")
    return sys.executable


def _watch(text: bytes) -> StreamWatch:
    w = StreamWatch("stderr")
    w.feed(text)
    w.close()
    return w


def test_a_rank_traceback_behind_c10d_prefix_is_parsed(tmp_path: Path) -> None:
    """A real torch process after init_process_group: its excepthook puts ``[rank0]: `` in
    front of every line of the traceback; the capture records the frames and the error."""
    python = torch_python()
    app = tmp_path / "app.py"
    app.write_text(textwrap.dedent(PROGRAM))
    out = tmp_path / "s.toml"
    r = run_runsnap("capture", "-o", str(out), "--", python, str(app), cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "[rank0]: ValueError: width 64" in r.stderr  # what torch really printed
    outcome = load(out)["outcome"]
    tb = outcome["traceback"]
    assert (tb["type"], tb["message"]) == ("ValueError", "width 64 does not divide the 1 heads")
    assert [f["function"] for f in tb["frames"]] == ["<module>", "check"]
    assert tb["frames"][-1]["code"].startswith("raise ValueError(")
    assert outcome["first_error"] == "ValueError: width 64 does not divide the 1 heads"


@pytest.mark.slow
def test_torchrun_tee_ranks_tracebacks_are_each_parsed(tmp_path: Path) -> None:
    """Real torchrun, two ranks, ``--tee 3``: each line is ``[default0]:[rank0]: ...``, the
    ranks' lines interleave; each rank's traceback is read whole, and torchrun's own
    ChildFailedError is the last."""
    python = torch_python()
    app = tmp_path / "app.py"
    app.write_text(textwrap.dedent("""
        import torch.distributed as dist
        dist.init_process_group("gloo")

        def check():
            raise ValueError(f"bad shard on rank {dist.get_rank()}")

        check()
        """))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = str(s.getsockname()[1])
    s.close()
    done = subprocess.run([python, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                           "--tee", "3", "--master-port", port, "--master-addr", "127.0.0.1",
                           str(app)], capture_output=True, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode != 0
    assert b"[default0]:[rank0]: Traceback (most recent call last):" in done.stderr + done.stdout
    w = _watch(done.stdout + done.stderr)
    assert w.traceback.last is not None
    assert w.traceback.last["type"].endswith("ChildFailedError")
    ranks = sorted(t["message"] for t in w.traceback.earlier if t["type"] == "ValueError")
    assert ranks == ["bad shard on rank 0", "bad shard on rank 1"]
    assert all([f["function"] for f in t["frames"]] == ["<module>", "check"]
               for t in w.traceback.earlier if t["type"] == "ValueError")
    assert w.first_error is not None and w.first_error.startswith("ValueError: bad shard on rank ")


def test_interleaved_prefixed_tracebacks_are_kept_apart() -> None:
    """Two processes' tracebacks, line by line in turn, each behind its own mark (the shape
    torchrun's --tee prints, as recorded above): neither is cut by the other's lines."""
    a = ['Traceback (most recent call last):', '  File "/w/a.py", line 9, in <module>',
         '    main()', '  File "/w/a.py", line 4, in main', '    raise KeyError(k)',
         "KeyError: 'lr'"]
    b = ['Traceback (most recent call last):', '  File "/w/b.py", line 2, in <module>',
         '    go()', "OSError: no space left"]
    lines = []
    for i in range(max(len(a), len(b))):
        lines += [f"[default0]:[rank0]: {x}" for x in a[i:i + 1]]
        lines += [f"[default1]:{x}" for x in b[i:i + 1]]
    tb = parse(lines)
    assert tb is not None and (tb["type"], tb["message"]) == ("KeyError", "'lr'")
    assert [(f["file"], f["line"], f.get("code")) for f in tb["frames"]] == [
        ("/w/a.py", 9, "main()"), ("/w/a.py", 4, "raise KeyError(k)")]


def test_a_mark_that_no_line_of_the_traceback_carries_does_not_hide_it() -> None:
    """A logger's words before the header are no launcher mark: the lines after it are read
    as they are (the traceback of a server's worker)."""
    tb = parse(["[2026-01-01 10:00:00] Scheduler hit an exception: Traceback (most recent call "
                "last):", '  File "/s/x.py", line 1, in run', "RuntimeError: boom"])
    assert tb is not None and tb["type"] == "RuntimeError"
    w = _watch(b"1: ValueError: one line alone\n")
    assert w.first_error == "ValueError: one line alone"
