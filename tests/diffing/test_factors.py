"""A metric that moved by an input's own factor (runsnap/diffing/factors.py): the outcome
shows the value reached what the run reported. Two real traced launches each, of a training
loop that reads its settings as Lightning reads ``PL_TRAINER_*`` (an environment default for
each Trainer argument)."""

from __future__ import annotations

import sys
from pathlib import Path

from runsnap.diffing import compare
from tests.diffing.conftest import Capture, write_script

FIT = """
    import os

    limit = float(os.environ.get("FIT_LIMIT_TRAIN_BATCHES", "1.0"))
    clip = float(os.environ.get("FIT_GRADIENT_CLIP_VAL", "0"))
    batches = 32
    steps = int(batches * limit)
    loss = 1.0 / (1 + steps)
    print(f"steps={steps} val_loss={loss:.4f}")
    """


def test_a_read_whose_fraction_a_metric_moved_by_comes_first(launched: Capture,
                                                             tmp_path: Path) -> None:
    """The steps went 32 -> 8, B's shell holding a limit of 0.25; A's shell held a gradient
    clipping value the program read too. The limit comes first (it was second, alphabetically),
    backed by the metric; the verdict stays undecided between the two reads: each of two
    inputs may move a metric."""
    app = write_script(tmp_path, "fit.py", FIT)
    a = launched(env={"FIT_GRADIENT_CLIP_VAL": "1.0"}, argv=[sys.executable, str(app)])
    b = launched(env={"FIT_LIMIT_TRAIN_BATCHES": "0.25"}, argv=[sys.executable, str(app)])
    report = compare(a, b)
    top = report.counted[0]
    assert top.key == "FIT_LIMIT_TRAIN_BATCHES" and top.corroborated, report.verdict()
    assert "the metric steps moved by the factor its values make (32 -> 8: x0.25)" in top.reason
    clip = next(d for d in report.counted if d.key == "FIT_GRADIENT_CLIP_VAL")
    assert clip.evidence_kind == "read" and not clip.corroborated
    assert report.confidence == "undecided"


def test_a_value_no_metric_shows_is_no_factor(launched: Capture, tmp_path: Path) -> None:
    """A limit of 0.5 (one half: too common a factor to single out) backs nothing."""
    app = write_script(tmp_path, "fit.py", FIT)
    a = launched(env={"FIT_GRADIENT_CLIP_VAL": "1.0"}, argv=[sys.executable, str(app)])
    b = launched(env={"FIT_LIMIT_TRAIN_BATCHES": "0.5"}, argv=[sys.executable, str(app)])
    report = compare(a, b)
    assert not any(d.corroborated for d in report.counted), report.verdict()
