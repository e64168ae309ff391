"""Class 3 and 4: a closed reader reaches the child as without runsnap; relaying keeps up and
the outcome stays exact (tail, counts) whatever the chunking."""

from __future__ import annotations

import os
import random
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from runsnap.launch.lines import bounded
from runsnap.launch.streams import MAX_BACKLOG_BYTES, StreamWatch, line_ends

from .conftest import bare_env, runsnap_argv


def _pipeline(command: str, tmp_path: Path) -> tuple[str, str]:
    """Run ``command`` in bash (``$R`` is runsnap); return its stdout and PIPESTATUS."""
    r = shlex.join(runsnap_argv("capture", "-o", str(tmp_path / "x.toml")))
    script = f"R={shlex.quote(r)}; {command}; echo \"status ${{PIPESTATUS[*]}}\""
    proc = subprocess.Popen(["bash", "-c", script.replace("$R ", r + " ")], cwd=tmp_path,
                            env=bare_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        stdout, _ = proc.communicate(timeout=60)
    finally:  # a pipeline that never ends (the bug) leaves nothing running
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    out, _, status = stdout.rpartition("status ")
    return out, status.strip()


@pytest.mark.parametrize("log", [False, True])
def test_yes_into_head_ends_like_without_runsnap(tmp_path: Path, log: bool) -> None:
    opts = f"--log {tmp_path}/out.log -- " if log else "-- "
    bare = _pipeline("yes | head -c 1M | wc -c", tmp_path)
    wrapped = _pipeline(f"$R {opts}yes | head -c 1M | wc -c", tmp_path)
    assert wrapped == bare == ("1048576\n", "141 0 0")
    snap = (tmp_path / "x.toml").read_text()
    assert "was closed (Broken pipe): so was the child's" in snap


def test_seq_into_head_is_signalled_at_once(tmp_path: Path) -> None:
    assert _pipeline("$R -- seq 1 200000000 | head -1", tmp_path) == ("1\n", "141 0")


def test_a_child_ignoring_sigpipe_gets_epipe(tmp_path: Path) -> None:
    child = ("import os, signal, sys\n"
             "signal.signal(signal.SIGPIPE, signal.SIG_IGN)\n"
             "try:\n"
             "    while True: sys.stdout.write('y' * 4096 + '\\n')\n"
             "except BrokenPipeError:\n"
             "    os._exit(7)\n")
    (tmp_path / "child.py").write_text(child)
    py = shlex.quote(sys.executable)
    bare = _pipeline(f"{py} child.py | head -c 10", tmp_path)
    wrapped = _pipeline(f"$R --no-trace -- {py} child.py | head -c 10", tmp_path)
    assert wrapped == bare == ("y" * 10, "7 0")


def _naive(chunks: list[bytes], keep: int) -> tuple[list[bytes], int]:
    data = b"".join(chunks)
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return [bounded(line) for line in lines][-keep:] if keep else [], len(lines)


@pytest.mark.parametrize("seed", range(30))
def test_tail_and_counts_match_a_plain_split_for_any_chunking(seed: int) -> None:
    rng = random.Random(seed)
    keep = rng.choice([0, 1, 2, 5, 200])
    lines = [rng.choice([b"x ", b"ghp_a"]) * rng.choice([0, 1, 35, 2500])
             for _ in range(rng.randrange(0, 400))]
    data = b"\n".join(lines) + rng.choice([b"", b"\n"])
    chunks, at = [], 0
    while at < len(data):
        step = rng.choice([1, 7, 71, 4096, 70_000])
        chunks.append(data[at:at + step])
        at += step
    watch = StreamWatch("stdout", keep)
    for chunk in chunks:
        watch.take(chunk)
    watch.close()
    assert (list(watch.tail), watch.lines) == _naive(chunks, keep)
    assert watch.bytes == len(data)


@pytest.mark.parametrize("keep", [0, 1, 200, 5000])
def test_tail_of_chunks_that_hold_it_whole_is_the_same(keep: int) -> None:
    """Chunks holding more lines than the tail keeps (the tail is then split out only when
    read), mixed with chunks holding fewer and a last line without its end: the same tail and
    counts as one split of everything, whenever the tail is read."""
    rng = random.Random(keep)
    data = b"".join(b"%d " % i + b"x" * rng.choice([0, *[66] * 10, 5000]) + b"\n"
                    for i in range(8_000)) + b"partial line"
    chunks, at = [], 0
    while at < len(data):
        step = rng.choice([1 << 15, 1 << 15, 1 << 18, 300, 1, 71])
        chunks.append(data[at:at + step])
        at += step
    watch = StreamWatch("stdout", keep)
    for i, chunk in enumerate(chunks):
        watch.take(chunk)
        if rng.random() < 0.05:  # read meanwhile: the whole lines so far, the last ``keep``
            done = b"".join(chunks[:i + 1])
            whole = [bounded(line) for line in done.split(b"\n")[:-1]]
            assert list(watch.tail) == (whole[-keep:] if keep else [])
            assert watch.lines == len(whole)
    watch.close()
    assert (list(watch.tail), watch.lines) == _naive(chunks, keep)
    assert watch.tail_text()[-1:] == (["partial line"] if keep else [])


def test_output_beyond_the_backlog_is_counted_not_scanned() -> None:
    watch = StreamWatch("stderr", 3)
    filler = b"a" * 70 + b"\n"
    for _ in range(MAX_BACKLOG_BYTES // len(filler) + 10):
        watch.take(filler)
    watch.take(b"ValueError: lost in the flood" + b" " * 80 + b"\n")
    for _ in range(5):  # more than the tail keeps: the error line is not among its last lines
        watch.take(filler)
    watch.close()
    assert watch.unscanned_bytes > 0 and watch.first_error is None
    assert watch.tail[0].rstrip() == b"a" * 70
    quiet = StreamWatch("stderr", 3)
    quiet.take(filler)
    quiet.take(b"ValueError: seen\n")
    quiet.close()
    assert (quiet.unscanned_bytes, quiet.first_error) == (0, "ValueError: seen")


def test_the_unscanned_end_of_a_flood_is_scanned_from_the_tail() -> None:
    """A child that outruns the scan to its last write: the last lines it printed (its final
    metrics, the traceback it died with) are scanned from the tail when the stream ends, once
    each (a warning already scanned is not counted twice)."""
    watch = StreamWatch("stderr", 10)
    watch.take(b"WARNING: scanned once\n")
    filler = b"step=1 loss=9.0 " + b"a" * 54 + b"\n"
    for _ in range(MAX_BACKLOG_BYTES // len(filler) + 10):
        watch.take(filler)
    watch.take(b"WARNING: at the end\nstep=7 loss=1.25\nTraceback (most recent call last):\n"
               b'  File "train.py", line 3, in <module>\nRuntimeError: CUDA out of memory')
    watch.close()
    assert watch.unscanned_bytes > 0
    assert watch.metrics.values["loss"] == 1.25 and watch.metrics.values["step"] == 7
    assert watch.first_error == "RuntimeError: CUDA out of memory"
    assert watch.traceback.last is not None and watch.traceback.last["type"] == "RuntimeError"
    assert watch.warnings == ["WARNING: scanned once", "WARNING: at the end"]
    assert watch.warnings_count == 2


@pytest.mark.parametrize("seed", range(10))
def test_line_ends_counts_exactly_both_ways(seed: int) -> None:
    """Either way of counting gives ``bytes.count``'s answer, across the pieces' seams."""
    rng = random.Random(seed)
    for size in (0, 1, 100, (1 << 15) - 1, 1 << 15, (1 << 15) + 1, 1 << 18, 300_001):
        data = bytes(rng.choices(b"\n\nab\x00\xff", k=size))
        assert line_ends(data, True) == line_ends(data, False) == data.count(b"\n")
