"""Growth benchmarks (issue 24): does a cost stay linear in its input, against a peer measured
in the same run?

    .venv/bin/python benchmarks/growth.py [--quick] [--repeat N] [--out FILE]
        [--baseline OTHER_CHECKOUT] [--only relay|loop|diff|ls|hidden|line]

* **relay**: N MB of 71-byte lines through ``runsnap capture -- cat FILE | cat >/dev/null``
  against ``cat FILE | cat | cat >/dev/null`` (a ``cat`` in runsnap's place), and runsnap's own
  fixed cost (``capture -- true``) measured beside them, wall and CPU; peak RSS of runsnap.
  ``--baseline`` relays with another checkout's code as well (``python -m runsnap`` with that
  tree first on ``PYTHONPATH``), in the same rounds: before and after from one run.
* **loop**: the relay loop alone (benchmarks/relayloop.py, no start-up): CPU of the middle
  process of ``cat FILE | MIDDLE | cat >/dev/null``, runsnap's relay against ``cat``, for
  lines of 20, 71, 200 and 1,000 bytes (the largest relay size, in MB, of each).
* **diff variables**: ``runsnap diff`` of a normal snapshot against one with N variables
  (wall and CPU time, peak RSS), cache warm (a second run).
* **ls label**: ``runsnap ls`` of a folder holding a snapshot whose label has N characters
  (time, peak RSS, bytes printed).
* **hidden** (issue 37): ``runsnap diff`` (text) against ``--format json`` of two traced
  snapshots with N differing variables no process read, up to 100,000 (text <= 2x JSON).
* **line** (issue 37): ``report``, ``scrub``, ``show`` and ``diff`` of a snapshot holding one
  N MB output line: peak RSS against the snapshot's size and against a tomllib parse of the
  same file, and CPU time per MB (linear: the same at every size).

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


def _peak_kib(argv: list[str] | str, cwd: Path, shell: bool = False,
              env: dict[str, str] | None = None) -> int:
    out = subprocess.run(["/usr/bin/time", "-f", "%M", *(["sh", "-c", argv] if shell else argv)],
                         cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    try:
        return int(out.stderr.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return -1


def _median(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def relay(work: Path, sizes: list[int], repeat: int, baseline: Path | None = None) -> list[str]:
    """The relay rows: per size, ``cat`` in runsnap's place, this tree's runsnap and (with
    ``baseline``) another tree's, measured round by round in turn; each runsnap's fixed cost
    (``capture -- true``) in the same rounds. CPU is user + system of the whole pipeline."""
    line = b"x" * 70 + b"\n"
    # both trees started the same way: this interpreter and its packages, the tree's code first
    trees = [(name, [sys.executable, "-m", "runsnap"], {**os.environ, "PYTHONPATH": str(tree)})
             for name, tree in (("this tree", HERE.parent),
                                (f"baseline ({baseline.name})" if baseline else "", baseline))
             if tree is not None]
    rows = ["| MB | runsnap | cat in the middle: wall s (CPU s) | runsnap: wall s (CPU s) | "
            "fixed cost: wall s (CPU s) | relay alone: wall s (CPU s) | ratio cat / relay: "
            "wall (CPU) | runsnap peak RSS MiB |",
            "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for mb in sizes:
        data = work / f"lines-{mb}.txt"
        if not data.exists() or data.stat().st_size < mb * 10**6 - 71:
            with open(data, "wb") as fh:
                block = line * (10**6 // 71)
                for _ in range(mb):
                    fh.write(block)
        cat_cmd = f"cat {data} | cat | cat >/dev/null"
        cats: list[tuple[float, float]] = []
        runs: dict[str, list[tuple[float, float]]] = {}
        fixed: dict[str, list[tuple[float, float]]] = {}
        for _ in range(repeat):  # interleaved: the peer, then each tree, round by round
            cats.append(_timed(cat_cmd, work, shell=True)[:2])
            for name, argv, env in trees:
                rs = " ".join(argv)
                runs.setdefault(name, []).append(_timed(
                    f"{rs} capture -o r.toml -- cat {data} | cat >/dev/null", work, env,
                    shell=True)[:2])
                fixed.setdefault(name, []).append(_timed(
                    f"{rs} capture -o t.toml -- true", work, env, shell=True)[:2])
        cw, cc = _median(cats)
        for name, argv, env in trees:
            rw, rc = _median(runs[name])
            fw, fc = _median(fixed[name])
            nw, nc = max(rw - fw, 1e-3), max(rc - fc, 1e-3)
            peak = _peak_kib(f"{' '.join(argv)} capture -o r.toml -- cat {data} >/dev/null",
                             work, shell=True, env=env)
            rows.append(f"| {mb} | {name} | {cw:.2f} ({cc:.2f}) | {rw:.2f} ({rc:.2f}) | "
                        f"{fw:.2f} ({fc:.2f}) | {nw:.2f} ({nc:.2f}) | "
                        f"{cw / nw:.2f}x ({cc / nc:.2f}x) | {peak / 1024:.1f} |")
    rows += ["", f"Medians of {repeat} interleaved rounds; CPU of the cat pipeline is its three "
             "cats', runsnap's is runsnap's and its two cats'; relay alone = runsnap minus its "
             "fixed cost."]
    return rows


def relay_loop(work: Path, widths: list[int], mb: int, repeat: int,
               baseline: Path | None = None) -> list[str]:
    """The relay loop alone (benchmarks/relayloop.py): CPU of the middle of ``cat FILE |
    MIDDLE | cat``, MIDDLE runsnap's relay (this tree's, the baseline's) or ``cat``, for
    ``mb`` MB of lines of each width, round by round in turn."""
    loop = str(HERE / "relayloop.py")
    trees = [("this tree", HERE.parent), *([(f"baseline ({baseline.name})", baseline)]
                                           if baseline else [])]
    rows = ["| line bytes | cat in the middle: CPU s (least) | " +
            " | ".join(f"{name}: CPU s (least; wall s) | cat / {name}: CPU (least)"
                       for name, _t in trees) + " | ns a byte, this tree |",
            "| ---: | ---: | " + " | ".join("---: | ---:" for _t in trees) + " | ---: |"]
    for width in widths:
        data = work / f"lines-w{width}-{mb}.txt"
        with open(data, "wb") as fh:
            block = (b"x" * (width - 1) + b"\n") * (10**6 // width)
            for _ in range(mb):
                fh.write(block)
        size = data.stat().st_size
        cats: list[float] = []
        runs: dict[str, list[tuple[float, float]]] = {}
        for _ in range(repeat):
            out = subprocess.run([sys.executable, loop, "--cat", str(data)], check=True,
                                 capture_output=True, text=True).stdout.split()
            cats.append(float(out[0]))
            for name, tree in trees:
                out = subprocess.run([sys.executable, loop, str(tree), str(data)], check=True,
                                     capture_output=True, text=True).stdout.split()
                assert int(out[2]) == size // width, out  # every line counted
                runs.setdefault(name, []).append((float(out[0]), float(out[1])))
        cat, cat_least = statistics.median(cats), min(cats)
        cells = []
        for name, _tree in trees:
            cpu, wall = _median(runs[name])
            least = min(c for c, _w in runs[name])
            cells.append(f"{cpu:.3f} ({least:.3f}; {wall:.2f}) | "
                         f"{cat / cpu:.2f}x ({cat_least / least:.2f}x)")
        mine = _median(runs["this tree"])[0]
        rows.append(f"| {width} | {cat:.3f} ({cat_least:.3f}) | " + " | ".join(cells) +
                    f" | {mine / size * 1e9:.2f} |")
    rows += ["", f"{mb} MB a line length; medians of {repeat} interleaved rounds, and in "
             "brackets the least of them (on a busy machine CPU time grows with the contention "
             "for the cores' caches: the least is the nearest to a quiet machine's); CPU of the "
             "middle process alone (user + system); the relay's wall time is its loop's."]
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


def _traced_base(work: Path) -> str:
    """A traced snapshot's text (an outcome and run-time reads: differences of variables no
    process read are then "unread", and hidden)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work),
           "RUNSNAP_KEY_FILE": str(work / "key"), "RUNSNAP_CACHE_DIR": str(work / "cache")}
    subprocess.run([RUNSNAP, "capture", "-o", "traced.toml", "--", sys.executable, "-c", "pass"],
                   cwd=work, env=env, check=True, stderr=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL)
    return (work / "traced.toml").read_text()


def diff_hidden(work: Path, counts: list[int], repeat: int) -> list[str]:
    """Issue 37: ``runsnap diff A B`` (text) against ``--format json`` of the same pair, two
    traced snapshots whose N variables differ and were read by no process (hidden). The text
    must stay within 2x the JSON: both walk the same differences once."""
    env = {**os.environ, "RUNSNAP_KEY_FILE": str(work / "key"),
           "RUNSNAP_CACHE_DIR": str(work / "cache")}
    base = _traced_base(work)
    rows = ["| hidden differences | text: wall s (CPU s) | json: wall s (CPU s) | "
            "CPU text / json | text CPU s per 1,000 | peak RSS text MiB |",
            "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for n in counts:
        for tag in "ab":
            extra = "".join(f'GROWTH_VAR_{i:06d} = "{tag}{i}"\n' for i in range(n))
            (work / f"hidden-{tag}{n}.toml").write_text(
                base.replace("[env.vars]\n", "[env.vars]\n" + extra, 1))
        text = [RUNSNAP, "diff", f"hidden-a{n}.toml", f"hidden-b{n}.toml"]
        js = [*text[:2], "--format", "json", *text[2:]]
        _timed(text, work, env)  # warm the caches
        runs: dict[str, list[tuple[float, float]]] = {"text": [], "json": []}
        for _ in range(repeat):  # interleaved: the same load for both
            runs["text"].append(_timed(text, work, env)[:2])
            runs["json"].append(_timed(js, work, env)[:2])
        (tw, tc), (jw, jc) = _median(runs["text"]), _median(runs["json"])
        rows.append(f"| {n:,} | {tw:.2f} ({tc:.2f}) | {jw:.2f} ({jc:.2f}) | {tc / jc:.2f}x | "
                    f"{tc / n * 1000:.3f} | {_peak_kib(text, work) / 1024:.1f} |")
    return rows


def long_line(work: Path, sizes_mb: list[int], repeat: int) -> list[str]:
    """Issue 37: ``report``, ``scrub``, ``show`` and ``diff`` (against the same snapshot
    without the line) of a snapshot whose output tail holds one line of N MB (words of random
    letters and digits, what a token search looks at): peak RSS against the snapshot's size
    and against ``python -c`` parsing the same file with tomllib, and CPU time per MB."""
    import random
    import string

    base = _traced_base(work)
    rng = random.Random(37)
    alpha = string.ascii_letters + string.digits
    env = {**os.environ, "RUNSNAP_KEY_FILE": str(work / "key"),
           "RUNSNAP_CACHE_DIR": str(work / "cache")}
    rows = ["| line MB | snapshot MB | command | wall s (CPU s) | CPU s per MB | peak RSS MiB | "
            "RSS / snapshot size | RSS / tomllib's |",
            "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    for mb in sizes_mb:
        words = " ".join("".join(rng.choices(alpha, k=40)) for _ in range(mb * 1_000_000 // 41))
        at = base.index("tail = [", base.index("[outcome.stdout]"))
        end = base.index("]\n", at)
        snap = work / f"line-{mb}.toml"
        snap.write_text(base[:at] + f'tail = [\n    "{words}",\n' + base[end:])
        del words
        size = snap.stat().st_size
        parse = [sys.executable, "-c", "import sys, tomllib; tomllib.load(open(sys.argv[1], 'rb'))",
                 snap.name]

        def scrub_copy(snap: Path = snap) -> list[str]:
            shutil.copy(snap, work / "scrubbed.toml")
            return [RUNSNAP, "scrub", "scrubbed.toml"]

        name = snap.name
        commands = {"python -c tomllib.load": lambda parse=parse: parse,
                    "report": lambda name=name: [RUNSNAP, "report", name, "-o", os.devnull],
                    "scrub": scrub_copy,
                    "show": lambda name=name: [RUNSNAP, "show", name],
                    "diff": lambda name=name: [RUNSNAP, "diff", "traced.toml", name]}
        measured: dict[str, tuple[float, float, int]] = {}
        for name, argv in commands.items():
            runs = [_timed(argv(), work, env)[:2] for _ in range(repeat)]
            wall, cpu = _median(runs)
            measured[name] = (wall, cpu, _peak_kib(argv(), work, env=env))
        floor = measured["python -c tomllib.load"][2]
        for name, (wall, cpu, peak) in measured.items():
            rows.append(f"| {mb} | {size / 1e6:.1f} | {name} | {wall:.2f} ({cpu:.2f}) | "
                        f"{cpu / mb:.2f} | {peak / 1024:.1f} | {peak * 1024 / size:.1f}x | "
                        f"{peak / floor:.2f}x |")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--baseline", type=Path, default=None, metavar="TREE",
                    help="another checkout of runsnap, relayed beside this one (before/after)")
    ap.add_argument("--sizes", type=int, nargs="+", default=None, metavar="MB",
                    help="relay sizes in MB (default 100 500; --quick 50)")
    ap.add_argument("--only", action="append",
                    choices=("relay", "loop", "diff", "ls", "hidden", "line"),
                    help="measure only this part (repeatable)")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="runsnap-growth-"))
    try:
        sizes = args.sizes or ([100, 500] if not args.quick else [50])
        counts = [1000, 5000, 20000] if not args.quick else [1000, 4000]
        lengths = [1_000, 1_000_000, 50_000_000] if not args.quick else [1_000, 5_000_000]
        hidden = [2_000, 20_000, 100_000] if not args.quick else [2_000, 8_000]
        line_mb = [1, 10, 50] if not args.quick else [1, 3]
        load = os.getloadavg()[0]
        out = ["## Growth (issue 24): relay, variables in diff, label length", "",
               f"- load average before: {load:.2f} (2 CPUs shared with other work)",
               f"- command: `python benchmarks/growth.py --repeat {args.repeat}"
               f"{' --quick' if args.quick else ''}"
               f"{' --baseline ' + str(args.baseline) if args.baseline else ''}"
               f"{''.join(' --only ' + o for o in args.only or ())}`", ""]
        parts = (("relay", "### Relay: 71-byte lines, runsnap in a pipeline against `cat` in "
                  "its place", lambda: relay(work, sizes, args.repeat, args.baseline)),
                 ("loop", "### The relay loop alone against a `cat` in its place, by line "
                  "length", lambda: relay_loop(work, [20, 71, 200, 1000], max(sizes),
                                               args.repeat, args.baseline)),
                 ("diff", "### diff: a normal snapshot against one with N variables (who-reads "
                  "cache warm)", lambda: diff_vars(work, counts, args.repeat)),
                 ("ls", "### ls: one snapshot with an N-character label",
                  lambda: ls_label(work, lengths, args.repeat)),
                 ("hidden", "### diff: text against JSON, N hidden (unread) differences",
                  lambda: diff_hidden(work, hidden, args.repeat)),
                 ("line", "### report, scrub, show and diff: one output line of N MB",
                  lambda: long_line(work, line_mb, args.repeat)))
        print("\n".join(out), flush=True)
        for key, title, part in parts:  # each table as soon as it is measured
            if args.only and key not in args.only:
                continue
            started, load = time.monotonic(), os.getloadavg()
            rows = part()
            table = [title, "", *rows, "",
                     f"({time.monotonic() - started:.0f} s; load average 1/5/15 min before: "
                     f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}, after: "
                     f"{os.getloadavg()[0]:.2f})", ""]
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
