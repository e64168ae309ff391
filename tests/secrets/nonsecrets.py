"""A realistic non-secret set: values a user needs to see in a snapshot, fresh each run.

Commit ids, digests, UUIDs, Hugging Face revisions, model ids, build ids, paths with hashes,
every tuning variable of CUDA, NCCL, PyTorch, Hugging Face, vLLM and SGLang (fixtures/env-vars)
with a realistic setting, and the harmless values that secret-looking names carry
(``TOKEN_BUDGET=131072``, ``SECRET_SANTA_ENABLED=false``, a GPG key id, a login session id).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import random
import re
import string
import uuid

from tests.conftest import asset

MODEL_IDS = [
    "meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.3-70B-Instruct",
    "Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4", "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "deepseek-ai/DeepSeek-V3.1",
    "mistralai/Mixtral-8x7B-Instruct-v0.1", "nvidia/Llama-3.1-Nemotron-70B-Instruct-HF",
    "moonshotai/Kimi-K2-Instruct", "google/gemma-3-27b-it", "microsoft/Phi-3.5-MoE-instruct",
    "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B", "BAAI/bge-reasoner-embed-qwen3-8b-0923",
    "openai/gpt-oss-120b", "TheBloke/Mistral-7B-Instruct-v0.2-AWQ",
]

ARCHITECTURES = ["LlamaForCausalLM", "Qwen3VLMoeForConditionalGeneration",
                 "DeepseekV3ForCausalLM", "FlashAttention2Backend", "TorchInductorCppWrapper",
                 "TransformerEngineFusedAdam", "MixtralForCausalLM"]


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _a36(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(n))


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(bytes=rng.randbytes(16), version=4))


def _ids(rng: random.Random) -> list[tuple[str, str, str]]:
    """(kind, name, value): ids and hashes under neutral names."""
    sha = _hex(rng, 40)
    digest = hashlib.sha256(rng.randbytes(16)).hexdigest()
    out = [
        ("git sha", "GIT_COMMIT", sha),
        ("short git sha", "GIT_SHORT_SHA", sha[:12]),
        ("github sha", "GITHUB_SHA", _hex(rng, 40)),
        ("hf revision", "MODEL_REVISION", _hex(rng, 40)),
        ("sha256 digest", "WEIGHTS_SHA256", digest),
        ("image digest", "IMAGE_DIGEST", "sha256:" + _hex(rng, 64)),
        ("image ref", "IMAGE", f"nvcr.io/nvidia/pytorch:24.{rng.randint(1, 12):02d}-py3@sha256:"
                               + _hex(rng, 64)),
        ("npm integrity", "LOCK_INTEGRITY",
         "sha512-" + base64.b64encode(rng.randbytes(64)).decode()),
        ("uuid", "RUN_UUID", str(uuid.UUID(bytes=rng.randbytes(16), version=4))),
        ("uuid hex", "MLFLOW_RUN_ID", uuid.UUID(bytes=rng.randbytes(16), version=4).hex),
        ("systemd invocation id", "INVOCATION_ID", _hex(rng, 32)),
        ("container hostname", "HOSTNAME", _hex(rng, 12)),
        ("gpu uuid", "NVIDIA_VISIBLE_DEVICES",
         "GPU-" + str(uuid.UUID(bytes=rng.randbytes(16), version=4))),
        ("wandb run id", "WANDB_RUN_ID", _a36(rng, 8)),
        ("slurm job id", "SLURM_JOB_ID", str(rng.randint(10**5, 10**8))),
        ("build id", "BUILD_ID", f"{rng.randint(2023, 2026)}{rng.randint(1, 12):02d}"
                                 f"{rng.randint(1, 28):02d}.{rng.randint(1, 99)}"),
        ("ci build id", "BUILDKITE_BUILD_ID", str(uuid.UUID(bytes=rng.randbytes(16), version=4))),
        ("git describe", "VERSION", f"v{rng.randint(0, 3)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"
                                    f"-{rng.randint(1, 300)}-g{_hex(rng, 9)}"),
        ("dated build of a commit", "BUILD_TAG",
         f"{rng.randint(2023, 2026)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}-{_hex(rng, 40)}"),
        ("torch version", "TORCH_VERSION",
         f"2.{rng.randint(3, 9)}.{rng.randint(0, 3)}+cu12{rng.randint(1, 9)}"),
        ("k8s pod", "POD_NAME", f"trainer-{_hex(rng, 10)}-{_a36(rng, 5)}"),
        ("azureml run", "AZUREML_RUN_ID", f"exp_{rng.randint(10**9, 2 * 10**9)}_{_hex(rng, 8)}"),
        ("hf cache path", "MODEL_PATH", "/root/.cache/huggingface/hub/models--meta-llama--"
                                        f"Llama-3.1-8B-Instruct/snapshots/{_hex(rng, 40)}"),
        ("inductor path", "TORCHINDUCTOR_CACHE_FILE",
         f"/tmp/torchinductor_root/{_hex(rng, 2)}/c{_a36(rng, 51)}.py"),
        ("nix store path", "NIX_PYTHON", "/nix/store/" + "".join(
            rng.choice("0123456789abcdfghijklmnpqrsvwxyz") for _ in range(32)) + "-python3-3.12.4"),
        ("pip cache path", "PIP_WHEEL", f"/root/.cache/pip/wheels/{_hex(rng, 2)}/{_hex(rng, 2)}/"
                                        f"{_hex(rng, 56)}/flash_attn-2.7.4-cp312-linux_x86_64.whl"),
        ("triton cache", "TRITON_KERNEL", "/root/.triton/cache/"
         + base64.b32encode(rng.randbytes(30)).decode().rstrip("=") + "/matmul.cubin"),
        ("conda build", "CONDA_BUILD_STRING", f"py312h{_hex(rng, 7)}_{rng.randint(0, 3)}"),
        ("wheel file", "WHEEL", "torch-2.5.1+cu124-cp312-cp312-linux_x86_64.whl"),
        ("model id", "MODEL_NAME", rng.choice(MODEL_IDS)),
        ("architecture", "ARCH", rng.choice(ARCHITECTURES)),
        ("served model name", "SERVED_MODEL_NAME", "gpt-4o-mini-2024-07-18"),
        ("cuda version", "CUDA_VERSION", f"12.{rng.randint(0, 9)}.{rng.randint(0, 3)}"),
        ("aws account id", "AWS_ACCOUNT_ID", str(rng.randint(10**11, 10**12 - 1))),
        ("aws region", "AWS_DEFAULT_REGION", "us-east-1"),
        ("kms key arn", "KMS_KEY_ID", f"arn:aws:kms:us-east-1:{rng.randint(10**11, 10**12 - 1)}"
                                      f":key/{uuid.UUID(bytes=rng.randbytes(16), version=4)}"),
        ("ray job id", "RAY_JOB_ID", f"{rng.randint(1, 99):02d}000000"),
        ("date stamp", "RUN_STAMP", f"{rng.randint(2023, 2026)}{rng.randint(1, 12):02d}"
                                    f"{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}0000Z"),
    ]
    return out


def _harmless_under_secret_names(rng: random.Random) -> list[tuple[str, str, str]]:
    """(kind, name, value): names that look secret, values that are not."""
    key = base64.b64encode(rng.randbytes(32)).decode()
    return [
        ("budget", "TOKEN_BUDGET", str(rng.choice([131072, 65536, 32768]))),
        ("limit", "TOKEN_LIMIT_PER_REQUEST", str(rng.choice([65536, 8192]))),
        ("min length", "PASSWORD_MIN_LENGTH", str(rng.randint(8, 16))),
        ("switch", "SECRET_SANTA_ENABLED", rng.choice(["false", "true", "0", "1"])),
        ("hint", "AWS_ACCESS_KEY_ID_HINT", "see vault"),
        ("hint", "API_KEY_SOURCE", "environment"),
        ("gpg key id", "GPG_KEY", _hex(rng, 16).upper()),
        ("gpg key id", "SIGNING_KEY_ID", "0x" + _hex(rng, 16).upper()),
        ("gpg fingerprint", "GPG_FINGERPRINT", _hex(rng, 40).upper()),
        ("ssh fingerprint", "SSH_KEY_FINGERPRINT", "SHA256:" + key.rstrip("=")),
        ("md5 fingerprint", "DEPLOY_KEY_FINGERPRINT", ":".join(_hex(rng, 2) for _ in range(16))),
        ("ssh public key", "SSH_PUBLIC_KEY", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI"
                                            + base64.b64encode(rng.randbytes(32)).decode().rstrip("=")
                                            + " user@host"),
        ("database url without password", "DATABASE_URL", "postgresql://app@db.internal:5432/app"),
        ("url without credentials", "TOKEN_ENDPOINT", "https://auth.example.com/oauth2/token"),
        ("login session", "XDG_SESSION_ID", str(rng.randint(1, 400))),
        ("login session", "XDG_SESSION_ID", f"c{rng.randint(1, 99)}"),
        ("terminal pane", "TMUX_PANE", f"%{rng.randint(0, 40)}"),
        ("terminal session", "TERM_SESSION_ID", f"w0t0p0:{_uuid(rng)}".upper()),
        ("tokenizer", "PAD_TOKEN", "<|endoftext|>"),
        ("token id", "EOS_TOKEN_ID", str(rng.randint(0, 200000))),
        ("key length", "KEY_LENGTH", "256"),
        ("token path", "HF_TOKEN_PATH", "/home/u/.cache/huggingface/token"),
        ("publishable key", "STRIPE_PUBLISHABLE_KEY", "pk_live_" + "".join(
            rng.choice(string.ascii_letters + string.digits) for _ in range(24))),
        ("empty", "OPENAI_API_KEY", ""),
        ("none", "HF_TOKEN", "none"),
    ]


_SECRET_WORD = re.compile(r"TOKEN(?!S|IZ)|SECRET|PASSWORD|API_KEY|ACCESS_KEY")


def _guess(name: str, default: str, rng: random.Random) -> str:
    """A realistic setting of a tuning variable from its documented default and name."""
    d = default.strip().strip('"').strip("'")
    if d in ("True", "False"):
        return rng.choice(["1", "0", "true", "false"])
    if d and d.lstrip("-").replace(".", "", 1).isdigit():
        return d if rng.random() < 0.5 else str(rng.randint(0, 4096))
    upper = name.upper()
    if any(w in upper for w in ("PATH", "DIR", "ROOT", "HOME", "FILE", "CACHE", "_SO")):
        return rng.choice(["/opt/cache/" + name.lower(), "/usr/local/cuda/lib64",
                           f"/data/{name.lower()}/{_hex(rng, 8)}"])
    if any(w in upper for w in ("SIZE", "NUM", "COUNT", "MAX", "MIN", "TIMEOUT", "INTERVAL",
                                "PORT", "THRESHOLD", "LIMIT", "BUDGET", "RATIO", "_MB", "_GB")):
        return str(rng.choice([1, 2, 8, 64, 512, 4096, 29500]))
    if d and len(d) < 40 and "(" not in d and " " not in d:
        return d
    return rng.choice(["1", "0", "INFO", "auto", "Ring,Tree", "mlx5_0:1,mlx5_1:1", "eth0"])


def tuning(rng: random.Random) -> list[tuple[str, str, str]]:
    """(kind, name, value) for every documented tuning variable (the secret ones left out)."""
    out: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for fname in ("cuda.tsv", "nccl.tsv", "nccl-source-params.tsv", "torch.tsv", "hf.tsv",
                  "vllm.tsv", "sglang-0.5.23.tsv"):
        with open(asset("env-vars", fname), newline="") as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                name = row["name"]
                if not name or name in seen or row.get("secret") == "true" \
                        or _SECRET_WORD.search(name.upper()):
                    continue  # a variable that holds a credential: not for this set
                seen.add(name)
                default = row.get("default") or row.get("source_default") or ""
                out.append((f"tuning ({fname})", name, _guess(name, default, rng)))
    return out


_WORDS = ("live", "stream", "batch", "kernel", "attention", "matrix", "prefill", "decode",
          "cache", "block", "token", "expert", "router", "layer", "norm", "scale", "config",
          "secret", "key", "pipeline", "worker", "shard", "weight", "loader", "b", "fused")


def identifiers(rng: random.Random) -> list[tuple[str, str, str]]:
    """(kind, name, value): names from code, as a diff or a traceback shows them."""
    out = []
    for i in range(20):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(4, 9))]
        out.append(("snake_case identifier", f"IDENT_{i}", "_".join(words)))
        out.append(("CamelCase identifier", f"CLASS_{i}",
                    "".join(w.capitalize() for w in words) + rng.choice(["", "2", "V3"])))
        out.append(("dotted name", f"DOTTED_{i}", ".".join(words[:5])))
    return out


def nonsecrets(rng: random.Random) -> list[tuple[str, str, str]]:
    """The whole non-secret set: (kind, name, value)."""
    return [*_ids(rng), *_harmless_under_secret_names(rng), *identifiers(rng), *tuning(rng)]
