"""``PYTHONHASHSEED`` left unset in the run that failed: that run drew its hash seed at random
as it started, so a failure it gives again is not the seed's doing (runsnap/diffing/
consequences.py ``seed_drawn``): incidental, where a pinned seed stays a candidate. Seen in
fresh18 (a Databricks task pins ``PYTHONHASHSEED=0``, a Coder workspace does not): a
``TypeError`` from a package's new major version and a checkpoint's size mismatch after
``n_positions`` changed were each undecided with the hash seed.

Real captures of a real program."""

from __future__ import annotations

import sys
from pathlib import Path

import runsnap
from runsnap.capturing import run
from tests.tracing.conftest import child_env

PROGRAM = """
import os
def encode(text, *, precision=6):
    return text[:precision]
level = int(os.environ.get("GEO_PRECISION", "6"))
if level > 12:
    raise TypeError(f"encode() got a precision of {level}, above 12")
print(encode("u4pruydqqvj", precision=level))
"""


def _pair(tmp_path: Path, bad_seed: str | None) -> runsnap.Report:
    base = child_env()
    base.pop("PYTHONHASHSEED", None)
    (tmp_path / "geo.py").write_text(PROGRAM)
    good = {**base, "PYTHONHASHSEED": "0", "GEO_PRECISION": "6"}
    bad = {**base, "GEO_PRECISION": "16", **({"PYTHONHASHSEED": bad_seed} if bad_seed else {})}
    for name, env in (("a", good), ("b", bad)):
        run([sys.executable, "geo.py"], cwd=tmp_path, output=tmp_path / f"{name}.toml", env=env)
    return runsnap.diff(runsnap.load(tmp_path / "a.toml"), runsnap.load(tmp_path / "b.toml"))


def test_a_seed_the_failing_run_drew_at_random_is_incidental(tmp_path: Path) -> None:
    report = _pair(tmp_path, None)
    seed = next(d for d in report.differences if d.key == "PYTHONHASHSEED")
    assert seed.evidence_kind == "incidental", seed.reason
    assert seed.reason.startswith("unset in the failing run B: it drew its hash seed at random")
    assert report.confidence == "confident" and report.differences[0].key == "GEO_PRECISION"


def test_a_seed_the_failing_run_pinned_stays_a_candidate(tmp_path: Path) -> None:
    report = _pair(tmp_path, "123")
    seed = next(d for d in report.differences if d.key == "PYTHONHASHSEED")
    assert seed.evidence_kind != "incidental", seed.reason
    assert "unset in the failing run" not in seed.reason
