"""A rank writing into a shared folder (``-o DIR/{rank}.toml``, a launcher's ranks) creates one
file when its command ends within runsnap.capturing.firstsave.FIRST_SAVE_DELAY, and has its
pre-launch snapshot on disk while a longer command runs; the final snapshot is whole either way.
The long commands here shorten the delay with the test hook RUNSNAP_TEST_FIRST_SAVE_DELAY (a
second instead of five: what they test is the order of the writes, not the delay's length)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runsnap.capturing.firstsave import DELAY_ENV
from runsnap.snapshot import Snapshot, load

from .conftest import assert_clean_error, bare_env, runsnap, runsnap_argv

RANK = {"RANK": "3", "WORLD_SIZE": "4"}  # one rank of four: the folder is shared

#: The first save's delay for the long commands here (firstsave.DELAY_ENV), in seconds.
SHORT_DELAY = {DELAY_ENV: "0.5"}

#: The fault points killed at here (tests/test_capture_never_breaks.py checks every point is).
KILLED_IN_PLACE = ("snapshot.extending",)


def _snapshots(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix == ".toml")


def test_a_short_command_writes_its_snapshot_once(tmp_path: Path) -> None:
    """Killed at a second write, if there were one: the capture ends normally, one file."""
    shared = tmp_path / "shared"
    shared.mkdir()
    proc = runsnap("capture", "-o", str(shared / "{host}-{rank}.toml"), "--", "true",
                   cwd=tmp_path, env=bare_env(**RANK, RUNSNAP_TEST_FAULT="snapshot.written#2"))
    assert proc.returncode == 0, proc.stderr
    [snap_path] = _snapshots(shared)
    assert [p.name for p in shared.iterdir()] == [snap_path.name]  # no temporary left
    snap = load(snap_path)
    assert snap["outcome"]["exit_status"] == 0 and "runtime" in snap.sections
    # on_saved still tells where the snapshot went (once, when it was written)
    told = [x for x in proc.stderr.splitlines() if x.startswith("runsnap: snapshot ")]
    assert len(told) == 1 and told[0].endswith(f"shared/{snap_path.name}"), proc.stderr


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_a_short_command_creates_and_links_one_file_in_the_shared_folder(tmp_path: Path
                                                                         ) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    trace = tmp_path / "trace"
    done = subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=openat,open,creat,rename,renameat,renameat2,link,"
         "linkat", "-o", str(trace),
         *runsnap_argv("capture", "-o", str(shared / "{rank}.toml"), "--", "true")],
        cwd=tmp_path, env=bare_env(**RANK), capture_output=True, text=True, timeout=120)
    if "ptrace" in done.stderr and done.returncode != 0:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()[-200:]}")
    assert done.returncode == 0, done.stderr
    lines = [line for line in trace.read_text().splitlines() if str(shared) in line]
    created = [line for line in lines if "O_CREAT" in line]
    moved = [line for line in lines if re.search(r"\b(rename|renameat2?|link|linkat)\(", line)]
    assert len(created) == 1 and len(moved) == 1, "\n".join(lines)
    assert "outcome" in load(_snapshots(shared)[0]).sections


def _long_capture(tmp_path: Path, **env: str) -> tuple[subprocess.Popen[str], str, str, Path,
                                                          Snapshot, int]:
    """A shared rank whose child outlives FIRST_SAVE_DELAY (it waits on a FIFO until its
    pre-launch snapshot is on disk): the process, its output, the snapshot's path, the
    pre-launch snapshot as read while the child ran, and that file's inode."""
    shared = tmp_path / "shared"
    shared.mkdir()
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    child = f"open({str(fifo)!r}).read(); print('released')"
    proc = subprocess.Popen(
        runsnap_argv("capture", "--no-trace", "-o", str(shared / "{rank}.toml"), "--",
                     sys.executable, "-c", child),
        cwd=tmp_path, env=bare_env(**RANK, **SHORT_DELAY, **env), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 90
        while not _snapshots(shared):  # the child waits on the FIFO until released
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        [path] = _snapshots(shared)
        inode = path.stat().st_ino
        early = load(path)  # whole, or this raises
        assert "outcome" not in early.sections and early["command"]["argv"][-1] == child
        with open(fifo, "w") as fh:
            fh.write("go")
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc, out, err, path, early, inode


def test_a_long_command_has_its_prelaunch_snapshot_on_disk_while_it_runs(tmp_path: Path
                                                                         ) -> None:
    """... and its outcome is written into that same file (no second file created and
    renamed over it: one file a rank in the shared folder, however long the rank runs)."""
    proc, out, err, path, early, inode = _long_capture(tmp_path)
    assert proc.returncode == 0, err
    assert "released" in out and err.count("runsnap: snapshot ") == 1, err
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    final = load(path)
    assert final["outcome"]["exit_status"] == 0 and "released" in str(final["outcome"])
    assert path.stat().st_ino == inode  # written in place, not replaced
    assert final.sections["command"] == early.sections["command"]


def test_a_failed_write_of_the_outcome_leaves_the_prelaunch_snapshot_whole(tmp_path: Path
                                                                           ) -> None:
    """A full disk half-way through the in-place write: the file is put back as it was (the
    pre-launch snapshot, end marker and all), one line says so, the command's status stays."""
    proc, _, err, path, early, _ = _long_capture(
        tmp_path, RUNSNAP_TEST_FAULT="snapshot.extending=ENOSPC")
    assert proc.returncode == 0 and "Traceback" not in err, err
    said = [x for x in err.splitlines() if x.startswith("runsnap:")]
    assert said[0] == "runsnap: snapshot shared/3.toml" and len(said) == 2, err  # while it ran
    line = said[1]
    assert line.startswith("runsnap: the outcome was not written: cannot write") and \
        "No space left on device" in line, err
    assert load(path).sections == early.sections


def test_a_kill_during_the_in_place_write_leaves_a_file_readers_call_cut_short(
        tmp_path: Path) -> None:
    """What the in-place write costs (runsnap.base.inplace): killed in the middle of it, the
    file has lost its end marker; reading it is one clear line and status 2, never a guess."""
    proc, _, _, path, _, _ = _long_capture(tmp_path, RUNSNAP_TEST_FAULT="snapshot.extending")
    assert proc.returncode == -9
    shown = runsnap("show", str(path), cwd=tmp_path)
    assert_clean_error(shown, "end")


def test_a_first_save_delay_that_is_no_number_is_a_usage_error(tmp_path: Path) -> None:
    """The test hook is never silently inert: a value it cannot take stops the capture before
    the launch, one line and status 2."""
    marker = tmp_path / "ran"
    proc = runsnap("capture", "-o", str(tmp_path / "{rank}.toml"), "--", "touch", str(marker),
                   cwd=tmp_path, env=bare_env(**RANK, **{DELAY_ENV: "soon"}))
    assert proc.returncode == 2 and not marker.exists(), proc.stderr
    assert proc.stderr == (f"runsnap: {DELAY_ENV}: 'soon' is not a number of seconds "
                           "(0 or more)\n")


def test_a_full_disk_is_reported_and_the_command_still_runs(tmp_path: Path) -> None:
    """The shared rank's first write is after the launch: a write that fails leaves the
    command run, its status kept, and one line saying no snapshot was written."""
    shared = tmp_path / "shared"
    shared.mkdir()
    marker = tmp_path / "ran"
    proc = runsnap("capture", "-o", str(shared / "{rank}.toml"), "--", "touch", str(marker),
                   cwd=tmp_path, env=bare_env(**RANK, RUNSNAP_TEST_FAULT="snapshot.written=ENOSPC"))
    assert proc.returncode == 0 and marker.exists(), proc.stderr
    assert "Traceback" not in proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("runsnap:")]
    assert line.startswith("runsnap: the snapshot was not written: cannot write") and \
        "No space left on device" in line, proc.stderr
    assert list(shared.iterdir()) == []


def test_a_single_capture_still_saves_before_the_launch(tmp_path: Path) -> None:
    """Not a shared folder: the snapshot is on disk before the child starts, as always
    (runsnap killed where the child would start leaves it)."""
    target = tmp_path / "one.toml"
    proc = runsnap("capture", "-o", str(target), "--", "true", cwd=tmp_path,
                   env=bare_env(RUNSNAP_TEST_FAULT="capture.saved"))
    assert proc.returncode == -9 and "outcome" not in load(target).sections


def test_runsnap_failing_before_the_outcome_still_leaves_the_prelaunch_snapshot(
        tmp_path: Path) -> None:
    """A shared rank's runsnap that fails between the child's end and the outcome (an I/O
    error there) saves the snapshot it deferred: the launch keeps its record, and the
    command's exit status."""
    shared = tmp_path / "shared"
    shared.mkdir()
    proc = runsnap("capture", "-o", str(shared / "{rank}.toml"), "--", "sh", "-c", "exit 3",
                   cwd=tmp_path, env=bare_env(**RANK, RUNSNAP_TEST_FAULT="capture.ended=EIO"))
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.splitlines()[-1] == ("runsnap: the outcome was not written: Input/output "
                                            "error (fault injected at capture.ended)")
    [path] = _snapshots(shared)
    snap = load(path)
    assert "outcome" not in snap.sections and snap["command"]["argv"] == ["sh", "-c", "exit 3"]


def test_the_timer_and_the_outcome_never_both_claim(tmp_path: Path) -> None:
    """The deferred save's timer firing around the outcome write, both orders, real threads
    and files: one name claimed (never ``.1``), the final content on it, ``on_saved`` once."""
    from runsnap.capturing.firstsave import DeferredFirstSave
    from runsnap.capturing.output import Target
    from runsnap.snapshot import Snapshot

    before = Snapshot(meta={"label": "before"}, sections={"command": {"argv": ["x"]}})
    after = before.replace(meta={"label": "after"})
    orders = set()
    for i in range(40):
        path = tmp_path / f"r{i}" / "0.toml"
        told: list[Snapshot] = []
        first = DeferredFirstSave(before, Target(str(path), True, True), told.append,
                                  delay=0.002 * (i % 5))
        first.start()
        time.sleep(0.001 * (i % 7))
        saved = first.final(after)
        orders.add(told[0].meta["label"] if len(told) == 1 else "?")
        assert saved.path_text == str(path) and len(told) == 1
        assert [p.name for p in path.parent.iterdir()] == ["0.toml"]
        assert 'label = "after"' in path.read_text()
    assert "?" not in orders
