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
    # ten digits: at six, one launch in a hundred drew GOOD's recorded score again, and the
    # test took that chance for a program that gives its metric exactly again
    prog = child(tmp_path / "evaluate.py",
                 "import random\nknob = os.environ.get('KNOB')\n"
                 "print(f'score={0.9 + random.random() * 1e-4:.10f}')\n")
    store = tmp_path / ".runsnap"
    capture(store / "good.toml", ["python3", str(prog)], {"KNOB": "1"})
    time.sleep(0.01)
    capture(store / "bad.toml", ["python3", str(prog)], {"KNOB": "2"})
    proc = run_runsnap("why", "--prove", "--yes", "--format", "json", cwd=tmp_path)
    out = json.loads(proc.stdout)
    assert proc.returncode == 1 and out["status"] == "none" and not out["cause"], out
    assert out["launches"] == 1 and any("moved by itself" in n for n in out["notes"]), out


def test_a_model_config_edited_in_place_is_read_through_goods_copy(tmp_path: Path) -> None:
    """GOOD's launch run again reads the model through a copy with GOOD's recorded
    ``config.json``, as every trial does: the folder holds BAD's config by now (fresh8
    ``rope-base-copied-metric`` ran it on the folder and got BAD's perplexity)."""
    model = tmp_path / "models" / "tiny"
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps({"model_type": "llama", "rope_theta": 10000.0}))
    prog = child(tmp_path / "evaluate.py",
                 "import argparse, math\n"
                 "p = argparse.ArgumentParser()\np.add_argument('--model-path')\n"
                 "a = p.parse_args()\n"
                 "cfg = json.load(open(os.path.join(a.model_path, 'config.json')))\n"
                 "theta = cfg['rope_theta']\n"
                 "loss = sum(math.log(2 + math.sin(i / theta ** 0.25)) for i in range(2000))"
                 " / 2000\n"
                 "print(f'eval_loss={loss:.4f} perplexity={math.exp(loss):.3f}')\n")
    store = tmp_path / ".runsnap"
    argv = ["python3", str(prog), "--model-path", str(model)]
    capture(store / "good.toml", argv)
    time.sleep(0.01)
    (model / "config.json").write_text(json.dumps({"model_type": "llama",
                                                   "rope_theta": 500000.0}))
    capture(store / "bad.toml", argv)
    out = json.loads(run_runsnap("why", "--prove", "--yes", "--format", "json",
                                 cwd=tmp_path).stdout)
    assert out["status"] in ("proven", "found", "confident"), out
    assert [c["key"] for c in out["cause"]] == ["--model-path: rope_theta"], out
    assert any("exactly again" in n for n in out["notes"]), out["notes"]
