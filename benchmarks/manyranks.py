"""Many ranks writing at once: what one rank's capture does to a shared folder, under a real
``srun -n 64`` on the local Slurm cluster (issue 26, item 2).

    python benchmarks/manyranks.py [--ranks 64] [--out FILE]

Brings up a private single-node Slurm cluster with ``.ci/slurm-up.sh`` (its own folder and
ports; skipped cleanly, exit 0 with the reason, when Slurm or strace is not installed or the
cluster does not come up), then runs

    srun -n 64 strace -f -y -o LOG.<rank> runsnap capture -o SHARED/{host}-{rank}.toml -- python -c pass

so every rank's capture (runsnap and its git, probe and child processes) is traced on its own.
Per rank it reports, from the traces: the files created in the shared folder (an ``open`` with
``O_CREAT`` there), the renames into it, the metadata operations on it (``open``, ``stat``
family, ``access``, ``rename``, ``unlink``, ``mkdir``), directory reads of it (``getdents``:
a scan), the bytes written to it, and the same open/stat/rename counts on every path (for
scale). Targets: one file created and renamed (or linked) per rank, no scan of the shared
folder.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_OPS = ("openat", "open", "creat", "stat", "lstat", "fstat", "newfstatat", "statx", "access",
        "faccessat", "faccessat2", "rename", "renameat", "renameat2", "unlink", "unlinkat",
        "mkdir", "mkdirat", "getdents64", "write", "pwrite64", "fsync", "fdatasync", "link",
        "linkat", "readlink", "readlinkat")
_LINE = re.compile(r"^(?:\d+\s+)?(\w+)\((.*)\)\s+=\s+(-?\d+|\?)")
_PATH = re.compile(r'"((?:[^"\\]|\\.)*)"')
_FD = re.compile(r"<([^>]*)>")
_META = {"openat", "open", "creat", "stat", "lstat", "newfstatat", "statx", "access",
         "faccessat", "faccessat2", "rename", "renameat", "renameat2", "unlink", "unlinkat",
         "mkdir", "mkdirat", "link", "linkat", "readlink", "readlinkat"}


def slurm_up(base: str, cpus: int) -> dict[str, str] | str:
    """The environment for Slurm's clients, or why the cluster is not there."""
    for prog in ("srun", "slurmctld", "slurmd", "munged", "strace"):
        if shutil.which(prog) is None:
            return f"{prog} is not installed (.ci/launchers-install.sh installs Slurm)"
    env = {**os.environ, "SLURM_LOCAL_BASE": base, "SLURM_LOCAL_CPUS": str(cpus),
           "SLURM_LOCAL_CTLD_PORT": "6917", "SLURM_LOCAL_SLURMD_PORT": "6918"}
    done = subprocess.run(["bash", str(ROOT / ".ci" / "slurm-up.sh")], env=env,
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0 or "ready" not in done.stdout:
        return f"the local Slurm cluster did not come up: {done.stderr.strip()[-300:]}"
    m = re.search(r"export SLURM_CONF=(\S+)", done.stdout)
    if m is None:
        return "slurm-up.sh printed no SLURM_CONF"
    return {**os.environ, "SLURM_CONF": m.group(1)}


_UNFINISHED = re.compile(r"^(\d+)\s+(.*) <unfinished \.\.\.>$")
_RESUMED = re.compile(r"^(\d+)\s+<\.\.\. \w+ resumed>(.*)$")


def _joined(lines: list[str]) -> list[str]:
    """strace's lines with a call that another thread interrupted (``<unfinished ...>``, then
    ``<... NAME resumed>``) joined back into one: the deferred first save runs on a timer
    thread beside the main one, and its calls were missed when split."""
    out, pending = [], {}
    for line in lines:
        m = _UNFINISHED.match(line)
        if m:
            pending[m.group(1)] = m.group(2)
            continue
        m = _RESUMED.match(line)
        if m and m.group(1) in pending:
            out.append(f"{m.group(1)}  {pending.pop(m.group(1))}{m.group(2)}")
            continue
        out.append(line)
    return out


def parse(log: Path, shared: str) -> Counter[str]:
    """Counts for one rank's trace (every process of it)."""
    c: Counter[str] = Counter()
    inside = shared.rstrip("/") + "/"
    for line in _joined(log.read_text(errors="replace").splitlines()):
        m = _LINE.match(line)
        if m is None:
            continue
        call, args, ret = m.groups()
        paths = _PATH.findall(args)
        fds = _FD.findall(args)
        here = any(p.startswith(inside) or p == shared for p in paths) or any(
            f.startswith(inside) or f == shared for f in fds)
        if call in _META:
            c["metadata ops, all paths"] += 1
            if here:
                c["metadata ops on the shared folder"] += 1
        if call in ("openat", "open", "creat") and here:
            c["opens in the shared folder"] += 1
            if call == "creat" or "O_CREAT" in args:
                c["files created in the shared folder"] += 1
            elif "O_RDWR" in args or "O_WRONLY" in args:
                c["files written in place"] += 1
        if call in ("rename", "renameat", "renameat2", "link", "linkat") and len(paths) >= 2 \
                and paths[-1].startswith(inside):
            c["renames or links into the shared folder"] += 1
        if call == "getdents64" and here:
            c["directory reads of the shared folder (scans)"] += 1
        if call in ("write", "pwrite64") and here and ret not in ("?",) and int(ret) > 0:
            c["bytes written to the shared folder"] += int(ret)
        if call in ("openat", "open"):
            c["opens, all paths"] += 1
        elif call in ("stat", "lstat", "newfstatat", "statx", "access", "faccessat",
                      "faccessat2"):
            c["stats, all paths"] += 1
        elif call in ("rename", "renameat", "renameat2"):
            c["renames, all paths"] += 1
    return c


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--base", default="/tmp/runsnap-bench-slurm")
    ap.add_argument("--runsnap", default=str(Path(sys.executable).parent / "runsnap"))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--keep", action="store_true", help="keep the traces (their folder printed)")
    ap.add_argument("--keep-cluster", action="store_true",
                    help="leave the local Slurm cluster running (default: stopped after)")
    args = ap.parse_args()
    env = slurm_up(args.base, max(args.ranks, 16))
    if isinstance(env, str):
        print(f"skipped: {env}")
        return 0
    try:
        return measure(args, env)
    finally:
        if not args.keep_cluster:
            subprocess.run(["bash", str(ROOT / ".ci" / "slurm-down.sh")],
                           env={**os.environ, "SLURM_LOCAL_BASE": args.base},
                           capture_output=True, timeout=120)


def measure(args: argparse.Namespace, env: dict[str, str]) -> int:
    """The job under strace, and its report."""
    work = Path(tempfile.mkdtemp(prefix="runsnap-manyranks-"))
    shared, logs = work / "shared", work / "traces"
    shared.mkdir()
    logs.mkdir()
    env = {**env, "RUNSNAP_KEY_FILE": str(work / "key"), "RUNSNAP_CACHE_DIR": str(work / "cache")}
    # the key made once, as on a cluster where the user's key exists before the job
    subprocess.run([args.runsnap, "capture", "-o", str(work / "first.toml")], env=env,
                   cwd=work, capture_output=True, check=True)
    inner = (f"exec strace -f -y -qq -s 256 -e trace={','.join(_OPS)} "
             f"-o {logs}/rank-$SLURM_PROCID.txt {args.runsnap} capture "
             f"-o '{shared}/{{host}}-{{rank}}.toml' -- {sys.executable} -c pass")
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    done = subprocess.run(["srun", "-n", str(args.ranks), "--overcommit", "bash", "-c", inner],
                          env=env, cwd=work, capture_output=True, text=True, timeout=1800)
    took = time.monotonic() - t0
    if done.returncode != 0:
        print(f"srun failed ({done.returncode}): {done.stderr[-1000:]}")
        return 1
    per_rank = [parse(p, str(shared)) for p in sorted(logs.glob("rank-*.txt"))]
    files = sorted(p.name for p in shared.iterdir())
    keys = ["files created in the shared folder", "renames or links into the shared folder",
            "opens in the shared folder", "metadata ops on the shared folder",
            "directory reads of the shared folder (scans)", "bytes written to the shared folder",
            "opens, all paths", "stats, all paths", "renames, all paths",
            "metadata ops, all paths", "files written in place"]
    lines = [f"### Many ranks writing at once: `srun -n {args.ranks}` (issue 26, item 2)", "",
             f"- {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
             f"{load:.2f} before, {os.getloadavg()[0]:.2f} after; local single-node Slurm "
             f"(`.ci/slurm-up.sh`), {args.ranks} ranks in {took:.1f} s wall",
             "- each rank: `strace -f -y -o LOG runsnap capture -o SHARED/{host}-{rank}.toml "
             "-- python -c pass` (runsnap, git, the package probe and the child traced)",
             f"- the shared folder holds {len(files)} files after the job "
             f"({', '.join(files[:2])}{', ...' if len(files) > 2 else ''}); "
             f"traces of {len(per_rank)} ranks", "",
             "| per rank | min | median | max |", "| --- | ---: | ---: | ---: |"]
    for k in keys:
        xs = [c.get(k, 0) for c in per_rank]
        lines.append(f"| {k} | {min(xs)} | {statistics.median(xs):g} | {max(xs)} |")
    created = [c.get(keys[0], 0) for c in per_rank]
    moved = [c.get(keys[1], 0) for c in per_rank]
    scans = max(c.get(keys[4], 0) for c in per_rank)
    twice = sum(n > 1 for n in created)
    in_place = sum(c.get("files written in place", 0) > 0 for c in per_rank)
    lines += ["", f"- files created per rank in the shared folder: {statistics.median(created):g} "
              f"(max {max(created)}), renames or links {statistics.median(moved):g} (max "
              f"{max(moved)}): a rank whose command ends within runsnap's FIRST_SAVE_DELAY writes "
              "its snapshot once, with the outcome (a temporary file linked to its claimed "
              f"name); {in_place} of {len(per_rank)} ranks ran longer and wrote their outcome "
              "into the file the pre-launch snapshot made (an open without O_CREAT); "
              f"{twice} created a second file - "
              f"{'met' if max(created) <= 1 and max(moved) <= 1 else 'NOT met'} "
              "(target: one file created and renamed or linked)",
              f"- scans of the shared folder: {scans} (target 0) - "
              f"{'met' if scans == 0 else 'NOT met'}", ""]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    if args.keep:
        print(f"traces kept in {logs}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
