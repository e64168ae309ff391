"""Every difference carries its locator (``path``: the section, then the keys inside it), the
JSON report carries it, and --ignore / priority rules match it."""

from __future__ import annotations

import json
import sys

from runsnap.diffing import compare, compare_many
from runsnap.diffing.rules import RankContext

from .conftest import counted, git
from .test_models_system_outcome import SERVE, edit_config


def paths(report) -> dict[str, tuple[str, ...]]:
    """``section key`` -> path, for every difference (hidden ones and consequences grouped
    under a cause too)."""
    out: dict[str, tuple[str, ...]] = {}
    todo = list(report.differences)
    while todo:
        d = todo.pop()
        out[d.where] = d.path
        todo += d.related
    return out


def test_env_and_command_paths(cap):
    a = cap({"NCCL_ALGO": "Ring"}, argv=[sys.executable, "-m", "srv", "--tp", "8", "x.yaml"])
    b = cap({"NCCL_ALGO": "Tree", "SGLANG_NEW": "1"},
            argv=[sys.executable, "-m", "srv", "--tp", "4", "--flag=1", "y.yaml"])
    found = paths(compare(a, b))
    assert found["env NCCL_ALGO"] == ("env", "NCCL_ALGO")
    assert found["env SGLANG_NEW"] == ("env", "SGLANG_NEW")
    assert found["command --tp"] == ("command", "options", "--tp")
    assert found["command --flag"] == ("command", "options", "--flag")
    assert found["command argument 3"] == ("command", "positionals", "3")
    other = compare(a, cap({"NCCL_ALGO": "Ring"},
                           argv=["/bin/sh", "-m", "srv", "--tp", "8", "x.yaml"]))
    assert paths(other)["command program"] == ("command", "program")
    shorter = compare(a, cap({"NCCL_ALGO": "Ring"}, argv=[sys.executable, "-m", "srv"]))
    assert paths(shorter)["command arguments"] == ("command", "argv")


def test_model_config_paths(cap, model_dir):
    a_dir, b_dir = model_dir("a"), model_dir("b")

    def change(cfg):
        cfg["text_config"]["max_position_embeddings"] = 131072
        cfg["architectures"][0] = "Other"

    edit_config(b_dir, change)
    (b_dir / "tokenizer_config.json").write_text('{"model_max_length": 131072}')
    (b_dir / "extra.safetensors").write_bytes(b"\0" * 8)
    found = paths(compare(cap(argv=[*SERVE, str(a_dir)]), cap(argv=[*SERVE, str(b_dir)])))
    src = "--model-path"
    assert found[f"models {src}: text_config.max_position_embeddings"] == (
        "models", src, "config", "text_config", "max_position_embeddings")
    assert found[f"models {src}: architectures[0]"] == (
        "models", src, "config", "architectures", "0")
    assert found[f"models {src}: file tokenizer_config.json"] == (
        "models", src, "files", "tokenizer_config.json")
    assert found[f"models {src}: weights extra.safetensors"] == (
        "models", src, "weights", "extra.safetensors")


def test_git_paths(cap, repo):
    a = cap(cwd=repo)
    (repo / "app.py").write_text("print('changed')\n")
    (repo / "notes.txt").write_text("new\n")
    b = cap(cwd=repo)
    git(repo, "commit", "-qam", "second")
    c = cap(cwd=repo)
    found = {**paths(compare(a, b)), **paths(compare(a, c))}
    name = next(iter(a["git"]["repos"]))
    assert found[f"git {name}.dirty"] == ("git", name, "dirty")
    assert found[f"git {name}: app.py"] == ("git", name, "diff", "app.py")
    assert found[f"git {name}: notes.txt"] == ("git", name, "untracked", "notes.txt")
    assert found[f"git {name}.commit"] == ("git", name, "commit")


def test_package_paths(cap):
    a = cap()
    pk = dict(a["packages"])
    dists = {k: dict(v) for k, v in pk["distributions"].items()}
    name = next(iter(dists))
    dists[name]["location"] = "/elsewhere/site-packages"
    dists["torch"] = {"version": "2.9.1", "location": "/x"}
    b = a.replace(sections={**a.sections, "packages": {**pk, "distributions": dists}})
    found = paths(compare(a, b))
    assert found["packages torch"] == ("packages", "torch")
    assert found[f"packages {name}.location"] == ("packages", name, "location")


def test_paths_are_in_the_json_report_and_the_n_way_rows(cap):
    a, b, c = cap({"X_A": "1"}), cap({"X_A": "2"}), cap({"X_A": "1"})
    doc = compare(a, b).to_dict()
    assert [d["path"] for d in doc["differences"]] == [["env", "X_A"]]
    assert json.loads(json.dumps(doc))["differences"][0]["path"] == ["env", "X_A"]
    rows = compare_many([a, b, c]).to_dict()["differences"]
    assert [r["path"] for r in rows] == [["env", "X_A"]]


def test_rules_match_path_globs(cap, model_dir):
    a_dir, b_dir = model_dir("a"), model_dir("b")
    edit_config(b_dir, lambda cfg: cfg["text_config"].update(max_position_embeddings=1))
    a = cap({"NCCL_ALGO": "Ring", "MY_X": "1"}, argv=[*SERVE, str(a_dir)])
    b = cap({"NCCL_ALGO": "Tree", "MY_X": "2"}, argv=[*SERVE, str(b_dir)])
    plain = compare(a, b)
    assert any(s == "models" for s, _k, _c in counted(plain))
    report = compare(a, b, rules=RankContext(ignore=("models.*.config.*", "command.options.*"),
                                       priority=("env.MY_*",)))
    assert [d.path for d in report.counted if d.path[0] == "command"
            or d.path[2:3] == ("config",)] == []
    hidden = [d for d in report.hidden if d.section == "models"]
    assert hidden and all("'models.*.config.*'" in d.reason for d in hidden)
    top = report.counted[0]
    assert (top.path, top.score) == (("env", "MY_X"), 90)
    assert "priority rule 'env.MY_*'" in top.reason
