"""``runsnap why`` over the diagnosis corpus (benchmarks/corpus.py): proven or not, launches,
seconds, per incident.

    .venv/bin/python benchmarks/why_corpus.py --half fresh --jsonl rows.jsonl
    .venv/bin/python benchmarks/why_corpus.py --only env-typo --keep DIR

Each incident is launched for real as benchmarks/diagnosis.py launches it (the good launch,
the change between, the bad one, each under ``runsnap capture``, traced), both snapshots in
the incident's own ``.runsnap/``. Then, as a user whose launch just failed: ``runsnap why
--prove --yes --format json`` (BAD the newest, GOOD found in the folder); when no earlier run
of the same launch ended well (both runs fail, or the launch itself changed), ``--against``
names GOOD's snapshot. Reported per incident: the status (``proven``: the evidence named it and
two launches proved it; ``found``: bisect found it), whether the cause is the planted one,
the launches and the seconds ``why`` took, and what it could not apply.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.corpus import CORPUS, HALVES, Entry  # noqa: E402
from benchmarks.diagnosis import capture, is_job, matches  # noqa: E402
from benchmarks.thirdparty import Unavailable  # noqa: E402


def _why(store: Path, cwd: Path, runsnap: str, *extra: str) -> tuple[int, dict[str, Any], str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    proc = subprocess.run([runsnap, "-m", "runsnap", "why", "--prove", "--yes", "--format",
                           "json", "--dir", str(store), *extra], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=1800,
                          stdin=subprocess.DEVNULL)
    try:
        return proc.returncode, json.loads(proc.stdout), proc.stderr
    except ValueError:
        return proc.returncode, {}, proc.stderr


def _planted(cause: Sequence[Mapping[str, Any]], planted: Sequence[tuple[str, str]]) -> bool:
    """Whether the cause ``why`` ended with is the planted one (a list entry of a planted
    variable counts as that variable; a model table's nested field as the table, as
    :func:`benchmarks.diagnosis.matches` scores it)."""
    if not planted:
        return not cause
    keys = {(str(c.get("section")), str(c.get("key"))) for c in cause}
    names = {(s, k.split(" entry ")[0]) for s, k in keys}
    return bool(keys & set(planted) or names & set(planted)) or any(
        matches({"section": s, "key": k}, planted) for s, k in keys)


def run_one(entry: Entry, folder: Path, runsnap: str) -> dict[str, Any]:
    row: dict[str, Any] = {"name": entry.name, "half": entry.half, "source": entry.source}
    d = folder / entry.build.__name__
    d.mkdir(parents=True, exist_ok=True)
    try:
        incident = entry.build(d)
    except Unavailable as exc:
        return {**row, "unavailable": str(exc)}
    store = d / ".runsnap"
    store.mkdir(exist_ok=True)
    job = is_job(incident.good)  # its launcher captures each rank into a folder of its own
    good, bad = (store / "good", store / "bad") if job else (store / "good.toml",
                                                              store / "bad.toml")
    capture(incident.good, good, (), runsnap)
    if incident.between is not None:
        incident.between()
    time.sleep(0.01)
    capture(incident.bad, bad, (), runsnap)
    started = time.monotonic()
    if job:  # a job's ranks are no launch of their own: the two jobs are named, folder to folder
        code, out, err = _why(store, incident.bad.cwd, runsnap, str(bad), "--against", str(good))
        how = "job"
    else:
        code, out, err = _why(store, incident.bad.cwd, runsnap)
        how = "found"
    if code == 2 and "--against REF" in err and not job:
        how = "--against"
        code, out, err = _why(store, incident.bad.cwd, runsnap, "--against",
                              str(good))
    seconds = time.monotonic() - started
    cause = out.get("cause") or []
    row.update(reference=how, exit=code, status=out.get("status") or f"exit {code}",
               confidence=out.get("confidence"), planted=_planted(cause, incident.cause),
               nothing_planted=not incident.cause,
               cause=[f"{c['section']} {c['key']}" for c in cause],
               launches=out.get("launches", 0), seconds=round(seconds, 1),
               cannot=out.get("cannot") or [],
               message=str(out.get("message") or (err.strip().splitlines() or [""])[-1])[:200])
    return row


def render(rows: Sequence[Mapping[str, Any]]) -> str:
    lines = ["| half | incident | status | planted cause | launches | s | note |",
             "| --- | --- | --- | --- | ---: | ---: | --- |"]
    for r in rows:
        if "unavailable" in r:
            lines.append(f"| {r['half']} | {r['name']} | unavailable | | | | "
                         f"{str(r['unavailable'])[:80]} |")
            continue
        mark = "yes" if r["planted"] else ("(none planted)" if r["nothing_planted"] else "no")
        note = "; ".join(r["cannot"])[:100] or r["message"][:100]
        if r["reference"] == "job":
            note = f"job against job; {note}"
        elif r["reference"] != "found":
            note = f"--against (no earlier run ended well); {note}"
        lines.append(f"| {r['half']} | {r['name']} | {r['status']} | {mark} | {r['launches']} "
                     f"| {r['seconds']} | {note.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def _halves(text: str) -> list[str]:
    """``--half fresh,fresh2``: the halves named, each checked."""
    names = [h.strip() for h in text.split(",") if h.strip()]
    for h in names:
        if h not in HALVES:
            raise argparse.ArgumentTypeError(f"{h!r}: not a half ({', '.join(HALVES)})")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--half", action="append", type=_halves, default=[],
                        help=f"a half, or several with commas ({', '.join(HALVES)})")
    parser.add_argument("--only", action="append")
    parser.add_argument("--keep", metavar="DIR")
    parser.add_argument("--runsnap", default=sys.executable)
    parser.add_argument("--jsonl", metavar="FILE", help="append each row as it is done")
    args = parser.parse_args(argv)
    halves = {h for group in args.half for h in group}
    entries = [e for e in CORPUS if (not halves or e.half in halves)
               and (not args.only or e.name in args.only)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="runsnap-why-corpus-") as tmp:
        folder = Path(args.keep or tmp)
        for entry in entries:
            row = run_one(entry, folder, args.runsnap)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
            if args.jsonl:
                with open(args.jsonl, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row) + "\n")
    sys.stdout.write(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
