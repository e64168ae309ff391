"""``runsnap check``: findings inside one snapshot, from real captures of real model configs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

import runsnap
from runsnap.checks.rules import check
from runsnap.diffing import compare
from runsnap.snapshot import Snapshot
from tests.conftest import asset

DEMO = [sys.executable, "-c", "pass"]


def _cap(tmp_path: Path, env: dict[str, str] | None = None, argv: list[str] | None = None
         ) -> Snapshot:
    full = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **(env or {})}
    return runsnap.capture(argv or DEMO, env=full, cwd=tmp_path)


def _spec(target: str, draft: str) -> list[str]:
    return [sys.executable, "-m", "sglang.launch_server",
            "--model-path", str(asset("models", target)),
            "--speculative-algorithm", "EAGLE3",
            "--speculative-draft-model-path", str(asset("models", draft))]


def test_draft_shorter_than_its_multimodal_target(tmp_path):
    snap = _cap(tmp_path, argv=_spec("kimi-k2.5-target", "kimi-k2.5-eagle3-draft"))
    found = check(snap).findings
    assert [f.kind for f in found] == ["draft-target"]
    f = found[0]
    assert f.path == ("models", "--speculative-draft-model-path", "config",
                      "max_position_embeddings")
    assert ("the draft model's context length (max_position_embeddings = 131072) is shorter "
            "than the target's (text_config.max_position_embeddings = 262144)") in f.message
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in f.message
    assert f.details[:2] == (
        f"target --model-path {asset('models', 'kimi-k2.5-target')}",
        f"draft --speculative-draft-model-path {asset('models', 'kimi-k2.5-eagle3-draft')}")


def test_the_flag_set_is_said(tmp_path):
    snap = _cap(tmp_path, {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"},
                _spec("kimi-k2.5-target", "kimi-k2.5-eagle3-draft"))
    assert "is set here, so SGLang warns and overrides" in check(snap).findings[0].message


@pytest.mark.parametrize(("target", "draft", "kinds"), [
    ("kimi-k2-target", "kimi-k2-eagle3-draft", []),
    ("llama-3.1-8b-instruct", "llama-3.1-8b-eagle3-draft", ["draft-target"]),
])
def test_real_pairs(tmp_path, target, draft, kinds):
    found = check(_cap(tmp_path, argv=_spec(target, draft))).findings
    assert [f.kind for f in found] == kinds
    if kinds:
        assert "(max_position_embeddings = 2048)" in found[0].message
        assert "(max_position_embeddings = 131072)" in found[0].message


def test_vocabulary_and_hidden_size_disagreement(tmp_path):
    target = json.loads(asset("models", "kimi-k2.5-target", "config.json").read_text())
    draft = json.loads(asset("models", "kimi-k2.5-eagle3-draft", "config.json").read_text())
    draft.update(vocab_size=151936, hidden_size=4096, max_position_embeddings=262144)
    for name, cfg in (("t", target), ("d", draft)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(cfg))
    argv = [sys.executable, "srv.py", "--model-path", str(tmp_path / "t"),
            "--speculative-draft-model-path", str(tmp_path / "d")]
    found = check(_cap(tmp_path, argv=argv)).findings
    messages = [f.message for f in found]
    assert [f.path[-1] for f in found] == ["vocab_size", "hidden_size"]
    assert "vocab_size (151936) differs from the target's (text_config.vocab_size = 163840)" \
        in messages[0]
    assert "hidden_size = 4096, but the target's text_config.hidden_size is 7168" in messages[1]


def test_misspelled_and_rejected_variables(tmp_path):
    snap = _cap(tmp_path, {"NCCL_P2P_DISABEL": "1", "NCCL_IB_DISABLE": "true",
                           "SGLANG_ENABLE_PP_SPEC": "maybe", "NCCL_DEBUG": "INFO",
                           "MY_OWN_SETTING": "x", "NCCL_ALGO": "Ring"})
    found = {f.path: f for f in check(snap).findings}
    assert set(found) == {("env", "NCCL_P2P_DISABEL"), ("env", "NCCL_IB_DISABLE"),
                          ("env", "SGLANG_ENABLE_PP_SPEC")}
    assert found[("env", "NCCL_P2P_DISABEL")].message.startswith(
        "NCCL_P2P_DISABEL is set, but no installed package or list knows it: a misspelling of "
        "NCCL_P2P_DISABLE?")
    assert "accepts an integer" in found[("env", "NCCL_IB_DISABLE")].message
    assert "accepts a boolean" in found[("env", "SGLANG_ENABLE_PP_SPEC")].message


def test_the_families_users_hit_are_checked_for_misspellings(tmp_path):
    # Gloo's (issue 41: GLOO_SOCKET_IFNAM was not flagged while NCCL_P2P_DISABEL was), torch's
    # NCCL watchdog and the CUDA runtime's
    snap = _cap(tmp_path, {"GLOO_SOCKET_IFNAM": "eth0", "TORCH_NCCL_BLOCKNG_WAIT": "1",
                           "CUDA_VISIBLE_DEVICE": "0", "GLOO_SOCKET_IFNAME": "eth0"})
    found = {f.path[-1]: f.message for f in check(snap).findings
             if f.kind == "misspelled-variable"}
    assert set(found) == {"GLOO_SOCKET_IFNAM", "TORCH_NCCL_BLOCKNG_WAIT", "CUDA_VISIBLE_DEVICE"}
    assert found["GLOO_SOCKET_IFNAM"].endswith(
        "a misspelling of GLOO_SOCKET_IFNAME? (GLOO_SOCKET_IFNAME is set too)")
    assert "a misspelling of TORCH_NCCL_BLOCKING_WAIT?" in found["TORCH_NCCL_BLOCKNG_WAIT"]


def test_a_name_the_program_read_is_known(tmp_path):
    snap = _cap(tmp_path, {"NCCL_P2P_DISABEL": "1"})
    runtime = {"traced": True, "env": {"NCCL_P2P_DISABEL": {"set": True, "reads": 1,
                                                             "python": True}}}
    snap = snap.replace(sections={**snap.sections, "runtime": runtime})
    assert check(snap).findings == ()


def test_shadowed_import_from_the_runtime_section(tmp_path):
    snap = _cap(tmp_path)
    pkgs: dict[str, Any] = dict(snap["packages"])
    pkgs["distributions"] = {**pkgs["distributions"],
                             "fastfmt": {"version": "2.1.0", "location": "/venv/site-packages"}}
    runtime = {"traced": True, "modules": {"fastfmt": {
        "file": "/src/checkout/fastfmt/__init__.py", "origin": "pythonpath"}}}
    snap = snap.replace(sections={**snap.sections, "packages": pkgs, "runtime": runtime})
    (f,) = check(snap).findings
    assert f.kind == "shadowed-import"
    assert f.message == ("fastfmt was imported from /src/checkout/fastfmt/__init__.py "
                         "(pythonpath), not from the installed fastfmt 2.1.0 in "
                         "/venv/site-packages")


def test_cli_exit_status_and_formats(cli_invoke, tmp_path):
    clean = _cap(tmp_path).save(tmp_path / "clean.toml")
    bad = _cap(tmp_path, {"NCCL_P2P_DISABEL": "1"}).save(tmp_path / "bad.toml")
    assert cli_invoke(["check", str(clean.path)], expect=0).stdout.startswith(
        "runsnap check: no findings")
    doc = json.loads(cli_invoke(["check", "--format", "json", str(bad.path)], expect=1).stdout)
    assert doc["format"] == "runsnap-check/1" and doc["count"] == 1
    assert doc["findings"][0]["path"] == ["env", "NCCL_P2P_DISABEL"]
    md = cli_invoke(["check", "--format", "markdown", str(bad.path)], expect=1).stdout
    assert md.startswith("### runsnap check: 1 finding\n\n1. **misspelled-variable** (90): ")
    err = cli_invoke(["check", str(tmp_path / "missing.toml")], expect=2).stderr
    assert err.startswith("runsnap: ") and len(err.strip().splitlines()) == 1


def test_diff_shows_the_findings_one_side_does_not_share(tmp_path):
    a = _cap(tmp_path, {"NCCL_IB_DISABLE": "1"})
    b = _cap(tmp_path, {"NCCL_IB_DISABLE": "true"})
    report = compare(a, b)
    d = next(d for d in report.counted if d.key == "NCCL_IB_DISABLE")
    assert [(r.section, r.change) for r in d.related] == [("check", "added")]
    assert d.related[0].reason.startswith("runsnap check finds this in B only: "
                                          "NCCL_IB_DISABLE='true': its reader")
    assert d.score >= 89


@pytest.mark.parametrize("cols", [60, 80, 1000])
def test_text_is_wrapped_to_the_terminal(cli_invoke, tmp_path, monkeypatch, cols):
    """A finding's message and details run to the width and go on, indented, on the next
    lines; nothing is lost (without the line breaks and indents it is the unwrapped text)."""
    snap = _cap(tmp_path, argv=_spec("kimi-k2.5-target", "kimi-k2.5-eagle3-draft"))
    path = snap.save(tmp_path / "s.toml").path
    monkeypatch.delenv("COLUMNS", raising=False)
    whole = cli_invoke(["check", str(path)], expect=1).stdout
    monkeypatch.setenv("COLUMNS", str(cols))
    wrapped = cli_invoke(["check", str(path)], expect=1).stdout
    assert all(len(line) <= cols for line in wrapped.splitlines())
    assert "".join(wrapped.split()) == "".join(whole.split())
    assert (len(wrapped.splitlines()) > len(whole.splitlines())) == (cols < 1000)


def test_names_a_family_rule_or_wandb_declares_need_no_misspelling_search(tmp_path):
    """A torchrun or venv launch sets variables a family rule names itself (``MASTER_ADDR``,
    ``VIRTUAL_ENV``) or W&B declares (``WANDB_MODE``): real names, so the guard builds no
    index of near misses for them (it did for nearly every launch), and a real misspelling
    beside them is still found."""
    from runsnap.knowledge import env as knowledge

    real = {"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500", "WORLD_SIZE": "2",
            "VIRTUAL_ENV": str(tmp_path), "WANDB_MODE": "offline", "WANDB_PROJECT": "p"}
    snap = _cap(tmp_path, env=real)
    knowledge._known_index.cache_clear()
    assert not check(snap).findings
    assert knowledge._known_index.cache_info().currsize == 0
    typo = _cap(tmp_path, env={**real, "NCCL_P2P_DISABEL": "1"})
    assert [f.kind for f in check(typo).findings] == ["misspelled-variable"]
