"""Growth benchmarks (issue 24): does a cost stay linear in its input, against a peer measured
in the same run?

    .venv/bin/python benchmarks/growth.py [--quick] [--out FILE]

* **relay**: N MB of 71-byte lines through ``runsnap capture -- cat FILE | cat >/dev/null``
  against ``cat FILE | cat | cat >/dev/null`` (a ``cat`` in runsnap's place), and runsnap's own
  fixed cost (``capture -- true``) measured beside them; peak RSS of runsnap.
* **diff variables**: ``runsnap diff`` of a normal snapshot against one with N variables
  (wall and CPU time, peak RSS), cache warm (a second run).
* **ls label**: ``runsnap ls`` of a folder holding a snapshot whose label has N characters
  (time, peak RSS, bytes printed).

Times are medians of ``--repeat`` runs; on a shared machine CPU time (user + system of the
children) is steadier than wall time, and both are printed.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNSNAP = str(Path(sys.executable).with_name("runsnap"))


def _timed(argv: list[str] | str, cwd: Path, env: dict[str, str] | None = None,
           shell: bool = False) -> tuple[float, float, bytes]:
    """Wall seconds, CPU seconds of the children, stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(argv, cwd=cwd, env=env, shell=shell, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, check=False)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def _peak_kib(argv: list[str] | str, cwd: Path, shell: bool = False) -> int:
    out = subprocess.run(["/usr/bin/time", "-f", "%M", *(["sh", "-c", argv] if shell else argv)],
                         cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        return int(out.stderr.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return -1


def _median(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def relay(work: Path, sizes: list[int], repeat: int) -> list[str]:
    rows = ["| MB | cat in the middle s | runsnap s | runsnap - its fixed cost s | "
            "ratio (cat / runsnap, fixed cost removed) | runsnap peak RSS MiB |",
            "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    line = b"x" * 70 + b"\n"
    fixed = _median([_timed([RUNSNAP, "capture", "-o", "t.toml", "--", "true"], work)[:2]
                     for _ in range(repeat)])[0]
    for mb in sizes:
        data = work / f"lines-{mb}.txt"
        if not data.exists() or data.stat().st_size < mb * 10**6 - 71:
            with open(data, "wb") as fh:
                block = line * (10**6 // 71)
                for _ in range(mb):
                    fh.write(block)
        cat_cmd = f"cat {data} | cat | cat >/dev/null"
        rs_cmd = f"{RUNSNAP} capture -o r.toml -- cat {data} | cat >/dev/null"
        cats, rss = [], []
        for _ in range(repeat):  # interleaved
            cats.append(_timed(cat_cmd, work, shell=True)[:2])
            rss.append(_timed(rs_cmd, work, shell=True)[:2])
        c, r = _median(cats)[0], _median(rss)[0]
        net = max(r - fixed, 1e-3)
        peak = _peak_kib(f"{RUNSNAP} capture -o r.toml -- cat {data} >/dev/null", work,
                         shell=True)
        rows.append(f"| {mb} | {c:.2f} | {r:.2f} | {net:.2f} | {c / net:.2f}x | "
                    f"{peak / 1024:.1f} |")
    rows.append("")
    rows.append(f"runsnap's fixed cost (`capture -- true`, same run): {fixed:.2f} s")
    return rows


def _snapshot(work: Path, name: str, nvars: int) -> Path:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work),
           "RUNSNAP_KEY_FILE": str(work / "key"), "RUNSNAP_CACHE_DIR": str(work / "cache")}
    env.update({f"GROWTH_VAR_{i:06d}": str(i) for i in range(nvars)})
    subprocess.run([RUNSNAP, "capture", "-o", name, "--no-run", "--", sys.executable, "-c",
                    "pass"], cwd=work, env=env, check=True, stderr=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL)
    return work / name


def diff_vars(work: Path, counts: list[int], repeat: int) -> list[str]:
    env = {**os.environ, "RUNSNAP_KEY_FILE": str(work / "key"),
           "RUNSNAP_CACHE_DIR": str(work / "cache")}
    _snapshot(work, "normal.toml", 0)
    rows = ["| variables | wall s | CPU s | CPU s per 1,000 variables | peak RSS MiB |",
            "| ---: | ---: | ---: | ---: | ---: |"]
    for n in counts:
        snap = _snapshot(work, f"vars-{n}.toml", n)
        argv = [RUNSNAP, "diff", "normal.toml", snap.name]
        _timed(argv, work, env)  # warm the who-reads cache
        wall, cpu = _median([_timed(argv, work, env)[:2] for _ in range(repeat)])
        peak = _peak_kib(argv, work)
        rows.append(f"| {n:,} | {wall:.2f} | {cpu:.2f} | {cpu / max(n, 1) * 1000:.3f} | "
                    f"{peak / 1024:.1f} |")
    return rows


def ls_label(work: Path, lengths: list[int], repeat: int) -> list[str]:
    base = _snapshot(work, "label-base.toml", 0).read_text()
    rows = ["| label characters | wall s | CPU s | peak RSS MiB | bytes printed |",
            "| ---: | ---: | ---: | ---: | ---: |"]
    for n in lengths:
        folder = work / f"ls-{n}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        (folder / "a.toml").write_text(base)
        (folder / "b.toml").write_text(base.replace('label = ""', f'label = "{"L" * n}"', 1))
        argv = [RUNSNAP, "ls", "--dir", str(folder)]
        runs = [_timed(argv, work) for _ in range(repeat)]
        wall, cpu = _median([r[:2] for r in runs])
        rows.append(f"| {n:,} | {wall:.2f} | {cpu:.2f} | {_peak_kib(argv, work) / 1024:.1f} | "
                    f"{len(runs[0][2]):,} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="runsnap-growth-"))
    try:
        sizes = [100, 500] if not args.quick else [50]
        counts = [1000, 5000, 20000] if not args.quick else [1000, 4000]
        lengths = [1_000, 1_000_000, 50_000_000] if not args.quick else [1_000, 5_000_000]
        load = os.getloadavg()[0]
        out = ["## Growth (issue 24): relay, variables in diff, label length", "",
               f"- load average before: {load:.2f} (2 CPUs shared with other work)",
               f"- command: `python benchmarks/growth.py --repeat {args.repeat}"
               f"{' --quick' if args.quick else ''}`", ""]
        parts = (("### Relay: 71-byte lines, runsnap in a pipeline against `cat` in its place",
                  lambda: relay(work, sizes, args.repeat)),
                 ("### diff: a normal snapshot against one with N variables (who-reads cache "
                  "warm)", lambda: diff_vars(work, counts, args.repeat)),
                 ("### ls: one snapshot with an N-character label",
                  lambda: ls_label(work, lengths, args.repeat)))
        print("\n".join(out), flush=True)
        for title, part in parts:  # each table as soon as it is measured
            table = [title, "", *part(), ""]
            print("\n".join(table), flush=True)
            out += table
        out += [f"- load average after: {os.getloadavg()[0]:.2f}", ""]
        text = "\n".join(out)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as fh:
                fh.write("\n" + text)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
