"""An operating-system error at every named fault point (runsnap.base.faults) of every kind of
capture ends in ``runsnap: ...`` lines, never a traceback: the command's own exit status when
it ran (exit 2 when runsnap failed before it), and nothing lost that was written before the
failure (the snapshot saved before the launch stays whole)."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from runsnap.base.faults import POINTS
from runsnap.snapshot import load

from .conftest import bare_env, runsnap

ERRNOS = ("EIO", "ENOSPC", "EACCES")

#: The command: a line of output, a marker file that says it ran, a status of its own.
CHILD = ("sh", "-c", "echo out; : > ran; exit 3")

#: Each kind of capture: its options (``{d}``: a folder of the test's), its environment, and
#: whether its snapshot goes to a file.
KINDS = {
    "file": (["-o", "{d}/run.toml"], {}, True),
    "chosen name": (["--dir", "{d}"], {}, True),
    "shared folder": (["-o", "{d}/{{rank}}.toml"], {"RANK": "3", "WORLD_SIZE": "4"}, True),
    "stdout": (["-o", "-"], {}, False),
    "exec": (["--exec", "-o", "{d}/run.toml"], {}, True),
}


def _reached(tmp_path: Path, kind: str) -> list[str]:
    """The points a capture of this kind passes, as ``NAME#N`` (RUNSNAP_TEST_FAULT_LOG)."""
    where = tmp_path / "trace"
    where.mkdir()
    log = tmp_path / "trace.log"
    options, extra, _file = KINDS[kind]
    proc = runsnap("capture", *(o.format(d=where) for o in options), "--", *CHILD,
                   cwd=where, env=bare_env(**extra, RUNSNAP_TEST_FAULT_LOG=str(log)))
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
    return log.read_text().split()


def _fail_at(tmp_path: Path, kind: str, point: str, errno_name: str) -> None:
    options, extra, to_file = KINDS[kind]
    where = tmp_path / f"{point}-{errno_name}"
    where.mkdir()
    proc = runsnap("capture", *(o.format(d=where) for o in options), "--", *CHILD, cwd=where,
                   env=bare_env(**extra, RUNSNAP_TEST_FAULT=f"{point}={errno_name}"))
    what = (kind, point, errno_name, proc.returncode, proc.stderr)
    ran = (where / "ran").exists()
    assert "Traceback" not in proc.stderr, what
    told = [line for line in proc.stderr.splitlines() if line]
    assert told and all(line.startswith("runsnap: ") for line in told), what
    name = point.partition("#")[0]
    assert sum(f"fault injected at {name}" in line for line in told) == 1, what
    assert proc.returncode == (3 if ran else 2), what
    assert proc.stdout.startswith("out\n") == ran, what
    snapshots = [p for p in where.rglob("*.toml") if not p.name.startswith(".")]
    for path in snapshots:  # whatever is on disk is whole, and the command's own
        assert load(path)["command"]["argv"] == list(CHILD), what
    if to_file and ran and not any("the snapshot was not written" in line for line in told):
        assert snapshots, what  # saved before the launch, or with the outcome: it stays


@pytest.mark.parametrize("kind", KINDS)
def test_an_error_at_any_point_is_one_line_and_keeps_the_status(tmp_path: Path,
                                                                 kind: str) -> None:
    """Every point the capture passes fails once, with EIO, ENOSPC and EACCES in turn."""
    reached = _reached(tmp_path, kind)
    assert reached and all(p.partition("#")[0] in POINTS for p in reached), reached
    for point, errno_name in zip(reached, itertools.cycle(ERRNOS)):
        _fail_at(tmp_path, kind, point, errno_name)


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_every_errno_at_every_point(tmp_path: Path, kind: str) -> None:
    """As above, each point failing with each of EIO, ENOSPC and EACCES."""
    for point in _reached(tmp_path, kind):
        for errno_name in ERRNOS:
            _fail_at(tmp_path, kind, point, errno_name)


def test_the_kinds_of_capture_pass_every_point(tmp_path: Path) -> None:
    """The loops above reach every named point (a new point is tried as soon as it exists)."""
    kinds = ("file", "chosen name", "shared folder")
    seen = set()
    for kind in kinds:
        folder = tmp_path / kind
        folder.mkdir()
        seen |= {p.partition("#")[0] for p in _reached(folder, kind)}
    assert seen == set(POINTS)


@pytest.mark.slow
def test_an_error_after_the_deferred_save_is_told_not_a_thread_traceback(tmp_path: Path
                                                                         ) -> None:
    """A rank in a shared folder saves its snapshot from a timer thread while the command runs
    (capturing/firstsave.py): an error there is one line, the command runs on, its status and
    its final snapshot are kept."""
    from runsnap.capturing.firstsave import FIRST_SAVE_DELAY

    shared = tmp_path / "shared"
    t0 = time.monotonic()
    proc = runsnap("capture", "-o", str(shared / "{rank}.toml"), "--", "sh", "-c",
                   f"sleep {FIRST_SAVE_DELAY + 0.5}; exit 3", cwd=tmp_path,
                   env=bare_env(RANK="3", WORLD_SIZE="4", RUNSNAP_TEST_FAULT="capture.saved=EIO"))
    assert time.monotonic() - t0 > FIRST_SAVE_DELAY
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
    told = proc.stderr.splitlines()
    assert all(line.startswith("runsnap: ") for line in told), told
    assert any("fault injected at capture.saved" in line for line in told), told
    snap = load(shared / "3.toml")
    assert snap["outcome"]["exit_status"] == 3


def test_a_spec_naming_no_point_is_a_usage_error(tmp_path: Path) -> None:
    proc = runsnap("capture", "-o", str(tmp_path / "x.toml"), "--", "true", cwd=tmp_path,
                   env=bare_env(RUNSNAP_TEST_FAULT="capture.nowhere=EIO"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("runsnap: RUNSNAP_TEST_FAULT: no fault point 'capture.nowhere'")
