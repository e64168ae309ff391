"""The tracing hook's start-up cost, this tree's hook against another one, in the same run.

    python benchmarks/hook_before_after.py --before DIR [--rounds N]

DIR holds the other hook's files (``git show main:runsnap/probe/hook/FILE`` for each). Three
programs, each untraced, traced by DIR's hook and traced by this tree's
(:data:`runsnap.tracing.HOOK_DIR`), interleaved round after round with
:func:`benchmarks.tracing.interleave`, compared by medians: ``python -c pass`` (no argparse:
the hook's fixed cost), ``import argparse`` (the patch of the class), a parse of 30 options
(one ``("A", ...)`` record written), 200,000 reads of one variable through one helper (the
read hook's fast path) and 60 submodules of a package of the program's own imported (each
noted in ``[runtime.submodules]``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import tracing  # noqa: E402

PARSE = ("import argparse\np = argparse.ArgumentParser()\n"
         + "".join(f"p.add_argument('--opt-{i}', type=int, default={i})\n" for i in range(30))
         + "p.parse_args(['--opt-3', '7'])\n")

LOOP = ("import os\ndef helper():\n    return os.environ.get('HOME')\n"
        "for _ in range(200_000):\n    helper()\n")
#: a package of the program's own (not installed): the hook notes each submodule imported
OWN = ("import importlib, sys\nsys.path.insert(0, {folder!r})\n"
       "for i in range(60):\n    importlib.import_module(f'ownpkg.m{{i}}')\n")

PROGRAMS = {"python -c pass": "pass", "import argparse": "import argparse",
            "argparse, 30 options parsed": PARSE,
            "200,000 reads through one helper": LOOP,
            "own package, 60 submodules imported": OWN}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="the other hook's folder")
    ap.add_argument("--rounds", type=int, default=31)
    args = ap.parse_args()
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), "LANG": "C.UTF-8"}
    folder = tempfile.mkdtemp(prefix="runsnap-bench-hook-")
    now = tracing.HOOK_DIR

    def env(hook: str) -> dict[str, str]:
        tracing.HOOK_DIR = hook  # traced_env reads the module's HOOK_DIR
        try:
            return tracing.traced_env(base, folder)
        finally:
            tracing.HOOK_DIR = now

    package = Path(folder) / "own" / "ownpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for i in range(60):
        (package / f"m{i}.py").write_text(f"VALUE = {i}\n")
    cases: dict[str, tuple[list[str], dict[str, str] | None]] = {}
    for name, code in PROGRAMS.items():
        argv = [sys.executable, "-c", code.format(folder=str(package.parent))
                if "{folder" in code else code]
        cases[name] = (argv, base)
        cases[f"{name}, traced (before)"] = (argv, env(os.path.abspath(args.before)))
        cases[f"{name}, traced (this tree)"] = (argv, env(now))
    res = tracing.interleave(cases, args.rounds)
    print(f"- machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} after; "
          f"Python {sys.version.split()[0]}\n")
    print("| command | median ms | CPU ms | n |\n| --- | ---: | ---: | ---: |")
    for name, xs in res.items():
        print(f"| {name} | {tracing.med(xs) * 1000:.2f} | "
              f"{tracing.med(tracing.CPU[name]) * 1000:.2f} | {len(xs)} |")
    print()
    for name in PROGRAMS:
        wall = [tracing.med(res[k]) for k in (name, f"{name}, traced (before)",
                                              f"{name}, traced (this tree)")]
        cpu = [tracing.med(tracing.CPU[k]) for k in (name, f"{name}, traced (before)",
                                                     f"{name}, traced (this tree)")]
        print(f"- {name}: this tree / before {wall[2] / wall[1]:.3f}x wall, "
              f"{cpu[2] / cpu[1]:.3f}x CPU; added over untraced (wall / CPU ms): before "
              f"{(wall[1] - wall[0]) * 1000:.2f} / {(cpu[1] - cpu[0]) * 1000:.2f}, this tree "
              f"{(wall[2] - wall[0]) * 1000:.2f} / {(cpu[2] - cpu[0]) * 1000:.2f}")


if __name__ == "__main__":
    main()
