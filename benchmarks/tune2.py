"""Incidents added to the tune half by w3-41c (issue 41 item 9: one difference, one line), built
from the outside: real transformers and torch (the corpus venv), a real git tree, two real
shells. They test the text report's mechanisms on something other than the examples they were
built from: a model's ``config.json`` edited inside a git tree (one difference with both views,
the field and the file's edit), and torch's own error with its C++ stack trace printed under it
(``TORCH_SHOW_CPP_STACKTRACES=1``, the first error is the message, not a frame).

Every incident here is ``tune`` (benchmarks/corpus.py, source ``tune2``).
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.incidents import Incident, Launch, _git, _write
from benchmarks.thirdparty import _incident, python_with, real_shell

#: Builds a tiny GPT-2 from the model folder given by --model-path and resumes from the
#: checkpoint the first run saved outside the tree (a training job picked up again).
_RESUME = """
    import argparse, os
    import torch
    from transformers import AutoConfig, GPT2LMHeadModel

    p = argparse.ArgumentParser()
    p.add_argument("--model-path", required=True)
    p.add_argument("--ckpt", required=True)
    a = p.parse_args()
    torch.manual_seed(0)
    model = GPT2LMHeadModel(AutoConfig.from_pretrained(a.model_path))
    if os.path.exists(a.ckpt):
        model.load_state_dict(torch.load(a.ckpt))
    else:
        torch.save(model.state_dict(), a.ckpt)
    ids = torch.randint(0, model.config.vocab_size, (1, 8))
    print(f"loss={float(model(ids, labels=ids).loss):.4f}")
    """


def _shells(d: Path) -> tuple[dict[str, str], dict[str, str]]:
    a, b = real_shell(0, d), real_shell(1, d)
    for env in (a, b):
        env["TORCH_SHOW_CPP_STACKTRACES"] = "1"  # carried from a debugging session, both shells
        env["HF_HUB_OFFLINE"] = "1"
    return a, b


def model_config_edit_in_git(d: Path) -> Incident:
    """A model folder under git; B's uncommitted edit of its config.json (n_embd 16 -> 32) no
    longer fits the checkpoint A saved: load_state_dict's size mismatch."""
    py = python_with("torch", "transformers")
    repo = d / "proj"
    cfg = {"model_type": "gpt2", "n_layer": 1, "n_head": 2, "n_embd": 16, "vocab_size": 64,
           "n_positions": 32}
    model = repo / "models" / "tiny"
    model.mkdir(parents=True, exist_ok=True)
    (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    app = _write(repo / "resume.py", _RESUME)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "tiny model")
    argv = (py, str(app), "--model-path", str(model), "--ckpt", str(d / "ckpt.pt"))
    a, b = _shells(d)

    def edit() -> None:
        (model / "config.json").write_text(json.dumps({**cfg, "n_embd": 32}, indent=2) + "\n")

    return _incident(model_config_edit_in_git, Launch(argv, a, repo), Launch(argv, b, repo),
                     ("models", "--model-path: n_embd"), between=edit)


#: A feature extractor whose width comes from the environment, fed to a fixed projection.
_PROJECT = """
    import os
    import torch

    def features(batch):
        width = int(os.environ.get("FEATURE_WIDTH", "3"))
        return torch.ones(batch, width)

    def main():
        proj = torch.nn.Linear(3, 4)
        out = proj(features(2))
        print(f"norm={float(out.norm()):.4f}")

    main()
    """


def torch_cpp_stacktrace_shape(d: Path) -> Incident:
    """B's FEATURE_WIDTH makes the input 2x5 for a 3->4 projection: torch raises c10::Error
    ("mat1 and mat2 shapes cannot be multiplied (2x5 and 3x4)"), and with
    TORCH_SHOW_CPP_STACKTRACES=1 (both shells) prints its C++ frames under the message."""
    py = python_with("torch")
    app = _write(d / "project.py", _PROJECT)
    a, b = _shells(d)
    b["FEATURE_WIDTH"] = "5"
    return _incident(torch_cpp_stacktrace_shape, Launch((py, str(app)), a, d),
                     Launch((py, str(app)), b, d), ("env", "FEATURE_WIDTH"))


#: The incidents, in the order the corpus lists them.
TUNE2 = [model_config_edit_in_git, torch_cpp_stacktrace_shape]
