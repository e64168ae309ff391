"""A metric that moved less than the diff's noise threshold: ``runsnap why`` runs GOOD's launch
once more; where it gives its metric exactly again the move is no noise, and the cause is found
at tolerance 0; where it moves by itself, the verdict stays "the same outcome", now with the
launch that showed it.

Seen in the diagnosis corpus (fresh8 ``rope-base-copied-metric``: perplexity 11.299 -> 11.326,
0.24 %, "the same outcome"). Real launches traced by ``runsnap capture``."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.proof.conftest import capture, child
from tests.proof.conftest import runsnap as run_runsnap

#: A deterministic evaluation whose perplexity the position base moves by a fraction of a
#: percent; two settings it reads and does not use.
EVAL = ("import math\n"
        "theta = float(os.environ.get('ROPE_THETA', '10000'))\n"
        "knobs = [os.environ.get('KNOB_A'), os.environ.get('KNOB_B')]\n"
        "loss = sum(math.log(2 + math.sin(i / theta ** 0.25)) for i in range(2000)) / 2000\n"
        "print(f'eval_loss={loss:.4f} perplexity={math.exp(loss):.3f}')\n")


def test_a_metric_moved_within_the_threshold_by_a_deterministic_program(tmp_path: Path) -> None:
    prog = child(tmp_path / "evaluate.py", EVAL)
    store = tmp_path / ".runsnap"
    capture(store / "good.toml", ["python3", str(prog)], {"KNOB_A": "1", "KNOB_B": "x"})
    time.sleep(0.01)
    capture(store / "bad.toml", ["python3", str(prog)],
            {"KNOB_A": "2", "KNOB_B": "y", "ROPE_THETA": "500000"})
    shown = run_runsnap("diff", str(store / "good.toml"), str(store / "bad.toml"))
    assert "the same outcome" in shown.stdout  # within the 1 % noise threshold
    out = json.loads(run_runsnap("why", "--prove", "--yes", "--format", "json",
                                 cwd=tmp_path).stdout)
    assert out["status"] in ("proven", "found"), out
    assert [f"{c['section']} {c['key']}" for c in out["cause"]] == ["env ROPE_THETA"], out
    assert any("exactly again" in n and "tolerance 0" in n for n in out["notes"]), out["notes"]


def test_a_metric_that_moves_by_itself_stays_the_same_outcome(tmp_path: Path) -> None:
    prog = child(tmp_path / "evaluate.py",
                 "import random\nknob = os.environ.get('KNOB')\n"
                 "print(f'score={0.9 + random.random() * 1e-4:.6f}')\n")
    store = tmp_path / ".runsnap"
    capture(store / "good.toml", ["python3", str(prog)], {"KNOB": "1"})
    time.sleep(0.01)
    capture(store / "bad.toml", ["python3", str(prog)], {"KNOB": "2"})
    proc = run_runsnap("why", "--prove", "--yes", "--format", "json", cwd=tmp_path)
    out = json.loads(proc.stdout)
    assert proc.returncode == 1 and out["status"] == "none" and not out["cause"], out
    assert out["launches"] == 1 and any("moved by itself" in n for n in out["notes"]), out
