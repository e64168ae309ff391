"""What ``pytest --runsnap`` adds to a test session: a generated suite of 1,000 tests, run with
the plugin and without it, in the same run (issue 38: at most +1 s).

    .venv/bin/python benchmarks/pytestplugin.py [--tests 1000] [--repeat 5] [--out FILE]

The suite is 50 files of 20 tests: plain asserts, parametrised tests, tests that read a
variable and tests that call into the standard library (json, re, time), so the tracing
hook has reads to record. Three commands, rotated each round: the suite with ``--runsnap``
(the subject), the suite with the plugin installed but off (what every pytest run in an
environment with runsnap pays), and the suite with the plugin not loaded at all
(``-p no:runsnap``, the floor). The difference of medians (with minus without) is the figure
the target reads; CPU time (the session and its children) beside it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.append(str(Path(__file__).resolve().parent.parent))

from benchmarks.harness import Case, Check, Command, Measured, render, run_case  # noqa: E402

FILE = '''import json
import os
import re
import time

import pytest


@pytest.mark.parametrize("n", range(8))
def test_param_{i}(n):
    assert n * n >= n


{body}
'''

ONE = '''def test_{i}_{j}():
    value = os.environ.get("BENCH_KNOB_{j}", "{j}")
    assert json.loads(json.dumps({{"v": value}}))["v"] == value
    assert re.match(r"\\d+", str(len(value)))
    assert time.gmtime(0).tm_year == 1970
'''


def make_suite(root: Path, tests: int) -> None:
    """``tests`` tests in files of 20 (8 of them one parametrised test)."""
    files = max(tests // 20, 1)
    for i in range(files):
        body = "\n\n".join(ONE.format(i=i, j=j) for j in range(12))
        (root / f"test_gen_{i:03d}.py").write_text(FILE.format(i=i, body=body))


def commands(work: Path) -> list[Command]:
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x"]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("RUNSNAP_DIR", None)
    return [
        Command("pytest --runsnap=s.toml (the plugin on)", [*base, "--runsnap=s.toml"], env=env,
                cwd=str(work)),
        Command("pytest (runsnap installed, the plugin off)", base, env=env, cwd=str(work)),
        Command("pytest -p no:runsnap (the plugin not loaded)", [*base, "-p", "no:runsnap"],
                env=env, cwd=str(work)),
    ]


def checks(measured: dict[str, Measured]) -> list[Check]:
    on, off, floor = (list(measured.values())[i] for i in range(3))
    return [
        Check("--runsnap - plugin off (median wall)", (on.median_ms - off.median_ms) / 1000, " s",
              1.0),
        Check("--runsnap - plugin off (median CPU)", (on.cpu_ms - off.cpu_ms) / 1000, " s", 1.0),
        Check("plugin off - not loaded (median wall)", (off.median_ms - floor.median_ms) / 1000,
              " s", None),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", help="append the results to this Markdown file")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="runsnap-bench-pytest-") as tmp:
        work = Path(tmp)
        make_suite(work, args.tests)
        case = Case("pytest", f"pytest --runsnap on a generated suite of {args.tests} tests",
                    lambda _bench: commands(work), checks=checks)
        result = run_case(case, None, args.repeat, progress=lambda s: print(s, file=sys.stderr))
    text = render([result])
    print(text)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write("\n" + text)


if __name__ == "__main__":
    main()
