"""Progress on long work, in a real pty: one status line (trial k of about N, elapsed, what
is left) rewritten in place on a terminal, one line a trial elsewhere; Ctrl-C stops at once,
kills the trial's whole process group and prints the best answer so far."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from tests.conftest import RUNSNAP
from tests.proof.conftest import capture, child

_SERVER = ("pids = os.environ['PIDS']\n"
           "open(os.path.join(pids, str(os.getpid())), 'w').close()\n"
           "import subprocess\n"
           "helper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
           "open(os.path.join(pids, str(helper.pid)), 'w').close()\n"
           "if os.environ.get('CHUNKED') == '0':\n"
           "    sys.exit('RuntimeError: prefill without chunks ran out of memory')\n"
           "time.sleep(600)\n")


def _alive(pids: Path) -> list[int]:
    """The processes named in ``pids`` still running (a zombie waiting for its reaper is not)."""
    out = []
    for p in pids.iterdir():
        try:
            state = Path(f"/proc/{p.name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.append(int(p.name))
    return out


def test_a_status_line_on_a_terminal_and_ctrl_c_kills_the_trials_group(tmp_path: Path) -> None:
    prog = child(tmp_path / "server.py", _SERVER)
    pids = tmp_path / "pids"
    pids.mkdir()
    good = capture(tmp_path / "good.toml", ["python3", str(prog)], {"PIDS": str(pids)},
                   run=False)
    bad = capture(tmp_path / "bad.toml", ["python3", str(prog)],
                  {"PIDS": str(pids), "CHUNKED": "0", "A": "1", "B": "1"}, run=False)
    master, slave = os.openpty()
    proc = subprocess.Popen([*RUNSNAP, "bisect", str(good), str(bad), "--timeout", "3"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
                            text=True, start_new_session=True)
    os.close(slave)
    seen = bytearray()

    def read() -> None:
        while True:
            try:
                got = os.read(master, 4096)
            except OSError:
                return
            if not got:
                return
            seen.extend(got)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    # the first trial (all applied) goes bad at once; wait for the second, which keeps running
    while b"trial 2 of about" not in seen and time.monotonic() < deadline:
        time.sleep(0.1)
    while len(_alive(pids)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert b"trial 2 of about" in seen, bytes(seen)
    text = seen.decode()
    assert "\r\x1b[2K" in text and "elapsed" in text and "left" in text
    assert "\n" not in text  # one line, rewritten: no line a trial on a terminal
    stopped_at = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    took = time.monotonic() - stopped_at
    assert proc.returncode == 130
    assert took < 4.0, f"Ctrl-C took {took:.1f}s"  # at once: no SIGTERM grace of 5 s
    assert "interrupted" in out and "Best so far (not re-checked):" in out
    time.sleep(0.2)
    # the program and the helper it started, in the trial stopped and in the one that ended
    assert _alive(pids) == []
    os.close(master)


def test_one_line_a_trial_when_not_on_a_terminal_and_none_when_quiet(tmp_path: Path) -> None:
    prog = child(tmp_path / "run.py", "sys.exit(1 if os.environ.get('MODE') == 'x' else 0)\n")
    good = capture(tmp_path / "good.toml", ["python3", str(prog)], {"MODE": "y"})
    bad = capture(tmp_path / "bad.toml", ["python3", str(prog)], {"MODE": "x", "A": "1"})
    loud = subprocess.run([*RUNSNAP, "bisect", str(good), str(bad)], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert loud.returncode == 0, loud.stderr
    assert "\r" not in loud.stderr and "runsnap: trial 1: 2 of 2 applied: bad in " in loud.stderr
    quiet = subprocess.run([*RUNSNAP, "bisect", str(good), str(bad), "--quiet"],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert quiet.returncode == 0 and quiet.stderr == ""
