"""A config file one run alone read, and a key of it both runs printed with other values
(runsnap/diffing/printedkeys.py): accelerate reads ``~/.cache/huggingface/accelerate/
default_config.yaml`` when it exists, and the training script prints the ``mixed_precision``
it ran with. Real traced launches; each run has its own home."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from runsnap.diffing import compare
from tests.diffing.conftest import Capture, write_script

TRAIN = """
    import json, os
    path = os.path.expanduser("~/.config/trainer/defaults.json")
    cfg = {"mixed_precision": "no"}
    if os.path.exists(path):
        with open(path) as fh:
            cfg.update(json.load(fh))
    warm = os.environ.get("TRAINER_CACHE_WARM", "0")
    loss = 1.40238 if cfg["mixed_precision"] == "no" else 1.39666
    print(f"mixed_precision={cfg['mixed_precision']} warm={warm} val_mse={loss}")
    """


def _home(tmp_path: Path, name: str, config: dict[str, str] | None) -> str:
    home = tmp_path / name
    if config is not None:
        folder = home / ".config" / "trainer"
        folder.mkdir(parents=True)
        (folder / "defaults.json").write_text(json.dumps(config))
    home.mkdir(exist_ok=True)
    return str(home)


def test_a_key_both_runs_printed_otherwise_names_the_file_one_run_read(
        launched: Capture, tmp_path: Path) -> None:
    """B's home holds a defaults file that sets bf16; both runs printed ``mixed_precision``,
    A ``no`` and B ``bf16``. The file is named by the runs' own words, over a variable the
    program read that differs too (fresh10 ``accelerate-default-config-in-home`` was
    undecided between six)."""
    app = write_script(tmp_path, "train.py", TRAIN)
    argv = [sys.executable, str(app)]
    a = launched(env={"HOME": _home(tmp_path, "ray", None), "TRAINER_CACHE_WARM": "0"},
                 argv=argv)
    b = launched(env={"HOME": _home(tmp_path, "dana", {"mixed_precision": "bf16"}),
                      "TRAINER_CACHE_WARM": "1"}, argv=argv)
    report = compare(a, b)
    assert report.confidence == "confident", report.verdict()
    top = report.candidates[0]
    found = [top, *top.related]
    assert any(d.key.endswith("defaults.json") and "both runs printed mixed_precision" in d.reason
               and "(A: no, B: bf16)" in d.reason for d in found), [d.reason for d in found]


def test_a_key_printed_alike_names_nothing(launched: Capture, tmp_path: Path) -> None:
    """The file B alone read sets what both runs printed alike: no evidence from the words."""
    app = write_script(tmp_path, "train.py", TRAIN)
    argv = [sys.executable, str(app)]
    a = launched(env={"HOME": _home(tmp_path, "ray", None)}, argv=argv)
    b = launched(env={"HOME": _home(tmp_path, "dana", {"mixed_precision": "no"})}, argv=argv)
    report = compare(a, b)
    assert not any("both runs printed" in d.reason for d in report.differences)
