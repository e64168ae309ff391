"""What recording metrics costs on a 100 MB log, against ``grep -c`` and a plain Python line loop
over the same file in the same run.

    .venv/bin/python benchmarks/metrics.py [--mb 100] [--repeat 3] [--out benchmarks/RESULTS.md]

The log is a training run's: ``key=value`` step lines, ``key: value`` evaluation lines, tqdm
progress redrawn with ``\\r``, warnings and plain text. runsnap's side is what the relay does
with a child's output: :class:`runsnap.launch.streams.StreamWatch` fed in the relay's chunk size,
once with the metric extraction (the default) and once with a watch that extracts nothing, so
the extraction's own share shows too.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):  # after PYTHONPATH: a baseline tree given there is measured
    sys.path.append(str(Path(__file__).resolve().parent.parent))

from runsnap.launch import metrics as metrics_module  # noqa: E402
from runsnap.launch.streams import StreamWatch  # noqa: E402

CHUNK = 1 << 20  # the relay's read size (runsnap.launch.relay._READ)


def make_log(path: Path, mb: int) -> None:
    """A training log of about ``mb`` megabytes (fixed seed)."""
    rng = random.Random(0)
    lines = []
    size, step = 0, 0
    with path.open("wb") as fh:
        while size < mb * 10**6:
            step += 1
            kind = rng.random()
            if kind < 0.6:
                line = (f"[2026-12-01 10:{step // 60 % 60:02d}:{step % 60:02d}] step={step} "
                        f"loss={4 - step * 1e-6:.4f} lr={3e-4:.2e} grad_norm={rng.random():.3f} "
                        f"tokens_per_s={rng.uniform(8e3, 9e3):.1f}")
            elif kind < 0.7:
                line = f"eval: accuracy: {rng.random():.4f} perplexity: {rng.uniform(5, 9):.3f}"
            elif kind < 0.9:
                line = f"train:  {step % 100}%|#####     | {step}/1000000 [00:12<01:00, 81.2it/s]\r"
            elif kind < 0.95:
                line = "WARNING: gradient overflow, skipping step; reducing loss scale"
            else:
                line = "saving checkpoint to /data/ckpt/model-" + str(step) + ".pt"
            data = (line + "\n").encode()
            lines.append(data)
            if len(lines) >= 4096:
                fh.write(b"".join(lines))
                lines.clear()
            size += len(data)
        fh.write(b"".join(lines))


def feed(path: Path, with_metrics: bool) -> dict[str, float]:
    watch = StreamWatch("stdout", 200)
    if not with_metrics:
        watch.metrics = _Nothing()  # type: ignore[assignment]
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            watch.feed(chunk)
    watch.close()
    return dict(watch.metrics.values)


class _Nothing(metrics_module.MetricWatch):
    def feed(self, chunk: bytes) -> None:
        pass


def extract(path: Path, chunk: int = 1 << 20) -> dict[str, float]:
    """The metric extraction alone, fed as StreamWatch feeds it: whole lines, in the relay's
    read size."""
    watch = metrics_module.MetricWatch()
    rest = b""
    with path.open("rb") as fh:
        while data := fh.read(chunk):
            data = rest + data
            cut = data.rfind(b"\n")
            if cut < 0:
                rest = data
                continue
            watch.feed(data[:cut])
            rest = data[cut + 1:]
    if rest:
        watch.feed(rest)
    return dict(watch.values)


def grep_count(path: Path) -> int:
    return int(subprocess.run(["grep", "-c", "loss=", str(path)], capture_output=True,
                              text=True, check=False).stdout or 0)


def line_loop(path: Path) -> int:
    n = 0
    with path.open("rb") as fh:
        for line in fh:
            if b"loss=" in line:
                n += 1
    return n


def timed(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    p.add_argument("--mb", type=int, default=100)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", metavar="FILE")
    p.add_argument("--log", type=Path, help="an existing log (with --one)")
    p.add_argument("--one", choices=["metrics", "watch", "loop"],
                   help="time nothing: run one of them over --log once (benchmarks/run.py "
                        "case 11 times it as a process)")
    a = p.parse_args(argv)
    if a.one:
        fn = {"metrics": extract, "watch": lambda path: feed(path, True), "loop": line_loop}
        print(fn[a.one](a.log))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "train.log"
        make_log(log, a.mb)
        found = feed(log, True)
        rows = [("StreamWatch with metrics (runsnap's relay)", lambda: feed(log, True)),
                ("StreamWatch without metrics", lambda: feed(log, False)),
                ("grep -c loss=", lambda: grep_count(log)),
                ("python: for line in file: b'loss=' in line", lambda: line_loop(log))]
        runs: dict[str, list[float]] = {name: [] for name, _fn in rows}
        for _round in range(a.repeat):  # interleaved rounds
            for name, fn in rows:
                runs[name].append(timed(fn, 1))
        med = {name: statistics.median(times) for name, times in runs.items()}
        size = log.stat().st_size
    subject = med[rows[0][0]]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    text = [f"Metric extraction on a {size / 1e6:.0f} MB training log ({a.repeat} interleaved "
            f"rounds, median; `python benchmarks/metrics.py`), {when}:",
            "", "| command | seconds | MB/s | runsnap / this |", "|---|---:|---:|---:|"]
    for name, _fn in rows:
        text.append(f"| {name} | {med[name]:.2f} | {size / 1e6 / med[name]:.0f} | "
                    f"{subject / med[name]:.2f}x |")
    text += ["", f"metrics found: {found}", ""]
    out = "\n".join(text)
    print(out)
    if a.out:
        from benchmarks.diagnosis import write_section
        write_section(Path(a.out), "## Metric extraction (issue 22)\n\n" + out,
                      key="metrics")
    return 0


if __name__ == "__main__":
    sys.exit(main())
