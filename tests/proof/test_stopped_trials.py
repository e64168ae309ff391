"""A trial stopped at once (Ctrl-C, or ``why`` sent SIGTERM) leaves no process behind, not
even one its launcher started in a session of its own, as torchrun starts each worker.

Seen while measuring ``why`` over the diagnosis corpus (benchmarks/RESULTS.md, fresh7
``no-sync-edit-metric-job``): ``why`` stopped during a relaunched torchrun job's trial left
both ranks running, orphaned, waiting in a collective. Real processes: the program starts its
worker with ``start_new_session=True``, as torch's elastic agent does."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import RUNSNAP
from tests.proof.conftest import capture, child

# A launcher: its worker, in a session of its own, writes its pid and waits; so does it (a
# server that is never ready: the trial runs until it is stopped).
_LAUNCHER = ("import subprocess\n"
             "pids = os.environ['PIDS']\n"
             "code = ('import os, time; open(os.path.join(%r, str(os.getpid())), \"w\")'\n"
             "        '.close(); time.sleep(600)') % pids\n"
             "subprocess.Popen([sys.executable, '-c', code], start_new_session=True)\n"
             "open(os.path.join(pids, str(os.getpid())), 'w').close()\n"
             "time.sleep(600)\n")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rpartition(")")[2].split()[0] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False


def test_a_trial_stopped_at_once_leaves_no_worker_of_its_own_session(tmp_path: Path) -> None:
    prog = child(tmp_path / "launcher.py", _LAUNCHER)
    pids = tmp_path / "pids"
    pids.mkdir()
    good = capture(tmp_path / "good.toml", ["python3", str(prog)], {"PIDS": str(pids)},
                   run=False)
    bad = capture(tmp_path / "bad.toml", ["python3", str(prog)],
                  {"PIDS": str(pids), "WORLD": "3", "A": "1"}, run=False)
    proc = subprocess.Popen([*RUNSNAP, "bisect", str(good), str(bad), "--timeout", "60",
                             "--ready-line", "never printed"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len(list(pids.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    started = [int(p.name) for p in pids.iterdir()]
    assert len(started) == 2, started  # the launcher and its worker
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in out, err
    time.sleep(0.2)
    left = [p for p in started if _alive(p)]
    for p in left:  # this test's own processes, by their ids
        os.kill(p, signal.SIGKILL)
    assert left == []
