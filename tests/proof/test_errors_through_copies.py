"""A trial reads a model through a copy under its own folder (``.runsnap/bisect-*/m2/tiny``),
so an error that quotes the model's path quotes the copy's. Errors are compared with each
absolute path's folders masked: the trial that fails as GOOD did, through the copy, is like
GOOD, where before it was "like neither" and ``why --prove`` could not prove the cause.

Seen in the diagnosis corpus (fresh6 ``engine-kv-heads-both-fail``: GOOD's "no weights in
.../models/tiny-gqa", the reverted trial's "no weights in .../bisect-*/m2/tiny-gqa"; the proof
failed and a bisection of 10 launches followed, benchmarks/RESULTS.md). Real launches."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.proof.conftest import capture, child
from tests.proof.conftest import runsnap as run_runsnap

# Checks the config, then looks for the weights: GOOD's model has no weights yet (a download
# not finished), BAD's config has a head count the engine refuses, so BAD fails first there.
_ENGINE = ("import argparse\n"
           "p = argparse.ArgumentParser()\n"
           "p.add_argument('--model-path')\n"
           "a = p.parse_args()\n"
           "cfg = json.load(open(os.path.join(a.model_path, 'config.json')))\n"
           "if cfg['num_key_value_heads'] % 2:\n"
           "    raise ValueError(f\"num_key_value_heads ({cfg['num_key_value_heads']}) must be "
           "divisible by the tensor parallel size (2)\")\n"
           "if not os.path.exists(os.path.join(a.model_path, 'pytorch_model.bin')):\n"
           "    raise FileNotFoundError(f'no weights in {a.model_path}: expected "
           "pytorch_model.bin')\n")


def test_an_error_quoting_the_model_copy_s_path_is_like_good_s(tmp_path: Path) -> None:
    model = tmp_path / "models" / "tiny-gqa"
    model.mkdir(parents=True)
    config = {"model_type": "llama", "num_attention_heads": 4, "num_key_value_heads": 2}
    (model / "config.json").write_text(json.dumps(config))
    prog = child(tmp_path / "serve.py", _ENGINE)
    store = tmp_path / ".runsnap"
    argv = ["python3", str(prog), "--model-path", str(model)]
    good = capture(store / "good.toml", argv, {"KNOB": "1"})
    time.sleep(0.01)
    (model / "config.json").write_text(json.dumps({**config, "num_key_value_heads": 3}))
    capture(store / "bad.toml", argv, {"KNOB": "2"})
    proc = run_runsnap("why", "--prove", "--yes", "--format", "json", "--against", str(good),
                       cwd=tmp_path)  # both failed: no earlier run ended well
    assert proc.stdout, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "proven" and out["launches"] == 2, (out["message"], out["proof"])
    assert [c["key"] for c in out["cause"]] == ["--model-path: num_key_value_heads"]
    assert out["proof"]["reverted"].startswith("good: exit 1: FileNotFoundError: no weights in ")
    (log,) = store.glob("bisect-*/trial-02.log")
    assert "/m2/tiny-gqa: expected pytorch_model.bin" in log.read_text()  # through the copy
