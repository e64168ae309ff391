"""Config fields read during the run (``[runtime] config_reads``): the tracing hook watches a
model library's config class, so a field has run evidence when both runs exit 0.

The library here is a package named ``transformers`` written into the test's folder, with the
shape of the real one (``configuration_utils.PreTrainedConfig`` with an ``attribute_map`` of
aliases, its own ``__getattribute__``, a constructor that validates every field, ``to_dict``,
``__repr__``, and a model config subclass in another module); when the real transformers is
importable, it is traced too.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from runsnap.capturing import run
from runsnap.diffing import compare
from runsnap.diffing.evidence import gather
from tests.tracing.conftest import child_env

CONFIGURATION_UTILS = '''
import json, os

class PreTrainedConfig:
    attribute_map = {}

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            setattr(self, key, value)
        for key in list(self.__dict__):  # validation reads every field
            getattr(self, key)

    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)

    @classmethod
    def from_pretrained(cls, folder):
        with open(os.path.join(folder, "config.json")) as f:
            return cls(**json.load(f))

    def to_dict(self):
        return {k: getattr(self, k) for k in self.__dict__}

    def __repr__(self):
        return type(self).__name__ + json.dumps(self.to_dict())

    @property
    def use_return_dict(self):
        return True
'''

TOY = '''
from transformers.configuration_utils import PreTrainedConfig

class ToyConfig(PreTrainedConfig):
    attribute_map = {"num_attention_heads": "n_head"}
'''

PROGRAM = '''
import sys
from transformers.models_toy import ToyConfig
cfg = ToyConfig.from_pretrained(sys.argv[1])
repr(cfg); cfg.to_dict(); cfg.use_return_dict
print("score", 10 * cfg.num_attention_heads + cfg.vocab_size % 7)
print(getattr(cfg, "not_set_yet", "default"))
try:
    cfg.missing
except AttributeError as exc:
    print("AttributeError", exc)
'''


def _library(root: Path) -> Path:
    lib = root / "lib" / "transformers"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("")
    (lib / "configuration_utils.py").write_text(textwrap.dedent(CONFIGURATION_UTILS))
    (lib / "models_toy.py").write_text(textwrap.dedent(TOY))
    (root / "prog.py").write_text(textwrap.dedent(PROGRAM))
    return lib.parent


def _model(root: Path, name: str, **fields: object) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(fields))
    return folder


def _launch(root: Path, model: Path, name: str, trace: bool = True):
    env = child_env(PYTHONPATH=str(root / "lib"))
    return run([sys.executable, str(root / "prog.py"), str(model)], env=env, cwd=root,
               output=root / f"{name}.toml", trace=trace)


def test_fields_the_program_reads_are_recorded_and_the_configs_own_reads_are_not(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    _library(tmp_path)
    model = _model(tmp_path, "m", n_head=4, vocab_size=100, dropout=0.1)
    traced = _launch(tmp_path, model, "traced")
    out_traced = capfd.readouterr().out
    bare = _launch(tmp_path, model, "bare", trace=False)
    assert capfd.readouterr().out == out_traced  # the program sees what it would see
    assert traced.exit_status == bare.exit_status == 0
    assert "score 42" in out_traced and "AttributeError" in out_traced
    runtime = traced.snapshot["runtime"]
    # the alias read as the field it stands for; dropout only read by validation, repr, to_dict
    assert runtime["config_reads"] == ["n_head", "vocab_size"]


def test_a_field_read_gives_evidence_when_both_runs_exit_0(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    _library(tmp_path)
    good = _launch(tmp_path, _model(tmp_path, "a", n_head=4, vocab_size=100, dropout=0.1), "a")
    bad = _launch(tmp_path, _model(tmp_path, "b", n_head=2, vocab_size=100, dropout=0.3), "b")
    capfd.readouterr()
    assert good.exit_status == bad.exit_status == 0
    diffs = [d for d in compare(good.snapshot, bad.snapshot).differences
             if d.section == "models"]
    keys = {d.key.partition(": ")[2]: d for d in diffs}
    assert set(keys) >= {"n_head", "dropout"}
    ev = gather(diffs, good.snapshot, bad.snapshot)
    read = ev[("models", keys["n_head"].key)]
    assert read.kind == "read" and "n_head" in read.sentence and "A and B" in read.sentence
    assert ("models", keys["dropout"].key) not in ev  # never read by the program


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                    reason="the real transformers is not installed here")
def test_the_real_transformers_config(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "prog.py").write_text(textwrap.dedent('''
        import sys
        from transformers import AutoConfig, GPT2Config
        GPT2Config(n_head=4).save_pretrained(sys.argv[1])
        cfg = AutoConfig.from_pretrained(sys.argv[1])
        repr(cfg)
        print(cfg.num_attention_heads)
    '''))
    env = child_env(HF_HUB_OFFLINE="1", PYTHONPATH=os.pathsep.join(sys.path[1:]))
    record = run([sys.executable, str(tmp_path / "prog.py"), str(tmp_path / "m")], env=env,
                 cwd=tmp_path, output=tmp_path / "s.toml", trace=True)
    capfd.readouterr()
    assert record.exit_status == 0
    assert record.snapshot["runtime"]["config_reads"] == ["n_head"]
