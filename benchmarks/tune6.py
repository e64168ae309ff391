"""Incidents added to the tune half by w5-41b (issue 41 item 4: a library's start-up setting
read at its import, on no failing path, beside the input that made the run fail), built from
the outside: real transformers and huggingface_hub, launched from two real shells whose
library settings differ as two users' shells do. Each fails through its own code:

- a GPT-2 built from a local config and run on ``--seq-len`` tokens: B asks for more
  positions than the config has, and torch's embedding raises ``index out of range in self``
  (no word of the option, no value of it); B's shell has another ``HF_HOME`` (a cache folder
  huggingface_hub reads in its ``constants.py`` while transformers imports it);
- a program that reads its own ``APP_SHARDS`` in a settings function and fails three calls
  away when every shard is empty (``division by zero``); B's shell has another
  ``TRANSFORMERS_VERBOSITY`` (a logging switch transformers reads while it is imported) and
  another ``HF_HOME``.

Before this work the library's read ranked first (``read``, with its family's points), above
the option and the program's own read. The interpreter needs torch and transformers
(``RUNSNAP_CORPUS_PYTHON``; an incident whose packages none has is reported as not run). Every
incident here is ``tune`` (benchmarks/corpus.py, source ``tune6``).
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.incidents import Incident, Launch, _write
from benchmarks.thirdparty import _incident, python_with, real_shell

_RUN = """
    import argparse
    import torch
    from transformers import AutoConfig, GPT2LMHeadModel

    p = argparse.ArgumentParser()
    p.add_argument("--model-path", required=True)
    p.add_argument("--seq-len", type=int, default=16)
    a = p.parse_args()
    torch.manual_seed(0)
    model = GPT2LMHeadModel(AutoConfig.from_pretrained(a.model_path))
    ids = torch.randint(0, model.config.vocab_size, (1, a.seq_len))
    print(f"loss={float(model(ids, labels=ids).loss):.4f}")
    """


def transformers_seq_len_cache_home(d: Path) -> Incident:
    """B runs 48 tokens through a model of 32 positions (``--seq-len``); B's shell has its own
    ``HF_HOME``, which huggingface_hub reads at import."""
    py = python_with("torch", "transformers")
    cfg = {"model_type": "gpt2", "n_layer": 1, "n_head": 2, "n_embd": 16, "vocab_size": 64,
           "n_positions": 32}
    model = d / "models" / "tiny"
    model.mkdir(parents=True, exist_ok=True)
    (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    app = _write(d / "run.py", _RUN)
    a = {**real_shell(0, d), "HF_HUB_OFFLINE": "1", "HF_HOME": str(d / "hf-a")}
    b = {**real_shell(1, d), "HF_HUB_OFFLINE": "1", "HF_HOME": str(d / "hf-b")}
    argv = (py, str(app), "--model-path", str(model), "--seq-len")
    return _incident(transformers_seq_len_cache_home, Launch((*argv, "16"), a, d),
                     Launch((*argv, "48"), b, d), ("command", "--seq-len"))


_SHARDS = """
    import os
    import transformers

    def settings():
        return int(os.environ.get("APP_SHARDS", "4"))

    def shard(rows, n):
        size = len(rows) // n
        return [rows[i * size:(i + 1) * size] for i in range(n)]

    def mean_rows(parts):
        return sum(len(p) for p in parts) / len([p for p in parts if p])

    def report(parts):
        print(f"rows per shard={mean_rows(parts):.2f}")

    def main():
        transformers.set_seed(0)
        n = settings()
        report(shard(list(range(8)), n))

    main()
    """


def own_read_beside_logging_switch(d: Path) -> Incident:
    """B's APP_SHARDS (16) leaves every one of 8 rows' shards empty: ``division by zero`` in
    a function three calls from the read; B's shell has another TRANSFORMERS_VERBOSITY and
    HF_HOME, both read while transformers is imported."""
    py = python_with("transformers")
    app = _write(d / "shards.py", _SHARDS)
    a = {**real_shell(0, d), "APP_SHARDS": "4", "TRANSFORMERS_VERBOSITY": "warning",
         "HF_HOME": str(d / "hf-a")}
    b = {**real_shell(1, d), "APP_SHARDS": "16", "TRANSFORMERS_VERBOSITY": "error",
         "HF_HOME": str(d / "hf-b")}
    return _incident(own_read_beside_logging_switch, Launch((py, str(app)), a, d),
                     Launch((py, str(app)), b, d), ("env", "APP_SHARDS"))


#: The incidents of this module, in the tune half.
TUNE6 = [transformers_seq_len_cache_home, own_read_beside_logging_switch]
