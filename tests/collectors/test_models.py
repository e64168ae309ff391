"""[models]: model directories and Hugging Face cache repo ids found in the arguments."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import runsnap
from tests.conftest import asset, run_runsnap

TARGET = asset("models", "kimi-k2.5-target")
DRAFT = asset("models", "kimi-k2.5-eagle3-draft")


def models_of(argv: list[str], cwd: Path, env: dict[str, str] | None = None,
              **kw: Any) -> dict[str, Any]:
    env = env or {"PATH": os.environ["PATH"], "HOME": str(cwd)}
    return dict(runsnap.capture(argv, env=env, cwd=cwd, **kw)["models"])


def test_model_directories_in_the_arguments(tmp_path: Path) -> None:
    argv = ["python", "-m", "sglang.launch_server", "--model-path", str(TARGET),
            "--speculative-algorithm", "EAGLE3", f"--speculative-draft-model-path={DRAFT}"]
    section = models_of(argv, tmp_path)
    assert section["errors"] == []
    models = section["models"]
    assert list(models) == ["--model-path", "--speculative-draft-model-path"]
    target = models["--model-path"]
    assert target["path"] == str(TARGET)
    assert target["config"] == json.loads((TARGET / "config.json").read_text())
    assert target["config"]["text_config"]["max_position_embeddings"] == 262144
    assert target["weights"] == {
        "model-00001-of-00002.safetensors": 360, "model-00002-of-00002.safetensors": 352}
    assert target["weights_bytes"] == 712
    assert target["files_sha256"] == {
        name: hashlib.sha256((TARGET / name).read_bytes()).hexdigest()
        for name in ("generation_config.json", "model.safetensors.index.json",
                     "tokenizer_config.json")}
    draft = models["--speculative-draft-model-path"]
    assert draft["config"]["max_position_embeddings"] == 131072
    assert draft["weights_count"] == 1


def test_relative_paths_positional_and_the_same_model_twice(tmp_path: Path) -> None:
    shutil.copytree(TARGET, tmp_path / "m")
    models = models_of(["serve", "m", "--model", "./m"], tmp_path)["models"]
    assert list(models) == ["argv[1]"]
    assert models["argv[1]"]["sources"] == ["argv[1]", "--model"]
    assert models["argv[1]"]["real_path"] == str(tmp_path / "m")


def test_hugging_face_repo_id_resolves_in_the_local_cache(tmp_path: Path) -> None:
    cache = tmp_path / "hf" / "hub"
    repo = cache / "models--moonshotai--Kimi-K2.5"
    sha = "095f58a51c4ca8e61b66ec108d86f223f8d559ce"
    blobs, snap = repo / "blobs", repo / "snapshots" / sha
    blobs.mkdir(parents=True)
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(sha)
    for name in ("config.json", "model-00001-of-00002.safetensors"):
        data = (TARGET / name).read_bytes()
        blob = blobs / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snap / name).symlink_to(os.path.relpath(blob, snap))
    env = {"PATH": os.environ["PATH"], "HF_HOME": str(tmp_path / "hf")}
    models = models_of(["vllm", "serve", "moonshotai/Kimi-K2.5"], tmp_path, env)["models"]
    m = models["argv[2]"]
    assert m["repo_id"] == "moonshotai/Kimi-K2.5"
    assert m["revision"] == sha
    assert m["path"] == str(snap)
    assert m["config"]["architectures"] == ["KimiK25ForConditionalGeneration"]
    assert m["weights"] == {"model-00001-of-00002.safetensors": 360}
    # an unknown repo id is just an argument; --model with one is an error entry
    section = models_of(["x", "org/unknown"], tmp_path, env, models=["org/unknown"])
    assert section["models"] == {}
    assert "org/unknown (runsnap --model): no such directory" in section["errors"][0]


def test_missing_and_unreadable_model_paths_are_recorded(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    section = models_of(["serve", "--model-path", str(broken)], tmp_path,
                        models=[str(tmp_path / "gone")])
    assert section["errors"] == [
        f"{tmp_path / 'gone'} (runsnap --model): no such directory, nor a repo id in the "
        f"Hugging Face cache at {tmp_path / '.cache/huggingface/hub'}"]
    m = section["models"]["--model-path"]
    assert "config" not in m
    assert m["errors"][0].startswith("config.json: Expecting property name")


def test_json_nulls_in_configs_round_trip_through_the_file(tmp_path: Path) -> None:
    snap = runsnap.capture(["serve", str(DRAFT)], env={"PATH": os.environ["PATH"]}, cwd=tmp_path,
                           output=tmp_path / "s.toml")
    loaded = runsnap.load(tmp_path / "s.toml")
    assert loaded == snap
    assert loaded["models"]["models"]["argv[1]"]["config"]["rope_scaling"] is None


def test_an_argument_that_is_no_path_never_breaks_the_collector(tmp_path: Path) -> None:
    # "~abc" names a user that does not exist: expanding it fails, as pathlib's does; it is
    # no model, and every other model is still recorded
    argv = ["python", "serve.py", "--foo", "~abc", "--bar=~nosuchuser/x", "~nobody/m",
            "--model-path", str(TARGET)]
    section = models_of(argv, tmp_path, models=["~nosuchuser/model", str(DRAFT)])
    assert list(section["models"]) == ["runsnap --model #2", "--model-path"]
    assert section["errors"] == [
        "~nosuchuser/model (runsnap --model #1): cannot be resolved: "
        "Could not determine home directory."]


def test_side_files_named_like_secrets_keep_their_digests(tmp_path: Path) -> None:
    """A model folder as Kimi-K2.5 ships it holds ``tiktoken.model`` (tiktoken's BPE ranks:
    a base64 token and its rank a line) and ``tokenization_kimi.py``: file names, not
    variable names. Their digests are written as computed, and nothing is said redacted; a
    token in the environment of the same capture still is."""
    model = tmp_path / "Kimi-K2.5"
    shutil.copytree(TARGET, model)
    (model / "tiktoken.model").write_text(
        "".join(f"{t} {i}\n" for i, t in enumerate(["IQ==", "Ig==", "Iw==", "JA==", "dGhl"])))
    (model / "tokenization_kimi.py").write_text(
        "import tiktoken\n\nclass TikTokenTokenizer:\n    vocab_files_names = "
        "{'vocab_file': 'tiktoken.model'}\n")
    (model / "special_tokens_map.json").write_text('{"bos_token": "[BOS]"}\n')
    token = "hf_" + "Zq8vLm3nRt5wXy7Q4pK2sD9fGh1JkL0MnB"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "HF_TOKEN": token}
    snap = runsnap.capture(["python", "-m", "sglang.launch_server", "--model-path", str(model)],
                           env=env, cwd=tmp_path, output=tmp_path / "s.toml")
    files = runsnap.load(tmp_path / "s.toml")["models"]["models"]["--model-path"]["files_sha256"]
    assert files == {f.name: hashlib.sha256(f.read_bytes()).hexdigest()
                     for f in model.iterdir() if f.suffix in (".json", ".model", ".py")
                     and f.name != "config.json"}
    assert "tiktoken.model" in files and "tokenization_kimi.py" in files
    assert not [w for w in snap.meta.get("redacted", []) if w.startswith("models")]
    assert token not in (tmp_path / "s.toml").read_text()
    assert "env.vars.HF_TOKEN" in snap.meta["redacted"]


def test_a_config_field_of_an_unusual_type_is_the_models_not_a_bad_snapshot(
        tmp_path: Path) -> None:
    """A config.json is copied whole, as the file holds it: ``"model_type": 7`` or one
    architecture written as a string is the model's own; the snapshot runsnap wrote loads,
    shows the model and diffs (it was refused as malformed: "expected array, got string")."""
    model = tmp_path / "odd-model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(
        {"architectures": "LlamaForCausalLM", "model_type": 7, "hidden_size": 8}))
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    for name in ("a", "b"):
        runsnap.capture(["python", "serve.py", "--model-path", str(model)], env=env,
                        cwd=tmp_path, output=tmp_path / f"{name}.toml")
    snap = runsnap.load(tmp_path / "a.toml")
    assert snap.records.models.models["--model-path"].config.model_type == 7
    done = run_runsnap("show", "a.toml", cwd=tmp_path)
    assert done.returncode == 0 and "LlamaForCausalLM, 0 weight files" in done.stdout, done.stderr
    assert run_runsnap("diff", "a.toml", "b.toml", cwd=tmp_path).returncode in (0, 1)
