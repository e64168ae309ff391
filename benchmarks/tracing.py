"""The costs of run-time tracing and of ``who-reads``, as same-run ratios.

    python benchmarks/tracing.py --venv VENV [--rounds N] [--out FILE]

VENV is a virtual environment with heavy real packages (transformers, and torch if it
installs). Every pair of commands is run interleaved, round after round, and compared by
medians of the same run:

1. start-up: ``python -c pass`` with runsnap's hook (and with the getenv interposer too)
   against without; target: at most 10 ms added;
2. hot loop: ``os.environ.get`` of a set and an unset variable, ns per call measured inside the
   child, traced against untraced; target: at most 3x;
3. heavy import: ``python -c "import transformers"`` (and ``import torch``) traced against
   untraced; target: at most 1.1x;
4. ``runsnap who-reads NAME`` (a regular install, as ``benchmarks/run.py`` makes one) cold
   (empty cache) and warm against ``grep -n -F NAME`` over the same files (the ``.py`` files and
   shared libraries the distributions installed); targets: cold at most 1x, warm at most 0.05x.
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
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runsnap.tracing import HOOK_DIR  # noqa: E402
from runsnap.tracing.native import interposer  # noqa: E402

HOT = """
import os, time
def loop(name, n=200000):
    get = os.environ.get
    t = time.perf_counter()
    for _ in range(n):
        get(name)
    return (time.perf_counter() - t) / n * 1e9
loop("HOME", 20000)
print(loop("HOME"), loop("RUNSNAP_BENCH_UNSET"))
"""


def traced_env(base: dict[str, str], folder: str, lib: str | None = None) -> dict[str, str]:
    """The environment runsnap launches a traced child with (see runsnap.tracing.Trace)."""
    env = dict(base)
    pp = env.get("PYTHONPATH")
    env.update(RUNSNAP_TRACE_DIR=folder, RUNSNAP_TRACE_PYTHONPATH="" if pp is None else "=" + pp,
               PYTHONPATH=HOOK_DIR + (":" + pp if pp else ""))
    if lib:
        pre = env.get("LD_PRELOAD")
        env.update(RUNSNAP_TRACE_LIB=lib, RUNSNAP_TRACE_LD_PRELOAD="" if pre is None else "=" + pre,
                   LD_PRELOAD=lib + (" " + pre if pre else ""))
    return env


CPU: dict[str, list[float]] = {}


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed(argv: Sequence[str], env: dict[str, str] | None = None,
          label: str | None = None) -> tuple[float, str]:
    """Wall seconds and stdout of one run (its CPU seconds go to ``CPU[label]``)."""
    c = _cpu()
    t = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - t
    if label is not None:
        CPU.setdefault(label, []).append(_cpu() - c)
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed: {done.stderr[-2000:]}")
    return took, done.stdout


def interleave(cases: dict[str, tuple[Sequence[str], dict[str, str] | None]], rounds: int,
               fresh: dict[str, str] | None = None) -> dict[str, list[float]]:
    """Seconds per case, rounds interleaved in rotating order (``fresh``: a folder to empty
    before each run of that case)."""
    out: dict[str, list[float]] = {k: [] for k in cases}
    names = list(cases)
    for r in range(rounds + 1):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            if fresh and name in fresh:
                shutil.rmtree(fresh[name], ignore_errors=True)
            argv, env = cases[name]
            took, _ = timed(argv, env, name if r else None)
            if r:  # round 0 warms the caches
                out[name].append(took)
    return out


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--venv", required=True)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--out")
    args = ap.parse_args()
    venv = Path(args.venv).resolve()
    py = str(venv / "bin" / "python")
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), "LANG": "C.UTF-8"}
    folder = tempfile.mkdtemp(prefix="runsnap-bench-trace-")
    lib, why = interposer()
    lines = [f"# tracing and who-reads costs ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})",
             "", f"- machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} before; "
             f"Python {sys.version.split()[0]}; venv {venv}",
             f"- command: `python benchmarks/tracing.py --venv VENV --rounds {args.rounds}` "
             "(commands interleaved; medians of the same run)",
             f"- getenv interposer: {lib or 'not built: ' + why}", ""]

    def report(title: str, res: dict[str, list[float]], subject: str, unit: float = 1000,
               suffix: str = "ms") -> None:
        lines.extend([f"## {title}", "", f"| command | median {suffix} | CPU {suffix} | n |",
                      "| --- | ---: | ---: | ---: |"])
        for name, xs in res.items():
            lines.append(f"| {name} | {med(xs) * unit:.1f} | {med(CPU[name]) * unit:.1f} | "
                         f"{len(xs)} |")
        lines.append("")

    # 1. start-up
    start = interleave({
        "python -c pass": ([py, "-c", "pass"], base),
        "python -c pass, traced": ([py, "-c", "pass"], traced_env(base, folder)),
        **({"python -c pass, traced + getenv interposer":
            ([py, "-c", "pass"], traced_env(base, folder, lib))} if lib else {}),
    }, args.rounds * 3)
    report("1. start-up of a Python child", start, "python -c pass")
    added = (med(start["python -c pass, traced"]) - med(start["python -c pass"])) * 1000
    cpu = (med(CPU["python -c pass, traced"]) - med(CPU["python -c pass"])) * 1000
    lines.append(f"- added by the hook: {added:.1f} ms wall, {cpu:.1f} ms CPU (target <= 10 ms)"
                 f" - {'met' if max(added, cpu) <= 10 else 'NOT met'}")
    if lib:
        label = "python -c pass, traced + getenv interposer"
        added2 = (med(start[label]) - med(start["python -c pass"])) * 1000
        cpu2 = (med(CPU[label]) - med(CPU["python -c pass"])) * 1000
        lines.append(f"- added by the hook and the interposer: {added2:.1f} ms wall, {cpu2:.1f} "
                     f"ms CPU (target <= 10 ms) - {'met' if max(added2, cpu2) <= 10 else 'NOT met'}")
    lines.append("")

    # 2. hot loop, measured inside the child
    plain: list[list[float]] = []
    hooked: list[list[float]] = []
    for _ in range(args.rounds):
        plain.append([float(x) for x in timed([py, "-c", HOT], base)[1].split()])
        hooked.append([float(x) for x in timed([py, "-c", HOT], traced_env(base, folder))[1].split()])
    lines.extend(["## 2. hot loop of os.environ.get (ns per call, inside the child)", "",
                  "| variable | untraced ns | traced ns | traced / untraced |",
                  "| --- | ---: | ---: | ---: |"])
    worst = 0.0
    for i, label in enumerate(("set (HOME)", "unset")):
        a = med([p[i] for p in plain])
        b = med([h[i] for h in hooked])
        worst = max(worst, b / a)
        lines.append(f"| {label} | {a:.0f} | {b:.0f} | {b / a:.2f}x |")
    lines.extend(["", f"- worst ratio: {worst:.2f}x (target <= 3x) - "
                      f"{'met' if worst <= 3 else 'NOT met'}", ""])

    # 3. heavy imports
    for module in ("transformers", "torch"):  # CPU time: less disturbed by other work
        check = subprocess.run([py, "-c", f"import {module}"], capture_output=True, check=False)
        if check.returncode != 0:
            lines.extend([f"## 3. import {module}: not installed in the venv, skipped", ""])
            continue
        res = interleave({
            f"python -c 'import {module}'": ([py, "-c", f"import {module}"], base),
            f"python -c 'import {module}', traced": ([py, "-c", f"import {module}"],
                                                       traced_env(base, folder)),
        }, args.rounds)
        report(f"3. python -c 'import {module}'", res, "")
        ratio = med(res[f"python -c 'import {module}', traced"]) / med(
            res[f"python -c 'import {module}'"])
        cpu_ratio = med(CPU[f"python -c 'import {module}', traced"]) / med(
            CPU[f"python -c 'import {module}'"])
        lines.extend([f"- traced / untraced: {ratio:.3f}x wall, {cpu_ratio:.3f}x CPU (target <= "
                      f"1.1x) - {'met' if max(ratio, cpu_ratio) <= 1.1 else 'NOT met'}", ""])

    # 4. who-reads against grep over the same files
    from runsnap.whoreads.index import record_files
    from runsnap.whoreads.search import distributions

    files: list[str] = []
    for dist in distributions(py):
        files += [os.path.join(dist["location"], rel)
                  for rel in record_files(dist["location"], dist.get("metadata_dir", ""))]
    files = [f for f in files if os.path.isfile(f)]
    listing = os.path.join(folder, "files.txt")
    Path(listing).write_text("\0".join(files))
    from benchmarks.run import install_runsnap  # a regular install: no editable finder

    _rpy, runsnap = install_runsnap(Path(folder))
    name = "TORCH_SHOW_CPP_STACKTRACES"
    cache_cold = os.path.join(folder, "cache-cold")
    cache_warm = os.path.join(folder, "cache-warm")
    env_cold = {**os.environ, "RUNSNAP_CACHE_DIR": cache_cold}
    env_warm = {**os.environ, "RUNSNAP_CACHE_DIR": cache_warm}
    grep = ["sh", "-c", f"xargs -0 grep -n -F {name} < {listing}; true"]
    res = interleave({
        f"runsnap who-reads {name} (cold: empty cache)": ([*runsnap, "who-reads", name, "--python",
                                                           py], env_cold),
        f"runsnap who-reads {name} (warm)": ([*runsnap, "who-reads", name, "--python", py],
                                             env_warm),
        "runsnap who-reads NCCL_DEBUG (warm index, a name not searched before)": (
            ["sh", "-c", f"rm -rf {cache_warm}-new && cp -r {cache_warm} {cache_warm}-new && "
             f"RUNSNAP_CACHE_DIR={cache_warm}-new {' '.join(runsnap)} who-reads NCCL_DEBUG "
             f"--python {py} > /dev/null"], {**env_warm}),
        f"grep -n -F {name} over the same {len(files)} files": (grep, None),
    }, max(3, args.rounds // 2), fresh={
        f"runsnap who-reads {name} (cold: empty cache)": cache_cold})
    report("4. who-reads against grep over the same files", res, "")
    g = med(res[f"grep -n -F {name} over the same {len(files)} files"])
    cold = med(res[f"runsnap who-reads {name} (cold: empty cache)"]) / g
    warm = med(res[f"runsnap who-reads {name} (warm)"]) / g
    new = med(res["runsnap who-reads NCCL_DEBUG (warm index, a name not searched before)"]) / g
    lines.extend([f"- cold / grep: {cold:.2f}x (target <= 1x) - {'met' if cold <= 1 else 'NOT met'}",
                  f"- warm / grep: {warm:.3f}x (target <= 0.05x) - "
                  f"{'met' if warm <= 0.05 else 'NOT met'}",
                  f"- warm index, new name / grep: {new:.3f}x (includes copying the cache, "
                  "for scale)", ""])
    shutil.rmtree(folder, ignore_errors=True)
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
