"""How well diff finds the planted cause of each incident of the corpus (benchmarks/corpus.py).

    .venv/bin/python benchmarks/diagnosis.py                  # this checkout, every incident
    .venv/bin/python benchmarks/diagnosis.py --out benchmarks/RESULTS.md
                                                              # also rewrite the corpus section
    .venv/bin/python benchmarks/diagnosis.py --runsnap OTHER/.venv/bin/python
                                                              # another checkout's runsnap,
                                                              # capture and diff alike
    .venv/bin/python benchmarks/diagnosis.py --before REV     # also the ranker of commit REV,
                                                              # on the very same snapshots
    .venv/bin/python benchmarks/diagnosis.py --rescore DIR --ranker REV
                                                              # every figure with the ranker
                                                              # of REV (the before figures)
    .venv/bin/python benchmarks/diagnosis.py --corpus-venv DIR
                                                              # make (once) and use a venv with
                                                              # torch and transformers

Each incident is launched twice for real under ``runsnap capture`` (traced; the good launch,
then the bad one), then ``runsnap diff --format json GOOD BAD`` ranks the differences. The
planted cause is found at rank N when it is the N-th difference that counts, or the first
consequence grouped under it. For an incident with nothing planted, success is a diff with
nothing that counts. Scored per half of the corpus (tune / held-out, fixed by name; fresh,
fresh2, fresh3, fresh4, fresh5, fresh6, fresh7, fresh8, fresh9, fresh10, fresh11, fresh12,
fresh13, fresh14, fresh15, fresh16, fresh17, fresh18, fresh19, fresh20, fresh21, fresh22,
fresh23, fresh24, fresh25, fresh26, fresh27, fresh28, fresh29 and fresh30, the whole of
benchmarks/fresh.py, fresh2.py ... fresh30.py, written from the outside and never tuned on;
``--half fresh5`` runs only that one; a job incident, torchrun or mpirun starting ``runsnap
capture`` for each rank, is compared folder to folder):

- top-1 / top-3: the planted cause first / among the first three;
- decided-or-undecided: first, or the verdict ``undecided`` with it among the candidates;
- confident-and-wrong: the verdict is confident (JSON ``confidence``; a diff without that field
  counts as confident) and the planted cause is not first (for nothing planted: a diff that
  names any cause);
- confident and right N/M: M counts the incidents whose two outcomes differ (a cause planted,
  and the diff's JSON ``outcome`` is ``different``: not a noise-only pair, not the same failure
  twice), N those of them whose verdict is confident with the planted cause first;
- undecided lists of at most 3: how many undecided verdicts tie more than 3 candidates (the
  verdict names the first three, JSON ``candidates``, and counts the others,
  ``more_candidates``; first-or-undecided looks for the planted cause among the named ones);
- lines shown: lines of ``runsnap diff`` (text) at ``COLUMNS=80``.
"""

from __future__ import annotations

import argparse
import dataclasses
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

from benchmarks.corpus import CORPUS, FRESH_HALVES, HALVES, Entry  # noqa: E402
from benchmarks.incidents import RANKS_FOLDER, RANKS_RUNSNAP, Incident, Launch  # noqa: E402
from benchmarks.thirdparty import Unavailable  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: What the corpus venv holds (``--corpus-venv``): the libraries the third-party incidents use.
CORPUS_PACKAGES = ("torch", "transformers", "numpy", "click", "requests", "httpx",
                   "huggingface_hub", "tqdm", "rich", "loguru", "pydantic-settings",
                   "python-dotenv", "typer", "pyyaml", "jinja2", "fsspec",
                   # benchmarks/fresh2.py
                   "omegaconf", "hydra-core", "dynaconf", "python-decouple", "marshmallow",
                   "jsonschema", "accelerate", "platformdirs", "safetensors",
                   # benchmarks/fresh3.py
                   "scikit-learn", "numba", "sqlalchemy", "pandas", "tzlocal", "ml-collections",
                   # benchmarks/fresh4.py
                   "mlflow-skinny", "datasets", "pyarrow", "polars", "tokenizers", "fastapi",
                   "uvicorn", "aiohttp", "environs", "jsonargparse", "gin-config",
                   # benchmarks/fresh5.py
                   "peft", "sentence-transformers", "xgboost-cpu", "lightgbm", "onnxruntime",
                   "onnx", "pytorch-lightning", "flask", "gunicorn", "duckdb",
                   # benchmarks/fresh6.py (its mpirun jobs also need Open MPI's mpirun)
                   "mpi4py",
                   # benchmarks/fresh7.py (one incident vendors networkx 2.8.8 beside it)
                   "networkx")
# benchmarks/fresh9.py also uses pytorch-lightning, omegaconf and tokenizers from the lists
# above, and one incident installs pandas 2.3.3 and pytz into a project venv of its own;
# benchmarks/fresh10.py uses torch, transformers, peft, accelerate, pytorch-lightning,
# scikit-learn and mlflow-skinny from the lists above (its textnorm is written by the incident);
# benchmarks/fresh11.py uses torch, transformers, numpy, pyyaml, scikit-learn, pandas and pyarrow
# from the lists above (its fraudfeat is written by the incident); benchmarks/fresh12.py uses
# torch, transformers, safetensors, numpy, pyyaml and scikit-learn from the lists above;
# benchmarks/fresh13.py uses torch, transformers, safetensors, numpy, pyyaml, pandas,
# scikit-learn, python-dotenv and xgboost-cpu from the lists above (its storecal is written by
# the incident); benchmarks/fresh14.py uses torch, transformers, pyyaml and omegaconf from the
# lists above (its clicklog is written by the incident); benchmarks/fresh15.py uses torch,
# transformers, pyyaml, omegaconf, numpy and scikit-learn from the lists above (its featurekit
# and featurekit-geo are written by the incident); benchmarks/fresh16.py uses torch,
# transformers, pyyaml, numpy and scikit-learn from the lists above (its cohortkit is written by
# the incident); benchmarks/fresh17.py uses torch, transformers, pyyaml, omegaconf, numpy,
# pandas and scikit-learn from the lists above (its etafeat is written by the incident);
# benchmarks/fresh18.py uses torch, transformers, pyyaml, numpy, dynaconf and lightgbm from the
# lists above (its geohashkit is written by the incident); benchmarks/fresh19.py uses torch,
# transformers, pyyaml, pytorch-lightning, xgboost-cpu and numpy from the lists above (its boxkit
# and skuvocab are written by the incident); benchmarks/fresh20.py uses torch,
# transformers, pyyaml and scikit-learn from the lists above (its textclean is written by the
# incident); benchmarks/fresh21.py uses torch, transformers, pyyaml and scikit-learn from the
# lists above (its wxfeat is written by the incident); benchmarks/fresh22.py uses torch,
# transformers, numpy, pyyaml, scikit-learn and python-dotenv from the lists above (its gaugecal
# and tsfeat are written by the incident); benchmarks/fresh23.py uses torch, transformers, pyyaml
# and scikit-learn from the lists above (its invparse is written by the incident);
# benchmarks/fresh24.py uses torch, transformers, pyyaml and scikit-learn from the lists above
# (its vibfeat is written by the incident); benchmarks/fresh25.py uses torch, transformers,
# pyyaml, pandas, scikit-learn and pydantic from the lists above (its qckit is written by the
# incident); benchmarks/fresh26.py uses torch, transformers,
# pyyaml, pandas and scikit-learn from the lists above (its lotcodes is written by the incident);
# benchmarks/fresh27.py uses torch, transformers, pyyaml, numpy, scikit-learn and lightgbm from
# the lists above (its sensorcal is written by the incident);
# benchmarks/fresh28.py uses torch, transformers, pyyaml, pandas, scikit-learn and xgboost-cpu
# from the lists above (its gridtariff is written by the incident); benchmarks/fresh29.py uses
# torch, transformers, pyyaml, safetensors, pandas and scikit-learn from the lists above (its
# leakfeat is written by the incident);
# benchmarks/fresh30.py uses torch, transformers, pyyaml, pandas, scikit-learn and lightgbm from
# the lists above (its hypnokit is written by the incident)


def is_job(launch: Launch) -> bool:
    """Whether the launch is a job whose launcher captures each rank into a folder
    (:data:`benchmarks.incidents.RANKS_FOLDER`)."""
    return any(RANKS_FOLDER in arg for arg in launch.argv)


def capture(launch: Launch, out: Path, options: Sequence[str] = (),
            runsnap: str = sys.executable) -> None:
    """``runsnap capture -o OUT -- ARGV`` with the launch's environment, as a user runs it; a
    job runs as it is, its launcher starting ``runsnap capture`` for each rank into folder OUT."""
    if is_job(launch):
        argv: list[str] = []
        for arg in launch.argv:
            if arg == RANKS_RUNSNAP:
                argv += [runsnap, "-m", "runsnap"]
            else:
                argv.append(arg.replace(RANKS_FOLDER, str(out)))
        at = argv.index("capture") + 1
        argv[at:at] = options
    else:
        argv = [runsnap, "-m", "runsnap", "capture", *options, "-o", str(out), "--",
                *launch.argv]
    subprocess.run(argv, env=launch.env, cwd=launch.cwd, capture_output=True, check=False,
                   timeout=300)


def _outputs(incident: Incident, folder: Path) -> tuple[Path, Path]:
    """Where the good and the bad launch are captured: a file each, or a folder each (jobs)."""
    if is_job(incident.good):
        return folder / "good", folder / "bad"
    return folder / "good.toml", folder / "bad.toml"


def _diff_env(src: Path | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RUNSNAP_FORMAT") and k not in ("COLUMNS", "NO_COLOR")}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    env.update(extra)
    return env


def diff(a: Path, b: Path, src: Path | None = None, runsnap: str = sys.executable
         ) -> dict[str, Any]:
    """``runsnap diff --format json A B``, with another checkout's ranker when ``src``."""
    res = subprocess.run([runsnap, "-m", "runsnap", "diff", "--format", "json", str(a),
                          str(b)], env=_diff_env(src), cwd=a.parent, capture_output=True,
                         text=True, check=False, timeout=120)
    if res.returncode not in (0, 1):
        raise RuntimeError(f"diff failed: {res.stderr.strip()}")
    return json.loads(res.stdout)


def lines_shown(a: Path, b: Path, runsnap: str = sys.executable, src: Path | None = None
                ) -> int:
    """How many lines ``runsnap diff A B`` prints in a terminal 80 columns wide."""
    res = subprocess.run([runsnap, "-m", "runsnap", "diff", "--no-color", str(a), str(b)],
                         env=_diff_env(src, COLUMNS="80"), cwd=a.parent, capture_output=True,
                         text=True, check=False, timeout=120)
    return len(res.stdout.splitlines())


def run_incident(incident: Incident, folder: Path, options: Sequence[str] = (),
                 runsnap: str = sys.executable) -> tuple[Path, Path]:
    """Capture the good launch, apply the change between, capture the bad launch."""
    good, bad = _outputs(incident, folder)
    capture(incident.good, good, options, runsnap)
    if incident.between is not None:
        incident.between()
    capture(incident.bad, bad, options, runsnap)
    return good, bad


def matches(d: Mapping[str, Any], cause: Sequence[tuple[str, str]]) -> bool:
    """The difference is the planted cause: its key, or for a model config a field of the
    table the cause names (``--model-path: rope_parameters.rope_theta`` for a cause given as
    ``--model-path: rope_parameters``: the writer of fresh17 could not know how a nested
    field is keyed; added after its untouched score, which counted the field as wrong)."""
    section, key = d.get("section"), str(d.get("key"))
    return (section, key) in cause or any(
        section == "models" == s and key.startswith(k + ".") for s, k in cause)


def rank_of(report: Mapping[str, Any], cause: Sequence[tuple[str, str]]) -> int | None:
    """Where the planted cause is (1-based), 0 when nothing was planted and nothing counts,
    None when it is not among the differences that count."""
    counted = [d for d in report.get("differences") or () if not d.get("hidden")]
    if not cause:
        return 0 if not counted else None
    for i, d in enumerate(counted, 1):
        related = d.get("related") or []
        if matches(d, cause) or (related and matches(related[0], cause)):
            return i
    return None


def confidence(report: Mapping[str, Any]) -> str:
    """The verdict's confidence; a diff that does not say is taken as confident."""
    return str(report.get("confidence") or "confident")


def among_candidates(report: Mapping[str, Any], cause: Sequence[tuple[str, str]]) -> bool:
    """Whether an undecided verdict lists the planted cause among its candidates (JSON
    ``candidates``: ``"SECTION KEY"`` strings)."""
    named = {f"{section} {key}" for section, key in cause}
    for c in report.get("candidates") or ():
        if isinstance(c, str) and c in named:
            return True
        if isinstance(c, Mapping) and matches(c, cause):
            return True
    return False


def score(report: Mapping[str, Any], incident: Incident) -> dict[str, Any]:
    """The figures of one incident's diff (see the module's docstring)."""
    rank = rank_of(report, incident.cause)
    conf = confidence(report)
    first = rank == 1 or (not incident.cause and rank == 0)
    undecided_ok = conf == "undecided" and bool(incident.cause) and \
        among_candidates(report, incident.cause)
    differ = bool(incident.cause) and report.get("outcome") == "different"
    # the candidates tied, the verdict naming the first three (JSON ``more_candidates``: the
    # others, which bisect decides among too)
    candidates = len(report.get("candidates") or ()) + int(report.get("more_candidates") or 0)
    return {"rank": rank, "confidence": conf, "top1": first, "top3": rank is not None
            and (rank <= 3), "decided_or_undecided": first or undecided_ok,
            "confident_wrong": conf == "confident" and not first, "differ": differ,
            "confident_right": differ and conf == "confident" and first,
            "candidates": candidates, "long_list": conf == "undecided" and candidates > 3}


def evaluate(entries: Sequence[Entry], folder: Path, before: Path | None = None,
             options: Sequence[str] = (), runsnap: str = sys.executable,
             log: Any = None, rescore: bool = False, ranker: Path | None = None
             ) -> list[dict[str, Any]]:
    """Every incident, launched in its own folder under ``folder``, ranked now (and before).
    ``rescore``: launch nothing, diff the snapshots an earlier run kept in ``folder``;
    ``ranker``: diff with the runsnap package in that folder (another commit's) instead."""
    rows = []
    for entry in entries:
        d = folder / entry.build.__name__
        d.mkdir(parents=True, exist_ok=True)
        row: dict[str, Any] = {"name": entry.name, "half": entry.half, "source": entry.source}
        try:  # rescoring: built aside, only for the planted cause (the kept runs stay as they are)
            aside = Path(tempfile.mkdtemp(prefix="rescore-")) if rescore else d
            # a cause that names a file of the incident names it where it was kept
            incident = _kept_where(entry.build(aside), aside, d)
        except Unavailable as e:
            rows.append({**row, "unavailable": str(e)})
            continue
        started = time.monotonic()
        if rescore:
            good, bad = _outputs(incident, d)
            if not (good.exists() and bad.exists()):
                rows.append({**row, "unavailable": "no snapshots kept"})
                continue
        else:
            good, bad = run_incident(incident, d, options, runsnap)
        now = diff(good, bad, ranker, runsnap=runsnap)
        row.update(score(now, incident), top=_top(now),
                   lines=lines_shown(good, bad, runsnap, ranker),
                   seconds=round(time.monotonic() - started, 1))
        if before is not None:
            row["before"] = rank_of(diff(good, bad, before), incident.cause)
        rows.append(row)
        if log is not None:
            log.write(f"{entry.half:8} {entry.name:32} rank={row['rank']} "
                      f"{row['confidence']} lines={row['lines']} {row['top']}\n")
            log.flush()
    return rows


def _kept_where(incident: Incident, aside: Path, kept: Path) -> Incident:
    """``incident``, built in folder ``aside``, with the planted cause's keys naming that
    folder's files as they lie in ``kept``, where the snapshots were captured (the tune4
    incidents plant ``file /path/...``)."""
    if aside == kept:
        return incident
    cause = tuple((section, key.replace(str(aside), str(kept))) for section, key in incident.cause)
    return dataclasses.replace(incident, cause=cause)


def _top(report: Mapping[str, Any]) -> str:
    counted = [d for d in report.get("differences") or () if not d.get("hidden")]
    if not counted:
        return "(nothing counts)"
    d = counted[0]
    return f"{d['section']} {d['key']} [{d.get('evidence_kind', 'name')}]"


def summary(rows: Sequence[Mapping[str, Any]], half: str) -> str:
    """One half's figures on one line."""
    run = [r for r in rows if r.get("half") == half and "unavailable" not in r]
    n = len(run)
    if not n:
        return f"{half}: nothing run"

    def count(key: str) -> int:
        return sum(bool(r.get(key)) for r in run)

    lines = sorted(r["lines"] for r in run)
    skipped = sum(1 for r in rows if r.get("half") == half and "unavailable" in r)
    return (f"{half}: {n} incidents{f' ({skipped} not run)' if skipped else ''}; "
            f"confident and right {count('confident_right')}/{count('differ')} (outcomes "
            f"differ), top-1 {count('top1')}/{n}, top-3 {count('top3')}/{n}, "
            f"first-or-undecided {count('decided_or_undecided')}/{n}, confident-and-wrong "
            f"{count('confident_wrong')}/{n}, undecided with over 3 candidates tied "
            f"{count('long_list')}; lines shown at 80 columns: median "
            f"{_median(lines)}, max {lines[-1]}")


def _median(values: Sequence[int]) -> float | int:
    """The median of sorted ``values`` (the mean of the middle two for an even count)."""
    n = len(values)
    mid = values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2
    return int(mid) if mid == int(mid) else mid


def render(rows: Sequence[Mapping[str, Any]]) -> str:
    """The Markdown table and each half's figures."""
    has_before = any("before" in r for r in rows)
    lines = ["| half | incident | found at | confidence | lines | "
             + ("before | " if has_before else "") + "first difference |",
             "|---|---|---:|---|---:|" + ("---:|" if has_before else "") + "---|"]
    for half in HALVES:
        for r in rows:
            if r["half"] != half:
                continue
            if "unavailable" in r:
                lines.append(f"| {half} | {r['name']} | not run | | | "
                             + ("| " if has_before else "") + f"{r['unavailable']} |")
                continue
            cell = "-" if r["rank"] is None else str(r["rank"] or "nothing counts")
            prev = ("-" if r.get("before") is None else str(r["before"] or "nothing counts"))
            lines.append(f"| {half} | {r['name']} | {cell} | {r['confidence']} | {r['lines']} | "
                         + (f"{prev} | " if has_before else "") + f"{r['top']} |")
    lines.append("")
    lines.extend(f"- {summary(rows, half)}" for half in HALVES
                 if half not in FRESH_HALVES
                 or any(r.get("half") == half for r in rows))
    return "\n".join(lines) + "\n"


def write_section(path: Path, text: str, key: str = "corpus") -> None:
    """Replace the generated section ``key`` of ``path`` (or append it)."""
    BEGIN, END = f"<!-- {key}: begin (generated) -->", f"<!-- {key}: end -->"
    old = path.read_text() if path.exists() else ""
    block = f"{BEGIN}\n{text}{END}\n"
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        new = head + block + rest.split(END, 1)[1].lstrip("\n")
    else:
        new = old.rstrip("\n") + "\n\n" + block
    path.write_text(new)


def corpus_venv(folder: Path) -> str:
    """A venv with :data:`CORPUS_PACKAGES` (made with pip once; torch's CPU wheel as pip finds
    it), for the incidents that need torch and transformers."""
    python = folder / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *CORPUS_PACKAGES],
                       check=True)
    return str(python)


def _export(rev: str, into: Path) -> Path:
    """The runsnap package of commit ``rev`` (git archive), for the before figures."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "runsnap"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--before", metavar="REV", help="also rank with the ranker of REV")
    parser.add_argument("--ranker", metavar="REV",
                        help="diff with the ranker of REV only (the before figures of a change, "
                             "every figure alike, with --rescore)")
    parser.add_argument("--keep", metavar="DIR", help="launch the incidents in DIR (kept)")
    parser.add_argument("--no-trace", action="store_true",
                        help="capture with --no-trace (evidence from the outcome only)")
    parser.add_argument("--runsnap", metavar="PYTHON", default=sys.executable,
                        help="the interpreter whose runsnap captures and diffs")
    parser.add_argument("--corpus-venv", metavar="DIR",
                        help="make (once) and use a venv with torch and transformers")
    parser.add_argument("--only", metavar="NAME", action="append",
                        help="run only this incident (repeatable)")
    parser.add_argument("--half", choices=HALVES, help="run only this half")
    parser.add_argument("--out", metavar="FILE", help="rewrite the corpus section of FILE")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument("--rescore", metavar="DIR",
                        help="launch nothing: diff again the snapshots a --keep DIR run kept")
    args = parser.parse_args(argv)
    if args.corpus_venv:
        os.environ["RUNSNAP_CORPUS_PYTHON"] = corpus_venv(Path(args.corpus_venv))
    entries = [e for e in CORPUS if (not args.only or e.name in args.only)
               and (not args.half or e.half == args.half)]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="runsnap-diagnosis-") as tmp:
        folder = Path(args.rescore or args.keep or Path(tmp) / "incidents")
        before = _export(args.before, Path(tmp)) if args.before else None
        ranker = None
        if args.ranker:
            (Path(tmp) / "ranker").mkdir()
            ranker = _export(args.ranker, Path(tmp) / "ranker")
        rows = evaluate(entries, folder, before, ("--no-trace",) if args.no_trace else (),
                        args.runsnap, sys.stderr, rescore=bool(args.rescore), ranker=ranker)
    table = render(rows)
    sys.stdout.write(table)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    if args.out:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=False).stdout.strip()
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        head = (f"## Diagnosis corpus, both halves (issue 22)\n\n"
                f"`python benchmarks/diagnosis.py --out {args.out}` on {when}, "
                f"tree {rev}, runsnap from `{args.runsnap}`, "
                f"{round(time.monotonic() - started)} s. Halves by the first byte of "
                f"sha256(name) (benchmarks/corpus.py); never tune on `held-out`.\n\n")
        write_section(Path(args.out), head + table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
