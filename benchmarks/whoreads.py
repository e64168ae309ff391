"""``runsnap who-reads`` against ``grep -n -F`` over the same files, as same-run ratios.

    python benchmarks/whoreads.py --python PYTHON [--rounds N] [--out FILE]

PYTHON is an interpreter with many heavy installed packages (torch, transformers, sglang; or
any large site-packages). The files are those its distributions installed (their ``RECORD``:
``.py`` files and shared libraries), the ones who-reads searches. Interleaved, round after
round, medians of the same run:

1. cold: an empty cache; the one pass that indexes every variable-shaped name, then the name;
2. first time a name is asked, the index built (a name never searched: no pass); target: at
   most 0.25x grep, which reads every file for each name;
3. a name asked before (its places cached);
4. ``grep -n -F NAME`` over the same files (``xargs -0``), for each name.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.tracing import CPU, interleave, med  # noqa: E402

NAMES = ("OMP_NUM_THREADS", "NCCL_DEBUG", "CUDA_VISIBLE_DEVICES", "AWS_PROFILE",
         "HF_HUB_OFFLINE", "TORCH_SHOW_CPP_STACKTRACES")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    from benchmarks.run import install_runsnap
    from runsnap.whoreads.index import record_files
    from runsnap.whoreads.search import distributions

    py = args.python
    folder = tempfile.mkdtemp(prefix="runsnap-whoreads-bench-")
    files: list[str] = []
    for dist in distributions(py):
        files += [os.path.join(dist["location"], rel)
                  for rel in record_files(dist["location"], dist.get("metadata_dir", ""))]
    files = [f for f in files if os.path.isfile(f)]
    size = sum(os.path.getsize(f) for f in files)
    listing = os.path.join(folder, "files.txt")
    Path(listing).write_text("\0".join(files))
    _rpy, runsnap = install_runsnap(Path(folder))
    first, later = NAMES[0], NAMES[1:]
    warm = os.path.join(folder, "cache-warm")
    cold = os.path.join(folder, "cache-cold")
    env_warm = {**os.environ, "RUNSNAP_CACHE_DIR": warm}
    # the index built once, by the first name; each later name is asked for the first time
    # from a copy of that cache made before the timing starts
    who = [*runsnap, "who-reads", "--python", py]
    interleave({"prime": ([*who, first], env_warm)}, 1)
    cases: dict[str, tuple[list[str], dict[str, str] | None]] = {
        f"who-reads {first} (cold: empty cache, index built)": (
            [*who, first], {**os.environ, "RUNSNAP_CACHE_DIR": cold}),
        f"who-reads {first} (asked before)": ([*who, first], env_warm),
        f"grep -n -F {first} over the same {len(files)} files": (
            ["sh", "-c", f"xargs -0 grep -n -F {first} < {listing}; true"], None),
    }
    rounds = max(3, args.rounds)
    copies = {}
    for name in later:
        cases[f"who-reads {name} (first time, index built)"] = (
            ["sh", "-c", f"d=$(ls -d {folder}/new-{name}-* | head -1); "
                         f"RUNSNAP_CACHE_DIR=$d {' '.join(who)} {name} > /dev/null; "
                         f"rm -rf $d"], None)
        cases[f"grep -n -F {name} over the same files"] = (
            ["sh", "-c", f"xargs -0 grep -n -F {name} < {listing}; true"], None)
        copies[name] = [os.path.join(folder, f"new-{name}-{r}") for r in range(rounds + 1)]
        for c in copies[name]:
            shutil.copytree(warm, c)
    load = os.getloadavg()[0]
    res = interleave(cases, rounds, fresh={
        f"who-reads {first} (cold: empty cache, index built)": cold})
    grep_first = med(res[f"grep -n -F {first} over the same {len(files)} files"])
    lines = [f"# who-reads against grep ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})",
             "", f"- machine: {os.cpu_count()} CPUs, load average {load:.2f} before; "
             f"Python {sys.version.split()[0]}; interpreter searched: {py}",
             f"- files: {len(files)} (.py and shared libraries, {size / 1e6:.0f} MB) of "
             f"{len(distributions(py))} distributions",
             f"- command: `python benchmarks/whoreads.py --python {py} --rounds {rounds}`", "",
             "| command | median ms | CPU ms | n |", "| --- | ---: | ---: | ---: |"]
    for k, v in res.items():
        cpu = CPU.get(k) or [0.0]
        lines.append(f"| {k} | {med(v) * 1000:.1f} | {med(cpu) * 1000:.1f} | {len(v)} |")
    lines.append("")
    cold_r = med(res[f"who-reads {first} (cold: empty cache, index built)"]) / grep_first
    warm_r = med(res[f"who-reads {first} (asked before)"]) / grep_first
    news = [med(res[f"who-reads {n} (first time, index built)"]) /
            med(res[f"grep -n -F {n} over the same files"]) for n in later]
    worst = max(news)

    def cpu(k: str) -> float:
        return med(CPU.get(k) or [0.0])

    news_cpu = [cpu(f"who-reads {n} (first time, index built)") /
                cpu(f"grep -n -F {n} over the same files") for n in later]
    cold_cpu = cpu(f"who-reads {first} (cold: empty cache, index built)") / cpu(
        f"grep -n -F {first} over the same {len(files)} files")
    lines += [f"- cold (one pass indexing every name) / grep: {cold_r:.2f}x",
              f"- a name asked for the first time, index built / grep of that name: "
              f"{min(news):.3f}x-{worst:.3f}x (target <= 0.25x) - "
              f"{'met' if worst <= 0.25 else 'NOT met'}",
              f"- the same in CPU time (what a loaded machine does not distort): cold "
              f"{cold_cpu:.2f}x, a name asked for the first time {min(news_cpu):.3f}x-"
              f"{max(news_cpu):.3f}x",
              f"- a name asked before / grep: {warm_r:.3f}x", ""]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write(text)
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
