"""An operating-system error at every named fault point (runsnap.base.faults) of every kind of
capture ends in ``runsnap: ...`` lines, never a traceback: the command's own exit status when
it ran (exit 2 when runsnap failed before it), and nothing lost that was written before the
failure (the snapshot saved before the launch stays whole)."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import pytest

from runsnap.base.faults import POINTS
from runsnap.capturing.firstsave import DELAY_ENV
from runsnap.snapshot import load

from .conftest import bare_env, runsnap, runsnap_argv

ERRNOS = ("EIO", "ENOSPC", "EACCES")

#: The command: a line of output, a marker file that says it ran, a status of its own.
CHILD = ("sh", "-c", "echo out; : > ran; exit 3")

#: Each kind of capture: its options (``{d}``: a folder of the test's), its environment,
#: whether its snapshot goes to a file, and its command.
KINDS = {
    "file": (["-o", "{d}/run.toml"], {}, True, CHILD),
    "chosen name": (["--dir", "{d}"], {}, True, CHILD),
    "shared folder": (["-o", "{d}/{{rank}}.toml"], {"RANK": "3", "WORLD_SIZE": "4"}, True,
                      CHILD),
    "stdout": (["-o", "-"], {}, False, CHILD),
    "exec": (["--exec", "-o", "{d}/run.toml"], {}, True, CHILD),
}

#: A rank in a shared folder whose command outlives the deferred first save: saved from the
#: timer's thread while it runs, then extended in place (capturing/firstsave.py). The delay is
#: shortened to half a second by the test hook (firstsave.DELAY_ENV), the command outlives it by 1.5 s.
LONG_DELAY = 0.5
LONG = ("sh", "-c", f"echo out; : > ran; sleep {LONG_DELAY + 1.5}; exit 3")
LONG_KINDS = {"shared folder, a long command": (
    ["-o", "{d}/{{rank}}.toml"], {"RANK": "3", "WORLD_SIZE": "4", DELAY_ENV: str(LONG_DELAY)},
    True, LONG)}
ALL_KINDS = {**KINDS, **LONG_KINDS}


def reached_points(tmp_path: Path, kind: str) -> list[str]:
    """The points a capture of this kind passes, as ``NAME#N`` (RUNSNAP_TEST_FAULT_LOG)."""
    where = tmp_path / "trace"
    where.mkdir()
    log = tmp_path / "trace.log"
    options, extra, _file, child = ALL_KINDS[kind]
    proc = runsnap("capture", *(o.format(d=where) for o in options), "--", *child,
                   cwd=where, env=bare_env(**extra, RUNSNAP_TEST_FAULT_LOG=str(log)))
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
    return log.read_text().split()


def _fail_at(tmp_path: Path, kind: str, point: str, errno_name: str) -> None:
    options, extra, to_file, child = ALL_KINDS[kind]
    where = tmp_path / f"{point}-{errno_name}"
    where.mkdir()
    proc = runsnap("capture", *(o.format(d=where) for o in options), "--", *child, cwd=where,
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
        assert load(path)["command"]["argv"] == list(child), what
    if to_file and ran and not any("the snapshot was not written" in line for line in told):
        assert snapshots, what  # saved before the launch, or with the outcome: it stays


def fail_everywhere(tmp_path: Path, kind: str) -> set[str]:
    """Every point a capture of ``kind`` passes fails once, with EIO, ENOSPC and EACCES in turn
    (one errno a point: every one of them takes the same way out, an ``OSError``); returns the
    points' names."""
    reached = reached_points(tmp_path, kind)
    assert reached and all(p.partition("#")[0] in POINTS for p in reached), reached
    for point, errno_name in zip(reached, itertools.cycle(ERRNOS)):
        _fail_at(tmp_path, kind, point, errno_name)
    return {p.partition("#")[0] for p in reached}


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_an_error_at_any_point_is_one_line_and_keeps_the_status(tmp_path: Path,
                                                                 kind: str) -> None:
    fail_everywhere(tmp_path, kind)


def test_a_spec_naming_no_point_is_a_usage_error(tmp_path: Path) -> None:
    proc = runsnap("capture", "-o", str(tmp_path / "x.toml"), "--", "true", cwd=tmp_path,
                   env=bare_env(RUNSNAP_TEST_FAULT="capture.nowhere=EIO"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("runsnap: RUNSNAP_TEST_FAULT: no fault point 'capture.nowhere'")


def test_a_full_disk_under_standard_output_keeps_the_status(tmp_path: Path) -> None:
    """``-o - > FILE`` on a full disk (``/dev/full``): the snapshot cannot be written there,
    one line says so, and the status is still the command's."""
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(runsnap_argv("capture", "-o", "-", "--", "sh", "-c", "exit 3"),
                              cwd=tmp_path, env=bare_env(), stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.splitlines()[-1] == ("runsnap: the snapshot was not written to standard "
                                            "output: No space left on device")
