"""A seventh fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh.py ... fresh6.py, for their format), how they are run
and scored (benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot reference
(docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job captures
one snapshot per rank. They form the corpus's ``fresh7`` half; report it, never change the
ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank): a ``DIST_BACKEND=nccl`` that the
  notebook image exports for its GPU pods (this torch has no NCCL), an uncommitted "one
  all-reduce per step is enough" edit that wraps every micro batch in ``DDP.no_sync()`` (the
  replicas drift apart), a half-done edit of the model's hidden width on top of an evaluation
  file that is missing in both jobs, and the same job from both shells (noise);
- engines: a tensor-parallel engine whose ``--dist-timeout`` (seconds) was given as if it were
  minutes, so rank 0's TCPStore stops waiting for the rank still dequantizing its shard
  ("Timed out after ... seconds waiting for clients"); a ``--kv-cache-dtype`` spelled the way
  another engine spells it, on top of weights never downloaded (both fail); a FastAPI service
  under uvicorn smoke-tested from both shells (noise); an engine config on the team's shared
  volume, outside git, edited by a teammate to ``device: cuda``;
- model folders (transformers, a tiny Llama trained at build time): ``pad_token_id`` copied
  from the full-size model's config.json (beyond the tiny vocabulary), ``tie_word_embeddings``
  turned off (lm_head comes up freshly initialised: the loss moves), and the evaluation from
  both shells (noise);
- the rest: a ``CPU_LIMIT`` that JupyterHub's spawner writes as ``2.0`` where the CI job sets
  ``2`` (``int()`` refuses it, quoting it), networkx 2.8 vendored onto ``PYTHONPATH`` by the CI
  script only (``to_numpy_matrix`` is gone in networkx 3), an untracked scratch ``datasets.py``
  that shadows Hugging Face ``datasets``, a training config in git edited to balanced class
  weights, and an evaluation whose mean of per-batch accuracies moves with
  ``--eval-batch-size``.

The shells are :func:`runner_or_notebook_shell`: shell 0 a GitLab CI job on a Kubernetes runner
(the ``CI_*`` variables, a runner pod's host name, ``HOME`` under the build folder), shell 1 a
JupyterLab terminal in a JupyterHub pod (``JUPYTERHUB_*``, ``JPY_*``, the spawner's
``CPU_LIMIT``/``MEM_LIMIT``, user jovyan); each with the tuning variables its own image or job
exports (``NCCL_*``, ``TORCH_*``, ``HF_*``, ``CUDA_*``, ``PYTORCH_CUDA_ALLOC_CONF``,
``THP_MEM_ALLOC_ENABLE``, ``MALLOC_ARENA_MAX``) that change nothing here; the thread counts that
change float reductions are pinned alike.

Kinds: ``fail`` (the good run exits 0, the bad one fails), ``metric`` (both exit 0 and only a
printed ``key=value`` metric differs), ``both-fail`` (both fail, differently), ``noise`` (nothing
planted: success is "nothing counts"). Job incidents (``*_job``) use
:data:`benchmarks.incidents.RANKS_RUNSNAP` and :data:`benchmarks.incidents.RANKS_FOLDER`.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from benchmarks.incidents import RANKS_FOLDER, RANKS_RUNSNAP, Incident, Launch, _git, _write
from benchmarks.thirdparty import Unavailable, _incident, python_with


def runner_or_notebook_shell(n: int, home: Path) -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's real home folder: 0 a
    GitLab CI job on the team's Kubernetes CPU runner, 1 a terminal of JupyterLab in a
    JupyterHub pod; each with the tuning variables its image or job script exports."""
    home.mkdir(parents=True, exist_ok=True)
    common = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home),
              "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2",
              "HF_HOME": str(home / ".cache" / "huggingface")}
    if n % 2 == 0:  # .gitlab-ci.yml job "train:smoke", Kubernetes executor
        return {
            **common, "HOSTNAME": "runner-x7fq2kzs-project-4121-concurrent-0-0g1k7m2q",
            "LANG": "C.UTF-8", "CI": "true", "GITLAB_CI": "true", "CI_JOB_ID": "88120931",
            "CI_JOB_NAME": "train:smoke", "CI_JOB_STAGE": "test", "CI_PIPELINE_ID": "1930442",
            "CI_PIPELINE_SOURCE": "merge_request_event",
            "CI_COMMIT_SHA": "5b0e2c1d9a7f43e8b6c2a1f0e9d8c7b6a5f4e3d2",
            "CI_COMMIT_SHORT_SHA": "5b0e2c1d", "CI_COMMIT_REF_NAME": "feat/ranker-accum",
            "CI_PROJECT_PATH": "ml-platform/ranker", "CI_PROJECT_DIR": "/builds/ml-platform/ranker",
            "CI_SERVER_URL": "https://gitlab.internal.example.com", "CI_RUNNER_ID": "412",
            "CI_RUNNER_DESCRIPTION": "k8s-cpu-runner-2", "CI_RUNNER_TAGS": '["cpu", "k8s"]',
            "CI_JOB_TOKEN": "glcbt-64_aZ3kq9xP0vN7tY2mLw8R", "FF_USE_FASTZIP": "true",
            "KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
            "KUBERNETES_PORT": "tcp://10.96.0.1:443",
            "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "PIP_NO_CACHE_DIR": "1",
            "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
            "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false",
            "CUDA_VISIBLE_DEVICES": "", "NCCL_DEBUG": "WARN", "NCCL_SOCKET_IFNAME": "eth0",
            "TORCH_CPP_LOG_LEVEL": "ERROR", "MALLOC_ARENA_MAX": "2", "WANDB_MODE": "disabled",
            "TORCHINDUCTOR_CACHE_DIR": str(home / ".cache" / "inductor"),
        }
    return {  # jupyter-mkowalski pod, terminal opened from JupyterLab
        **common, "HOSTNAME": "jupyter-mkowalski", "USER": "jovyan", "NB_USER": "jovyan",
        "NB_UID": "1000", "SHELL": "/bin/bash", "TERM": "xterm-256color", "SHLVL": "1",
        "LANG": "en_US.UTF-8", "CONDA_DIR": "/opt/conda",
        "JUPYTERHUB_USER": "mkowalski", "JUPYTERHUB_API_URL": "http://hub:8081/hub/api",
        "JUPYTERHUB_API_TOKEN": "8f1c2b7e64d94a0fa3b5c9d2e1f07a6b",
        "JUPYTERHUB_CLIENT_ID": "jupyterhub-user-mkowalski", "JUPYTERHUB_BASE_URL": "/",
        "JUPYTERHUB_SERVICE_PREFIX": "/user/mkowalski/", "JUPYTERHUB_HOST": "",
        "JUPYTER_SERVER_ROOT": str(home), "JPY_PARENT_PID": "7",
        "JUPYTER_SERVER_URL": "http://jupyter-mkowalski:8888/user/mkowalski/",
        "MEM_LIMIT": "34359738368", "MEM_GUARANTEE": "17179869184", "CPU_LIMIT": "2.0",
        "CPU_GUARANTEE": "1.0", "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        "KUBERNETES_SERVICE_HOST": "10.100.0.1", "KUBERNETES_SERVICE_PORT": "443",
        "KUBERNETES_PORT": "tcp://10.100.0.1:443",
        "HF_HUB_ENABLE_HF_TRANSFER": "0", "TOKENIZERS_PARALLELISM": "true",
        "NCCL_P2P_DISABLE": "1", "NCCL_IB_DISABLE": "1", "NCCL_DEBUG": "INFO",
        "TORCH_SHOW_CPP_STACKTRACES": "1", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "THP_MEM_ALLOC_ENABLE": "1", "CUDA_MODULE_LOADING": "LAZY",
        "NVIDIA_VISIBLE_DEVICES": "void", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
    }


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None
            ) -> tuple[dict[str, str], dict[str, str]]:
    """The CI job's environment (plus ``good``) and the notebook terminal's (plus ``bad``)."""
    return ({**runner_or_notebook_shell(0, d / "builds-home"), **(good or {})},
            {**runner_or_notebook_shell(1, d / "home" / "jovyan"), **(bad or {})})


def _repo(path: Path, files: dict[str, str]) -> Path:
    """A git repository holding ``files``, all committed."""
    for name, text in files.items():
        _write(path / name, text)
    _git(path, "init", "-q")
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "first version")
    return path


def _free_port() -> int:
    """A TCP port nothing listens on now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _torchrun_job(py: str, script: Path, *args: str) -> tuple[str, ...]:
    """A torchrun job of two ranks, each captured by runsnap into the job's folder."""
    runner = Path(py).parent / "torchrun"
    if not runner.exists():
        raise Unavailable(f"no torchrun beside {py}")
    return (str(runner), "--standalone", "--nproc-per-node", "2", "--no-python", RANKS_RUNSNAP,
            "capture", "-o", f"{RANKS_FOLDER}/{{host}}-{{rank}}.toml", "--", py, str(script),
            *args)


# --------------------------------------------------------------------------- torchrun jobs


RANKER_TRAIN = """
    \"\"\"Train the click ranker's scoring MLP with DDP over gloo: micro batches accumulated,
    gradients synchronised on the last micro batch of each step only.\"\"\"
    import argparse
    import contextlib
    import datetime
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

    from model import Scorer


    def features(n=2048, dim=24, seed=7):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, dim, generator=g)
        y = (x @ torch.linspace(-1, 1, dim) + 0.3 * torch.randn(n, generator=g) > 0).float()
        return x, y


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--epochs", type=int, default=2)
        p.add_argument("--micro-batch", type=int, default=32)
        p.add_argument("--accum", type=int, default=4)
        p.add_argument("--eval-file")
        a = p.parse_args()
        backend = os.environ.get("DIST_BACKEND", "gloo")
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=60))
        rank, world = dist.get_rank(), dist.get_world_size()
        torch.manual_seed(0)
        model = DDP(Scorer(24))
        opt = torch.optim.SGD(model.parameters(), lr=0.3)
        x, y = features()
        data = TensorDataset(x, y)
        sampler = DistributedSampler(data, num_replicas=world, rank=rank, seed=0)
        loader = DataLoader(data, batch_size=a.micro_batch, sampler=sampler)
        for epoch in range(a.epochs):
            sampler.set_epoch(epoch)
            batches = list(loader)
            for start in range(0, len(batches), a.accum):
                group = batches[start:start + a.accum]
                for i, (xb, yb) in enumerate(group):
                    sync = contextlib.nullcontext() if i == len(group) - 1 else model.no_sync()
                    with sync:
                        loss = F.binary_cross_entropy_with_logits(model(xb).squeeze(-1), yb)
                        (loss / len(group)).backward()
                opt.step()
                opt.zero_grad()
        flat = torch.cat([p.detach().flatten() for p in model.parameters()])
        replicas = [torch.empty_like(flat) for _ in range(world)]
        dist.all_gather(replicas, flat)
        drift = max((r - replicas[0]).abs().max().item() for r in replicas)
        with torch.no_grad():
            train_loss = F.binary_cross_entropy_with_logits(model.module(x).squeeze(-1), y)
        if a.eval_file:
            held = torch.load(a.eval_file, weights_only=True)
            with torch.no_grad():
                hits = ((model.module(held["x"]).squeeze(-1) > 0).float() == held["y"]).float()
            print(f"rank={rank} eval_accuracy={hits.mean().item():.4f}")
        if rank == 0:
            print(f"world_size={world} train_loss={train_loss.item():.5f} "
                  f"replica_drift={drift:.6f}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

RANKER_MODEL = """
    import torch


    class Scorer(torch.nn.Module):
        \"\"\"Two-layer scoring head over the ranker's dense features.\"\"\"

        def __init__(self, dim, hidden=64):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(dim, hidden), torch.nn.ReLU(),
                                           torch.nn.Linear(hidden, 1))

        def forward(self, x):
            return self.net(x)
    """


def _ranker_repo(d: Path) -> Path:
    return _repo(d / "ranker", {"train.py": RANKER_TRAIN, "model.py": RANKER_MODEL,
                                "README.md": "Click ranker: the scoring head, trained with DDP.\n",
                                ".gitignore": "__pycache__/\nruns/\n"})


def dist_backend_nccl_job(d: Path) -> Incident:
    """Job against job. The notebook image exports DIST_BACKEND=nccl (in /etc/profile.d, for
    the team's multi-GPU notebooks); this pod runs on a CPU node and its torch has no NCCL:
    every rank stops in init_process_group with "Distributed package doesn't have NCCL built
    in", the variable named nowhere. Kind: fail."""
    py = python_with("torch")
    repo = _ranker_repo(d)
    good, bad = _shells(d, {}, {"DIST_BACKEND": "nccl"})
    argv = _torchrun_job(py, repo / "train.py", "--epochs", "1")
    return _incident(dist_backend_nccl_job, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("env", "DIST_BACKEND"))


def no_sync_edit_metric_job(d: Path) -> Incident:
    """Job against job. Between the jobs train.py was "simplified" without a commit: every
    micro batch now runs under model.no_sync() ("one all-reduce per step is enough"), the last
    one too, so the gradients are never all-reduced; both jobs finish, the replicas drift apart
    and the train loss moves. Kind: metric."""
    py = python_with("torch")
    repo = _ranker_repo(d)

    def edit() -> None:
        _write(repo / "train.py", RANKER_TRAIN.replace(
            "sync = contextlib.nullcontext() if i == len(group) - 1 else model.no_sync()",
            "sync = model.no_sync()  # one all-reduce per step is enough"))

    good, bad = _shells(d)
    argv = _torchrun_job(py, repo / "train.py", "--epochs", "2", "--accum", "4")
    return _incident(no_sync_edit_metric_job, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("git", "ranker: train.py"), between=edit)


def hidden_width_edit_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. The held-out file passed with --eval-file was never copied
    to this machine, so the first job trains and then stops at torch.load. Between the jobs
    model.py got half of an edit (uncommitted: the hidden width 64 -> 48 in the second layer
    only): the second job stops at its first forward, "mat1 and mat2 shapes cannot be
    multiplied". Kind: both-fail."""
    py = python_with("torch")
    repo = _ranker_repo(d)

    def edit() -> None:
        _write(repo / "model.py", RANKER_MODEL.replace("torch.nn.Linear(hidden, 1)",
                                                       "torch.nn.Linear(48, 1)"))

    good, bad = _shells(d)
    argv = _torchrun_job(py, repo / "train.py", "--epochs", "1",
                         "--eval-file", "data/holdout-2026-11.pt")
    return _incident(hidden_width_edit_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "ranker: model.py"), between=edit)


def ranker_job_noise(d: Path) -> Incident:
    """Job against job, the same code and options, from the CI runner and from the notebook
    terminal: each job has its own rendezvous port, run id and rank processes, and the shells
    their own NCCL_*, TORCH_*, HF_* and CI or JupyterHub variables. Nothing planted. Kind:
    noise."""
    py = python_with("torch")
    repo = _ranker_repo(d)
    good, bad = _shells(d)
    argv = _torchrun_job(py, repo / "train.py", "--epochs", "1")
    return _incident(ranker_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- engines


TP_ENGINE = """
    \"\"\"Start the CPU tensor-parallel engine: one worker per TP rank (mp.spawn). Each worker
    dequantizes and rotates its int8 weight shard, then joins the gloo group at
    127.0.0.1:--dist-port (--dist-timeout seconds) and runs a warm-up all-reduce.\"\"\"
    import argparse
    import datetime

    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp


    def load_shard(rank, path):
        shard = torch.load(path, weights_only=True)
        packed = []
        for block in shard["qweight"].split(64):
            w = block.float() * shard["scale"]
            for _ in range(12):  # the Hadamard-like rotation, applied per block
                w = w @ shard["rotation"]
            packed.append(w.to(torch.bfloat16))
        return torch.cat(packed)


    def worker(rank, args):
        torch.set_num_threads(2)
        weight = load_shard(rank, f"{args.model_path}/shard-{rank}.pt")
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.dist_port}",
                                rank=rank, world_size=args.tp_size,
                                timeout=datetime.timedelta(seconds=args.dist_timeout))
        check = weight.float().sum().reshape(1)
        dist.all_reduce(check)
        if rank == 0:
            print(f"tp_size={args.tp_size} warmup_checksum={check.item():.2f}")
        dist.destroy_process_group()


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--tp-size", type=int, default=2)
        p.add_argument("--dist-port", type=int, default=29600)
        p.add_argument("--dist-timeout", type=int, default=600, help="seconds")
        args = p.parse_args()
        mp.spawn(worker, args=(args,), nprocs=args.tp_size)
        print("engine ready")


    if __name__ == "__main__":
        main()
    """

MAKE_SHARDS = """
import sys, torch
g = torch.Generator().manual_seed(3)
rot = torch.linalg.qr(torch.randn(2048, 2048, generator=g))[0]
rows = {0: 64, 1: 2048}  # rank 0 holds the small embedding shard, rank 1 the MLP blocks
for rank, n in rows.items():
    q = torch.randint(-127, 128, (n, 2048), dtype=torch.int8, generator=g)
    torch.save({"qweight": q, "scale": torch.tensor(1 / 127), "rotation": rot},
               f"{sys.argv[1]}/shard-{rank}.pt")
"""


def engine_dist_timeout_minutes(d: Path) -> Incident:
    """The tensor-parallel engine's --dist-timeout is in seconds. The notebook terminal's
    launch line gives --dist-timeout 2, meant as minutes; rank 1 still dequantizes its large
    shard when rank 0's TCPStore gives up waiting: "Timed out after ... seconds waiting for
    clients. 1/2 clients joined." The CI job leaves the default. Kind: fail."""
    py = python_with("torch")
    model = d / "models" / "ranker-tp2-int8"
    if not (model / "shard-1.pt").exists():
        model.mkdir(parents=True, exist_ok=True)
        subprocess.run([py, "-c", MAKE_SHARDS, str(model)], check=True, capture_output=True)
    app = _write(d / "engine" / "serve.py", TP_ENGINE)
    good, bad = _shells(d)
    base = (py, str(app), "--model-path", str(model), "--tp-size", "2",
            "--dist-port", str(_free_port()))
    return _incident(engine_dist_timeout_minutes, Launch(base, good, app.parent),
                     Launch((*base, "--dist-timeout", "2"), bad, app.parent),
                     ("command", "--dist-timeout"))


KV_ENGINE = """
    \"\"\"Start the small CPU engine: size the KV cache from the model's config.json, then load
    the weights.\"\"\"
    import argparse
    import json
    import os

    import torch
    from safetensors.torch import load_file

    KV_DTYPES = {"auto": None, "bf16": torch.bfloat16, "fp16": torch.float16,
                 "fp8": torch.float8_e4m3fn}


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--max-num-seqs", type=int, default=8)
        p.add_argument("--kv-cache-dtype", default="auto")
        a = p.parse_args()
        with open(os.path.join(a.model_path, "config.json")) as f:
            cfg = json.load(f)
        dtype = KV_DTYPES[a.kv_cache_dtype] or getattr(torch, cfg.get("dtype", "float32"))
        head_dim = cfg["hidden_size"] // cfg["num_attention_heads"]
        kv = torch.zeros(2, cfg["num_hidden_layers"], a.max_num_seqs,
                         cfg["max_position_embeddings"], cfg["num_key_value_heads"], head_dim,
                         dtype=dtype)
        print(f"kv_cache_bytes={kv.numel() * kv.element_size()}")
        state = load_file(os.path.join(a.model_path, "model.safetensors"))
        print(f"engine ready: {len(state)} tensors")


    if __name__ == "__main__":
        main()
    """

TINY_LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 256,
              "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2,
              "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "bos_token_id": 1,
              "eos_token_id": 2, "tie_word_embeddings": True, "dtype": "float32"}


def kv_cache_dtype_both_fail(d: Path) -> Incident:
    """Both launches fail: the model folder holds only config.json (the weights' download was
    cut off), so the first stops at loading model.safetensors. The second also passes
    --kv-cache-dtype fp8_e4m3, the way another engine spells it; this one knows fp8, and stops
    earlier with KeyError: 'fp8_e4m3'. Kind: both-fail."""
    py = python_with("torch", "safetensors")
    model = d / "models" / "tiny-llama-chat"
    _write(model / "config.json", json.dumps(TINY_LLAMA, indent=2) + "\n")
    app = _write(d / "engine" / "start.py", KV_ENGINE)
    good, bad = _shells(d)
    base = (py, str(app), "--model-path", str(model), "--max-num-seqs", "8")
    return _incident(kv_cache_dtype_both_fail, Launch(base, good, app.parent),
                     Launch((*base, "--kv-cache-dtype", "fp8_e4m3"), bad, app.parent),
                     ("command", "--kv-cache-dtype"))


SCORE_APP = """
    \"\"\"The reranker's scoring service (FastAPI).\"\"\"
    import torch
    from fastapi import FastAPI
    from pydantic import BaseModel

    app = FastAPI()
    torch.manual_seed(0)
    MODEL = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))


    class Query(BaseModel):
        features: list[float]


    @app.get("/health")
    def health():
        return {"ok": True}


    @app.post("/score")
    def score(q: Query):
        with torch.no_grad():
            return {"score": MODEL(torch.tensor(q.features)).item()}
    """

SMOKE = """
    \"\"\"Smoke test: start the service under uvicorn, wait for /health, score four queries.\"\"\"
    import socket
    import subprocess
    import sys
    import time

    import httpx


    def free_port():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]


    def main():
        port = free_port()
        server = subprocess.Popen([sys.executable, "-m", "uvicorn", "app:app", "--host",
                                   "127.0.0.1", "--port", str(port), "--log-level", "warning"])
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(120):
                try:
                    if httpx.get(base + "/health", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.25)
            scores = [httpx.post(base + "/score", json={"features": [i / 8] * 8},
                                 timeout=10).json()["score"] for i in range(4)]
        finally:
            server.terminate()
            server.wait(timeout=20)
        print(f"answered={len(scores)} mean_score={sum(scores) / len(scores):.6f}")


    if __name__ == "__main__":
        main()
    """


def uvicorn_smoke_noise(d: Path) -> Incident:
    """The scoring service's smoke test (FastAPI under uvicorn, queried with httpx) from the CI
    job and from the notebook terminal: each picks its own port, and the shells differ in their
    CI or JupyterHub variables, HF_*, TOKENIZERS_PARALLELISM, the allocator variables and the
    CPU_LIMIT the spawner exports. Same scores. Nothing planted. Kind: noise."""
    py = python_with("torch", "fastapi", "uvicorn", "httpx")
    app = _write(d / "reranker-svc" / "app.py", SCORE_APP)
    _write(app.parent / "smoke.py", SMOKE)
    good, bad = _shells(d)
    argv = (py, "smoke.py")
    return _incident(uvicorn_smoke_noise, Launch(argv, good, app.parent),
                     Launch(argv, bad, app.parent))


SHARED_CFG_ENGINE = """
    \"\"\"Start the reranker engine with the settings of the team's shared config.\"\"\"
    import argparse

    import torch
    import yaml


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--config", required=True)
        a = p.parse_args()
        with open(a.config) as f:
            cfg = yaml.safe_load(f)
        torch.manual_seed(0)
        model = torch.nn.Linear(cfg["dim"], 1).to(cfg["device"])
        batch = torch.randn(cfg["max_batch"], cfg["dim"], device=cfg["device"])
        print(f"engine ready device={cfg['device']} warmup_mean={model(batch).mean().item():.5f}")


    if __name__ == "__main__":
        main()
    """


def shared_engine_config_cuda(d: Path) -> Incident:
    """The engine reads its settings from the team's shared volume (outside any repository):
    --config /mnt/team-configs/reranker.yaml. Between the runs a teammate set ``device: cuda``
    and ``max_batch: 64`` there for the GPU nodes; this pod has none and torch stops: "Torch not
    compiled with CUDA enabled". Kind: fail."""
    py = python_with("torch", "yaml")
    cfg = d / "mnt" / "team-configs" / "reranker.yaml"
    _write(cfg, "# reranker engine, shared by the team\ndevice: cpu\ndim: 16\nmax_batch: 32\n")
    app = _write(d / "reranker-engine" / "serve.py", SHARED_CFG_ENGINE)

    def edit() -> None:
        cfg.write_text("# reranker engine, shared by the team\ndevice: cuda\ndim: 16\n"
                       "max_batch: 64\n")

    good, bad = _shells(d)
    argv = (py, str(app), "--config", str(cfg))
    return _incident(shared_engine_config_cuda, Launch(argv, good, app.parent),
                     Launch(argv, bad, app.parent), ("runtime", f"file {cfg.resolve()}"),
                     between=edit)


# --------------------------------------------------------------------------- model folders


MAKE_TINY_LLAMA = """
import json, sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
cfg = json.loads(sys.argv[2])
torch.manual_seed(0)
model = LlamaForCausalLM(LlamaConfig(**{k: v for k, v in cfg.items() if k != "architectures"}))
text = ("the support bot answers questions about invoices, refunds and delivery times. " * 8)
ids = torch.tensor([list(text.encode())[i:i + 48] for i in range(0, 480, 24)])
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for _ in range(40):
    loss = model(ids, labels=ids).loss
    opt.zero_grad(); loss.backward(); opt.step()
model.save_pretrained(sys.argv[1])
"""

LLAMA_EVAL = """
    \"\"\"Evaluate the support bot's tiny Llama on the held-out replies (byte tokens).\"\"\"
    import argparse
    import math

    import torch
    from transformers import AutoModelForCausalLM


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        model = AutoModelForCausalLM.from_pretrained(a.model_path).eval()
        with open("data/replies.txt") as f:
            lines = [list(line.strip().encode())[:48] for line in f if line.strip()]
        width = min(len(x) for x in lines)
        ids = torch.tensor([x[:width] for x in lines])
        with torch.no_grad():
            loss = model(ids, labels=ids).loss.item()
        print(f"eval_lines={len(lines)} eval_loss={loss:.4f} perplexity={math.exp(loss):.3f}")


    if __name__ == "__main__":
        main()
    """

REPLIES = "".join(f"the support bot answers questions about {w} and delivery times today.\n"
                  for w in ("invoices", "refunds", "invoices, refunds", "delivery", "billing",
                            "returns"))


def _support_bot(d: Path) -> tuple[str, Path, Path]:
    """The corpus interpreter, the evaluation repository and the tiny Llama's folder (trained
    here, tied embeddings; not under git)."""
    py = python_with("torch", "transformers")
    model = d / "models" / "tiny-llama-support"
    if not (model / "model.safetensors").exists():
        res = subprocess.run([py, "-c", MAKE_TINY_LLAMA, str(model), json.dumps(TINY_LLAMA)],
                             capture_output=True, text=True, check=False)
        if res.returncode:
            raise Unavailable("could not build the tiny Llama: " + res.stderr[-300:])
    repo = _repo(d / "support-bot-eval", {"evaluate.py": LLAMA_EVAL,
                                          "data/replies.txt": REPLIES})
    return py, repo, model


def _edit_config(model: Path, **fields: object) -> None:
    path = model / "config.json"
    cfg = json.loads(path.read_text())
    path.write_text(json.dumps({**cfg, **fields}, indent=2) + "\n")


def pad_token_id_from_big_model(d: Path) -> Incident:
    """Between the runs someone copied pad_token_id 128004 from the full-size Llama's
    config.json into the tiny model's (to silence a padding warning); the tiny vocabulary has
    256 entries and the embedding refuses it at construction: "Padding_idx must be within
    num_embeddings". Kind: fail."""
    py, repo, model = _support_bot(d)
    good, bad = _shells(d)
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(pad_token_id_from_big_model, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: pad_token_id"),
                     between=lambda: _edit_config(model, pad_token_id=128004))


def tie_embeddings_off_metric(d: Path) -> Incident:
    """Between the runs tie_word_embeddings was set to false in the model folder's config.json
    (copied from the untied 8B variant's); the checkpoint has no lm_head.weight, transformers
    initialises it afresh (its load report says so on stderr), both runs exit 0 and the eval
    loss jumps. Kind: metric."""
    py, repo, model = _support_bot(d)
    good, bad = _shells(d)
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(tie_embeddings_off_metric, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("models", "--model-path: tie_word_embeddings"),
                     between=lambda: _edit_config(model, tie_word_embeddings=False))


def tiny_llama_eval_noise(d: Path) -> Incident:
    """The same evaluation of the same model folder from the CI job (HF_HUB_OFFLINE,
    TRANSFORMERS_VERBOSITY=error, no progress bars) and from the notebook terminal (its own
    HF_HOME, TOKENIZERS_PARALLELISM=true). Nothing planted. Kind: noise."""
    py, repo, model = _support_bot(d)
    good, bad = _shells(d)
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(tiny_llama_eval_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- the rest


BATCH_WORKER = """
    \"\"\"Batch scoring worker: as many torch threads as the pod's CPU limit.\"\"\"
    import os

    import torch


    def configure_threads():
        threads = int(os.environ.get("CPU_LIMIT", os.cpu_count()))
        torch.set_num_threads(threads)
        return threads


    def main():
        threads = configure_threads()
        torch.manual_seed(0)
        items = torch.randn(4096, 64)
        weights = torch.randn(64, 1) / 8
        scores = torch.sigmoid(items @ weights)
        print(f"threads={threads} scored={scores.numel()} mean_score={scores.mean().item():.5f}")


    if __name__ == "__main__":
        main()
    """


def cpu_limit_float(d: Path) -> Incident:
    """The scoring worker sizes torch's thread pool from CPU_LIMIT. The CI job sets CPU_LIMIT=2
    in .gitlab-ci.yml; JupyterHub's spawner exports the pod's limit as a float, CPU_LIMIT=2.0,
    and int() refuses it: "invalid literal for int() with base 10: '2.0'". Kind: fail."""
    py = python_with("torch")
    app = _write(d / "batch-scoring" / "worker.py", BATCH_WORKER)
    good, bad = _shells(d, {"CPU_LIMIT": "2"}, {"CPU_LIMIT": "2.0"})
    argv = (py, str(app))
    return _incident(cpu_limit_float, Launch(argv, good, app.parent), Launch(argv, bad, app.parent),
                     ("env", "CPU_LIMIT"))


GRAPH_FEATURES = """
    \"\"\"Degree features of the co-purchase graph, for the recommender.\"\"\"
    import csv

    import networkx as nx
    import numpy as np


    def main():
        g = nx.Graph()
        with open("data/copurchase.csv") as f:
            for row in csv.DictReader(f):
                g.add_edge(row["item_a"], row["item_b"], weight=float(row["count"]))
        adj = nx.to_numpy_matrix(g, nodelist=sorted(g))
        strength = np.asarray(adj.sum(axis=1)).ravel()
        print(f"networkx={nx.__version__} items={len(g)} edges={g.number_of_edges()} "
              f"mean_strength={strength.mean():.3f}")


    if __name__ == "__main__":
        main()
    """


def networkx_vendor_pythonpath(d: Path) -> Incident:
    """The CI script installs the pinned requirements into vendor/ (git-ignored: ``pip install
    --target vendor networkx==2.8.8``) and exports PYTHONPATH=vendor; the notebook terminal
    does not, so the shared venv's networkx 3 is imported, where ``to_numpy_matrix`` is gone:
    "module 'networkx' has no attribute 'to_numpy_matrix'". Kind: fail."""
    py = python_with("networkx", "numpy")
    edges = "item_a,item_b,count\n" + "".join(
        f"sku{i % 23},sku{(i * 7 + 3) % 23},{1 + i % 5}\n" for i in range(90))
    repo = _repo(d / "copurchase-graph", {"features.py": GRAPH_FEATURES,
                                          "requirements-ci.txt": "networkx==2.8.8\n",
                                          "data/copurchase.csv": edges,
                                          ".gitignore": "vendor/\n"})
    vendor = repo / "vendor"
    if not (vendor / "networkx").exists():
        res = subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--target",
                              str(vendor), "networkx==2.8.8"], capture_output=True, text=True,
                             check=False)
        if res.returncode:
            raise Unavailable("pip could not install networkx 2.8.8: " + res.stderr[-200:])
    good, bad = _shells(d, {"PYTHONPATH": str(vendor)})
    argv = (py, "features.py")
    return _incident(networkx_vendor_pythonpath, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("env", "PYTHONPATH"), ("packages", "networkx"))


REVIEW_PREP = """
    \"\"\"Build the review set with Hugging Face datasets.\"\"\"
    from datasets import load_dataset


    def main():
        ds = load_dataset("json", data_files="data/reviews.jsonl", split="train")
        ds = ds.filter(lambda r: len(r["text"].split()) >= 3)
        print(f"examples={len(ds)} positive={sum(ds['label'])}")


    if __name__ == "__main__":
        main()
    """

SCRATCH_DATASETS = """
    \"\"\"scratch: a torch Dataset over the tokenized reviews (to move into src/ later)\"\"\"
    import torch


    class ReviewTensors(torch.utils.data.Dataset):
        def __init__(self, ids, labels):
            self.ids, self.labels = ids, labels

        def __len__(self):
            return len(self.labels)

        def __getitem__(self, i):
            return self.ids[i], self.labels[i]
    """


def scratch_datasets_shadow(d: Path) -> Incident:
    """Between the runs the engineer saved a scratch file as datasets.py beside prep.py
    (untracked); ``from datasets import load_dataset`` now imports it instead of Hugging Face
    datasets: "cannot import name 'load_dataset' from 'datasets'". Kind: fail."""
    py = python_with("datasets")
    rows = "".join(json.dumps({"text": t, "label": i % 2}) + "\n" for i, t in enumerate(
        ["great fit and fast delivery", "broke after two days", "ok", "love the colour, "
         "will buy again", "refund took three weeks", "exactly as described here", "meh",
         "arrived late but works fine"] * 4))
    repo = _repo(d / "review-clf", {"prep.py": REVIEW_PREP, "data/reviews.jsonl": rows})
    good, bad = _shells(d)
    argv = (py, "prep.py")
    return _incident(scratch_datasets_shadow, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("git", "review-clf: datasets.py"),
                     between=lambda: _write(repo / "datasets.py", SCRATCH_DATASETS))


CHURN_TRAIN = """
    \"\"\"Train the churn classifier; settings from configs/train.yaml.\"\"\"
    import torch
    import torch.nn.functional as F
    import yaml


    def main():
        with open("configs/train.yaml") as f:
            cfg = yaml.safe_load(f)
        g = torch.Generator().manual_seed(11)
        x = torch.randn(1200, 10, generator=g)
        y = ((x[:, 0] + 0.5 * x[:, 1] + 0.8 * torch.randn(1200, generator=g)) > 1.2).long()
        xt, yt, xv, yv = x[:900], y[:900], x[900:], y[900:]
        weight = None
        if cfg["class_weight"] == "balanced":
            counts = torch.bincount(yt, minlength=2).float()
            weight = counts.sum() / (2 * counts)
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(),
                                    torch.nn.Linear(32, 2))
        opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
        for _ in range(cfg["epochs"]):
            loss = F.cross_entropy(model(xt), yt, weight=weight)
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            pred = model(xv).argmax(-1)
        recall = ((pred == 1) & (yv == 1)).sum().item() / max(1, (yv == 1).sum().item())
        print(f"val_accuracy={(pred == yv).float().mean().item():.4f} val_recall={recall:.4f}")


    if __name__ == "__main__":
        main()
    """


def class_weight_config_metric(d: Path) -> Incident:
    """configs/train.yaml (in git) was edited to ``class_weight: balanced`` while trying to lift
    the recall in a notebook, and not committed; both runs exit 0, and the validation recall
    and accuracy move. Kind: metric."""
    py = python_with("torch", "yaml")
    repo = _repo(d / "churn-clf", {"train.py": CHURN_TRAIN, "configs/train.yaml":
                                   "epochs: 150\nlr: 0.01\nclass_weight: null\n"})

    def edit() -> None:
        (repo / "configs" / "train.yaml").write_text(
            "epochs: 150\nlr: 0.01\nclass_weight: balanced\n")

    good, bad = _shells(d)
    argv = (py, "train.py")
    return _incident(class_weight_config_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "churn-clf: configs/train.yaml"),
                     between=edit)


INTENT_EVAL = """
    \"\"\"Evaluate the intent classifier: accuracy averaged over the evaluation batches.\"\"\"
    import argparse

    import torch


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--eval-batch-size", type=int, default=64)
        a = p.parse_args()
        g = torch.Generator().manual_seed(5)
        centers = torch.randn(6, 20, generator=g)
        labels = torch.arange(1000) % 6
        x = centers[labels] + 1.3 * torch.randn(1000, 20, generator=g)
        torch.manual_seed(0)
        model = torch.nn.Linear(20, 6)
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        for _ in range(20):
            loss = torch.nn.functional.cross_entropy(model(x[:600]), labels[:600])
            opt.zero_grad()
            loss.backward()
            opt.step()
        per_batch = []
        with torch.no_grad():
            for xb, yb in zip(x[600:].split(a.eval_batch_size),
                              labels[600:].split(a.eval_batch_size)):
                per_batch.append((model(xb).argmax(-1) == yb).float().mean().item())
        print(f"eval_batches={len(per_batch)} eval_accuracy={sum(per_batch) / len(per_batch):.4f}")


    if __name__ == "__main__":
        main()
    """


def eval_batch_mean_of_means_metric(d: Path) -> Incident:
    """The evaluation averages per-batch accuracies, so a ragged last batch weighs as much as a
    full one. The notebook terminal's run passes --eval-batch-size 48 (what fitted the notebook
    kernel's memory); the CI job's passes 64. Both exit 0 and eval_accuracy differs. Kind:
    metric."""
    py = python_with("torch")
    repo = _repo(d / "intent-eval", {"evaluate.py": INTENT_EVAL})
    good, bad = _shells(d)
    return _incident(eval_batch_mean_of_means_metric,
                     Launch((py, "evaluate.py", "--eval-batch-size", "64"), good, repo),
                     Launch((py, "evaluate.py", "--eval-batch-size", "48"), bad, repo),
                     ("command", "--eval-batch-size"))


#: The seventh fresh batch, in the order it was written. Never tuned on.
FRESH7 = [
    dist_backend_nccl_job, no_sync_edit_metric_job, hidden_width_edit_both_fail_job,
    ranker_job_noise, engine_dist_timeout_minutes, kv_cache_dtype_both_fail,
    uvicorn_smoke_noise, shared_engine_config_cuda, pad_token_id_from_big_model,
    tie_embeddings_off_metric, tiny_llama_eval_noise, cpu_limit_float,
    networkx_vendor_pythonpath, scratch_datasets_shadow, class_weight_config_metric,
    eval_batch_mean_of_means_metric,
]

if __name__ == "__main__":  # build one incident and print its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH7 if b.__name__ in sys.argv[1:]] or FRESH7
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh7-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
