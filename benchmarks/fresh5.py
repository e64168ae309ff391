"""A fifth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``docs/ranking.md``,
``docs/diff.md``) nor its capture and tracing code (``runsnap/launch/``, ``runsnap/tracing/``,
``runsnap/probe/``): only the incident format (benchmarks/incidents.py), how third-party incidents
are written (benchmarks/thirdparty.py, benchmarks/fresh.py ... fresh4.py: their docstrings and
incident names, to avoid repeating them), how they are run and scored (benchmarks/corpus.py,
benchmarks/diagnosis.py), the README, the snapshot reference (docs/schema.md) for the names of
the keys and docs/launchers.md. They form the corpus's seventh half, ``fresh5``; report it, never
change the ranker to fit it, and never change an incident after seeing its score (except to
repair an incident whose bad launch does not fail for the planted reason, said in the commit).

Real workloads, the way an engineer hits them, with libraries and mechanisms the earlier batches
did not use:

- PEFT: LoRA fine-tuning of a tiny Llama whose ``configs/lora.json`` got a GPT-2 recipe's
  ``target_modules`` (an uncommitted edit), and the evaluation of a saved LoRA adapter whose
  ``adapter_config.json`` was replaced by a colleague's copy (``lora_alpha`` 8 -> 32: the
  adapter's scale, and so the loss, moves);
- sentence-transformers retrieval of a small FAQ with a locally saved model: a
  ``--max-seq-length`` copied from a speed benchmark truncates the documents (recall moves), and
  the same evaluation from both shells (noise);
- gradient-boosted trees: an XGBoost booster scoring a feature file that was re-exported with a
  renamed column ("feature_names mismatch"), and LightGBM whose feature list lost a column in an
  uncommitted edit beside an unrelated dirty notes file;
- a Flask scoring API under gunicorn, hit by a smoke-test client in the same launch:
  ``GUNICORN_CMD_ARGS`` in the container's shell carries ``--timeout 2`` and the first request,
  which loads features for ~3 s, has its worker killed;
- PyTorch Lightning reads ``PL_TRAINER_<ARGUMENT>`` variables as the Trainer's defaults: a
  ``PL_TRAINER_LIMIT_TRAIN_BATCHES`` left from a smoke-test script trains on a quarter of the
  data (the other shell's ``PL_TRAINER_ENABLE_PROGRESS_BAR`` is overridden by the program);
- ``TORCH_LOGS`` with a misspelt artifact name (``recompile``), which torch parses when it is
  imported: a plain CPU training job dies at ``import torch``;
- onnxruntime serving a model file that was re-exported without a dynamic batch axis ("Got
  invalid dimensions for input"); DuckDB data prep whose SQL file was edited (both runs fail:
  the feature-store mount is missing; the edited one already fails at a CAST); a project venv
  whose pydantic was downgraded to 1.10 between the runs by an old requirements file;
- a BERT intent classifier whose ``tokenizer_config.json`` in the model store now pads on the
  left (accuracy and confidence move); a multiprocessing-pool tokenizer job run with
  ``--start-method spawn`` (from a laptop's script), where the workers no longer see the
  vocabulary the parent loaded; sqlite data prep from both shells (``SQLITE_TMPDIR``,
  ``TMPDIR``, locale: noise); a scikit-learn evaluation whose dev set, never committed, was
  regenerated between the runs.

The shells are :func:`startup_shell`: user gabe at a small ML company, one shell an SSH login
(zsh, conda) on a bare-metal GPU box, the other ``docker exec`` into the team's dev container,
each with the tuning variables of its own scripts (``NCCL_*``, ``CUDA_*``, ``TORCH_*``, ``HF_*``,
``WANDB_*``, ``TOKENIZERS_PARALLELISM``) that change nothing on this CPU-only build; the thread
counts that change float reductions are pinned alike.

Kinds: ``fail`` (the good run exits 0, the bad one fails), ``metric`` (both exit 0 and only a
printed ``key=value`` metric differs), ``both-fail`` (both fail, differently), ``noise`` (nothing
planted: success is "nothing counts").
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from benchmarks.incidents import Incident, Launch, _git, _write
from benchmarks.thirdparty import Unavailable, _incident, python_with


def startup_shell(n: int, home: Path) -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1) of user gabe: 0 an SSH login (zsh, conda) on a
    bare-metal GPU box, 1 ``docker exec`` into the team's dev container; each with the tuning
    variables its own scripts export."""
    path = os.environ.get("PATH", os.defpath)
    env = {
        "HOME": str(home), "USER": "gabe", "LOGNAME": "gabe", "PYTHONUNBUFFERED": "1",
        "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2",
        "OPENBLAS_NUM_THREADS": "2",
    }
    if n % 2 == 0:  # SSH login, zsh with conda
        env.update({
            "PATH": f"/opt/conda/condabin:{path}", "SHELL": "/usr/bin/zsh", "LANG": "en_US.UTF-8",
            "TERM": "xterm-256color", "SHLVL": "1", "OLDPWD": str(home / "src"),
            "SSH_CLIENT": "10.20.0.14 60122 22", "SSH_CONNECTION": "10.20.0.14 60122 10.20.3.9 22",
            "SSH_TTY": "/dev/pts/2", "XDG_SESSION_ID": "1187", "XDG_RUNTIME_DIR": "/run/user/1004",
            "MOTD_SHOWN": "pam", "ZSH": str(home / ".oh-my-zsh"), "PAGER": "less", "LESS": "-R",
            "CONDA_DEFAULT_ENV": "ml", "CONDA_PREFIX": "/opt/conda/envs/ml", "CONDA_SHLVL": "1",
            "CONDA_EXE": "/opt/conda/bin/conda", "_": "/usr/bin/ssh",
            "NCCL_SOCKET_IFNAME": "bond0", "NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_IB_GID_INDEX": "3",
            "CUDA_MODULE_LOADING": "LAZY", "TORCH_CUDA_ARCH_LIST": "8.0;9.0",
            "WANDB_MODE": "offline", "WANDB_PROJECT": "support-bot",
            "TOKENIZERS_PARALLELISM": "false", "HF_HUB_DOWNLOAD_TIMEOUT": "30",
        })
    else:  # docker exec into the dev container
        env.update({
            "PATH": f"/usr/local/nvidia/bin:/usr/local/cuda/bin:{path}", "LC_ALL": "C.UTF-8",
            "LANG": "C.UTF-8", "TERM": "xterm", "SHLVL": "1", "HOSTNAME": "3f9c2a1be07d",
            "container": "docker", "DEBIAN_FRONTEND": "noninteractive",
            "NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
            "NVIDIA_REQUIRE_CUDA": "cuda>=12.4 brand=tesla,driver>=470,driver<471",
            "CUDA_VERSION": "12.4.1", "LD_LIBRARY_PATH": "/usr/local/nvidia/lib:/usr/local/nvidia/lib64",
            "PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PYTHONDONTWRITEBYTECODE": "1", "_": "/usr/bin/docker",
            "NCCL_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "INFO", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
            "TORCH_CUDA_ARCH_LIST": "9.0", "TORCHINDUCTOR_CACHE_DIR": "/workspace/.inductor",
            "HF_HUB_ENABLE_HF_TRANSFER": "1", "WANDB_MODE": "disabled",
            "TOKENIZERS_PARALLELISM": "true", "MALLOC_ARENA_MAX": "2",
        })
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None
            ) -> tuple[dict[str, str], dict[str, str]]:
    home = d / "home"
    home.mkdir(parents=True, exist_ok=True)
    return {**startup_shell(0, home), **(good or {})}, {**startup_shell(1, home), **(bad or {})}


def _repo(path: Path, files: dict[str, str]) -> Path:
    """A git repository holding ``files``, all committed."""
    for name, text in files.items():
        _write(path / name, text)
    _git(path, "init", "-q")
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "initial import")
    return path


def _build(py: str, code: str, cwd: Path) -> None:
    """Run a set-up step (save a model, train a booster) with the corpus interpreter."""
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(cwd), "HF_HUB_OFFLINE": "1",
           "OMP_NUM_THREADS": "2", "TOKENIZERS_PARALLELISM": "false"}
    res = subprocess.run([py, "-c", textwrap.dedent(code)], cwd=cwd, env=env,
                         capture_output=True, text=True, check=False, timeout=300)
    if res.returncode:
        raise RuntimeError(f"set-up step failed in {cwd}: {res.stderr[-800:]}")


WORDS = ("refund invoice password login shipping delay order cancel account email address "
         "billing charge card plan upgrade downgrade export report api key token limit quota "
         "team invite member role admin delete restore backup sync mobile desktop browser "
         "error crash slow timeout network proxy vpn region language timezone").split()

# --------------------------------------------------------------------------- PEFT

TINY_LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 128,
              "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 4,
              "max_position_embeddings": 128, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
              "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32"}

SFT_TEXT = "\n".join(f"user: my {a} has a {b} problem. agent: check the {c} page and retry."
                     for a, b, c in zip(WORDS, WORDS[7:] + WORDS[:7], WORDS[3:] + WORDS[:3],
                                        strict=True))

LORA_SFT = """
    \"\"\"LoRA fine-tuning (PEFT) of a small causal LM built from the model folder's config.\"\"\"
    import argparse
    import json

    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM


    def batches(path, vocab, block=32, rows=8):
        ids = [1 + (ord(c) % (vocab - 1)) for c in open(path, encoding="utf-8").read()]
        return torch.tensor(ids[:rows * (block + 1)]).view(rows, block + 1)


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--lora-config", default="configs/lora.json")
        p.add_argument("--data", default="data/sft.txt")
        p.add_argument("--steps", type=int, default=6)
        p.add_argument("--lr", type=float, default=5e-3)
        p.add_argument("--output-dir", required=True)
        a = p.parse_args()
        torch.manual_seed(0)
        config = AutoConfig.from_pretrained(a.model_path)
        model = AutoModelForCausalLM.from_config(config)
        with open(a.lora_config) as f:
            lora = LoraConfig(task_type="CAUSAL_LM", **json.load(f))
        model = get_peft_model(model, lora)
        trainable, total = model.get_nb_trainable_parameters()
        print(f"trainable_params={trainable} total_params={total}")
        ids = batches(a.data, config.vocab_size)
        opt = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=a.lr)
        for step in range(a.steps):
            loss = model(input_ids=ids[:, :-1], labels=ids[:, :-1]).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
        print(f"train_loss={loss.item():.4f}")
        model.save_pretrained(a.output_dir)


    if __name__ == "__main__":
        main()
    """


def peft_lora_targets_edit(d: Path) -> Incident:
    """LoRA fine-tuning of a tiny Llama. Between the runs configs/lora.json got the
    ``target_modules`` of a GPT-2 recipe (``c_attn``, ``c_proj``: an uncommitted edit) and PEFT
    stops: "Target modules ... not found in the base model". The second run also writes to
    another output folder. Kind: fail."""
    py = python_with("torch", "transformers", "peft")
    lora = {"r": 8, "lora_alpha": 16, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}
    repo = _repo(d / "lora-sft", {
        "train_lora.py": LORA_SFT, "configs/lora.json": json.dumps(lora, indent=2) + "\n",
        "model/config.json": json.dumps(TINY_LLAMA, indent=2) + "\n",
        "data/sft.txt": SFT_TEXT + "\n", ".gitignore": "runs/\n"})

    def edit() -> None:
        (repo / "configs" / "lora.json").write_text(json.dumps(
            {**lora, "target_modules": ["c_attn", "c_proj"]}, indent=2) + "\n")

    good, bad = _shells(d)
    argv = (py, "train_lora.py", "--model-path", "model", "--steps", "6")
    return _incident(peft_lora_targets_edit,
                     Launch((*argv, "--output-dir", "runs/lora-1204"), good, repo),
                     Launch((*argv, "--output-dir", "runs/lora-1205"), bad, repo),
                     ("git", "lora-sft: configs/lora.json"), between=edit)


EVAL_ADAPTER = """
    \"\"\"Evaluate a saved LoRA adapter (PEFT) on top of its base model.\"\"\"
    import argparse
    import math

    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--base-model", required=True)
        p.add_argument("--adapter-path", required=True)
        p.add_argument("--data", default="data/eval.txt")
        a = p.parse_args()
        base = AutoModelForCausalLM.from_pretrained(a.base_model)
        model = PeftModel.from_pretrained(base, a.adapter_path).eval()
        vocab = base.config.vocab_size
        ids = [1 + (ord(c) % (vocab - 1)) for c in open(a.data, encoding="utf-8").read()]
        x = torch.tensor(ids[:8 * 33]).view(8, 33)
        with torch.no_grad():
            loss = model(input_ids=x, labels=x).loss.item()
        print(f"eval_loss={loss:.4f}")
        print(f"perplexity={math.exp(loss):.2f}")


    if __name__ == "__main__":
        main()
    """

MAKE_ADAPTER = """
    import json, torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, LlamaConfig
    torch.manual_seed(0)
    cfg = json.load(open("base/config.json"))
    base = AutoModelForCausalLM.from_config(LlamaConfig(**cfg))
    base.save_pretrained("base")
    model = get_peft_model(base, LoraConfig(task_type="CAUSAL_LM", r=4, lora_alpha=8,
                                            lora_dropout=0.0, target_modules=["q_proj", "v_proj"]))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_" in name:
                p.normal_(0.0, 0.6)
    model.save_pretrained("adapter")
    """


def peft_adapter_alpha_metric(d: Path) -> Incident:
    """A support bot's LoRA adapter is evaluated on top of its base model. Between the runs the
    adapter folder's adapter_config.json was replaced by a colleague's copy from an r=16 run
    (``lora_alpha`` 8 -> 32, the adapter's scale quadrupled); the weights are the same, the
    evaluation loss moves. Kind: metric."""
    py = python_with("torch", "transformers", "peft")
    store = d / "models"
    _write(store / "base" / "config.json", json.dumps(TINY_LLAMA, indent=2))
    _build(py, MAKE_ADAPTER, store)
    repo = d / "support-bot"
    shutil.copytree(store / "adapter", repo / "adapters" / "support-v3")
    _repo(repo, {"eval_adapter.py": EVAL_ADAPTER, "data/eval.txt": SFT_TEXT[::-1] + "\n"})
    conf = repo / "adapters" / "support-v3" / "adapter_config.json"

    def replace() -> None:
        cfg = json.loads(conf.read_text())
        cfg.update({"lora_alpha": 32})
        conf.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")

    good, bad = _shells(d)
    argv = (py, "eval_adapter.py", "--base-model", str(store / "base"),
            "--adapter-path", "adapters/support-v3")
    return _incident(peft_adapter_alpha_metric, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("git", "support-bot: adapters/support-v3/adapter_config.json"),
                     ("models", "--adapter-path: lora_alpha"),
                     ("models", "--adapter-path: file adapter_config.json"), between=replace)


# --------------------------------------------------------------------------- sentence-transformers

MAKE_ST_MODEL = """
    import json, os, torch
    from transformers import BertConfig, BertModel, BertTokenizerFast
    from sentence_transformers import SentenceTransformer, models
    words = json.load(open("words.json"))
    os.makedirs("hf", exist_ok=True)
    with open("hf/vocab.txt", "w") as f:
        f.write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\\n")
    BertTokenizerFast("hf/vocab.txt", do_lower_case=True).save_pretrained("hf")
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=5 + len(words), hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=2, intermediate_size=64,
                         max_position_embeddings=128)).save_pretrained("hf")
    st = SentenceTransformer(modules=[models.Transformer("hf", max_seq_length=128),
                                      models.Pooling(32, pooling_mode="mean")], device="cpu")
    st.save("out")
    """

RETRIEVAL_EVAL = """
    \"\"\"Retrieval evaluation of the FAQ embedding model (sentence-transformers).\"\"\"
    import argparse
    import json

    import numpy as np
    from sentence_transformers import SentenceTransformer


    def read(path):
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--queries", default="data/queries.jsonl")
        p.add_argument("--docs", default="data/faq.jsonl")
        p.add_argument("--batch-size", type=int, default=16)
        p.add_argument("--max-seq-length", type=int)
        a = p.parse_args()
        model = SentenceTransformer(a.model_path, device="cpu")
        if a.max_seq_length:
            model.max_seq_length = a.max_seq_length
        queries, docs = read(a.queries), read(a.docs)
        q = model.encode([r["text"] for r in queries], batch_size=a.batch_size,
                         normalize_embeddings=True, convert_to_numpy=True)
        dv = model.encode([r["text"] for r in docs], batch_size=a.batch_size,
                          normalize_embeddings=True, convert_to_numpy=True)
        order = np.argsort(-(q @ dv.T), axis=1)
        ids = np.array([r["id"] for r in docs])
        ranks = [int(np.where(ids[order[i]] == r["doc"])[0][0]) + 1
                 for i, r in enumerate(queries)]
        print(f"queries={len(queries)} docs={len(docs)}")
        print(f"recall@1={np.mean([r == 1 for r in ranks]):.3f}")
        print(f"recall@5={np.mean([r <= 5 for r in ranks]):.3f}")
        print(f"mrr={np.mean([1 / r for r in ranks]):.4f}")


    if __name__ == "__main__":
        main()
    """


def _faq_project(d: Path, py: str) -> Path:
    """The FAQ retrieval repository, and its embedding model saved under ``model/faq-mini``."""
    preamble = ("thank you for contacting support . our team reads every message and answers "
                "within one day . this article explains")
    docs, queries = [], []
    for i, (a, b, c) in enumerate(zip(WORDS, WORDS[5:] + WORDS[:5], WORDS[11:] + WORDS[:11],
                                      strict=True)):
        docs.append({"id": f"faq-{i:03d}", "text": f"{preamble} {a} {b} when {c} fails"})
        queries.append({"doc": f"faq-{i:03d}", "text": f"{c} {a} {b}"})
    words = sorted({w for r in docs + queries for w in r["text"].split()})
    build = d / "build-st"
    _write(build / "words.json", json.dumps(words))
    _build(py, MAKE_ST_MODEL, build)
    repo = d / "faq-search"
    shutil.copytree(build / "out", repo / "model" / "faq-mini")
    return _repo(repo, {
        "retrieval_eval.py": RETRIEVAL_EVAL,
        "data/faq.jsonl": "".join(json.dumps(r) + "\n" for r in docs),
        "data/queries.jsonl": "".join(json.dumps(r) + "\n" for r in queries)})


def sentence_max_seq_length_metric(d: Path) -> Incident:
    """The FAQ retrieval evaluation run again from the container with ``--max-seq-length 12``
    (copied from a latency benchmark's command line): the FAQ articles are cut after their
    common preamble, the part that tells them apart is lost, and recall drops. Kind: metric."""
    py = python_with("torch", "sentence_transformers")
    repo = _faq_project(d, py)
    good, bad = _shells(d)
    argv = (py, "retrieval_eval.py", "--model-path", "model/faq-mini", "--batch-size", "16")
    return _incident(sentence_max_seq_length_metric, Launch(argv, good, repo),
                     Launch((*argv, "--max-seq-length", "12"), bad, repo),
                     ("command", "--max-seq-length"))


def sentence_embed_noise(d: Path) -> Incident:
    """The same FAQ retrieval evaluation from both shells, which also differ in the Hugging
    Face and sentence-transformers cache folders (the model is a local folder: no cache is
    read), in TOKENIZERS_PARALLELISM and in hf_transfer's switch. Nothing planted. Kind: noise."""
    py = python_with("torch", "sentence_transformers")
    repo = _faq_project(d, py)
    home = d / "home"
    good, bad = _shells(d, {"SENTENCE_TRANSFORMERS_HOME": str(home / ".cache" / "st"),
                            "HF_HOME": str(home / ".cache" / "huggingface")},
                        {"HF_HOME": "/workspace/.hf", "HF_DATASETS_CACHE": "/workspace/.hf/ds"})
    argv = (py, "retrieval_eval.py", "--model-path", "model/faq-mini", "--batch-size", "16")
    return _incident(sentence_embed_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- gradient-boosted trees


def _churn_rows(seed: int, n: int, days_col: str = "days_since_login") -> str:
    """A CSV of churn features, made from a seeded generator."""
    rng = random.Random(seed)
    lines = [f"account_id,seats,tickets_30d,{days_col},monthly_spend,churned"]
    for i in range(n):
        seats, tickets, days = rng.randint(1, 40), rng.randint(0, 12), rng.randint(0, 90)
        spend = round(seats * rng.uniform(8, 30), 2)
        churned = int(days > 45 or tickets > 8 and seats < 5 or rng.random() < 0.05)
        lines.append(f"A{seed}{i:04d},{seats},{tickets},{days},{spend},{churned}")
    return "\n".join(lines) + "\n"


TRAIN_BOOSTER = """
    import pandas as pd, xgboost as xgb
    df = pd.read_csv("train.csv")
    X, y = df.drop(columns=["account_id", "churned"]), df["churned"]
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 3, "eta": 0.3,
                         "nthread": 2, "seed": 0}, xgb.DMatrix(X, label=y), num_boost_round=20)
    booster.save_model("churn.json")
    """

SCORE_CHURN = """
    \"\"\"Score this week's accounts with the churn booster (XGBoost).\"\"\"
    import argparse

    import pandas as pd
    import xgboost as xgb


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model", default="model/churn.json")
        p.add_argument("--features", default="data/features.csv")
        p.add_argument("--threshold", type=float, default=0.5)
        a = p.parse_args()
        booster = xgb.Booster()
        booster.load_model(a.model)
        df = pd.read_csv(a.features)
        X = df.drop(columns=["account_id", "churned"], errors="ignore")
        scores = booster.predict(xgb.DMatrix(X))
        print(f"accounts={len(df)}")
        print(f"at_risk={int((scores > a.threshold).sum())}")
        print(f"mean_score={scores.mean():.4f}")


    if __name__ == "__main__":
        main()
    """


def xgboost_feature_rename(d: Path) -> Incident:
    """The weekly churn scoring job. Between the runs data/features.csv was re-exported by the
    new version of the feature query (uncommitted), which renamed ``days_since_login`` to
    ``days_since_last_login`` and added this week's accounts; the booster was trained with
    feature names and XGBoost refuses: "feature_names mismatch". Kind: fail."""
    py = python_with("xgboost", "pandas")
    build = d / "build-xgb"
    _write(build / "train.csv", _churn_rows(1, 400))
    _build(py, TRAIN_BOOSTER, build)
    repo = d / "churn-scoring"
    _write(repo / "model" / "churn.json", (build / "churn.json").read_text())
    _repo(repo, {"score_churn.py": SCORE_CHURN, "data/features.csv": _churn_rows(2, 120)})

    def reexport() -> None:
        _write(repo / "data" / "features.csv", _churn_rows(3, 135, "days_since_last_login"))

    good, bad = _shells(d)
    argv = (py, "score_churn.py", "--threshold", "0.5")
    return _incident(xgboost_feature_rename, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("git", "churn-scoring: data/features.csv"), between=reexport)


FEATURES_PY = """
    \"\"\"Loan features: the columns the model sees.\"\"\"
    FEATURES = [
        "income",
        "debt",
        "utilization",
        "open_lines",
        "late_payments",
    ]


    def make_features(df):
        out = df.copy()
        out["utilization"] = out["balance"] / out["limit"]
        return out[FEATURES]
    """

TRAIN_LGB = """
    \"\"\"Train the default-risk model (LightGBM) and report validation AUC.\"\"\"
    import argparse

    import lightgbm as lgb
    import pandas as pd
    from sklearn.metrics import roc_auc_score

    from features import make_features


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--data", default="data/loans.csv")
        p.add_argument("--rounds", type=int, default=60)
        p.add_argument("--out", default="models/lgb.txt")
        a = p.parse_args()
        df = pd.read_csv(a.data)
        train, valid = df[df["month"] < 10], df[df["month"] >= 10]
        params = {"objective": "binary", "learning_rate": 0.1, "num_leaves": 15,
                  "min_data_in_leaf": 10, "num_threads": 2, "deterministic": True,
                  "force_row_wise": True, "seed": 1, "verbose": -1}
        model = lgb.train(params, lgb.Dataset(make_features(train), train["default"]),
                          num_boost_round=a.rounds)
        auc = roc_auc_score(valid["default"], model.predict(make_features(valid)))
        print(f"features={model.num_feature()}")
        print(f"val_auc={auc:.4f}")


    if __name__ == "__main__":
        main()
    """


def _loans(n: int) -> str:
    rng = random.Random(11)
    lines = ["month,income,debt,balance,limit,open_lines,late_payments,default"]
    for _ in range(n):
        income, limit = rng.randint(20, 200) * 1000, rng.randint(1, 30) * 1000
        balance = round(limit * rng.random(), 0)
        debt, lines_open, late = rng.randint(0, 80) * 1000, rng.randint(1, 12), rng.randint(0, 6)
        risk = 2.5 * balance / limit + late * 0.3 + debt / income - 1.8
        default = int(rng.random() < 1 / (1 + 2.718 ** (-3 * risk)))
        lines.append(f"{rng.randint(1, 12)},{income},{debt},{balance:.0f},{limit},{lines_open},"
                     f"{late},{default}")
    return "\n".join(lines) + "\n"


def lightgbm_feature_edit_metric(d: Path) -> Incident:
    """The default-risk model trained again after two uncommitted edits: ``utilization`` was
    commented out of FEATURES in features.py (while checking a leak) and notes/experiments.md
    got a paragraph. Only the first is imported; the validation AUC drops. Kind: metric."""
    py = python_with("lightgbm", "pandas", "sklearn")
    repo = _repo(d / "credit-risk", {
        "train_lgb.py": TRAIN_LGB, "features.py": FEATURES_PY, "data/loans.csv": _loans(900),
        "notes/experiments.md": "# Experiments\n\n- 11-28: num_leaves 31 -> 15, AUC flat.\n",
        ".gitignore": "models/\n"})

    def edit() -> None:
        text = (repo / "features.py").read_text()
        (repo / "features.py").write_text(text.replace('    "utilization",',
                                                       '    # "utilization",  # leak?'))
        with open(repo / "notes" / "experiments.md", "a") as f:
            f.write("- 12-05: is utilization leaking the label? try without it.\n")

    good, bad = _shells(d)
    argv = (py, "train_lgb.py", "--rounds", "60")
    return _incident(lightgbm_feature_edit_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "credit-risk: features.py"), between=edit)


# --------------------------------------------------------------------------- gunicorn, Lightning, torch

SCORING_APP = """
    \"\"\"The scoring API (Flask). Features for the accounts come from the feature store,
    fetched once, on the first request.\"\"\"
    import time

    from flask import Flask, jsonify, request

    app = Flask(__name__)
    _weights = {}


    def weights():
        if not _weights:
            time.sleep(3.0)  # the feature-store fetch: about 3 s from this region
            _weights.update({"seats": 0.02, "tickets_30d": 0.15, "days_since_login": 0.03})
        return _weights


    @app.get("/healthz")
    def healthz():
        return "ok"


    @app.post("/score")
    def score():
        w = weights()
        rows = request.get_json()["rows"]
        return jsonify(scores=[sum(w[k] * r.get(k, 0) for k in w) for r in rows])
    """

SMOKE = """
    \"\"\"Start the scoring API under gunicorn, send it a few requests, stop it.\"\"\"
    import argparse
    import json
    import os
    import socket
    import subprocess
    import sys
    import time
    import urllib.request


    def free_port():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]


    def post(url, rows):
        req = urllib.request.Request(url, data=json.dumps({"rows": rows}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=20) as r:
            return json.load(r)["scores"]


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--workers", type=int, default=1)
        p.add_argument("--requests", type=int, default=3)
        a = p.parse_args()
        port = free_port()
        gunicorn = os.path.join(os.path.dirname(sys.executable), "gunicorn")
        server = subprocess.Popen([gunicorn, "--workers", str(a.workers), "--bind",
                                   f"127.0.0.1:{port}", "app:app"])
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)
            rows = [{"seats": s, "tickets_30d": s % 7, "days_since_login": 3 * s}
                    for s in range(1, 9)]
            for i in range(a.requests):
                scores = post(f"http://127.0.0.1:{port}/score", rows)
            print(f"requests={a.requests} mean_score={sum(scores) / len(scores):.4f}")
        finally:
            server.terminate()
            server.wait(timeout=10)


    if __name__ == "__main__":
        main()
    """


def gunicorn_cmd_args_timeout(d: Path) -> Incident:
    """The scoring API's smoke test: it starts gunicorn and posts three requests. The
    container's shell exports ``GUNICORN_CMD_ARGS="--timeout 2 --graceful-timeout 2 ..."``
    (copied from the health-check service's unit), the login shell its own harmless one; the
    first request takes ~3 s to fetch features, the arbiter aborts the worker ("WORKER
    TIMEOUT"; the abort ends the request) and the client gets HTTP 500. Kind: fail."""
    py = python_with("flask", "gunicorn")
    if not (Path(py).parent / "gunicorn").exists():
        raise Unavailable(f"no gunicorn beside {py}")
    repo = _repo(d / "scoring-api", {"app.py": SCORING_APP, "smoke.py": SMOKE})
    good, bad = _shells(d, {"GUNICORN_CMD_ARGS": "--forwarded-allow-ips=10.0.0.0/8 --log-level info"},
                        {"GUNICORN_CMD_ARGS": "--timeout 2 --graceful-timeout 2 --log-level info "
                                              "--forwarded-allow-ips=*"})
    argv = (py, "smoke.py", "--requests", "3")
    return _incident(gunicorn_cmd_args_timeout, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("env", "GUNICORN_CMD_ARGS"))


LIGHTNING_FIT = """
    \"\"\"Fit a small regressor with PyTorch Lightning and report the validation loss.\"\"\"
    import argparse

    import pytorch_lightning as pl
    import torch
    from torch.utils.data import DataLoader, TensorDataset


    class Regressor(pl.LightningModule):
        def __init__(self, lr):
            super().__init__()
            self.lr = lr
            self.net = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(),
                                           torch.nn.Linear(32, 1))

        def training_step(self, batch, _):
            x, y = batch
            return torch.nn.functional.mse_loss(self.net(x).squeeze(-1), y)

        def validation_step(self, batch, _):
            x, y = batch
            self.log("val_loss", torch.nn.functional.mse_loss(self.net(x).squeeze(-1), y))

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=self.lr)


    def data(n, seed):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, 8, generator=g)
        return TensorDataset(x, torch.sin(x[:, 0]) + 0.5 * x[:, 1] * x[:, 2])


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--epochs", type=int, default=4)
        p.add_argument("--lr", type=float, default=1e-2)
        a = p.parse_args()
        pl.seed_everything(7, verbose=False)
        trainer = pl.Trainer(max_epochs=a.epochs, accelerator="cpu", devices=1, logger=False,
                             enable_checkpointing=False, enable_progress_bar=False,
                             enable_model_summary=False, deterministic=True)
        model = Regressor(a.lr)
        trainer.fit(model, DataLoader(data(256, 0), batch_size=32, shuffle=True),
                    DataLoader(data(128, 1), batch_size=64))
        print(f"steps={trainer.global_step}")
        print(f"val_loss={trainer.callback_metrics['val_loss'].item():.4f}")


    if __name__ == "__main__":
        main()
    """


def lightning_env_limit_batches_metric(d: Path) -> Incident:
    """Lightning reads ``PL_TRAINER_<ARGUMENT>`` variables as the Trainer's defaults. The
    container's shell still exports ``PL_TRAINER_LIMIT_TRAIN_BATCHES=0.25`` from a smoke-test
    script, so each epoch trains on a quarter of the batches and the validation loss moves; the
    login shell's ``PL_TRAINER_ENABLE_PROGRESS_BAR=0`` is read too, but the program passes that
    argument itself. Kind: metric."""
    py = python_with("torch", "pytorch_lightning")
    repo = _repo(d / "regress-pl", {"fit.py": LIGHTNING_FIT, ".gitignore": "lightning_logs/\n"})
    good, bad = _shells(d, {"PL_TRAINER_ENABLE_PROGRESS_BAR": "0"},
                        {"PL_TRAINER_LIMIT_TRAIN_BATCHES": "0.25"})
    argv = (py, "fit.py", "--epochs", "4")
    return _incident(lightning_env_limit_batches_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "PL_TRAINER_LIMIT_TRAIN_BATCHES"))


CLASSIFIER_TRAIN = """
    \"\"\"Train a bag-of-words ticket router with plain torch on the CPU.\"\"\"
    import argparse
    import json

    import torch
    from torch.utils.data import DataLoader


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--data", default="data/tickets.jsonl")
        p.add_argument("--epochs", type=int, default=5)
        a = p.parse_args()
        rows = [json.loads(line) for line in open(a.data, encoding="utf-8")]
        vocab = {w: i for i, w in enumerate(sorted({w for r in rows for w in r["text"].split()}))}
        labels = sorted({r["queue"] for r in rows})
        x = torch.zeros(len(rows), len(vocab))
        for i, r in enumerate(rows):
            for w in r["text"].split():
                x[i, vocab[w]] += 1
        y = torch.tensor([labels.index(r["queue"]) for r in rows])
        torch.manual_seed(0)
        model = torch.nn.Linear(len(vocab), len(labels))
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        loader = DataLoader(list(zip(x, y)), batch_size=8, shuffle=True)
        for _ in range(a.epochs):
            for xb, yb in loader:
                loss = torch.nn.functional.cross_entropy(model(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
        acc = (model(x).argmax(-1) == y).float().mean().item()
        print(f"train_loss={loss.item():.4f} train_acc={acc:.3f}")


    if __name__ == "__main__":
        main()
    """


def torch_logs_typo_import(d: Path) -> Incident:
    """A small ticket-router training with plain torch. The container's profile exports
    ``TORCH_LOGS=graph_breaks,recompile`` (from a torch.compile debugging session; the
    artifact is ``recompiles``), which torch parses when it is imported: the job dies at
    ``import torch`` with "Invalid log settings". Both shells carry other TORCH_* variables.
    Kind: fail."""
    py = python_with("torch")
    queues = ("billing", "auth", "shipping")
    rows = [{"text": f"{WORDS[i % 20]} {WORDS[(i * 3) % 40]} {queues[i % 3]} help",
             "queue": queues[i % 3]} for i in range(60)]
    repo = _repo(d / "ticket-router", {
        "train_router.py": CLASSIFIER_TRAIN,
        "data/tickets.jsonl": "".join(json.dumps(r) + "\n" for r in rows)})
    good, bad = _shells(d, {"TORCH_SHOW_CPP_STACKTRACES": "1"},
                        {"TORCH_LOGS": "graph_breaks,recompile",
                         "TORCHDYNAMO_VERBOSE": "1"})
    argv = (py, "train_router.py", "--epochs", "5")
    return _incident(torch_logs_typo_import, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("env", "TORCH_LOGS"))


# --------------------------------------------------------------------------- onnxruntime, DuckDB, pydantic

EXPORT_ONNX = """
    import sys
    import numpy as np, onnx
    from onnx import TensorProto, helper, numpy_helper
    batch = sys.argv[1]  # "N" (a dynamic axis) or a fixed size
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.normal(0, 0.4, (12, 1)).astype(np.float32), "w")
    b = numpy_helper.from_array(np.array([0.1], dtype=np.float32), "b")
    dim = batch if batch == "N" else int(batch)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["input", "w", "b"], ["logit"]),
         helper.make_node("Sigmoid", ["logit"], ["score"])], "ranker",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [dim, 12])],
        [helper.make_tensor_value_info("score", TensorProto.FLOAT, [dim, 1])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="export_ranker")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[2])
    """

SERVE_BATCH = """
    \"\"\"Score the candidate list of each query with the ranker (onnxruntime), in batches.\"\"\"
    import argparse

    import numpy as np
    import onnxruntime as ort


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model", default="model/ranker.onnx")
        p.add_argument("--batch-size", type=int, default=64)
        p.add_argument("--intra-op-threads", type=int, default=2)
        a = p.parse_args()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = a.intra_op_threads
        sess = ort.InferenceSession(a.model, opts, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(42)
        cands = rng.normal(size=(256, 12)).astype(np.float32)
        scores = np.concatenate([sess.run(["score"], {"input": cands[i:i + a.batch_size]})[0]
                                 for i in range(0, len(cands), a.batch_size)])
        print(f"candidates={len(scores)}")
        print(f"mean_score={scores.mean():.4f}")


    if __name__ == "__main__":
        main()
    """


def onnxruntime_fixed_batch(d: Path) -> Incident:
    """The ranker service's batch scorer. Between the runs model/ranker.onnx was re-exported
    (uncommitted) by a colleague's export script that left out the dynamic batch axis: the
    input is now [1, 12] and onnxruntime refuses batches of 64, "Got invalid dimensions for
    input". The second run also uses more intra-op threads. Kind: fail."""
    py = python_with("onnxruntime", "onnx", "numpy")
    build = d / "build-onnx"
    _write(build / "export_ranker.py", EXPORT_ONNX)
    for batch, name in (("N", "dynamic.onnx"), ("1", "fixed.onnx")):
        res = subprocess.run([py, "export_ranker.py", batch, name], cwd=build,
                             capture_output=True, text=True, check=False, timeout=120)
        if res.returncode:
            raise RuntimeError(f"onnx export failed: {res.stderr[-600:]}")
    repo = d / "ranker-serve"
    (repo / "model").mkdir(parents=True)
    (repo / "model" / "ranker.onnx").write_bytes((build / "dynamic.onnx").read_bytes())
    _repo(repo, {"serve_batch.py": SERVE_BATCH})

    def reexport() -> None:
        (repo / "model" / "ranker.onnx").write_bytes((build / "fixed.onnx").read_bytes())

    good, bad = _shells(d)
    argv = (py, "serve_batch.py", "--batch-size", "64")
    return _incident(onnxruntime_fixed_batch,
                     Launch((*argv, "--intra-op-threads", "2"), good, repo),
                     Launch((*argv, "--intra-op-threads", "4"), bad, repo),
                     ("git", "ranker-serve: model/ranker.onnx"), between=reexport)


SESSIONS_SQL = """
    CREATE TABLE sessions AS
    SELECT user_id,
           count(*) AS events,
           sum(TRY_CAST(duration_s AS DOUBLE)) AS seconds,
           max(ts) AS last_seen
    FROM read_csv('data/raw/events.csv', header = true)
    GROUP BY user_id;
    """

PREP_SESSIONS = """
    \"\"\"Build per-user session features with DuckDB and write them to the feature store.\"\"\"
    import argparse

    import duckdb


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--sql", default="sql/sessions.sql")
        p.add_argument("--out", required=True)
        p.add_argument("--threads", type=int, default=2)
        a = p.parse_args()
        con = duckdb.connect()
        con.execute(f"SET threads = {a.threads}")
        con.execute(open(a.sql).read())
        users, events = con.execute("SELECT count(*), sum(events) FROM sessions").fetchone()
        print(f"users={users} events={events}")
        con.execute(f"COPY sessions TO '{a.out}' (FORMAT parquet)")
        print(f"written={a.out}")


    if __name__ == "__main__":
        main()
    """


def duckdb_sql_edit_both_fail(d: Path) -> Incident:
    """Session features built with DuckDB, written to the feature store. Both runs fail: the
    feature-store mount (a symbolic link to /mnt) is missing on this node, so the first run
    ends at the COPY. Between the runs sql/sessions.sql was "tidied" (uncommitted):
    ``TRY_CAST(duration_s AS DOUBLE)`` became ``CAST(duration_s AS INTEGER)``, and the second
    run already fails at the query on the export's ``n/a`` durations ("Conversion Error").
    Kind: both-fail."""
    py = python_with("duckdb")
    rng = random.Random(5)
    events = ["user_id,ts,duration_s"] + [
        f"u{rng.randint(1, 40):03d},2026-12-0{rng.randint(1, 4)}T{rng.randint(0, 23):02d}:00:00,"
        + (str(rng.randint(1, 900)) if rng.random() > 0.03 else "n/a") for _ in range(600)]
    repo = _repo(d / "sessions-prep", {
        "prep_sessions.py": PREP_SESSIONS, "sql/sessions.sql": SESSIONS_SQL,
        "data/raw/events.csv": "\n".join(events) + "\n", ".gitignore": "feature-store\n"})
    (repo / "feature-store").symlink_to("/mnt/nfs-features-w5/feature-store")

    def edit() -> None:
        sql = (repo / "sql" / "sessions.sql").read_text()
        (repo / "sql" / "sessions.sql").write_text(
            sql.replace("TRY_CAST(duration_s AS DOUBLE)", "CAST(duration_s AS INTEGER)"))

    good, bad = _shells(d)
    argv = (py, "prep_sessions.py", "--out", "feature-store/sessions/2026-12-04.parquet")
    return _incident(duckdb_sql_edit_both_fail, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("git", "sessions-prep: sql/sessions.sql"), between=edit)


EVAL_HARNESS = """
    \"\"\"Score a model's answers against the JSONL eval set (records checked by pydantic).\"\"\"
    import argparse

    from pydantic import BaseModel


    class Example(BaseModel):
        id: str
        question: str
        answer: str
        prediction: str


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--eval-set", default="data/eval.jsonl")
        a = p.parse_args()
        with open(a.eval_set, encoding="utf-8") as f:
            rows = [Example.model_validate_json(line) for line in f if line.strip()]
        exact = sum(r.prediction.strip().lower() == r.answer.strip().lower() for r in rows)
        print(f"examples={len(rows)}")
        print(f"exact_match={exact / len(rows):.3f}")


    if __name__ == "__main__":
        main()
    """


def pydantic_downgraded_between(d: Path) -> Incident:
    """The eval harness runs in the project's venv (layered on the team's shared one). Between
    the runs someone ran ``pip install -r requirements-legacy.txt`` for an old notebook, which
    put pydantic 1.10 into the project venv: ``model_validate_json`` does not exist there and
    the harness fails. Kind: fail."""
    shared = python_with("pydantic")
    proj_venv = d / "evalkit" / ".venv"
    py = proj_venv / "bin" / "python"
    subprocess.run([shared, "-m", "venv", "--without-pip", str(proj_venv)], check=True)
    site = Path(subprocess.check_output(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        text=True).strip())
    base = subprocess.check_output(
        [shared, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        text=True).strip()
    (site / "_shared_venv.pth").write_text(base + "\n")
    wheels = d / "wheels"
    res = subprocess.run([shared, "-m", "pip", "download", "-q", "--no-deps", "-d", str(wheels),
                          "pydantic==1.10.22"], capture_output=True, text=True, check=False)
    if res.returncode:
        raise Unavailable("pip could not download pydantic 1.10.22: " + res.stderr[-200:])
    rows = [{"id": f"q{i}", "question": f"which page fixes {w}?", "answer": f"{w} settings",
             "prediction": f"{w} settings" if i % 4 else f"{w} help"}
            for i, w in enumerate(WORDS[:24])]
    repo = _repo(d / "evalkit", {
        "run_eval.py": EVAL_HARNESS, "requirements-legacy.txt": "pydantic<2\n",
        "data/eval.jsonl": "".join(json.dumps(r) + "\n" for r in rows), ".gitignore": ".venv/\n"})

    def legacy_install() -> None:
        subprocess.run([shared, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                        "--find-links", str(wheels), "--target", str(site), "pydantic<2"],
                       check=True, capture_output=True)

    good, bad = _shells(d)
    good = {**good, "VIRTUAL_ENV": str(proj_venv), "PATH": f"{proj_venv / 'bin'}:{good['PATH']}"}
    bad = {**bad, "VIRTUAL_ENV": str(proj_venv), "PATH": f"{proj_venv / 'bin'}:{bad['PATH']}"}
    argv = ("python", "run_eval.py", "--eval-set", "data/eval.jsonl")
    return _incident(pydantic_downgraded_between, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("packages", "pydantic"), between=legacy_install)


# --------------------------------------------------------------- tokenizers, pools, sqlite, sklearn

MAKE_INTENT_MODEL = """
    import json, torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast
    words = json.load(open("words.json"))
    with open("out/vocab.txt", "w") as f:
        f.write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\\n")
    BertTokenizerFast("out/vocab.txt", do_lower_case=True).save_pretrained("out")
    torch.manual_seed(3)
    cfg = BertConfig(vocab_size=5 + len(words), hidden_size=32, num_hidden_layers=2,
                     num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                     initializer_range=0.5, num_labels=3, id2label={0: "billing", 1: "auth", 2: "shipping"},
                     label2id={"billing": 0, "auth": 1, "shipping": 2})
    BertForSequenceClassification(cfg).save_pretrained("out")
    """

INTENT_EVAL = """
    \"\"\"Evaluate the intent classifier on the dev set, in padded batches.\"\"\"
    import argparse
    import json

    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--data", default="data/dev.jsonl")
        p.add_argument("--batch-size", type=int, default=16)
        a = p.parse_args()
        tok = AutoTokenizer.from_pretrained(a.model_path)
        model = AutoModelForSequenceClassification.from_pretrained(a.model_path).eval()
        rows = [json.loads(line) for line in open(a.data, encoding="utf-8")]
        correct, confidence = 0, 0.0
        for i in range(0, len(rows), a.batch_size):
            batch = rows[i:i + a.batch_size]
            enc = tok([r["text"] for r in batch], padding=True, return_tensors="pt")
            with torch.no_grad():
                probs = model(**enc).logits.softmax(-1)
            for r, pr in zip(batch, probs):
                correct += model.config.id2label[int(pr.argmax())] == r["intent"]
                confidence += float(pr.max())
        print(f"examples={len(rows)}")
        print(f"accuracy={correct / len(rows):.3f}")
        print(f"mean_confidence={confidence / len(rows):.4f}")


    if __name__ == "__main__":
        main()
    """


def tokenizer_padding_side_metric(d: Path) -> Incident:
    """The intent classifier (BERT, [CLS] pooling) in the team's model store is evaluated in
    padded batches. Between the runs its tokenizer_config.json was replaced by a copy from a
    decoder model's folder that pads on the left (``"padding_side": "left"``): short texts
    now start with [PAD] where the classifier reads [CLS], and accuracy and confidence move.
    The second run also uses another batch size. Kind: metric."""
    py = python_with("torch", "transformers")
    intents = ("billing", "auth", "shipping")
    rows = [{"text": " ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 3 + i % 9)),
             "intent": intents[i % 3]} for i in range(1, 49)]
    build = d / "build-intent"
    _write(build / "words.json", json.dumps(sorted({w for r in rows for w in r["text"].split()})))
    (build / "out").mkdir(parents=True, exist_ok=True)
    _build(py, MAKE_INTENT_MODEL, build)
    model = d / "model-store" / "intent-bert-v2"
    shutil.copytree(build / "out", model)
    repo = _repo(d / "intent-eval", {
        "eval_intent.py": INTENT_EVAL,
        "data/dev.jsonl": "".join(json.dumps(r) + "\n" for r in rows)})
    conf = model / "tokenizer_config.json"

    def replace() -> None:
        cfg = json.loads(conf.read_text())
        cfg["padding_side"] = "left"
        conf.write_text(json.dumps(cfg, indent=2) + "\n")

    good, bad = _shells(d)
    argv = (py, "eval_intent.py", "--model-path", str(model))
    return _incident(tokenizer_padding_side_metric,
                     Launch((*argv, "--batch-size", "16"), good, repo),
                     Launch((*argv, "--batch-size", "12"), bad, repo),
                     ("models", "--model-path: file tokenizer_config.json"),
                     ("models", "--model-path: padding_side"), between=replace)


SHARD_TOKENIZE = """
    \"\"\"Tokenize the corpus into id shards with a pool of worker processes.\"\"\"
    import argparse
    import json
    import multiprocessing as mp

    VOCAB = None  # loaded in main(); the workers read it


    def encode(line):
        doc = json.loads(line)
        return [VOCAB.get(w, 1) for w in doc["text"].split()]


    def main():
        global VOCAB
        p = argparse.ArgumentParser()
        p.add_argument("--input", default="data/corpus.jsonl")
        p.add_argument("--vocab", default="vocab.txt")
        p.add_argument("--workers", type=int, default=2)
        p.add_argument("--start-method", default="fork")
        a = p.parse_args()
        with open(a.vocab, encoding="utf-8") as f:
            VOCAB = {w.strip(): i for i, w in enumerate(f) if w.strip()}
        with open(a.input, encoding="utf-8") as f:
            lines = f.readlines()
        with mp.get_context(a.start_method).Pool(a.workers) as pool:
            docs = pool.map(encode, lines, chunksize=8)
        tokens = sum(len(x) for x in docs)
        unknown = sum(x.count(1) for x in docs)
        print(f"docs={len(docs)} tokens={tokens}")
        print(f"unk_rate={unknown / tokens:.4f}")


    if __name__ == "__main__":
        main()
    """


def pool_start_method_spawn(d: Path) -> Incident:
    """A tokenizer job with a multiprocessing pool, run from the container with the command line
    of a laptop's script: ``--start-method spawn --workers 4``. Spawned workers import the
    module afresh and never see the vocabulary the parent loaded into a global: "'NoneType'
    object has no attribute 'get'". Kind: fail."""
    py = python_with("json")
    words = ["[PAD]", "[UNK]", *sorted(set(WORDS))]
    rows = [{"text": " ".join(WORDS[(i + k * 7) % len(WORDS)] for k in range(12)) + " zzz"}
            for i in range(64)]
    repo = _repo(d / "shard-prep", {
        "shard_tokenize.py": SHARD_TOKENIZE, "vocab.txt": "\n".join(words) + "\n",
        "data/corpus.jsonl": "".join(json.dumps(r) + "\n" for r in rows)})
    good, bad = _shells(d)
    argv = (py, "shard_tokenize.py", "--input", "data/corpus.jsonl")
    return _incident(pool_start_method_spawn, Launch((*argv, "--workers", "2"), good, repo),
                     Launch((*argv, "--workers", "4", "--start-method", "spawn"), bad, repo),
                     ("command", "--start-method"))


SQLITE_PREP = """
    \"\"\"Load the labelled tickets into sqlite and report per-queue counts for the sampler.\"\"\"
    import argparse
    import csv
    import sqlite3


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--csv", default="data/tickets.csv")
        p.add_argument("--db", default="build/tickets.db")
        a = p.parse_args()
        con = sqlite3.connect(a.db)
        con.execute("DROP TABLE IF EXISTS tickets")
        con.execute("CREATE TABLE tickets (id TEXT, queue TEXT, words INTEGER, label TEXT)")
        with open(a.csv, newline="", encoding="utf-8") as f:
            con.executemany("INSERT INTO tickets VALUES (?, ?, ?, ?)",
                            [(r["id"], r["queue"], int(r["words"]), r["label"])
                             for r in csv.DictReader(f)])
        con.execute("CREATE INDEX by_queue ON tickets (queue, label)")
        rows = con.execute("SELECT queue, count(*), avg(words) FROM tickets "
                           "GROUP BY queue ORDER BY queue").fetchall()
        for queue, n, words in rows:
            print(f"{queue}: n={n} avg_words={words:.2f}")
        total = con.execute("SELECT count(DISTINCT label) FROM tickets").fetchone()[0]
        print(f"labels={total}")
        con.commit()


    if __name__ == "__main__":
        main()
    """


def sqlite_prep_noise(d: Path) -> Incident:
    """The ticket sampler's sqlite prep from both shells: they also differ in SQLITE_TMPDIR and
    TMPDIR (both folders exist), in the locale (C.UTF-8 against en_US.UTF-8) and in
    PYTHONDONTWRITEBYTECODE. Same counts. Nothing planted. Kind: noise."""
    py = python_with("sqlite3")
    rng = random.Random(8)
    lines = ["id,queue,words,label"] + [
        f"t{i:04d},{rng.choice(['billing', 'auth', 'shipping'])},{rng.randint(3, 60)},"
        f"{rng.choice(['urgent', 'normal', 'spam'])}" for i in range(500)]
    repo = _repo(d / "ticket-sampler", {"prep_db.py": SQLITE_PREP,
                                        "data/tickets.csv": "\n".join(lines) + "\n",
                                        ".gitignore": "build/\n"})
    (repo / "build").mkdir()
    home = d / "home"
    for sub in ("tmp", "scratch/sqlite"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    good, bad = _shells(d, {"TMPDIR": str(home / "tmp")},
                        {"SQLITE_TMPDIR": str(home / "scratch" / "sqlite"),
                         "TMPDIR": str(home / "scratch")})
    argv = (py, "prep_db.py", "--db", "build/tickets.db")
    return _incident(sqlite_prep_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


INTENT_TFIDF = """
    \"\"\"Train the TF-IDF + logistic regression intent baseline and score the dev set.\"\"\"
    import argparse
    import json

    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline


    def read(path):
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--train", default="data/train.jsonl")
        p.add_argument("--dev", default="data/dev.jsonl")
        p.add_argument("--C", type=float, default=2.0)
        a = p.parse_args()
        train, dev = read(a.train), read(a.dev)
        clf = make_pipeline(TfidfVectorizer(ngram_range=(1, 2)), LogisticRegression(C=a.C,
                                                                                    max_iter=500))
        clf.fit([r["text"] for r in train], [r["intent"] for r in train])
        pred = clf.predict([r["text"] for r in dev])
        acc = sum(p == r["intent"] for p, r in zip(pred, dev)) / len(dev)
        print(f"dev_examples={len(dev)}")
        print(f"dev_accuracy={acc:.3f}")


    if __name__ == "__main__":
        main()
    """


def _intent_rows(seed: int, n: int, noise: float) -> str:
    rng = random.Random(seed)
    cues = {"billing": ["refund", "invoice", "charge", "card", "plan"],
            "auth": ["password", "login", "token", "key", "account"],
            "shipping": ["shipping", "delay", "order", "address", "region"]}
    out = []
    for _ in range(n):
        intent = rng.choice(sorted(cues))
        shown = intent if rng.random() > noise else rng.choice(sorted(cues))
        text = " ".join([*rng.sample(cues[shown], 2), *rng.sample(WORDS, 3)])
        out.append(json.dumps({"text": text, "intent": intent}) + "\n")
    return "".join(out)


def sklearn_untracked_dev_metric(d: Path) -> Incident:
    """The intent baseline (scikit-learn) scored on data/dev.jsonl, a file that was never
    committed (the annotation export writes it). Between the runs the export was run again on a
    new annotation batch with many mislabelled rows; the dev accuracy drops. The second run
    also passes ``--C 2.0``, the default, explicitly. Kind: metric."""
    py = python_with("sklearn")
    repo = _repo(d / "intent-baseline", {"train_baseline.py": INTENT_TFIDF,
                                         "data/train.jsonl": _intent_rows(1, 240, 0.05)})
    _write(repo / "data" / "dev.jsonl", _intent_rows(2, 60, 0.05))

    def reexport() -> None:
        _write(repo / "data" / "dev.jsonl", _intent_rows(3, 60, 0.5))

    good, bad = _shells(d)
    argv = (py, "train_baseline.py")
    return _incident(sklearn_untracked_dev_metric, Launch(argv, good, repo),
                     Launch((*argv, "--C", "2.0"), bad, repo),
                     ("git", "intent-baseline: data/dev.jsonl"), between=reexport)


#: The fifth fresh batch, in the order it was written. Never tuned on.
FRESH5 = [
    peft_lora_targets_edit, peft_adapter_alpha_metric, sentence_max_seq_length_metric,
    sentence_embed_noise, xgboost_feature_rename, lightgbm_feature_edit_metric,
    gunicorn_cmd_args_timeout, lightning_env_limit_batches_metric, torch_logs_typo_import,
    onnxruntime_fixed_batch, duckdb_sql_edit_both_fail, pydantic_downgraded_between,
    tokenizer_padding_side_metric, pool_start_method_spawn, sqlite_prep_noise,
    sklearn_untracked_dev_metric,
]

if __name__ == "__main__":  # build incidents and run their launches bare (no runsnap)
    import shlex
    import tempfile

    chosen = [b for b in FRESH5 if b.__name__ in sys.argv[1:]] or FRESH5
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh5-{build.__name__}-"))
        inc = build(folder)
        print("==", inc.name, folder, inc.cause, flush=True)
        for which, launch in (("good", inc.good), ("bad", inc.bad)):
            if which == "bad" and inc.between is not None:
                inc.between()
            res = subprocess.run(list(launch.argv), env=launch.env, cwd=launch.cwd,
                                 capture_output=True, text=True, check=False, timeout=300)
            tail = res.stdout.strip().splitlines()[-2:] + res.stderr.strip().splitlines()[-2:]
            print(f"  {which}: rc={res.returncode}", shlex.join(launch.argv)[-80:], flush=True)
            for line in tail:
                print("     |", line[:200], flush=True)
