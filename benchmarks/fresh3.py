"""A third fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``docs/ranking.md``,
``docs/diff.md``) nor its capture and tracing code (``runsnap/launch/``, ``runsnap/tracing/``,
``runsnap/probe/``): only the incident format (benchmarks/incidents.py), how third-party incidents
are written (benchmarks/thirdparty.py, benchmarks/fresh.py, benchmarks/fresh2.py), how they are
run and scored (benchmarks/corpus.py, benchmarks/diagnosis.py), the README and the snapshot
reference (docs/schema.md) for the names of the keys, and ``runsnap capture --help`` /
``docs/launchers.md`` for how a torchrun job captures one snapshot per rank. They form the
corpus's fifth half, ``fresh3``; report it, never change the ranker to fit it, and never change
an incident after seeing its score (except to repair an incident whose bad launch does not fail
for the planted reason, said in the commit).

More than half are distributed or engine incidents with real torch (the CPU build), checked by
running them:

- gloo (``GLOO_SOCKET_IFNAME`` naming an interface this node does not have, under ``torchrun
  --nproc-per-node 2``), the c10d TCPStore (a ``WORLD_SIZE`` left over from a two-node job: rank 0
  waits for a client that never comes; a stale ``MASTER_ADDR`` quoted by the error), DDP (an
  edited ``num_experts`` in a model folder under git leaves experts without tokens: "parameters
  that were not used in producing loss"), compared **job to job**: each job is ``torchrun
  --nproc-per-node 2 --no-python runsnap capture -o JOB/{host}-{rank}.toml -- python train.py``,
  one snapshot per rank, and the two folders are diffed;
- determinism (``torch.use_deterministic_algorithms`` through a ``--deterministic`` option, with
  ``CUBLAS_WORKSPACE_CONFIG`` and ``PYTHONHASHSEED`` beside it; a vocabulary built from a set,
  whose order ``PYTHONHASHSEED`` decides), a torch ``UserWarning`` made an error by
  ``PYTHONWARNINGS``, allocator settings (``PYTORCH_CUDA_ALLOC_CONF``: checked here, the CPU build
  does not parse it, so it is noise), a weight decay edited in an ml_collections config module
  (the loss moves at 1e-4), an uncommitted edit in a module nothing imports beside a command
  option that matters;
- other libraries, not used by the earlier batches: scikit-learn (``SKLEARN_ASSUME_FINITE``,
  read at import), numba (``NUMBA_DISABLE_JIT``: Python integers do not wrap as int64 does),
  SQLAlchemy (a Heroku-style ``postgres://`` URL), pandas with tzlocal (``TZ`` moves events
  across midnight).

The shells are :func:`cloud_shell`: user dana on a cloud GPU cluster, one shell an SSH login on
a VM node, the other ``kubectl exec`` into a pod, each with the tuning variables of its own job
scripts (``NCCL_*``, ``FI_*``, ``CUDA_*``, ``TORCH_NCCL_*``, ``PYTORCH_CUDA_ALLOC_CONF``) that change
nothing on this CPU-only build; the thread counts that change float reductions are pinned alike.

Kinds: ``fail`` (the good run exits 0, the bad one fails), ``metric`` (both exit 0 and only a
printed ``key=value`` metric differs), ``both-fail`` (both fail, differently), ``noise`` (nothing
planted: success is "nothing counts"). Job incidents (``ddp_*_job``) use
:data:`benchmarks.incidents.RANKS_RUNSNAP` and :data:`benchmarks.incidents.RANKS_FOLDER`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from benchmarks.incidents import RANKS_FOLDER, RANKS_RUNSNAP, Incident, Launch, _git, _write
from benchmarks.thirdparty import Unavailable, _incident, python_with


def cloud_shell(n: int, home: Path) -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1) of user dana on a cloud GPU cluster: 0 an SSH
    login on a VM node, 1 ``kubectl exec`` into a training pod; each with the tuning variables
    its job scripts export."""
    tuning = [
        {"NCCL_SOCKET_IFNAME": "ens5", "FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1",
         "NCCL_PROTO": "simple", "NCCL_DEBUG": "WARN", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
         "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
         "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
        {"NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_DISABLE": "1", "NCCL_DEBUG": "INFO",
         "NCCL_NVLS_ENABLE": "0", "CUDA_MODULE_LOADING": "LAZY",
         "TORCH_NCCL_BLOCKING_WAIT": "0", "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
         "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:512,garbage_collection_threshold:0.8",
         "CUBLAS_WORKSPACE_CONFIG": ":4096:8"},
    ][n % 2]
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home), "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1",
        "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2",
        **tuning,
    }
    if n % 2 == 0:  # SSH login on the VM
        env.update({
            "USER": "dana", "LOGNAME": "dana", "SHELL": "/bin/bash", "TERM": "xterm-256color",
            "SHLVL": "1", "OLDPWD": str(home), "MAIL": "/var/mail/dana",
            "SSH_CLIENT": "203.0.113.41 61022 22",
            "SSH_CONNECTION": "203.0.113.41 61022 10.0.12.7 22", "SSH_TTY": "/dev/pts/0",
            "SSH_AUTH_SOCK": "/tmp/ssh-Vb9TqL/agent.3301", "XDG_SESSION_ID": "57",
            "XDG_RUNTIME_DIR": "/run/user/1001", "AWS_REGION": "us-west-2",
            "AWS_DEFAULT_REGION": "us-west-2", "COLUMNS": "171", "LINES": "44",
            "_": "/usr/bin/tmux", "TMUX": "/tmp/tmux-1001/default,2211,0", "TMUX_PANE": "%2",
            "CONDA_DEFAULT_ENV": "base", "CONDA_SHLVL": "1",
        })
    else:  # kubectl exec -it trainer-0 -- bash
        env.update({
            "HOSTNAME": "trainer-7f9c6d-0", "TERM": "xterm", "SHLVL": "1", "OLDPWD": "/workspace",
            "KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
            "KUBERNETES_PORT": "tcp://10.96.0.1:443",
            "KUBERNETES_PORT_443_TCP": "tcp://10.96.0.1:443",
            "TRAINER_SVC_SERVICE_HOST": "10.100.31.9", "TRAINER_SVC_SERVICE_PORT": "29500",
            "NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
            "NV_LIBCUBLAS_VERSION": "12.4.5.8-1", "CUDA_VERSION": "12.4.1",
            "PIP_NO_CACHE_DIR": "1", "_": "/usr/bin/env",
        })
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None
            ) -> tuple[dict[str, str], dict[str, str]]:
    home = d / "home"
    home.mkdir(parents=True, exist_ok=True)
    return {**cloud_shell(0, home), **(good or {})}, {**cloud_shell(1, home), **(bad or {})}


def _repo(path: Path, files: dict[str, str]) -> Path:
    """A git repository holding ``files``, all committed."""
    for name, text in files.items():
        _write(path / name, text)
    _git(path, "init", "-q")
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "import training code")
    return path


def _torchrun(py: str) -> str:
    """The torchrun script beside an interpreter that has torch."""
    runner = Path(py).parent / "torchrun"
    if not runner.exists():
        raise Unavailable(f"no torchrun beside {py}")
    return str(runner)


# --------------------------------------------------------------------------- torch.distributed


ALLREDUCE_CHECK = """
    \"\"\"Smoke test of the process group before a long job: all-reduce a tensor on every rank.\"\"\"
    import datetime
    import os

    import torch
    import torch.distributed as dist


    def main():
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
        rank, world = dist.get_rank(), dist.get_world_size()
        t = torch.full((1024,), float(rank + 1))
        dist.all_reduce(t)
        expected = world * (world + 1) / 2
        assert torch.allclose(t, torch.full_like(t, expected)), "all-reduce gave a wrong sum"
        if rank == 0:
            print(f"world_size={world} allreduce_sum={t[0].item():.1f}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """


def gloo_ifname_missing(d: Path) -> Incident:
    """``runsnap capture -- torchrun --nproc-per-node 2 allreduce_check.py``. The pod's job
    script exports GLOO_SOCKET_IFNAME=ens5 beside NCCL_SOCKET_IFNAME (both copied from the VM
    nodes' script); the pod has no ens5 and gloo stops: "Unable to find address for: ens5".
    NCCL_SOCKET_IFNAME differs too and nothing reads it. Kind: fail."""
    py = python_with("torch")
    app = _write(d / "allreduce_check.py", ALLREDUCE_CHECK)
    good, bad = _shells(d, {}, {"NCCL_SOCKET_IFNAME": "ens5", "GLOO_SOCKET_IFNAME": "ens5"})
    argv = (_torchrun(py), "--nproc-per-node", "2", str(app))
    return _incident(gloo_ifname_missing, Launch(argv, good, d), Launch(argv, bad, d),
                     ("env", "GLOO_SOCKET_IFNAME"))


EVAL_SHARDED = """
    \"\"\"Evaluate a checkpoint. Runs alone or under torchrun: alone, it makes a group of one so
    that the model code's all_reduce calls work unchanged.\"\"\"
    import argparse
    import datetime
    import os

    import torch
    import torch.distributed as dist


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--dist-timeout", type=float, default=1800.0)
        p.add_argument("--batches", type=int, default=8)
        a = p.parse_args()
        os.environ.setdefault("RANK", "0")
        os.environ.setdefault("WORLD_SIZE", "1")
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29500")
        dist.init_process_group("gloo", init_method="env://",
                                timeout=datetime.timedelta(seconds=a.dist_timeout))
        torch.manual_seed(0)
        model = torch.nn.Linear(32, 4)
        correct = torch.zeros(1)
        seen = torch.zeros(1)
        for _ in range(a.batches):
            x = torch.randn(64, 32)
            y = torch.randint(0, 4, (64,))
            correct += (model(x).argmax(-1) == y).sum()
            seen += 64
        dist.all_reduce(correct)
        dist.all_reduce(seen)
        if dist.get_rank() == 0:
            print(f"eval_accuracy={(correct / seen).item():.4f}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """


def store_world_size_leftover(d: Path) -> Incident:
    """A one-process evaluation (env:// rendezvous, defaults for a group of one). The pod's
    shell still has WORLD_SIZE=2 exported from a two-node run: rank 0's TCPStore waits for a
    second client and times out ("1/2 clients joined"). MASTER_PORT differs between the shells
    as well, harmlessly. Kind: fail."""
    py = python_with("torch")
    app = _write(d / "evaluate.py", EVAL_SHARDED)
    good, bad = _shells(d, {"MASTER_PORT": "29500"},
                        {"MASTER_PORT": "29533", "WORLD_SIZE": "2"})
    argv = (py, str(app), "--dist-timeout", "5")
    return _incident(store_world_size_leftover, Launch(argv, good, d), Launch(argv, bad, d),
                     ("env", "WORLD_SIZE"))


def master_addr_stale(d: Path) -> Incident:
    """The same evaluation; the pod's shell exports MASTER_ADDR=gpu-node-117 (the head node of
    yesterday's job) and TORCH_DISTRIBUTED_DEBUG=DETAIL (read by c10d, harmless): the store's
    client times out connecting to (gpu-node-117, 29500), the error quoting the value. Kind:
    fail."""
    py = python_with("torch")
    app = _write(d / "evaluate.py", EVAL_SHARDED)
    good, bad = _shells(d, {"TORCH_CPP_LOG_LEVEL": "WARNING"},
                        {"MASTER_ADDR": "gpu-node-117", "TORCH_DISTRIBUTED_DEBUG": "DETAIL"})
    argv = (py, str(app), "--dist-timeout", "4")
    return _incident(master_addr_stale, Launch(argv, good, d), Launch(argv, bad, d),
                     ("env", "MASTER_ADDR"))


MOE_TRAIN = """
    \"\"\"Train a tiny mixture-of-experts LM with DDP (gloo) for a few steps.\"\"\"
    import argparse
    import json
    import os

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP


    class MoE(torch.nn.Module):
        def __init__(self, cfg):
            super().__init__()
            h = cfg["hidden_size"]
            self.embed = torch.nn.Embedding(cfg["vocab_size"], h)
            self.router = torch.nn.Linear(h, cfg["num_experts"])
            self.experts = torch.nn.ModuleList(
                torch.nn.Linear(h, h) for _ in range(cfg["num_experts"]))
            self.head = torch.nn.Linear(h, cfg["vocab_size"])

        def forward(self, ids):
            x = self.embed(ids)
            weight, choice = self.router(x).softmax(-1).max(-1)
            out = torch.zeros_like(x)
            for i, expert in enumerate(self.experts):
                mask = choice == i
                if mask.any():
                    out[mask] = expert(x[mask]) * weight[mask].unsqueeze(-1)
            return self.head(x + out)


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--steps", type=int, default=4)
        a = p.parse_args()
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        with open(os.path.join(a.model_path, "config.json")) as f:
            cfg = json.load(f)
        torch.manual_seed(0)
        model = DDP(MoE(cfg))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(rank)
        for step in range(a.steps):
            ids = torch.randint(0, cfg["vocab_size"], (4, 8), generator=g)
            loss = torch.nn.functional.cross_entropy(model(ids).flatten(0, 1), ids.flatten())
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"step={a.steps} loss={loss.item():.4f}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

MOE_CONFIG = {"architectures": ["TinyMoEForCausalLM"], "model_type": "tiny-moe",
              "hidden_size": 16, "num_experts": 2, "top_k": 1, "vocab_size": 64,
              "router_aux_loss_coef": 0.0, "torch_dtype": "float32"}


def _job(py: str, repo: Path, *args: str) -> tuple[str, ...]:
    """A torchrun job of two ranks, each captured by runsnap into the job's folder."""
    return (_torchrun(py), "--nproc-per-node", "2", "--no-python", RANKS_RUNSNAP, "capture",
            "-o", f"{RANKS_FOLDER}/{{host}}-{{rank}}.toml", "--", py,
            str(repo / "train.py"), *args)


def ddp_moe_experts_job(d: Path) -> Incident:
    """Job against job (a folder of per-rank snapshots each). Between the jobs num_experts is
    raised from 2 to 16 in the model folder's config.json, an uncommitted edit in the project's
    repository; with 32 tokens a batch some experts get none and DDP stops at the second step
    ("parameters that were not used in producing loss"). Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "moe-lm", {"train.py": MOE_TRAIN,
                                "model/config.json": json.dumps(MOE_CONFIG, indent=2) + "\n"})

    def edit() -> None:
        (repo / "model" / "config.json").write_text(
            json.dumps({**MOE_CONFIG, "num_experts": 16}, indent=2) + "\n")

    good, bad = _shells(d)
    argv = _job(py, repo, "--model-path", "model")
    return _incident(ddp_moe_experts_job, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("models", "--model-path: num_experts"), ("git", "moe-lm: model/config.json"),
                     between=edit)


def ddp_job_noise(d: Path) -> Incident:
    """Job against job, the same code, model and options, started from the VM's shell and from
    the pod's: each job has its own rendezvous port, run id and rank processes. Nothing planted.
    Kind: noise."""
    py = python_with("torch")
    repo = _repo(d / "moe-lm", {"train.py": MOE_TRAIN,
                                "model/config.json": json.dumps(MOE_CONFIG, indent=2) + "\n"})
    good, bad = _shells(d)
    argv = _job(py, repo, "--model-path", "model", "--steps", "3")
    return _incident(ddp_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- determinism, warnings


SMOOTH_TRAIN = """
    \"\"\"Train a classifier with label smoothing written by hand, then save a checkpoint.\"\"\"
    import argparse
    import os

    import torch


    def smoothed_targets(labels, classes, eps):
        t = torch.full((labels.numel(), classes), eps / (classes - 1))
        flat = labels + torch.arange(labels.numel()) * classes
        t.view(-1).put_(flat, torch.full((labels.numel(),), 1.0 - eps))
        return t


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--deterministic", action="store_true")
        p.add_argument("--steps", type=int, default=20)
        p.add_argument("--save-to", required=True)
        a = p.parse_args()
        torch.manual_seed(0)
        if a.deterministic:
            torch.use_deterministic_algorithms(True)
        model = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(),
                                    torch.nn.Linear(32, 5))
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        for step in range(a.steps):
            x = torch.randn(64, 20)
            y = (x[:, :5].argmax(-1))
            target = smoothed_targets(y, 5, 0.1)
            loss = -(target * model(x).log_softmax(-1)).sum(-1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"loss={loss.item():.4f}")
        torch.save(model.state_dict(), os.path.join(a.save_to, "model.pt"))


    if __name__ == "__main__":
        main()
    """


def deterministic_option_both_fail(d: Path) -> Incident:
    """Both runs fail: the checkpoint folder was never made, so the first run ends at
    torch.save. The second run adds --deterministic (and its shell exports
    CUBLAS_WORKSPACE_CONFIG and PYTHONHASHSEED=0, as determinism guides say): the hand-written
    label smoothing uses Tensor.put_, which has no deterministic implementation, and the run
    stops before training. Kind: both-fail."""
    py = python_with("torch")
    app = _write(d / "train_cls.py", SMOOTH_TRAIN)
    good, bad = _shells(d, {}, {"PYTHONHASHSEED": "0", "CUBLAS_WORKSPACE_CONFIG": ":16:8"})
    base = (py, str(app), "--save-to", str(d / "checkpoints" / "cls-v2"))
    return _incident(deterministic_option_both_fail, Launch(base, good, d),
                     Launch((*base, "--deterministic"), bad, d), ("command", "--deterministic"))


HASH_VOCAB = """
    \"\"\"Train a bag-of-words topic classifier on a small labelled corpus.\"\"\"
    import torch

    TOPICS = {
        0: "gpu kernel launch latency memory bandwidth tensor core occupancy warp",
        1: "loss curve learning rate warmup schedule gradient clipping optimizer",
        2: "tokenizer vocabulary merges byte pair encoding unicode normalisation",
        3: "checkpoint shard resume saving loading weights optimizer state",
    }


    def main():
        words = " ".join(TOPICS.values()).split()
        vocab = list(set(words))
        index = {w: i for i, w in enumerate(vocab)}
        torch.manual_seed(0)
        emb = torch.nn.EmbeddingBag(len(vocab), 8, mode="mean")
        head = torch.nn.Linear(8, len(TOPICS))
        opt = torch.optim.SGD([*emb.parameters(), *head.parameters()], lr=0.5)
        g = torch.Generator().manual_seed(1)
        for step in range(30):
            labels = torch.randint(0, len(TOPICS), (16,), generator=g)
            bags = []
            for label in labels.tolist():
                ws = TOPICS[label].split()
                pick = torch.randint(0, len(ws), (4,), generator=g).tolist()
                bags.append(torch.tensor([index[ws[i]] for i in pick]))
            logits = head(emb(torch.stack(bags)))
            loss = torch.nn.functional.cross_entropy(logits, labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"vocab={len(vocab)} train_loss={loss.item():.4f}")


    if __name__ == "__main__":
        main()
    """


def hashseed_vocab_metric(d: Path) -> Incident:
    """The vocabulary is ``list(set(words))``: its order, and so which embedding row each word
    gets, follows the string hash. The VM's job script exports PYTHONHASHSEED=0; the pod's shell
    does not, and the final loss differs. CUBLAS_WORKSPACE_CONFIG differs too (nothing reads it
    on the CPU). Kind: metric."""
    py = python_with("torch")
    app = _write(d / "topics.py", HASH_VOCAB)
    good, bad = _shells(d, {"PYTHONHASHSEED": "0"}, {})
    argv = (py, str(app))
    return _incident(hashseed_vocab_metric, Launch(argv, good, d), Launch(argv, bad, d),
                     ("env", "PYTHONHASHSEED"))


ATTN_POOL = """
    \"\"\"Pool token features with attention weights and report the pooled norm.\"\"\"
    import torch
    import torch.nn.functional as F


    def attention_pool(scores, values):
        weights = F.softmax(scores)
        return (weights.unsqueeze(-1) * values).sum(-2)


    def main():
        torch.manual_seed(0)
        values = torch.randn(4, 10, 16)
        scores = torch.randn(4, 10)
        pooled = attention_pool(scores, values)
        print(f"pooled_norm={pooled.norm().item():.4f}")


    if __name__ == "__main__":
        main()
    """


def warnings_error_softmax(d: Path) -> Incident:
    """F.softmax without dim= warns (UserWarning, "Implicit dimension choice for softmax has
    been deprecated"); the pod's shell exports PYTHONWARNINGS=error (from the CI image), which
    turns the warning into an exception. Kind: fail."""
    py = python_with("torch")
    app = _write(d / "pool.py", ATTN_POOL)
    good, bad = _shells(d, {"PYTHONDONTWRITEBYTECODE": "1"}, {"PYTHONWARNINGS": "error"})
    argv = (py, str(app))
    return _incident(warnings_error_softmax, Launch(argv, good, d), Launch(argv, bad, d),
                     ("env", "PYTHONWARNINGS"))


def allocator_settings_noise(d: Path) -> Incident:
    """The same small training in both shells. They differ in PYTORCH_CUDA_ALLOC_CONF
    (expandable_segments vs max_split_size_mb and a garbage-collection threshold),
    CUBLAS_WORKSPACE_CONFIG, TORCH_NCCL_* and CUDA_* variables: checked here, the CPU build of
    torch parses none of them (a bad PYTORCH_CUDA_ALLOC_CONF value raises nothing), and the
    loss is the same. Nothing planted. Kind: noise."""
    py = python_with("torch")
    app = _write(d / "topics.py", HASH_VOCAB.replace("vocab = list(set(words))",
                                                     "vocab = sorted(set(words))"))
    good, bad = _shells(d)
    argv = (py, str(app))
    return _incident(allocator_settings_noise, Launch(argv, good, d), Launch(argv, bad, d))


# --------------------------------------------------------------------------- code and config in git


ML_TRAIN = """
    \"\"\"Fit a small regression with the optimizer settings of an ml_collections config file.\"\"\"
    from absl import app
    from ml_collections import config_flags

    import torch

    _CONFIG = config_flags.DEFINE_config_file("config", "configs/base.py")


    def main(argv):
        cfg = _CONFIG.value
        torch.manual_seed(cfg.seed)
        x = torch.randn(256, 8)
        y = x @ torch.linspace(-1, 1, 8) + 0.1 * torch.randn(256)
        model = torch.nn.Linear(8, 1)
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.optimizer.lr,
                                weight_decay=cfg.optimizer.weight_decay)
        for _ in range(cfg.steps):
            loss = torch.nn.functional.mse_loss(model(x).squeeze(-1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"final_mse={loss.item():.6f}")


    if __name__ == "__main__":
        app.run(main)
    """

ML_CONFIG = """
    import ml_collections


    def get_config():
        config = ml_collections.ConfigDict()
        config.seed = 0
        config.steps = 200
        config.optimizer = ml_collections.ConfigDict()
        config.optimizer.lr = 0.05
        config.optimizer.weight_decay = 0.0
        return config
    """


def ml_collections_config_edit(d: Path) -> Incident:
    """An absl program whose --config is an ml_collections config module in the repository
    (configs/base.py, loaded by config_flags). Between the runs its weight_decay is edited from
    0.0 to 0.01 and not committed; both runs exit 0 and final_mse moves in the fourth
    significant digit. Kind: metric."""
    py = python_with("torch", "ml_collections", "absl")
    repo = _repo(d / "regress", {"train.py": ML_TRAIN, "configs/__init__.py": "",
                                 "configs/base.py": ML_CONFIG})

    def edit() -> None:
        _write(repo / "configs" / "base.py",
               ML_CONFIG.replace("weight_decay = 0.0", "weight_decay = 0.01"))

    good, bad = _shells(d)
    argv = (py, "train.py", "--config", "configs/base.py")
    return _incident(ml_collections_config_edit, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "regress: configs/base.py"), between=edit)


POS_EVAL = """
    \"\"\"Score a batch of documents with a small transformer encoder, truncated to --max-length.\"\"\"
    import argparse

    import torch


    class Encoder(torch.nn.Module):
        def __init__(self, vocab=500, dim=32, max_positions=1024):
            super().__init__()
            self.tok = torch.nn.Embedding(vocab, dim)
            self.pos = torch.nn.Embedding(max_positions, dim)
            layer = torch.nn.TransformerEncoderLayer(dim, 4, 64, batch_first=True)
            self.body = torch.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)

        def forward(self, ids):
            positions = torch.arange(ids.shape[1]).unsqueeze(0)
            return self.body(self.tok(ids) + self.pos(positions)).abs().mean()


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--max-length", type=int, default=512)
        p.add_argument("--batch-size", type=int, default=2)
        a = p.parse_args()
        torch.manual_seed(0)
        model = Encoder().eval()
        docs = torch.randint(0, 500, (a.batch_size, 3000))
        with torch.no_grad():
            score = model(docs[:, :a.max_length])
        print(f"mean_abs_activation={score.item():.4f}")


    if __name__ == "__main__":
        main()
    """


def option_beside_unimported_edit(d: Path) -> Incident:
    """The second run passes --max-length 2048 to an encoder with 1024 learned positions:
    "IndexError: index out of range in self", the value named nowhere. Between the runs someone
    also left an uncommitted edit in tools/export_onnx.py, which the scoring program never
    imports. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "scorer", {
        "score.py": POS_EVAL,
        "tools/__init__.py": "",
        "tools/export_onnx.py": """
            import torch


            def export(model, path, length=512):
                ids = torch.zeros(1, length, dtype=torch.long)
                torch.onnx.export(model, (ids,), path, opset_version=17)
            """,
    })

    def edit() -> None:
        text = (repo / "tools" / "export_onnx.py").read_text()
        (repo / "tools" / "export_onnx.py").write_text(
            text.replace("opset_version=17", "opset_version=18, dynamo=True"))

    good, bad = _shells(d)
    base = (py, "score.py", "--batch-size", "2")
    return _incident(option_beside_unimported_edit,
                     Launch((*base, "--max-length", "512"), good, repo),
                     Launch((*base, "--max-length", "2048"), bad, repo),
                     ("command", "--max-length"), between=edit)


ATTENTION = """
    import torch


    def attend(q, k, v):
        scale = q.shape[-1] ** -0.5
        weights = (q @ k.transpose(-2, -1) * scale).softmax(-1)
        return weights @ v
    """

EVAL_PPL = """
    \"\"\"Perplexity of a tiny attention LM on a fixed batch.\"\"\"
    import torch

    from lm.attention import attend


    def main():
        torch.manual_seed(0)
        vocab, dim = 50, 16
        emb = torch.nn.Embedding(vocab, dim)
        qkv = torch.nn.Linear(dim, 3 * dim)
        out = torch.nn.Linear(dim, vocab)
        ids = torch.randint(0, vocab, (4, 12))
        with torch.no_grad():
            q, k, v = qkv(emb(ids)).chunk(3, dim=-1)
            logits = out(attend(q, k, v))
            nll = torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1),
                                                    ids[:, 1:].flatten())
        print(f"perplexity={nll.exp().item():.3f}")


    if __name__ == "__main__":
        main()
    """


def imported_module_edit_metric(d: Path) -> Incident:
    """An uncommitted edit in lm/attention.py, which the evaluation imports: the softmax scale
    becomes head_dim ** 0.5 (a "fix" tried and left in the working tree). Both runs exit 0 and
    the perplexity differs. Kind: metric."""
    py = python_with("torch")
    repo = _repo(d / "tinylm", {"lm/__init__.py": "", "lm/attention.py": ATTENTION,
                                "eval_ppl.py": EVAL_PPL})

    def edit() -> None:
        _write(repo / "lm" / "attention.py", ATTENTION.replace("** -0.5", "** 0.5"))

    good, bad = _shells(d)
    argv = (py, "eval_ppl.py")
    return _incident(imported_module_edit_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "tinylm: lm/attention.py"), between=edit)


# --------------------------------------------------------------------------- other libraries


SK_TRAIN = """
    \"\"\"Fit the churn model on this week's features and gate it on its AUC.\"\"\"
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler


    def load_features():
        rng = np.random.default_rng(0)
        X = rng.standard_normal((300, 6))
        y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
        X[17, 3] = np.nan  # a sensor dropped one reading this week
        return X, y


    def main():
        X, y = load_features()
        clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=200)).fit(X, y)
        auc = roc_auc_score(y, clf.predict_proba(X)[:, 1])
        print(f"auc={auc:.4f}")
        assert auc > 0.6, f"AUC {auc:.3f} is below the 0.6 gate: the model did not learn"


    if __name__ == "__main__":
        main()
    """


def sklearn_assume_finite_both_fail(d: Path) -> Incident:
    """Both runs fail on a week whose features hold one NaN. The first stops at validation
    ("Input X contains NaN"). The pod's shell exports SKLEARN_ASSUME_FINITE=1 (scikit-learn reads
    it at import to skip that check, for speed): the NaN goes through, the fit is garbage, and the
    run stops later at the program's AUC gate. Kind: both-fail."""
    py = python_with("sklearn", "numpy")
    app = _write(d / "fit_churn.py", SK_TRAIN)
    good, bad = _shells(d, {}, {"SKLEARN_ASSUME_FINITE": "1"})
    argv = (py, str(app))
    return _incident(sklearn_assume_finite_both_fail, Launch(argv, good, d),
                     Launch(argv, bad, d), ("env", "SKLEARN_ASSUME_FINITE"))


NUMBA_BUCKETS = """
    \"\"\"Hash feature names into buckets with a numba kernel and report the bucket statistics.\"\"\"
    from numba import njit


    @njit
    def bucket(word, buckets):
        h = 0
        for ch in word:
            h = h * 31 + ord(ch)
        return h % buckets


    def main():
        names = [f"user_feature_{i:03d}_clicks_7d" for i in range(200)]
        ids = [bucket(name, 1009) for name in names]
        print(f"distinct_buckets={len(set(ids))} bucket_checksum={sum(ids)}")


    if __name__ == "__main__":
        main()
    """


def numba_disable_jit_metric(d: Path) -> Incident:
    """A numba kernel hashes names; compiled, its integer wraps at 64 bits. The pod's shell
    still has NUMBA_DISABLE_JIT=1 from a debugging session: the kernel runs as Python, whose
    integers do not wrap, and the bucket checksum differs. NUMBA_CACHE_DIR differs too,
    harmlessly. Kind: metric."""
    py = python_with("numba")
    app = _write(d / "buckets.py", NUMBA_BUCKETS)
    good, bad = _shells(d, {"NUMBA_CACHE_DIR": str(d / "home" / ".cache" / "numba")},
                        {"NUMBA_CACHE_DIR": "/tmp/numba-cache", "NUMBA_DISABLE_JIT": "1"})
    argv = (py, str(app))
    return _incident(numba_disable_jit_metric, Launch(argv, good, d), Launch(argv, bad, d),
                     ("env", "NUMBA_DISABLE_JIT"))


SQL_RECORD = """
    \"\"\"Record a finished run's metrics in the team's experiment database.\"\"\"
    import os

    from sqlalchemy import Column, Float, Integer, String, create_engine
    from sqlalchemy.orm import Session, declarative_base

    Base = declarative_base()


    class Run(Base):
        __tablename__ = "runs"
        id = Column(Integer, primary_key=True)
        name = Column(String)
        loss = Column(Float)


    def main():
        engine = create_engine(os.environ.get("DATABASE_URL", "sqlite:///runs.db"))
        Base.metadata.create_all(engine)
        with Session(engine) as s:
            s.add(Run(name="moe-2x16", loss=1.234))
            s.commit()
            print(f"runs_recorded={s.query(Run).count()}")


    if __name__ == "__main__":
        main()
    """


def sqlalchemy_postgres_scheme(d: Path) -> Incident:
    """The pod's shell has DATABASE_URL in the Heroku form, postgres://...; SQLAlchemy 1.4 and
    later know only postgresql://: "Can't load plugin: sqlalchemy.dialects:postgres". The VM's
    shell points it at a local SQLite file. Kind: fail."""
    py = python_with("sqlalchemy")
    app = _write(d / "record_run.py", SQL_RECORD)
    good, bad = _shells(d, {"DATABASE_URL": f"sqlite:///{d / 'runs.db'}"},
                        {"DATABASE_URL": "postgres://tracker@metrics-db.internal:5432/runs"})
    argv = (py, str(app))
    return _incident(sqlalchemy_postgres_scheme, Launch(argv, good, d), Launch(argv, bad, d),
                     ("env", "DATABASE_URL"))


TZ_DAILY = """
    \"\"\"Count inference requests per day, in the operator's local time, from the request log.\"\"\"
    import pandas as pd
    import tzlocal


    def main():
        log = pd.read_csv("requests.csv")
        stamps = pd.to_datetime(log["ts"], unit="s", utc=True)
        local = stamps.dt.tz_convert(tzlocal.get_localzone_name())
        per_day = log.groupby(local.dt.date).size()
        print(f"days={len(per_day)} first_day_requests={int(per_day.iloc[0])} "
              f"busiest_day_requests={int(per_day.max())}")


    if __name__ == "__main__":
        main()
    """


def tz_daily_counts_metric(d: Path) -> Incident:
    """Requests counted per local day (pandas, the zone from tzlocal, which reads TZ first).
    The VM's shell has TZ=UTC, the pod's TZ=America/Los_Angeles: requests near midnight move
    to other days and the daily counts differ. Kind: metric."""
    py = python_with("pandas", "tzlocal")
    start = 1764547200  # 2025-12-01 00:00 UTC
    rows = ["ts,latency_ms"] + [f"{start + i * 1800 + (i % 7) * 60},{20 + i % 13}"
                                for i in range(150)]
    _write(d / "requests.csv", "\n".join(rows) + "\n")
    app = _write(d / "daily.py", TZ_DAILY)
    good, bad = _shells(d, {"TZ": "UTC"}, {"TZ": "America/Los_Angeles"})
    argv = (py, str(app))
    return _incident(tz_daily_counts_metric, Launch(argv, good, d), Launch(argv, bad, d),
                     ("env", "TZ"))


#: The third fresh batch, in the order it was written. Never tuned on.
FRESH3 = [
    gloo_ifname_missing, store_world_size_leftover, master_addr_stale, ddp_moe_experts_job,
    ddp_job_noise, deterministic_option_both_fail, hashseed_vocab_metric,
    warnings_error_softmax, allocator_settings_noise, ml_collections_config_edit,
    option_beside_unimported_edit, imported_module_edit_metric, sklearn_assume_finite_both_fail,
    numba_disable_jit_metric, sqlalchemy_postgres_scheme, tz_daily_counts_metric,
]

if __name__ == "__main__":  # build one incident and print its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH3 if b.__name__ in sys.argv[1:]] or FRESH3
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh3-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
