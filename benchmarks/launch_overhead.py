"""Rough overhead of `runsnap capture -- CMD` against launching CMD bare (not a test).

Before the child: time from starting the launcher to the child's first Python statement.
After the child: time from the child's last statement to the snapshot's outcome on disk
(file mtime), and to runsnap's exit. Run from the repository root::

    .venv/bin/python benchmarks/launch_overhead.py [RUNS]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = "import time, sys; t = time.time(); open(sys.argv[1], 'w').write(repr(t))"
LAST = ("import time, sys; t = time.time(); open(sys.argv[1], 'w').write(repr(time.time()))")


def bare(tmp: str) -> tuple[float, float]:
    mark = os.path.join(tmp, "t")
    t0 = time.time()
    subprocess.run([sys.executable, "-c", CHILD, mark], check=True)
    t1 = time.time()
    return float(open(mark).read()) - t0, t1 - t0


def wrapped(tmp: str) -> tuple[float, float, float, float]:
    mark, snap = os.path.join(tmp, "t"), os.path.join(tmp, "s.toml")
    t0 = time.time()
    subprocess.run([sys.executable, "-m", "runsnap", "capture", "-o", snap, "--",
                    sys.executable, "-c", CHILD, mark], check=True, stderr=subprocess.DEVNULL)
    t1 = time.time()
    child_start = float(open(mark).read())
    subprocess.run([sys.executable, "-m", "runsnap", "capture", "-o", snap, "--",
                    sys.executable, "-c", LAST, mark], check=True, stderr=subprocess.DEVNULL)
    t2 = time.time()
    child_end = float(open(mark).read())
    return child_start - t0, t1 - t0, os.stat(snap).st_mtime - child_end, t2 - child_end


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # not a git repository: the git collector has nothing to read
        b = [bare(tmp) for _ in range(runs)]
        w = [wrapped(tmp) for _ in range(runs)]
    med = statistics.median
    b_start, b_total = med(x[0] for x in b), med(x[1] for x in b)
    w_start, w_total = med(x[0] for x in w), med(x[1] for x in w)
    w_out, w_exit = med(x[2] for x in w), med(x[3] for x in w)
    print(f"runs: {runs} (medians)")
    print(f"bare    start->child {b_start * 1000:7.1f} ms   total {b_total * 1000:7.1f} ms")
    print(f"wrapped start->child {w_start * 1000:7.1f} ms   total {w_total * 1000:7.1f} ms")
    print(f"ratio   start->child {w_start / b_start:7.1f} x    total {w_total / b_total:7.1f} x")
    print(f"child end -> outcome on disk {w_out * 1000:6.1f} ms; -> runsnap exited "
          f"{w_exit * 1000:6.1f} ms")


if __name__ == "__main__":
    main()
