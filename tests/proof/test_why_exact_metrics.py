"""``runsnap why`` where both runs computed on the CPU alone and a metric moved by less than the
1 % noise threshold, while a library's notice differs too: the metric decides the trials, as
the diff judges it (tolerance 0 for such runs: runsnap/diffing/loaded.py), not the notice.
Seen in fresh13 ``dtype-bfloat16-option-metric``: bisect judged by the one run's
huggingface_hub notice and claimed ``HF_HUB_ENABLE_HF_TRANSFER`` as the cause of a 0.06 % move
that ``--dtype bfloat16`` made. Real launches."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tests.proof.conftest import capture, child
from tests.proof.conftest import runsnap as run_runsnap

PROGRAM = ("import warnings\nimport numpy as np\n"
           "if os.environ.get('HUB_FAST_TRANSFER'):\n"
           "    warnings.warn('HUB_FAST_TRANSFER is deprecated, use HUB_XET')\n"
           "decay = float(os.environ.get('TRAIN_WEIGHT_DECAY', '0'))\n"
           "w = np.linspace(0.1, 1.0, 1000)\n"
           "print(f'step 100 loss={float(np.sum(w * w) / 1000 * (1 - decay * 0.1)):.6f}')\n")


def test_the_metric_decides_not_the_notice(tmp_path: Path) -> None:
    prog = child(tmp_path / "train.py", PROGRAM)
    store = tmp_path / ".runsnap"
    threads = {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2"}
    capture(store / "good.toml", [sys.executable, str(prog)], {**threads, "HUB_FAST_TRANSFER": "1"})
    time.sleep(0.01)
    capture(store / "bad.toml", [sys.executable, str(prog)],
            {**threads, "HUB_FAST_TRANSFER": None, "TRAIN_WEIGHT_DECAY": "0.05"})
    proc = run_runsnap("why", str(store / "bad.toml"), "--against", str(store / "good.toml"),
                       "--prove", "--yes", "--format", "json", cwd=tmp_path)
    assert proc.stdout, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "proven", (out["message"], proc.stderr)
    assert [(c["section"], c["key"]) for c in out["cause"]] == [("env", "TRAIN_WEIGHT_DECAY")]
    assert out["proof"]["applied"].startswith("bad: loss "), out["proof"]
