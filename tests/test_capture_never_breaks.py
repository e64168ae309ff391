"""Capture never blocks or corrupts the launch, and never loses or clobbers a snapshot: huge
and deep config.json, a deleted working directory, -o on devices and symlinks, -o -, the same
label captured concurrently, empty commands, CR kept by --pid, first error by arrival, and
runsnap killed at every point of its rewrite."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runsnap.snapshot import load
from tests.conftest import run_runsnap

ENV = {**os.environ, "NO_COLOR": "1"}


def runsnap(*args: str, cwd: Path | str | None = None, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_runsnap(*args, cwd=cwd, env=env or ENV, timeout=timeout)


# --------------------------------------------------------------------------- config.json

@pytest.mark.parametrize("kind", ["deep", "huge", "not an object"])
def test_a_bad_config_json_is_an_error_and_the_launch_goes_on(tmp_path: Path, kind: str) -> None:
    model = tmp_path / "m"
    model.mkdir()
    if kind == "deep":
        (model / "config.json").write_text("[" * 400 + "]" * 400)
    elif kind == "huge":
        with open(model / "config.json", "w") as fh:
            fh.write('{"a": "' + "x" * (30 * 1024 * 1024) + '"}')
    else:
        (model / "config.json").write_text("[1, 2]")
    t0 = time.monotonic()
    r = runsnap("capture", "--model", str(model), "-o", str(tmp_path / "s.toml"), "--",
                sys.executable, "-c", "print('launched')", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "launched" in r.stdout and time.monotonic() - t0 < 30
    snap = load(tmp_path / "s.toml")
    (entry,) = snap["models"]["models"].values()
    assert "config" not in entry
    assert any("config.json" in e and "not recorded" in e for e in entry["errors"])


# --------------------------------------------------------------------------- where it runs

def test_launching_from_a_deleted_directory(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    script = (f"cd {gone} && rmdir {gone} && exec {sys.executable} -m runsnap capture "
              f"-o {tmp_path / 's.toml'} -- /bin/sh -c 'echo child ran; exit 5'")
    r = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, env=ENV,
                       timeout=120)
    assert r.returncode == 5, r.stderr
    assert "child ran" in r.stdout and "Traceback" not in r.stderr
    snap = load(tmp_path / "s.toml")
    assert snap["command"]["cwd"] == str(gone) and snap["outcome"]["exit_status"] == 5


@pytest.mark.parametrize("what", ["symlink", "fifo"])
def test_o_never_replaces_a_symlink_or_a_fifo(tmp_path: Path, what: str) -> None:
    target = tmp_path / "out.toml"
    if what == "symlink":
        real = tmp_path / "real.txt"
        real.write_text("keep me\n")
        target.symlink_to(real)
    else:
        os.mkfifo(target)
    before = os.lstat(target)
    r = runsnap("capture", "-o", str(target), timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "replaces only regular files" in r.stderr and r.stderr.count("\n") == 1
    after = os.lstat(target)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino,
                                                            before.st_rdev)
    if what == "symlink":
        assert (tmp_path / "real.txt").read_text() == "keep me\n"


def test_o_dev_null_writes_through_the_device_and_keeps_it(tmp_path: Path) -> None:
    """As with any Unix tool: ``-o /dev/null`` discards, and the device stays a device."""
    before = os.lstat("/dev/null")
    r = runsnap("capture", "-o", "/dev/null", "--", sys.executable, "-c", "print('ran')",
                cwd=tmp_path, timeout=60)
    assert r.returncode == 0 and "ran" in r.stdout, r.stderr
    after = os.lstat("/dev/null")
    assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino,
                                                            before.st_rdev)
    assert not list(Path("/dev").glob(".null.*.tmp"))
    snap = tmp_path / "s.toml"
    assert runsnap("capture", "-o", str(snap), cwd=tmp_path).returncode == 0
    for cmd in (("diff", str(snap), str(snap), "-o", "/dev/null"),
                ("report", str(snap), "-o", "/dev/null")):
        r = runsnap(*cmd, cwd=tmp_path, timeout=120)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (cmd, r.stderr)


def test_o_dev_stdout_writes_to_standard_output(tmp_path: Path) -> None:
    """``/dev/stdout`` is the process's own standard output, whatever it is (here a pipe)."""
    r = runsnap("capture", "-o", "/dev/stdout", "--label", "piped", cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("schema = "), r.stdout[:200]
    assert "# end of runsnap snapshot" in r.stdout
    snap = tmp_path / "s.toml"
    assert runsnap("capture", "-o", str(snap), cwd=tmp_path).returncode == 0
    r = runsnap("report", str(snap), "--format", "text", "-o", "/dev/stdout", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip(), r.stderr


def test_o_dash_writes_the_snapshot_to_stdout(tmp_path: Path) -> None:
    r = runsnap("capture", "-o", "-", "--label", "piped", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("schema = ") and r.stdout.rstrip().endswith("# end of runsnap snapshot")
    (tmp_path / "from-stdout.toml").write_text(r.stdout)
    assert load(tmp_path / "from-stdout.toml").label == "piped"
    assert not (tmp_path / "-").exists() and not (tmp_path / ".runsnap").exists()
    r = runsnap("capture", "-o", "-", "--", sys.executable, "-c", "print('child out')",
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out, _, snap_text = r.stdout.partition("schema = ")
    assert out == "child out\n" and "[outcome]" in snap_text
    assert not (tmp_path / "-").exists()


# --------------------------------------------------------------------------- concurrency

@pytest.mark.slow
def test_concurrent_captures_with_one_label_lose_nothing(tmp_path: Path) -> None:
    """Real processes, started together, the same label in the same millisecond."""
    n = 24
    start = tmp_path / "go"
    code = ("import os, sys, time, runpy\n"
            f"while not os.path.exists({str(start)!r}): time.sleep(0.001)\n"
            "sys.argv = ['runsnap', 'capture', '--label', 'same', '--dir', sys.argv[1]]\n"
            "runpy.run_module('runsnap', run_name='__main__')\n")
    out = tmp_path / "snaps"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(out)], cwd=tmp_path, env=ENV,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(n)]
    time.sleep(1.0)
    start.write_text("")
    printed = []
    for p in procs:
        so, se = p.communicate(timeout=300)
        assert p.returncode == 0, se
        printed.append(so.strip())
    files = sorted(p.name for p in out.glob("*.toml"))
    assert len(set(printed)) == n, "two captures printed the same path"
    assert len(files) == n, f"{n - len(files)} of {n} snapshots lost"
    ids = {load(out / f).id for f in files}
    assert len(ids) == n
    print(f"\nconcurrent captures: {n}, files: {len(files)}, lost: {n - len(files)}")


# --------------------------------------------------------------------------- commands

def test_empty_commands(tmp_path: Path) -> None:
    r = runsnap("capture", "--exec", "-o", str(tmp_path / "e.toml"), "--", "", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1
    r = runsnap("capture", "-o", str(tmp_path / "w.toml"), "--", "", cwd=tmp_path)
    shell = subprocess.run(["/bin/sh", "-c", "''"], capture_output=True)
    assert r.returncode == shell.returncode == 127, r.stderr
    assert "Traceback" not in r.stderr
    assert load(tmp_path / "w.toml")["outcome"]["status"] == "not_found"


def test_pid_keeps_carriage_returns(tmp_path: Path) -> None:
    env = {**ENV, "WITH_CR": "one\rtwo\r\n"}
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "arg\rwith cr"],
                            env=env, cwd=tmp_path)
    try:
        time.sleep(0.3)
        r = runsnap("capture", "--pid", str(proc.pid), "-o", str(tmp_path / "p.toml"))
    finally:
        proc.kill()
        proc.wait()
    assert r.returncode == 0, r.stderr
    snap = load(tmp_path / "p.toml")
    assert snap["env"]["vars"]["WITH_CR"] == "one\rtwo\r\n"
    assert snap["command"]["argv"][-1] == "arg\rwith cr"


@pytest.mark.slow
def test_first_error_is_the_one_that_arrived_first(tmp_path: Path) -> None:
    """Both streams print an error close together (50 ms apart), in either order: the first
    error is the one written first, every time. (Arrival is timed by the thread that relays
    each stream; on a loaded two-core machine a thread can wait more than 10 ms for a core,
    and 10 ms apart failed 1 run in 10 while another test suite ran beside it.)"""
    wrong = 0
    runs = 10
    for i in range(runs):
        first, second = ("stdout", "stderr") if i % 2 == 0 else ("stderr", "stdout")
        code = (
            "import sys, time, os\n"
            f"os.write({1 if first == 'stdout' else 2}, b'RuntimeError: {first} first\\n')\n"
            "time.sleep(0.05)\n"
            f"os.write({1 if second == 'stdout' else 2}, b'ValueError: {second} second\\n')\n"
        )
        out = tmp_path / f"r{i}.toml"
        r = runsnap("capture", "-o", str(out), "--", sys.executable, "-c", code)
        assert r.returncode == 0, r.stderr
        o = load(out)["outcome"]
        wrong += o["first_error_stream"] != first or f"{first} first" not in o["first_error"]
    assert wrong == 0, f"{wrong} of {runs} runs picked the later error"


# --------------------------------------------------------------------------- kill points

#: What each fault point leaves when runsnap is killed there (the #2 points are the rewrite
#: with the outcome): no file, the snapshot saved before the launch, or the final one.
KILLED_AT = {
    "capture.context": "none",
    "snapshot.partial": "none",
    "snapshot.written": "none",
    "snapshot.renamed": "saved",
    "capture.saved": "saved",
    "capture.ended": "saved",
    "snapshot.partial#2": "saved",
    "snapshot.written#2": "saved",
    "snapshot.renamed#2": "final",
}


def test_every_fault_point_is_tried() -> None:
    """Each named point is killed at here (a capture to ``-o FILE``) or, for the first save of
    a name runsnap chooses itself (``snapshot.claimed``), in tests/faults/test_disk.py, and for
    a shared folder's in-place rewrite (``snapshot.extending``) in tests/faults/test_first_save.py."""
    from runsnap.base.faults import POINTS
    from tests.faults.test_disk import KILLED_IN_A_CHOSEN_NAME
    from tests.faults.test_first_save import KILLED_IN_PLACE

    tried = {point.partition("#")[0]
             for point in (*KILLED_AT, *KILLED_IN_A_CHOSEN_NAME, *KILLED_IN_PLACE)}
    assert tried == set(POINTS)


@pytest.mark.slow
def test_runsnap_killed_at_any_point_leaves_a_whole_snapshot_or_none(tmp_path: Path) -> None:
    """SIGKILL runsnap at each named point of a capture (context, save, child, rewrite): the
    snapshot is absent, the one saved before the launch, or the final one, always whole; no
    temporary file shows to ls or diff, and the next capture in that folder removes the hidden
    ones left behind."""
    folder = tmp_path / "snaps"
    folder.mkdir()
    found: dict[str, str] = {}
    hidden: dict[str, int] = {}
    for i, point in enumerate(KILLED_AT):
        target = folder / f"k{i}.toml"
        r = runsnap("capture", "-o", str(target), "--", sys.executable, "-c", "print('x' * 1000)",
                    cwd=tmp_path, env={**ENV, "RUNSNAP_TEST_FAULT": point})
        assert r.returncode == -signal.SIGKILL, (point, r.stderr)
        if not target.exists():
            found[point] = "none"
        else:
            snap = load(target)  # whole, or this raises
            found[point] = "final" if "outcome" in snap.sections else "saved"
        # each capture sweeps what the one before left: at most this one's temporary file
        hidden[point] = sum(p.name.endswith(".tmp") for p in folder.iterdir())
    assert found == KILLED_AT
    assert {p for p, n in hidden.items() if n} == {p for p in KILLED_AT
                                                   if ".partial" in p or ".written" in p}
    visible = [p.name for p in folder.iterdir() if not p.name.startswith(".")]
    assert sorted(visible) == sorted(f"k{i}.toml" for i, point in enumerate(KILLED_AT)
                                     if KILLED_AT[point] != "none")
    r = runsnap("capture", "-o", str(folder / "last.toml"), cwd=tmp_path,
                env={**ENV, "RUNSNAP_TEST_FAULT": "snapshot.partial"})
    assert r.returncode == -signal.SIGKILL and any(p.name.endswith(".tmp") for p in folder.iterdir())
    r = runsnap("capture", "-o", str(folder / "after.toml"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []


def test_a_fault_point_can_fail_with_an_errno(tmp_path: Path) -> None:
    """``NAME=ENOSPC``: the write fails as on a full disk; the capture says so in one line and
    the old snapshot stays whole."""
    r = runsnap("capture", "--no-run", "-o", str(tmp_path / "s.toml"), cwd=tmp_path,
                env={**ENV, "RUNSNAP_TEST_FAULT": "snapshot.written=ENOSPC"})
    assert r.returncode == 2 and "No space left on device" in r.stderr, r.stderr
    assert len(r.stderr.splitlines()) == 1 and not (tmp_path / "s.toml").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_temporary_files_of_dead_writers_are_swept(tmp_path: Path) -> None:
    from runsnap.base.atomic import atomic_write, host_tag

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".s.toml.{dead.pid}-{host_tag()}{'a' * 8}.tmp"
    live = tmp_path / f".s.toml.{os.getppid()}-{host_tag()}{'b' * 8}.tmp"
    other = "0000" if host_tag() != "0000" else "ffff"  # another host of a shared folder
    elsewhere = tmp_path / f".s.toml.{dead.pid}-{other}{'c' * 8}.tmp"
    for path in (stale, live, elsewhere):
        path.write_text("being written")
    atomic_write(tmp_path / "s.toml", b"schema = 1\n", sweep=False)  # a rank of a job
    assert stale.exists()
    atomic_write(tmp_path / "s.toml", b"schema = 1\n")
    # its pid is this host's: dead; another host's pid says nothing here
    assert not stale.exists() and live.exists() and elsewhere.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == ["s.toml"]


def test_a_rank_of_a_job_does_not_list_the_shared_folder(tmp_path: Path) -> None:
    """``-o DIR/{host}-{rank}.toml`` (or a launcher's ranks): thousands of ranks write into
    one folder, often on a shared file system; a listing per rank would be quadratic in the
    job's size. A dead writer's temporary there is left for a later writer that is not a rank."""
    shared = tmp_path / "shared"
    shared.mkdir()
    from runsnap.base.atomic import host_tag

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = shared / f".x.toml.{dead.pid}-{host_tag()}{'a' * 8}.tmp"
    stale.write_text("half")
    r = runsnap("capture", "-o", str(shared / "{host}-{rank}.toml"), "--", sys.executable, "-c",
                "pass", cwd=tmp_path, env={**ENV, "RANK": "3", "WORLD_SIZE": "4"})
    assert r.returncode == 0, r.stderr
    assert stale.exists() and len([p for p in shared.iterdir() if p.suffix == ".toml"]) == 1
    r = runsnap("capture", "-o", str(shared / "one.toml"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert not stale.exists()
