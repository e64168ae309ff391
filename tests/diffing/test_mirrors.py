"""A table and its inverse changed together (runsnap/diffing/mirrors.py): a classifier's
config.json in transformers' documented format (``id2label`` keyed by index as text,
``label2id`` by name) gains a class between two real traced launches of a program that refuses
a head of another size. The two maps are one edit: one cause, the mirror under it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from runsnap.diffing import compare
from runsnap.diffing.mirrors import inverted
from tests.diffing.conftest import Capture, write_script

EVAL = """
    import argparse, json, os, sys

    p = argparse.ArgumentParser()
    p.add_argument("--model-path")
    a = p.parse_args()
    with open(os.path.join(a.model_path, "config.json")) as fh:
        config = json.load(fh)
    rows = 2  # the checkpoint's classifier head
    if len(config["id2label"]) != rows:
        raise RuntimeError(f"classifier.weight: checkpoint has shape ({rows}, 768), the model"
                           f" needs ({len(config['id2label'])}, 768)")
    print("accuracy=0.91")
    """

BERT = {"architectures": ["BertForSequenceClassification"], "model_type": "bert",
        "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,
        "id2label": {"0": "negative", "1": "positive"},
        "label2id": {"negative": 0, "positive": 1}}


def test_label_maps_edited_together_are_one_cause(launched: Capture, tmp_path: Path) -> None:
    app = write_script(tmp_path, "evaluate.py", EVAL)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(BERT, indent=2))
    argv = [sys.executable, str(app), "--model-path", str(model)]
    a = launched(env={}, argv=argv)
    grown = {**BERT, "id2label": {"0": "negative", "1": "neutral", "2": "positive"},
             "label2id": {"negative": 0, "neutral": 1, "positive": 2}}
    (model / "config.json").write_text(json.dumps(grown, indent=2))
    b = launched(env={}, argv=argv)
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    maps = [d for d in report.counted if d.section == "models"]
    assert [d.key for d in maps] == ["--model-path: id2label"], [d.key for d in maps]
    assert [r.key for r in maps[0].related] == ["--model-path: label2id"]
    assert any("label2id is id2label inverted" in line for line in maps[0].evidence)


def test_tables_that_do_not_mirror_each_other_stay_apart() -> None:
    """A relabelled map (the same names at other indexes in one table only) is no mirror."""
    assert inverted({"0": "neg", "1": "pos"}, {"neg": 0, "pos": 1})
    assert not inverted({"0": "neg", "1": "pos"}, {"neg": 1, "pos": 0})
    assert not inverted({"0": "neg", "1": "pos"}, {"neg": 0, "pos": 1, "neu": 2})
    assert not inverted({"a": 1, "b": 1}, {"1": "b"})  # not one to one
    assert not inverted({"0": "neg"}, None)
