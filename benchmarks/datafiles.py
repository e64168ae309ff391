"""The cost of recording the data files a traced run opens (the wrappers of ``open`` and
``os.open`` in ``runsnap/probe/hook/_runsnap_trace_files.py``), as same-run ratios against
``main``'s hook.

    python benchmarks/datafiles.py --venv VENV [--rounds N] [--base main] [--out FILE]

The hook of ``--base`` (a git revision, ``main`` by default) is taken from this repository with
``git archive`` into a temporary folder; this tree's hook is used in place. Every command runs
untraced, traced with the base's hook and traced with this tree's, interleaved round after
round, and is compared by medians of the same run:

1. ``python -c pass``;
2. ``python -c "import torch"`` (thousands of ``.pyc`` opens, each an audit event);
3. inside the child: ns per ``open(...).close()`` of one data file (a new path is recorded once,
   a repeat is one set look-up) and per ``os.environ.get``;
4. why the openers are wrapped rather than watched by an audit hook: ns per ``id()`` in an
   untraced child, without and with a ``sys.addaudithook`` hook that returns at once for every
   event but ``open`` (``id()`` and ``sys._getframe()`` raise audit events).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from tracing import CPU, interleave, med, timed  # noqa: E402

HERE_HOOK = str(ROOT / "runsnap" / "probe" / "hook")

LOOP = """
import os, sys, time
path = sys.argv[1]
def opens(n=20000):
    t = time.perf_counter()
    for _ in range(n):
        open(path).close()
    return (time.perf_counter() - t) / n * 1e9
def gets(n=200000):
    get = os.environ.get
    t = time.perf_counter()
    for _ in range(n):
        get("HOME")
    return (time.perf_counter() - t) / n * 1e9
opens(2000); gets(20000)
print(opens(), gets())
"""

AUDIT = """
import sys, time
def ids(n=500000):
    x = object()
    t = time.perf_counter()
    for _ in range(n):
        id(x)
    a = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(n):
        pass
    return (a - (time.perf_counter() - t)) / n * 1e9
before = ids()
def hook(event, args):
    if event != "open":
        return
sys.addaudithook(hook)
print(before, ids())
"""


def traced(base: dict[str, str], folder: str, hook: str) -> dict[str, str]:
    """The environment runsnap launches a traced child with, with ``hook`` as its hook folder."""
    env = dict(base)
    env.update(RUNSNAP_TRACE_DIR=folder, RUNSNAP_TRACE_PYTHONPATH="", PYTHONPATH=hook)
    return env


def base_hook(rev: str, into: str) -> str:
    """``rev``'s hook folder, written under ``into``."""
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "runsnap/probe/hook"],
                         capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=tar, check=True)
    return os.path.join(into, "runsnap", "probe", "hook")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--venv", required=True)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--base", default="main")
    ap.add_argument("--out")
    args = ap.parse_args()
    py = str(Path(args.venv) / "bin" / "python")
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), "LANG": "C.UTF-8"}
    work = tempfile.mkdtemp(prefix="runsnap-bench-files-")
    old = base_hook(args.base, work)
    data = os.path.join(work, "cfg.yaml")
    Path(data).write_text("lr: 0.1\n")
    envs = {"untraced": base, f"traced, {args.base}'s hook": traced(base, work + "/t1", old),
            "traced, this tree's hook": traced(base, work + "/t2", HERE_HOOK)}
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [f"# data files opened: the cost of recording them ({when})",
             "", f"- machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} before; "
             f"venv {args.venv}", f"- command: `python benchmarks/datafiles.py --venv VENV "
             f"--rounds {args.rounds} --base {args.base}` (interleaved; medians of one run)", ""]
    for title, argv in (("python -c pass", [py, "-c", "pass"]),
                        ("python -c 'import torch'", [py, "-c", "import torch"])):
        res = interleave({f"{title}, {k}": (argv, e) for k, e in envs.items()},
                         args.rounds * (3 if "pass" in title else 1))
        lines += [f"## {title}", "", "| command | median ms | CPU ms | vs base hook |",
                  "| --- | ---: | ---: | ---: |"]
        ref = f"{title}, traced, {args.base}'s hook"
        for name, xs in res.items():
            lines.append(f"| {name} | {med(xs) * 1000:.1f} | {med(CPU[name]) * 1000:.1f} | "
                         f"{med(xs) / med(res[ref]):.3f}x |")
        lines.append("")
    per: dict[str, list[list[float]]] = {k: [] for k in envs}
    for _ in range(args.rounds):
        for k, e in envs.items():
            per[k].append([float(x) for x in timed([py, "-c", LOOP, data], e)[1].split()])
    lines += ["## inside the child (ns per call)", "", "| hook | open().close() | os.environ.get |",
              "| --- | ---: | ---: |"]
    for k, rows in per.items():
        lines.append(f"| {k} | {med([r[0] for r in rows]):.0f} | {med([r[1] for r in rows]):.0f} |")
    ids = [[float(x) for x in timed([py, "-c", AUDIT], base)[1].split()] for _ in range(args.rounds)]
    lines += ["", "## id() with an audit hook (ns per call, untraced child)", "",
              f"- without: {med([r[0] for r in ids]):.0f} ns; with a hook that returns at once "
              f"for all but open: {med([r[1] for r in ids]):.0f} ns"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
