"""One relay, alone: the middle of ``cat FILE | MIDDLE | cat >/dev/null``, where MIDDLE is
runsnap's relay loop (:class:`runsnap.launch.relay.Relay` and its
:class:`~runsnap.launch.streams.StreamWatch`, run in this process with TREE's code) or ``cat``.
Prints the middle's CPU seconds (user + system), its wall seconds and the lines it counted.
No start-up, collectors or snapshot: what the relay costs a byte, against a ``cat``.

    python benchmarks/relayloop.py TREE FILE
    python benchmarks/relayloop.py --cat FILE
    python benchmarks/relayloop.py --count TREE   # the two ways of counting, ns a byte

``benchmarks/growth.py --only loop`` runs it, round by round, for several line lengths.
"""

from __future__ import annotations

import fcntl
import os
import resource
import subprocess
import sys
import time


def with_cat(path: str) -> tuple[float, float, int]:
    """``cat`` in the middle: its own CPU, from the kernel's record of it."""
    source = subprocess.Popen(["cat", path], stdout=subprocess.PIPE)
    t0 = time.monotonic()
    middle = subprocess.Popen(["cat"], stdin=source.stdout, stdout=subprocess.PIPE)
    sink = subprocess.Popen(["cat"], stdin=middle.stdout, stdout=subprocess.DEVNULL)
    assert source.stdout is not None and middle.stdout is not None
    source.stdout.close()
    middle.stdout.close()
    _pid, _status, usage = os.wait4(middle.pid, 0)
    middle.returncode = 0
    wall = time.monotonic() - t0
    source.wait()
    sink.wait()
    return usage.ru_utime + usage.ru_stime, wall, -1


def with_relay(tree: str, path: str) -> tuple[float, float, int]:
    """runsnap's relay in the middle (this process): its CPU while it relays."""
    sys.path.insert(0, tree)
    from runsnap.launch.metrics import MetricWatch
    from runsnap.launch.relay import Relay

    try:
        from runsnap.launch.relay import wide_pipe
    except ImportError:  # a tree from before it was public: its pipe held 1 MiB
        def wide_pipe(fd: int) -> None:
            fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    from runsnap.launch.streams import StreamWatch

    r, w = os.pipe()
    wide_pipe(w)  # the child's pipe, as the launch makes it
    source = subprocess.Popen(["cat", path], stdout=w)
    os.close(w)
    r2, w2 = os.pipe()
    sink = subprocess.Popen(["cat"], stdin=r2, stdout=subprocess.DEVNULL)
    os.close(r2)
    watch = StreamWatch("stdout", 200, MetricWatch())
    relay = Relay("stdout", r, w2, watch, None)
    before, t0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    relay.run()  # to the end of the stream, the watch closed (its last lines scanned)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_SELF)
    os.close(w2)
    source.wait()
    sink.wait()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, watch.lines


def count_ways(tree: str) -> None:
    """ns a byte of :func:`runsnap.launch.streams.line_ends` both ways, on 256 KiB of lines of
    each length (CPU time of this process, the least of 5 runs of 100)."""
    sys.path.insert(0, tree)
    from runsnap.launch.streams import line_ends

    print(f"Python {sys.version.split()[0]}: ns a byte, bytes.count / memchr (replace)")
    for width in (20, 30, 40, 50, 60, 71, 100, 200, 1000):
        data = ((b"x" * (width - 1) + b"\n") * (262144 // width + 1))[:262144]
        cells = []
        for long_lines in (False, True):
            best = float("inf")
            for _ in range(5):
                t0 = time.process_time()
                for _ in range(100):
                    line_ends(data, long_lines)
                best = min(best, (time.process_time() - t0) / 100 / len(data) * 1e9)
            cells.append(f"{best:.3f}")
        print(f"{width:5d}-byte lines: {' / '.join(cells)}")


def main(argv: list[str]) -> int:
    if argv[0] == "--count":
        count_ways(argv[1])
        return 0
    cpu, wall, lines = with_cat(argv[1]) if argv[0] == "--cat" else with_relay(*argv[:2])
    print(f"{cpu:.4f} {wall:.4f} {lines}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
