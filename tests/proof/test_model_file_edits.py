"""A model's file (tokenizer.json) that differs because it was edited, uncommitted, in the git
tree the model folder lives in: ``why --prove`` proves it by applying that edit, in copies of
the tree, where it said before "other model files: only config.json fields are applied".

Seen in the diagnosis corpus (fresh4 ``tokenizer-truncation-metric``, benchmarks/RESULTS.md).
Real git repository, real launches, real ``runsnap why``."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from tests.proof.conftest import child
from tests.proof.conftest import runsnap as run_runsnap

# Counts the tokens of each line, cut at the tokenizer's truncation length when it has one.
_COUNT = ("import argparse\n"
          "p = argparse.ArgumentParser()\n"
          "p.add_argument('--model-path')\n"
          "a = p.parse_args()\n"
          "with open(os.path.join(a.model_path, 'config.json')) as fh:\n"
          "    json.load(fh)\n"
          "with open(os.path.join(a.model_path, 'tokenizer.json')) as fh:\n"
          "    tok = json.load(fh)\n"
          "cut = (tok.get('truncation') or {}).get('max_length')\n"
          "lines = open('eval.txt').read().split('\\n')\n"
          "counts = [min(len(x.split()), cut or 10**9) for x in lines if x]\n"
          "print(f'max_tokens={max(counts)} mean_tokens={sum(counts) / len(counts):.2f}')\n")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@x", *args],
                   check=True, capture_output=True)


def _tokenizer(truncation: dict[str, object] | None) -> str:
    return json.dumps({"version": "1.0", "truncation": truncation, "padding": None,
                       "model": {"type": "WordLevel", "vocab": {"a": 0, "b": 1}}}, indent=2)


def test_a_model_file_edited_in_its_git_tree_is_proven_by_applying_the_edit(
        tmp_path: Path) -> None:
    repo = tmp_path / "ctx-sizing"
    (repo / "model").mkdir(parents=True)
    child(repo / "count_tokens.py", _COUNT)
    (repo / "eval.txt").write_text("".join(" ".join(["w"] * n) + "\n" for n in (30, 40, 12)))
    (repo / "model" / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    (repo / "model" / "tokenizer.json").write_text(_tokenizer(None))
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "tiny model")
    store = tmp_path / ".runsnap"
    argv = ["python3", "count_tokens.py", "--model-path", "model"]
    run_runsnap("capture", "-o", str(store / "good.toml"), "--", *argv, cwd=repo)
    time.sleep(0.01)
    edited = _tokenizer({"max_length": 16, "strategy": "LongestFirst"})
    (repo / "model" / "tokenizer.json").write_text(edited)  # saved from a notebook, uncommitted
    run_runsnap("capture", "-o", str(store / "bad.toml"), "--", *argv, cwd=repo)
    proc = run_runsnap("why", "--prove", "--yes", "--format", "json", "--dir", str(store),
                       cwd=repo)
    assert proc.stdout, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "proven", (out["message"], out["cannot"])
    assert [f"{c['section']} {c['key']}" for c in out["cause"]] == \
        ["git ctx-sizing: model/tokenizer.json"]
    assert not any("only config.json fields are applied" in c for c in out["cannot"])
    # the evidence named the model's file; its edit, applied and reverted, proved it
    assert "is the edit git ctx-sizing: model/tokenizer.json" in out["how"]
    assert (repo / "model" / "tokenizer.json").read_text() == edited  # the user's edit kept
