"""An offline switch in runs that fetched nothing (runsnap/diffing/fetching.py): one shell's
profile exports ``HF_HUB_OFFLINE=1``; huggingface_hub (a real installed package) reads it at
import; the program loads its "model" from a folder and scores with a setting of its own that
the other shell leaves unset. No file came through the Hub's cache in either run, so offline
or not decided nothing, and the program's own read is the cause (fresh13
``eval-max-length-from-cshrc-metric`` and fresh30 ``max-seq-len-from-compose-metric``, scored
untouched, stayed undecided between the two). Where a run did take a file from that cache,
the switch keeps its place beside the read."""

from __future__ import annotations

import sys
from pathlib import Path

from runsnap.diffing import compare
from tests.diffing.conftest import Capture, write_script

EVAL = """
    import json, os, sys
    from huggingface_hub import hf_hub_download  # its import reads HF_HUB_OFFLINE, HF_HOME...

    folder = sys.argv[1]
    with open(os.path.join(folder, "config.json")) as fh:
        width = json.load(fh)["hidden_size"]
    max_len = int(os.environ.get("EVAL_MAX_LENGTH", "64"))
    print(f"accuracy={min(1.0, width / (max_len * 10)):.4f}")
    """


def _pair(launched: Capture, tmp_path: Path, model: Path) -> tuple[dict, dict]:
    app = write_script(tmp_path, "evaluate.py", EVAL)
    hf_home = str(tmp_path / "hf")
    argv = [sys.executable, str(app), str(model)]
    a = launched(env={"HF_HOME": hf_home}, argv=argv)
    b = launched(env={"HF_HOME": hf_home, "HF_HUB_OFFLINE": "1", "EVAL_MAX_LENGTH": "16"},
                 argv=argv)
    return a, b


def test_an_offline_switch_in_runs_that_fetched_nothing_decided_nothing(
        launched: Capture, tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"hidden_size": 64}')
    report = compare(*_pair(launched, tmp_path, model))
    d = {x.key: x for x in report.differences}["HF_HUB_OFFLINE"]
    assert d.evidence_kind == "incidental" and "never came up" in d.reason, d
    assert (report.confidence, [x.key for x in report.candidates]) == (
        "confident", ["EVAL_MAX_LENGTH"]), report.verdict()


def test_a_run_that_read_from_the_hubs_cache_keeps_the_switch(
        launched: Capture, tmp_path: Path) -> None:
    # the "model" is a snapshot folder inside the Hub's cache: what the switch decides for
    model = tmp_path / "hf" / "hub" / "models--org--tiny" / "snapshots" / "abc123"
    model.mkdir(parents=True)
    (model / "config.json").write_text('{"hidden_size": 64}')
    report = compare(*_pair(launched, tmp_path, model))
    d = {x.key: x for x in report.differences}["HF_HUB_OFFLINE"]
    assert d.evidence_kind == "read", d
    assert report.confidence == "undecided", report.verdict()
