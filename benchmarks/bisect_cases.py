"""Trials and wall time of ``runsnap bisect`` per case, with peers measured in the same run.

    .venv/bin/python benchmarks/bisect_cases.py          # prints a Markdown section for RESULTS.md

Each case is a real child written for it, captured good and bad with ``runsnap capture``, then
``runsnap bisect --format json`` finds the cause. Reported per case: the answer, the trials
(search, then the re-checks: the answer twice, GOOD's launch twice), 2*log2(n) for scale, the
wall time and the mean time of one trial. Peers, in the same run:

* **one at a time**: what people do by hand: relaunch with each difference alone, in the
  diff's order, until the launch fails (bare relaunches, no capture), for the single-cause cases;
* **bare launch**: the child run directly, to show what a trial's capture costs on top.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _runsnap(*args: str, env: Mapping[str, str] | None = None, cwd: Path) -> Any:
    return subprocess.run([sys.executable, "-m", "runsnap", *args], capture_output=True,
                          text=True, env=dict(env or os.environ), cwd=cwd, timeout=1800,
                          stdin=subprocess.DEVNULL)


def _env(changes: Mapping[str, str | None]) -> dict[str, str]:
    env = dict(os.environ)
    for k, v in changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


class Case:
    """A child, its good and bad launches, and what bisect should answer."""

    def __init__(self, name: str, body: str, good: tuple[list[str], dict[str, str | None]],
                 bad: tuple[list[str], dict[str, str | None]], expect: list[str],
                 n: int, args: Sequence[str] = (), run: bool = True,
                 setup: Callable[[Path], None] | None = None,
                 between: Callable[[Path], None] | None = None) -> None:
        self.name, self.body, self.good, self.bad, self.expect = name, body, good, bad, expect
        self.n, self.args, self.run, self.setup, self.between = n, args, run, setup, between


def _knobs(n: int, value: str) -> dict[str, str | None]:
    return {f"KNOB_{i:03d}": value for i in range(1, n + 1)}


def _single(n: int, at: int, read_all: bool = True) -> Case:
    """With ``read_all`` the child reads every knob, so the diff's ranking cannot single the
    cause out; without, it reads only the cause (run-time evidence ranks it first)."""
    body = "e = {k: os.environ.get(k) for k in sorted(os.environ)}\n" if read_all else \
        "e = os.environ\n"
    body += f"if e.get('KNOB_{at:03d}') == 'b':\n    sys.exit('RuntimeError: knob')\n"
    rank = "ranking neutral" if read_all else "only the cause is read"
    return Case(f"1 variable among {n} (cause at {at}; {rank})", body,
                (["python3", "child.py"], _knobs(n, "a")), (["python3", "child.py"],
                                                            _knobs(n, "b")),
                [f"env KNOB_{at:03d}"], n)


def _config_setup(work: Path) -> None:
    (work / "model").mkdir()
    (work / "model" / "model.safetensors").write_bytes(b"\0" * 4096)
    (work / "model" / "config.json").write_text(json.dumps(
        {"vocab_size": 32000, "torch_dtype": "bfloat16", "rope_theta": 10000.0,
         "max_position_embeddings": 8192, "rope_scaling": {"factor": 4.0}}))


def _config_edit(work: Path) -> None:
    (work / "model" / "config.json").write_text(json.dumps(
        {"vocab_size": 32064, "torch_dtype": "float16", "rope_theta": 500000.0,
         "max_position_embeddings": 8192, "rope_scaling": {"factor": 16.0}, "tie": True}))


def _demo(steps: str) -> list[str]:
    fx = ROOT / "fixtures"
    return ["python3", str(fx / "demo" / "launch_server.py"),
            "--model-path", str(fx / "models" / "kimi-k2.5-target"),
            "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
            str(fx / "models" / "kimi-k2.5-eagle3-draft"), "--speculative-num-steps", steps]


CASES = [
    _single(8, 5), _single(30, 17), _single(30, 30), _single(100, 63),
    _single(30, 17, read_all=False),
    Case("2 variables acting together among 30",
         "e = os.environ\nif e.get('KNOB_003') == 'b' and e.get('KNOB_022') == 'b':\n"
         "    sys.exit('ValueError: together')\n",
         (["python3", "child.py"], _knobs(30, "a")), (["python3", "child.py"], _knobs(30, "b")),
         ["env KNOB_003", "env KNOB_022"], 30),
    Case("1 option among 4 options and 2 variables",
         "if '--tp=4' in sys.argv or sys.argv[sys.argv.index('--tp') + 1] == '4':\n"
         "    sys.exit('AssertionError: tp')\n",
         (["python3", "child.py", "--tp", "2", "--port", "1", "--log-level", "info"],
          {"NCCL_ALGO": "Ring", "NCCL_DEBUG": "WARN"}),
         (["python3", "child.py", "--tp", "4", "--port", "2", "--log-level", "debug", "--x"],
          {"NCCL_ALGO": "Tree", "NCCL_DEBUG": None}), ["command --tp"], 6),
    Case("1 config.json field among 5 (edited in place)",
         "m = sys.argv[sys.argv.index('--model-path') + 1]\n"
         "c = json.load(open(os.path.join(m, 'config.json')))\n"
         "if c['rope_scaling']['factor'] > 8:\n    sys.exit('ValueError: rope')\n",
         (["python3", "child.py", "--model-path", "model"], {}),
         (["python3", "child.py", "--model-path", "model"], {}),
         ["models --model-path: rope_scaling.factor"], 5, setup=_config_setup,
         between=_config_edit),
    Case("server (--timeout 10 --ready-line), 1 variable among 8",
         "time.sleep(0.2)\nif os.environ.get('KNOB_006') == 'b':\n    sys.exit('OOM')\n"
         "print('ready', flush=True)\ntime.sleep(600)\n",
         (["python3", "child.py"], _knobs(8, "a")), (["python3", "child.py"], _knobs(8, "b")),
         ["env KNOB_006"], 8, args=("--timeout", "10", "--ready-line", "ready"), run=False),
    Case("flaky: fails every other run, 6 variables",
         "n = int(open('count').read()) + 1 if os.path.exists('count') else 1\n"
         "open('count', 'w').write(str(n))\nif n % 2:\n    sys.exit('RuntimeError: NCCL timeout')\n",
         (["python3", "child.py"], _knobs(6, "a")), (["python3", "child.py"], _knobs(6, "b")),
         [], 6, setup=lambda w: (w / "count").write_text("1")),
    Case("README demo: flag and option among NCCL_* variables",
         "",
         (_demo("2"), {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1", "NCCL_IB_DISABLE": "1",
                       "NCCL_P2P_LEVEL": "NVL", "NCCL_MIN_NCHANNELS": "4"}),
         (_demo("3"), {"NCCL_IB_DISABLE": "0", "NCCL_ALGO": "Ring", "NCCL_NVLS_ENABLE": "0"}),
         ["env SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"], 7),
]


def _one_at_a_time(case: Case, work: Path, order: Sequence[Mapping[str, Any]]) -> tuple[int, float]:
    """Relaunch bare with each change alone, in the diff's order, until it fails."""
    argv, good_env = case.good
    t0 = time.monotonic()
    for k, change in enumerate(order, 1):
        env = _env({**good_env, change["key"]: change["b"]})
        if subprocess.run(argv, env=env, cwd=work, capture_output=True).returncode != 0:
            return k, time.monotonic() - t0
    return len(order), time.monotonic() - t0


def run_case(case: Case, work: Path) -> dict[str, Any]:
    work.mkdir(parents=True)
    (work / "child.py").write_text("import json, os, sys, time\n" + case.body)
    if case.setup:
        case.setup(work)
    no_run = [] if case.run else ["--no-run"]
    for side, (argv, env) in (("good", case.good), ("bad", case.bad)):
        _runsnap("capture", "-o", f"{side}.toml", *no_run, "--", *argv, env=_env(env), cwd=work)
        if side == "good" and case.between:
            case.between(work)
    if (work / "count").exists():  # the flaky case: trial 1 is its first run, and fails
        (work / "count").unlink()
    t0 = time.monotonic()
    proc = _runsnap("bisect", "good.toml", "bad.toml", "--format", "json", *case.args, cwd=work)
    wall = time.monotonic() - t0
    answer = json.loads(proc.stdout)
    found = [f"{c['section']} {c['key']}" for c in answer["cause"]]
    runs = answer["runs"]
    checks = 4 if answer["status"] == "found" else 0
    row = {"case": case.name, "n": case.n, "status": answer["status"], "found": found,
           "ok": found == case.expect and proc.returncode == (0 if case.expect else 1),
           "trials": len(runs), "search": len(runs) - checks, "wall": wall,
           "per_trial": statistics.mean(r["elapsed_s"] for r in runs) if runs else 0.0}
    if case.name.startswith("1 variable"):
        bare = []
        for _ in range(5):
            b0 = time.monotonic()
            subprocess.run(case.good[0], env=_env(case.good[1]), cwd=work, capture_output=True)
            bare.append(time.monotonic() - b0)
        row["bare"] = statistics.median(bare)
        row["linear"] = _one_at_a_time(case, work, answer["changes"])
    return row


def main() -> int:
    rows = []
    with tempfile.TemporaryDirectory(prefix="runsnap-bisect-bench-") as tmp:
        for i, case in enumerate(CASES):
            rows.append(run_case(case, Path(tmp) / f"case{i}"))
            print(f"{case.name}: {rows[-1]['trials']} trials, {rows[-1]['wall']:.1f}s",
                  file=sys.stderr)
    load = os.getloadavg()[0]
    print(f"### runsnap bisect: trials and wall time per case (`python benchmarks/bisect_cases.py`, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load:.2f})\n")
    print("| case | answer | trials: search + checks | 2*log2(n) | wall s | s per trial |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        answer = ", ".join(r["found"]) or r["status"]
        mark = "" if r["ok"] else " (WRONG)"
        scale = f"{2 * math.log2(r['n']):.1f}"
        print(f"| {r['case']} | {answer}{mark} | {r['search']} + {r['trials'] - r['search']} | "
              f"{scale} | {r['wall']:.1f} | {r['per_trial']:.2f} |")
    print()
    for r in rows:
        if "linear" in r:
            k, secs = r["linear"]
            print(f"- {r['case']}: one at a time by hand needs {k} bare relaunches "
                  f"({secs:.1f}s without captures); bisect's search {r['search']} trials "
                  f"({r['search'] / k:.2f}x the relaunches); one trial (captured) "
                  f"{r['per_trial']:.2f}s vs a bare launch {r['bare']:.3f}s "
                  f"({r['per_trial'] / r['bare']:.0f}x: runsnap's capture of the trial)")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
