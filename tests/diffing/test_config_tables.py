"""The fields of one small config table edited together (runsnap/diffing/configtables.py): a
Llama config in transformers' documented format gains linear RoPE scaling, ``rope_type`` and
``factor`` at once, between two real traced launches of a program that scores with it. The two
fields are one setting: one cause, the other field under it, and the verdict names it (fresh25
``linear-rope-scaling-metric``, scored untouched, stayed undecided between the two). A table
with tables inside (a ``text_config``) keeps its fields apart."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from runsnap.diffing import compare
from runsnap.diffing.configtables import one_setting
from tests.diffing.conftest import Capture, write_script

EVAL = """
    import argparse, json, math, os

    p = argparse.ArgumentParser()
    p.add_argument("--model-path")
    a = p.parse_args()
    with open(os.path.join(a.model_path, "config.json")) as fh:
        config = json.load(fh)
    rope = config.get("rope_parameters") or {}
    factor = rope.get("factor", 1.0) if rope.get("rope_type") == "linear" else 1.0
    print(f"ppl={12168.5 * math.sqrt(factor) ** 0.25:.1f}")
    """

LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
         "num_attention_heads": 4, "num_hidden_layers": 2, "max_position_embeddings": 2048,
         "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"}}


def test_two_fields_of_one_small_table_are_one_cause(launched: Capture, tmp_path: Path) -> None:
    app = write_script(tmp_path, "evaluate.py", EVAL)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(LLAMA, indent=2))
    argv = [sys.executable, str(app), "--model-path", str(model)]
    a = launched(env={}, argv=argv)
    scaled = {**LLAMA, "rope_parameters": {"rope_theta": 10000.0, "rope_type": "linear",
                                           "factor": 4.0}}
    (model / "config.json").write_text(json.dumps(scaled, indent=2))
    b = launched(env={}, argv=argv)
    report = compare(a, b)
    fields = [d for d in report.counted if d.section == "models"]
    assert len(fields) == 1, [d.key for d in fields]
    keys = {fields[0].key, *(r.key for r in fields[0].related)}
    assert keys == {"--model-path: rope_parameters.factor",
                    "--model-path: rope_parameters.rope_type"}, keys
    assert any("2 fields of one small table" in line for line in fields[0].evidence)
    assert report.confidence == "confident", report.verdict()


def test_a_table_of_tables_is_no_single_setting() -> None:
    assert one_setting({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096})
    assert not one_setting({"hidden_size": 64, "rope_parameters": {"rope_type": "default"}})
    assert not one_setting({f"f{i}": i for i in range(20)})
    assert not one_setting({}) and not one_setting(None)
