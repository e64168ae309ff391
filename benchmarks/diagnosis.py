"""How well diff finds the planted cause of each incident of the corpus (benchmarks/incidents.py).

    .venv/bin/python benchmarks/diagnosis.py                 # this checkout's ranker
    .venv/bin/python benchmarks/diagnosis.py --before REV    # also the ranker of commit REV,
                                                             # on the very same snapshots
    .venv/bin/python benchmarks/diagnosis.py --no-trace      # captures without run-time
                                                             # evidence ([outcome] only)

Each incident is launched twice for real under ``runsnap capture`` (the good launch, then the
bad one), then ``runsnap diff --format json GOOD BAD`` ranks the differences. The planted cause
is found at rank N when it is the N-th difference that counts, or the first consequence
grouped under it (a venv switch with the package that matters first under it). For an
incident with nothing planted, success is a diff with nothing that counts. Prints a Markdown
table with top-1 and top-3 accuracy (paste it into benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.incidents import INCIDENTS, Incident, Launch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def capture(launch: Launch, out: Path, options: Sequence[str] = ()) -> None:
    """``runsnap capture -o OUT -- ARGV`` with the launch's environment, as a user runs it."""
    subprocess.run([sys.executable, "-m", "runsnap", "capture", *options, "-o", str(out), "--",
                    *launch.argv], env=launch.env, cwd=launch.cwd, capture_output=True,
                   check=False, timeout=120)


def diff(a: Path, b: Path, src: Path | None = None) -> dict[str, Any]:
    """``runsnap diff --format json A B``, with another checkout's ranker when ``src``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNSNAP_FORMAT")}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    res = subprocess.run([sys.executable, "-m", "runsnap", "diff", "--format", "json", str(a),
                          str(b)], env=env, cwd=a.parent, capture_output=True, text=True,
                         check=False, timeout=120)
    if res.returncode not in (0, 1):
        raise RuntimeError(f"diff failed: {res.stderr.strip()}")
    return json.loads(res.stdout)


def run_incident(incident: Incident, folder: Path, options: Sequence[str] = ()
                 ) -> tuple[Path, Path]:
    """Capture the good launch, apply the change between, capture the bad launch."""
    good, bad = folder / "good.toml", folder / "bad.toml"
    capture(incident.good, good, options)
    if incident.between is not None:
        incident.between()
    capture(incident.bad, bad, options)
    return good, bad


def _matches(d: Mapping[str, Any], cause: Sequence[tuple[str, str]]) -> bool:
    return (d.get("section"), d.get("key")) in cause


def rank_of(report: Mapping[str, Any], cause: Sequence[tuple[str, str]]) -> int | None:
    """Where the planted cause is (1-based), 0 when nothing was planted and nothing counts,
    None when it is not among the differences that count."""
    counted = [d for d in report.get("differences") or () if not d.get("hidden")]
    if not cause:
        return 0 if not counted else None
    for i, d in enumerate(counted, 1):
        related = d.get("related") or []
        if _matches(d, cause) or (related and _matches(related[0], cause)):
            return i
    return None


def evaluate(folder: Path, before: Path | None = None, options: Sequence[str] = ()
             ) -> list[dict[str, Any]]:
    """Every incident, launched in its own folder under ``folder``, ranked now (and before)."""
    rows = []
    for build in INCIDENTS:
        d = folder / build.__name__
        d.mkdir(parents=True, exist_ok=True)
        incident = build(d)
        good, bad = run_incident(incident, d, options)
        now = diff(good, bad)
        row = {"name": incident.name, "what": incident.what.split("\n")[0],
               "rank": rank_of(now, incident.cause), "top": _top(now)}
        if before is not None:
            row["before"] = rank_of(diff(good, bad, before), incident.cause)
        rows.append(row)
    return rows


def _top(report: Mapping[str, Any]) -> str:
    counted = [d for d in report.get("differences") or () if not d.get("hidden")]
    if not counted:
        return "(nothing counts)"
    d = counted[0]
    return f"{d['section']} {d['key']} [{d.get('evidence_kind', 'name')}]"


def _hit(rank: int | None, n: int) -> bool:
    return rank is not None and rank <= n


def render(rows: Sequence[Mapping[str, Any]]) -> str:
    """The Markdown table and the accuracy lines."""
    has_before = any("before" in r for r in rows)
    head = "| incident | planted cause found at | " + ("before | " if has_before else "") \
        + "first difference now |"
    lines = [head, "|---|---:|" + ("---:|" if has_before else "") + "---|"]
    for r in rows:
        cell = "-" if r["rank"] is None else str(r["rank"] or "nothing counts")
        prev = ("-" if r.get("before") is None else str(r["before"] or "nothing counts")) \
            if has_before else None
        lines.append(f"| {r['name']} | {cell} | " + (f"{prev} | " if has_before else "")
                     + f"{r['top']} |")
    n = len(rows)
    for label, key in (("now", "rank"), ("before", "before")):
        if key == "before" and not has_before:
            continue
        top1 = sum(_hit(r.get(key), 1) for r in rows)
        top3 = sum(_hit(r.get(key), 3) for r in rows)
        lines.append("")
        lines.append(f"{label}: top-1 {top1}/{n} ({100 * top1 // n}%), "
                     f"top-3 {top3}/{n} ({100 * top3 // n}%)")
    return "\n".join(lines) + "\n"


def _export(rev: str, into: Path) -> Path:
    """The runsnap package of commit ``rev`` (git archive), for the before figures."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "runsnap"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--before", metavar="REV", help="also rank with the ranker of REV")
    parser.add_argument("--keep", metavar="DIR", help="launch the incidents in DIR (kept)")
    parser.add_argument("--no-trace", action="store_true",
                        help="capture with --no-trace (evidence from the outcome only)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="runsnap-diagnosis-") as tmp:
        folder = Path(args.keep) if args.keep else Path(tmp) / "incidents"
        before = _export(args.before, Path(tmp)) if args.before else None
        rows = evaluate(folder, before, ("--no-trace",) if args.no_trace else ())
    sys.stdout.write(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
