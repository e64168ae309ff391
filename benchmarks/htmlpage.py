"""The N-way HTML page at scale: size, time to render it, and time to first paint in headless
Chromium, for a real-shaped job (benchmarks/realranks.py) of 4,096 and 32,768 ranks.

    python benchmarks/htmlpage.py --ranks 4096 --ranks 32768 [--work DIR] [--keep]

Peers in the same run: the text, Markdown and JSON renderers of the same report (render time,
size), and, for the first paint, the text report laid out in one ``<pre>`` page opened by the same
browser (what a plain page of the same facts costs). Targets (issue 40): at most 5 MB and 2 s to
first paint.
"""

from __future__ import annotations

import argparse
import html
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.browser import Browser  # noqa: E402
from benchmarks.realranks import write_job  # noqa: E402


def _report(folder: Path):  # type: ignore[no-untyped-def]
    import runsnap

    return runsnap.diff(*sorted(str(p) for p in folder.glob("*.toml")))


def _paint(browser: Browser, page: Path, tries: int = 3) -> tuple[float, float]:
    """Median first contentful paint (ms) and load (s) of ``page`` over ``tries`` fresh tabs."""
    paints, loads = [], []
    for _ in range(tries):
        tab = browser.open(page.as_uri())
        paints.append(tab.first_paint_ms())
        loads.append(tab.load_s)
    return statistics.median(paints), statistics.median(loads)


def measure(n: int, work: Path) -> list[str]:
    """The table rows for ``n`` ranks."""
    from runsnap.render import render

    folder = work / f"job-{n}"
    if not folder.exists():
        write_job(folder, n, log=lambda s: print(s, file=sys.stderr))
    t0 = time.perf_counter()
    report = _report(folder)
    diff_s = time.perf_counter() - t0
    rows = []
    out: dict[str, Path] = {}
    for fmt in ("html", "text", "markdown", "json"):
        t0 = time.perf_counter()
        text = render(report, fmt)
        took = time.perf_counter() - t0
        path = work / f"job-{n}.{fmt}"
        path.write_text(text)
        out[fmt] = path
        rows.append(f"| {n:,} | render {fmt} | {took * 1000:,.0f} ms | {len(text.encode()):,} B |")
    plain = work / f"job-{n}-plain.html"
    plain.write_text("<!DOCTYPE html><meta charset=utf-8><pre>"
                     + html.escape(out["text"].read_text()) + "</pre>\n")
    with Browser() as browser:
        for name, page in (("html page", out["html"]), ("peer: text in <pre>", plain)):
            paint, load = _paint(browser, page)
            rows.append(f"| {n:,} | first paint, {name} | {paint:,.0f} ms (load {load:.2f} s) | "
                        f"{page.stat().st_size:,} B |")
    rows.append(f"| {n:,} | the diff itself (peer) | {diff_s:,.1f} s wall | |")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, action="append")
    ap.add_argument("--work", type=Path)
    ap.add_argument("--keep", action="store_true", help="keep the snapshots written")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="runsnap-html-"))
    work.mkdir(parents=True, exist_ok=True)
    print("| ranks | what | time | size |\n|---:|---|---:|---:|")
    try:
        for n in args.ranks or [4096, 32768]:
            for row in measure(n, work):
                print(row, flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
