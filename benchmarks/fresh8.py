"""An eighth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh.py ... fresh7.py, for their format), how they are run
and scored (benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot reference
(docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job captures
one snapshot per rank. They form the corpus's ``fresh8`` half; report it, never change the
ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank): a fifth shard file listed in the
  data config (uncommitted), so the ranks stream uneven numbers of batches and rank 0's
  all-reduce finds its peer gone; ``sampler.set_epoch()`` deleted in an uncommitted clean-up
  (every epoch sees the same order: the loss moves); a head count that does not divide the
  model width, edited into the model config, on top of a checkpoint folder that exists in
  neither job (both fail); and the same job from both shells (noise);
- engines: a tensor-parallel engine started with ``--pipeline-parallel-size 2`` from the
  multi-node recipe on a one-node cluster, so rank 0's TCPStore waits for four workers and two
  come; ``TORCH_DISTRIBUTED_DEBUG=1`` in the task's environment (torch refuses it at import);
  the engine's warm-up from both shells (noise); a Flask embedding service smoke-tested through
  an egress proxy whose ``NO_PROXY`` names ``localhost`` but not ``127.0.0.1``;
- model folders (transformers; tiny models trained at build time): ``id2label`` grown to three
  labels in a two-label classifier's config.json, ``rope_parameters`` copied from a model with
  another RoPE base, the classifier's evaluation from both shells (noise);
- the rest: a project venv on the cluster node that pins an old huggingface_hub (transformers
  refuses it at import), a jsonargparse defaults file in the node's home (a key since renamed),
  labels padded with the pad id instead of -100 in an uncommitted collate edit, a
  ``--label-smoothing`` taken from another recipe, and a ``from transformers import AdamW``
  pasted from an old tutorial on top of a training file never synced (both fail).

The shells are :func:`workstation_or_cluster_shell`: shell 0 a tmux session on the engineer's
desktop workstation (GNOME on Wayland, pyenv, the tmux and desktop-session variables), shell 1 a
SkyPilot task on a cloud VM (``SKYPILOT_*``, SkyPilot's Ray cluster, the task YAML's ``envs:``,
user ubuntu); each with the tuning variables its own scripts export (``NCCL_*``, ``TORCH_*``,
``HF_*``, ``CUDA_*``, ``FI_*``) that change nothing here; the thread counts that change float
reductions are pinned alike.

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


def workstation_or_cluster_shell(n: int, home: Path) -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 a tmux
    session on the engineer's desktop workstation, 1 a SkyPilot task (``sky launch``) on a
    cloud VM; each with the tuning variables its own scripts export."""
    home.mkdir(parents=True, exist_ok=True)
    common = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home),
              "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2",
              "HF_HOME": str(home / ".cache" / "huggingface")}
    if n % 2 == 0:  # tmux, started from GNOME Terminal; ~/.bashrc exports the GPU settings
        return {
            **common, "USER": "noor", "LOGNAME": "noor", "SHELL": "/bin/bash",
            "HOSTNAME": "noor-ws", "TERM": "tmux-256color", "COLORTERM": "truecolor",
            "SHLVL": "2", "LANG": "en_GB.UTF-8", "LC_TIME": "en_GB.UTF-8",
            "TMUX": "/tmp/tmux-1000/default,2231,0", "TMUX_PANE": "%3",
            "OLDPWD": str(home / "src"), "EDITOR": "nvim", "PAGER": "less", "LESS": "-R",
            "DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "wayland",
            "XDG_CURRENT_DESKTOP": "ubuntu:GNOME", "XDG_RUNTIME_DIR": "/run/user/1000",
            "XDG_SESSION_ID": "2", "DESKTOP_SESSION": "ubuntu",
            "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus",
            "SSH_AUTH_SOCK": "/run/user/1000/keyring/ssh",
            "PYENV_ROOT": str(home / ".pyenv"), "PYENV_SHELL": "bash",
            "PYENV_VIRTUALENV_INIT": "1",
            "CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
            "TORCH_CUDA_ARCH_LIST": "8.9", "NCCL_P2P_DISABLE": "1", "NCCL_IB_DISABLE": "1",
            "TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
            "TOKENIZERS_PARALLELISM": "false", "WANDB_PROJECT": "noor-scratch",
        }
    return {  # SkyPilot task on an AWS VM: task YAML envs, SkyPilot's own variables
        **common, "USER": "ubuntu", "LOGNAME": "ubuntu", "HOSTNAME": "ip-172-31-24-117",
        "LANG": "C.UTF-8", "SHLVL": "1", "PYTHONUNBUFFERED": "1",
        "SKYPILOT_TASK_ID": "sky-2026-12-05-06-12-44-118327_noor-train_4",
        "SKYPILOT_CLUSTER_INFO": json.dumps({"cluster_name": "noor-train", "cloud": "AWS",
                                             "region": "us-east-1", "zone": "us-east-1a"}),
        "SKYPILOT_NODE_RANK": "0", "SKYPILOT_NODE_IPS": "172.31.24.117",
        "SKYPILOT_NUM_NODES": "1", "SKYPILOT_NUM_GPUS_PER_NODE": "0",
        "SKYPILOT_INTERNAL_JOB_ID": "4", "SKYPILOT_USER": "noor", "SKYPILOT_USER_ID": "5e1f09ab",
        "RAY_ADDRESS": "127.0.0.1:6380", "RAY_USAGE_STATS_ENABLED": "0",
        "AWS_DEFAULT_REGION": "us-east-1",
        "HF_TOKEN": "hf_qZbTxLm4RkW9pCv2NyE7sJd0AfUoHg3Kti",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TOKENIZERS_PARALLELISM": "true",
        "NCCL_SOCKET_IFNAME": "ens5", "NCCL_DEBUG": "INFO", "NCCL_PROTO": "simple",
        "FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "TORCH_NCCL_ENABLE_MONITORING": "0",
        "CUDA_DEVICE_MAX_CONNECTIONS": "1", "MALLOC_TRIM_THRESHOLD_": "0",
    }


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None
            ) -> tuple[dict[str, str], dict[str, str]]:
    """The workstation's tmux environment (plus ``good``) and the SkyPilot task's (plus
    ``bad``)."""
    return ({**workstation_or_cluster_shell(0, d / "home" / "noor"), **(good or {})},
            {**workstation_or_cluster_shell(1, d / "home" / "ubuntu"), **(bad or {})})


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


def _run_py(py: str, code: str, *args: str) -> None:
    """Run ``code`` in the corpus interpreter (to build data or a model); Unavailable if it
    fails."""
    res = subprocess.run([py, "-c", code, *args], capture_output=True, text=True, check=False)
    if res.returncode:
        raise Unavailable("could not build the incident's files: " + res.stderr[-300:])


def _torchrun_job(py: str, script: str, *args: str) -> tuple[str, ...]:
    """A torchrun job of two ranks, each captured by runsnap into the job's folder."""
    runner = Path(py).parent / "torchrun"
    if not runner.exists():
        raise Unavailable(f"no torchrun beside {py}")
    return (str(runner), "--standalone", "--nproc-per-node", "2", "--no-python", RANKS_RUNSNAP,
            "capture", "-o", f"{RANKS_FOLDER}/{{host}}-{{rank}}.toml", "--", py, script, *args)


# --------------------------------------------------------------------------- torchrun jobs


SHARDED_TRAIN = """
    \"\"\"Pretrain the session encoder with DDP over gloo. Every rank streams its own shard
    files: configs/data.yaml lists them, rank r takes shards r, r + world, ...\"\"\"
    import datetime

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP


    def main():
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
        rank, world = dist.get_rank(), dist.get_world_size()
        with open("configs/data.yaml") as f:
            cfg = yaml.safe_load(f)
        mine = cfg["shards"][rank::world]
        torch.manual_seed(0)
        model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                                        torch.nn.Linear(32, 16)))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        steps, total = 0, 0.0
        for path in mine:
            sessions = torch.load(path, weights_only=True)
            for x in sessions.split(cfg["batch_size"]):
                loss = F.mse_loss(model(x), x.roll(1, dims=-1))
                opt.zero_grad()
                loss.backward()
                opt.step()
                steps, total = steps + 1, total + loss.item()
        print(f"rank={rank} shards={len(mine)} steps={steps}")
        if rank == 0:
            print(f"world_size={world} train_loss={total / steps:.5f}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

MAKE_SESSION_SHARDS = """
import sys, torch
g = torch.Generator().manual_seed(21)
for i in range(5):
    torch.save(torch.randn(128, 16, generator=g), f"{sys.argv[1]}/part-{i}.pt")
"""

DATA_YAML = ("# session shards, one file per daily export\nbatch_size: 32\nshards:\n"
             + "".join(f"  - data/shards/part-{i}.pt\n" for i in range(4)))


def _pretrain_repo(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    repo = d / "clickstream-pretrain"
    shards = repo / "data" / "shards"
    shards.mkdir(parents=True, exist_ok=True)
    _run_py(py, MAKE_SESSION_SHARDS, str(shards))
    return py, _repo(repo, {"train.py": SHARDED_TRAIN, "configs/data.yaml": DATA_YAML,
                            "README.md": "Session encoder pretraining (DDP, gloo on CPU).\n"})


def extra_shard_uneven_job(d: Path) -> Incident:
    """Job against job. Between the jobs configs/data.yaml (in git) got the new export
    part-4.pt appended to its shard list, not committed. With five shards over two ranks,
    rank 0 streams three and rank 1 two: rank 1 finishes and leaves, and rank 0's next DDP
    all-reduce fails ("Connection closed by peer"). Kind: fail."""
    py, repo = _pretrain_repo(d)

    def edit() -> None:
        (repo / "configs" / "data.yaml").write_text(DATA_YAML + "  - data/shards/part-4.pt\n")

    good, bad = _shells(d)
    argv = _torchrun_job(py, "train.py")
    return _incident(extra_shard_uneven_job, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("git", "clickstream-pretrain: configs/data.yaml"), between=edit)


def pretrain_job_noise(d: Path) -> Incident:
    """Job against job, the same code and data, from the workstation's tmux session and from
    the SkyPilot task: each job has its own rendezvous, run id and rank processes, the shells
    their own NCCL_*, FI_*, TORCH_*, CUDA_* and session variables. Nothing planted. Kind:
    noise."""
    py, repo = _pretrain_repo(d)
    good, bad = _shells(d)
    argv = _torchrun_job(py, "train.py")
    return _incident(pretrain_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


TAGGER_TRAIN = """
    \"\"\"Train the intent tagger (a small self-attention encoder) with DDP over gloo; its
    sizes come from configs/model.yaml, the weights go to --save-dir on rank 0.\"\"\"
    import argparse
    import datetime
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


    class Tagger(torch.nn.Module):
        def __init__(self, vocab, d_model, n_heads, n_intents):
            super().__init__()
            self.embed = torch.nn.Embedding(vocab, d_model)
            self.attn = torch.nn.MultiheadAttention(d_model, n_heads, batch_first=True)
            self.head = torch.nn.Linear(d_model, n_intents)

        def forward(self, ids):
            h = self.embed(ids)
            h, _ = self.attn(h, h, h, need_weights=False)
            return self.head(h.mean(dim=1))


    def utterances(n=1024, length=12, vocab=200, intents=5, seed=3):
        g = torch.Generator().manual_seed(seed)
        y = torch.randint(0, intents, (n,), generator=g)
        ids = torch.randint(0, vocab, (n, length), generator=g)
        ids[:, 0] = y * 7 + torch.randint(0, 7, (n,), generator=g)  # the cue word
        return ids, y


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--epochs", type=int, default=3)
        p.add_argument("--batch-size", type=int, default=32)
        p.add_argument("--save-dir", default="checkpoints")
        a = p.parse_args()
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
        rank, world = dist.get_rank(), dist.get_world_size()
        with open("configs/model.yaml") as f:
            cfg = yaml.safe_load(f)
        torch.manual_seed(0)
        model = DDP(Tagger(200, cfg["d_model"], cfg["n_heads"], 5))
        opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
        ids, y = utterances()
        data = TensorDataset(ids, y)
        sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=0)
        loader = DataLoader(data, batch_size=a.batch_size, sampler=sampler)
        for epoch in range(a.epochs):
            sampler.set_epoch(epoch)
            losses = []
            for xb, yb in loader:
                loss = F.cross_entropy(model(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
        with torch.no_grad():
            accuracy = (model.module(ids).argmax(-1) == y).float().mean().item()
        if rank == 0:
            print(f"world_size={world} train_loss={sum(losses) / len(losses):.5f} "
                  f"accuracy={accuracy:.4f}")
            torch.save(model.module.state_dict(), os.path.join(a.save_dir, "tagger.pt"))
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

TAGGER_MODEL_YAML = "# intent tagger\nd_model: 64\nn_heads: 4\nlr: 0.003\n"


def _tagger_repo(d: Path) -> Path:
    return _repo(d / "intent-tagger", {
        "train.py": TAGGER_TRAIN, "configs/model.yaml": TAGGER_MODEL_YAML,
        "checkpoints/.gitkeep": "", ".gitignore": "checkpoints/*.pt\n__pycache__/\n"})


def set_epoch_removed_metric_job(d: Path) -> Incident:
    """Job against job. Between the jobs train.py was tidied up without a commit and the
    ``sampler.set_epoch(epoch)`` line went with it: DistributedSampler now deals every epoch
    the same order. Both jobs finish; the train loss moves. Kind: metric."""
    py = python_with("torch", "yaml")
    repo = _tagger_repo(d)

    def edit() -> None:
        _write(repo / "train.py", TAGGER_TRAIN.replace("            sampler.set_epoch(epoch)\n",
                                                       ""))

    good, bad = _shells(d)
    argv = _torchrun_job(py, "train.py", "--epochs", "3")
    return _incident(set_epoch_removed_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "intent-tagger: train.py"), between=edit)


def heads_config_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs save into the SkyPilot bucket's mount point,
    which is not mounted here, so the first trains and stops at torch.save ("Parent directory
    ... does not exist"). Between the jobs configs/model.yaml (in git) got ``n_heads: 6``, not
    committed; 64 does not divide by 6 and the second job stops building the model
    ("embed_dim must be divisible by num_heads"). Kind: both-fail."""
    py = python_with("torch", "yaml")
    repo = _tagger_repo(d)

    def edit() -> None:
        (repo / "configs" / "model.yaml").write_text(TAGGER_MODEL_YAML.replace("n_heads: 4",
                                                                               "n_heads: 6"))

    good, bad = _shells(d)
    argv = _torchrun_job(py, "train.py", "--epochs", "1",
                         "--save-dir", str(d / "mnt" / "ckpt-bucket" / "intent-tagger"))
    return _incident(heads_config_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "intent-tagger: configs/model.yaml"),
                     between=edit)


# --------------------------------------------------------------------------- engines


TP_ENGINE = """
    \"\"\"Start the CPU engine: tensor-parallel workers on this node (mp.spawn), pipeline
    stages on the nodes of the cluster. Every worker joins one TCPStore (rank 0 hosts it) and a
    gloo group of tensor x pipeline workers, then runs a warm-up matmul on its weight shard.\"\"\"
    import argparse
    import datetime

    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp


    def worker(local_rank, a):
        torch.set_num_threads(1)
        world = a.tensor_parallel_size * a.pipeline_parallel_size
        rank = a.node_rank * a.tensor_parallel_size + local_rank
        timeout = datetime.timedelta(seconds=a.store_timeout)
        store = dist.TCPStore("127.0.0.1", a.store_port, world, is_master=rank == 0,
                              timeout=timeout, wait_for_workers=True)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=world,
                                timeout=timeout)
        g = torch.Generator().manual_seed(100 + rank)
        shard = torch.randn(256 // a.tensor_parallel_size, 64, generator=g) / 16
        x = torch.linspace(-1, 1, 64)
        out = (shard @ x).square().sum().reshape(1)
        dist.all_reduce(out)
        if rank == 0:
            print(f"world_size={world} warmup_checksum={out.item():.4f}")
        dist.destroy_process_group()


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--tensor-parallel-size", type=int, default=2)
        p.add_argument("--pipeline-parallel-size", type=int, default=1)
        p.add_argument("--node-rank", type=int, default=0)
        p.add_argument("--store-port", type=int, default=29650)
        p.add_argument("--store-timeout", type=int, default=15, help="seconds")
        a = p.parse_args()
        mp.spawn(worker, args=(a,), nprocs=a.tensor_parallel_size)
        print("engine ready")


    if __name__ == "__main__":
        main()
    """


def _engine(d: Path) -> tuple[str, Path, tuple[str, ...]]:
    py = python_with("torch")
    app = _write(d / "tp-engine" / "serve.py", TP_ENGINE)
    return py, app.parent, (py, "serve.py", "--tensor-parallel-size", "2",
                            "--store-port", str(_free_port()))


def pipeline_size_one_node(d: Path) -> Incident:
    """The SkyPilot task's ``run:`` line was copied from the two-node recipe and passes
    --pipeline-parallel-size 2 (and the node rank); this cluster has one node. Rank 0's
    TCPStore waits for four workers, two come, and the engine stops after --store-timeout
    seconds. The workstation's launch line has no pipeline stages. Kind: fail."""
    py, cwd, base = _engine(d)
    good, bad = _shells(d)
    return _incident(pipeline_size_one_node, Launch(base, good, cwd),
                     Launch((*base, "--pipeline-parallel-size", "2", "--node-rank", "0"), bad,
                            cwd),
                     ("command", "--pipeline-parallel-size"))


def distributed_debug_one(d: Path) -> Incident:
    """The task YAML's ``envs:`` got TORCH_DISTRIBUTED_DEBUG=1 while someone chased a hang;
    torch accepts only OFF, INFO or DETAIL and refuses at ``import torch`` (torch.distributed
    reads it when torch.utils.data imports it): "The value of TORCH_DISTRIBUTED_DEBUG must be
    OFF, INFO, or DETAIL." Kind: fail."""
    py, cwd, base = _engine(d)
    good, bad = _shells(d, {}, {"TORCH_DISTRIBUTED_DEBUG": "1"})
    return _incident(distributed_debug_one, Launch(base, good, cwd), Launch(base, bad, cwd),
                     ("env", "TORCH_DISTRIBUTED_DEBUG"))


def engine_warmup_noise(d: Path) -> Incident:
    """The engine's start and warm-up, the same launch line (the same store port, one after
    the other), from the workstation and from the SkyPilot task. Nothing planted. Kind:
    noise."""
    py, cwd, base = _engine(d)
    good, bad = _shells(d)
    return _incident(engine_warmup_noise, Launch(base, good, cwd), Launch(base, bad, cwd))


EMBED_APP = """
    \"\"\"The embedding service (Flask): POST /embed {"texts": [...]} -> unit vectors.\"\"\"
    import torch
    from flask import Flask, jsonify, request

    app = Flask(__name__)
    torch.manual_seed(0)
    ENCODER = torch.nn.EmbeddingBag(128, 16, mode="mean")


    @app.get("/health")
    def health():
        return {"ok": True}


    @app.post("/embed")
    def embed():
        texts = request.get_json()["texts"]
        out = []
        with torch.no_grad():
            for t in texts:
                ids = torch.tensor([min(b, 127) for b in t.encode()])
                v = ENCODER(ids.unsqueeze(0))[0]
                out.append((v / v.norm()).tolist())
        return jsonify(out)
    """

EMBED_SMOKE = """
    \"\"\"Smoke test: serve the app on a free local port, wait for /health, embed three texts
    and print their mean similarity.\"\"\"
    import threading
    import time

    import requests
    from werkzeug.serving import make_server

    from app import app


    def main():
        server = make_server("127.0.0.1", 0, app)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_port}"
        try:
            for _ in range(40):
                try:
                    if requests.get(base + "/health", timeout=2).ok:
                        break
                except requests.ConnectionError:
                    time.sleep(0.25)
            vecs = requests.post(base + "/embed", timeout=10, json={"texts": [
                "reset my password", "password reset link", "cancel my order"]}).json()
        finally:
            server.shutdown()
        sims = [sum(a * b for a, b in zip(vecs[i], vecs[j])) for i, j in ((0, 1), (0, 2), (1, 2))]
        print(f"embedded={len(vecs)} mean_similarity={sum(sims) / len(sims):.5f}")


    if __name__ == "__main__":
        main()
    """


def proxy_skips_localhost_only(d: Path) -> Incident:
    """The cluster's VPC reaches the internet through an egress proxy, and the SkyPilot task
    exports HTTP_PROXY/HTTPS_PROXY with NO_PROXY=localhost,169.254.169.254,.internal. The smoke
    test talks to the service at 127.0.0.1, which NO_PROXY does not name, so requests sends
    it to the proxy, whose name does not resolve here: ProxyError. Kind: fail."""
    py = python_with("torch", "flask", "requests")
    repo = _repo(d / "embed-svc", {"app.py": EMBED_APP, "smoke.py": EMBED_SMOKE})
    proxy = "http://proxy.corp.example.com:3128"
    good, bad = _shells(d, {}, {"HTTP_PROXY": proxy, "HTTPS_PROXY": proxy,
                                "NO_PROXY": "localhost,169.254.169.254,.internal"})
    argv = (py, "smoke.py")
    return _incident(proxy_skips_localhost_only, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "HTTP_PROXY"), ("env", "NO_PROXY"))


# --------------------------------------------------------------------------- model folders


def _reviews() -> list[dict[str, object]]:
    good = ["great battery and fast shipping", "works perfectly, love it", "excellent value",
            "sturdy, quiet and easy to set up", "the best kettle we have owned", "very happy"]
    bad = ["stopped working after a week", "arrived broken, no reply", "terrible, returned it",
           "loud and flimsy", "the lid leaks everywhere", "waste of money, avoid"]
    return [{"text": t, "label": label} for i in range(4)
            for label, group in ((1, good), (0, bad)) for t in group[i % 2::2]]


MAKE_SENTIMENT_BERT = """
import json, sys, torch
from transformers import BertConfig, BertForSequenceClassification
rows = [json.loads(l) for l in open(sys.argv[2])]
def encode(t):
    ids = [2] + [min(b, 127) for b in t.encode()][:30]
    return ids + [0] * (32 - len(ids))
ids = torch.tensor([encode(r["text"]) for r in rows])
labels = torch.tensor([r["label"] for r in rows])
cfg = BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=64, max_position_embeddings=64,
                 id2label={0: "negative", 1: "positive"}, label2id={"negative": 0, "positive": 1})
torch.manual_seed(0)
model = BertForSequenceClassification(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for _ in range(30):
    loss = model(input_ids=ids, attention_mask=(ids != 0).long(), labels=labels).loss
    opt.zero_grad(); loss.backward(); opt.step()
model.save_pretrained(sys.argv[1])
"""

SENTIMENT_EVAL = """
    \"\"\"Evaluate the review-sentiment classifier on data/dev.jsonl (byte-level ids).\"\"\"
    import argparse
    import json

    import torch
    from transformers import AutoModelForSequenceClassification


    def encode(text, width=32):
        ids = [2] + [min(b, 127) for b in text.encode()][:width - 2]
        return ids + [0] * (width - len(ids))


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        model = AutoModelForSequenceClassification.from_pretrained(a.model_path).eval()
        with open("data/dev.jsonl") as f:
            rows = [json.loads(line) for line in f]
        ids = torch.tensor([encode(r["text"]) for r in rows])
        labels = torch.tensor([r["label"] for r in rows])
        with torch.no_grad():
            out = model(input_ids=ids, attention_mask=(ids != 0).long(), labels=labels)
        accuracy = (out.logits.argmax(-1) == labels).float().mean().item()
        print(f"labels={model.config.num_labels} eval_loss={out.loss.item():.4f} "
              f"eval_accuracy={accuracy:.4f}")


    if __name__ == "__main__":
        main()
    """


def _sentiment(d: Path) -> tuple[str, Path, Path]:
    """The corpus interpreter, the evaluation repository and the tiny BERT classifier's folder
    (trained here; not under git)."""
    py = python_with("torch", "transformers")
    dev = "".join(json.dumps(r) + "\n" for r in _reviews())
    repo = _repo(d / "review-sentiment", {"evaluate.py": SENTIMENT_EVAL, "data/dev.jsonl": dev})
    model = d / "models" / "sentiment-bert-tiny"
    if not (model / "model.safetensors").exists():
        _run_py(py, MAKE_SENTIMENT_BERT, str(model), str(repo / "data" / "dev.jsonl"))
    return py, repo, model


def id2label_grown_to_three(d: Path) -> Incident:
    """Between the runs someone added a "neutral" class to the model folder's config.json
    (id2label and label2id, three labels) ahead of retraining; the checkpoint's classifier
    has two rows and from_pretrained refuses the size mismatch ("You set
    `ignore_mismatched_sizes` to `False`"). Kind: fail."""
    py, repo, model = _sentiment(d)

    def edit() -> None:
        path = model / "config.json"
        cfg = json.loads(path.read_text())
        cfg["id2label"] = {"0": "negative", "1": "neutral", "2": "positive"}
        cfg["label2id"] = {"negative": 0, "neutral": 1, "positive": 2}
        path.write_text(json.dumps(cfg, indent=2) + "\n")

    good, bad = _shells(d)
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(id2label_grown_to_three, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("models", "--model-path: id2label"), ("models", "--model-path: label2id"),
                     between=edit)


def sentiment_eval_noise(d: Path) -> Incident:
    """The classifier's evaluation from the workstation (its own HF_HOME, telemetry off,
    TOKENIZERS_PARALLELISM=false) and from the SkyPilot task (an HF_TOKEN, no progress bars,
    TOKENIZERS_PARALLELISM=true). Nothing planted. Kind: noise."""
    py, repo, model = _sentiment(d)
    good, bad = _shells(d)
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(sentiment_eval_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


def old_hub_pin_in_venv(d: Path) -> Incident:
    """On the cluster node the SkyPilot ``setup:`` made the project's venv (layered on the
    image's environment with a .pth file) and installed requirements.txt into it, which still
    pins huggingface_hub 2.0.0 from last spring; the task's ``run:`` activates it. transformers
    checks its dependencies at import: "huggingface-hub>=2.4.0,<3.0 is required ... but found
    huggingface-hub==2.0.0". The workstation runs the shared environment. Kind: fail."""
    py, repo, model = _sentiment(d)
    proj = repo / ".venv"
    vpy = proj / "bin" / "python"
    if not vpy.exists():
        base = subprocess.check_output([py, "-c", "import sys; print(sys._base_executable)"],
                                       text=True).strip()
        subprocess.run([base, "-m", "venv", "--without-pip", str(proj)], check=True)
        site = Path(subprocess.check_output(
            [str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            text=True).strip())
        shared = subprocess.check_output(
            [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            text=True).strip()
        (site / "_image_env.pth").write_text(shared + "\n")
        res = subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--target",
                              str(site), "huggingface_hub==2.0.0"], capture_output=True,
                             text=True, check=False)
        if res.returncode:
            raise Unavailable("pip could not install huggingface_hub 2.0.0: " + res.stderr[-200:])
    (repo / "requirements.txt").write_text("huggingface_hub==2.0.0\nsafetensors\n")
    (repo / ".gitignore").write_text(".venv/\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "requirements for the cluster's venv")
    shared_bin = str(Path(py).parent)
    good, bad = _shells(d)
    good = {**good, "VIRTUAL_ENV": str(Path(shared_bin).parent),
            "PATH": f"{shared_bin}:{good['PATH']}"}
    bad = {**bad, "VIRTUAL_ENV": str(proj), "PATH": f"{proj / 'bin'}:{bad['PATH']}"}
    argv = ("python", "evaluate.py", "--model-path", str(model))
    return _incident(old_hub_pin_in_venv, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("packages", "huggingface_hub"), ("packages", "huggingface-hub"),
                     ("packages", "interpreter"))


MAKE_TINY_LLAMA = """
import sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
cfg = LlamaConfig(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                  bos_token_id=1, eos_token_id=2)
torch.manual_seed(0)
model = LlamaForCausalLM(cfg)
text = open(sys.argv[2]).read().encode()
ids = torch.tensor([list(text[i:i + 64]) for i in range(0, len(text) - 64, 32)][:24])
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for _ in range(40):
    loss = model(ids, labels=ids).loss
    opt.zero_grad(); loss.backward(); opt.step()
model.save_pretrained(sys.argv[1])
"""

DOCS_EVAL = """
    \"\"\"Perplexity of the docs assistant's tiny Llama on held-out passages (byte tokens).\"\"\"
    import argparse
    import math

    import torch
    from transformers import AutoModelForCausalLM


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        model = AutoModelForCausalLM.from_pretrained(a.model_path).eval()
        with open("data/heldout.txt") as f:
            text = f.read().encode()
        ids = torch.tensor([list(text[i:i + 64]) for i in range(0, len(text) - 64, 64)])
        with torch.no_grad():
            loss = model(ids, labels=ids).loss.item()
        print(f"passages={len(ids)} eval_loss={loss:.4f} perplexity={math.exp(loss):.3f}")


    if __name__ == "__main__":
        main()
    """

DOCS_TEXT = "".join(
    f"To {verb} a {thing}, open the settings page, choose {thing}s and press {verb}. "
    for verb in ("rename", "archive", "share", "export", "delete")
    for thing in ("project", "dashboard", "report", "folder"))


def rope_base_copied_metric(d: Path) -> Incident:
    """Between the runs the model folder's config.json got the rope_parameters block of the
    long-context variant (rope_theta 500000 instead of the 10000 it was trained with); the
    weights load as before, both runs exit 0, and the held-out perplexity moves. Kind:
    metric."""
    py = python_with("torch", "transformers")
    repo = _repo(d / "docs-assistant-eval", {"evaluate.py": DOCS_EVAL,
                                             "data/heldout.txt": DOCS_TEXT[-704:],
                                             "data/train.txt": DOCS_TEXT[:-704]})
    model = d / "models" / "docs-llama-tiny"
    if not (model / "model.safetensors").exists():
        _run_py(py, MAKE_TINY_LLAMA, str(model), str(repo / "data" / "train.txt"))

    def edit() -> None:
        path = model / "config.json"
        cfg = json.loads(path.read_text())
        cfg["rope_parameters"] = {"rope_theta": 500000.0, "rope_type": "default"}
        path.write_text(json.dumps(cfg, indent=2) + "\n")

    good, bad = _shells(d)
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(rope_base_copied_metric, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("models", "--model-path: rope_parameters"),
                     ("models", "--model-path: rope_parameters.rope_theta"),
                     ("models", "--model-path: rope_theta"), between=edit)


# --------------------------------------------------------------------------- the rest


MAKE_TINY_GPT2 = """
import sys, torch
from transformers import GPT2Config, GPT2LMHeadModel
cfg = GPT2Config(vocab_size=256, n_positions=64, n_embd=32, n_layer=2, n_head=4,
                 bos_token_id=1, eos_token_id=2)
torch.manual_seed(0)
model = GPT2LMHeadModel(cfg)
lines = [l.strip().encode() for l in open(sys.argv[2]) if l.strip()]
ids = torch.tensor([list(l[:24]) for l in lines if len(l) >= 24])
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for _ in range(40):
    loss = model(ids, labels=ids).loss
    opt.zero_grad(); loss.backward(); opt.step()
model.save_pretrained(sys.argv[1])
"""

COLLATE = """
    \"\"\"Batching for the support LM: pad to the longest reply; padded positions are left out
    of the loss (label -100).\"\"\"
    import torch

    PAD_ID = 0


    def pad_batch(seqs):
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), PAD_ID)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, :len(s)] = torch.tensor(s)
            mask[i, :len(s)] = 1
        labels = ids.masked_fill(mask == 0, -100)
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}
    """

SUPPORT_EVAL = """
    \"\"\"Evaluate the support LM on the held-out replies, in padded batches.\"\"\"
    import argparse

    import torch
    from transformers import AutoModelForCausalLM

    from collate import pad_batch


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--batch-size", type=int, default=4)
        a = p.parse_args()
        model = AutoModelForCausalLM.from_pretrained(a.model_path).eval()
        with open("data/replies.txt") as f:
            seqs = [list(line.strip().encode())[:64] for line in f if line.strip()]
        losses = []
        with torch.no_grad():
            for i in range(0, len(seqs), a.batch_size):
                losses.append(model(**pad_batch(seqs[i:i + a.batch_size])).loss.item())
        print(f"replies={len(seqs)} eval_loss={sum(losses) / len(losses):.4f}")


    if __name__ == "__main__":
        main()
    """

SUPPORT_TRAIN = """
    \"\"\"Fine-tune the support LM on data/train.jsonl (synced from the bucket, not in git).\"\"\"
    import argparse
    import json

    import torch
    from torch.optim import AdamW
    from transformers import AutoModelForCausalLM, get_linear_schedule_with_warmup

    from collate import pad_batch


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--train-file", default="data/train.jsonl")
        p.add_argument("--epochs", type=int, default=1)
        a = p.parse_args()
        with open(a.train_file) as f:
            seqs = [list(json.loads(line)["reply"].encode())[:48] for line in f]
        model = AutoModelForCausalLM.from_pretrained(a.model_path)
        opt = AdamW(model.parameters(), lr=1e-3)
        batches = [seqs[i:i + 4] for i in range(0, len(seqs), 4)] * a.epochs
        sched = get_linear_schedule_with_warmup(opt, 2, len(batches))
        for batch in batches:
            loss = model(**pad_batch(batch)).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        print(f"steps={len(batches)} train_loss={loss.item():.4f}")


    if __name__ == "__main__":
        main()
    """

REPLIES = "".join(f"{opening} {topic}; {closing}\n" for opening, topic, closing in [
    ("Thanks for reaching out about", "your refund", "it is on its way."),
    ("Sorry to hear about", "the late delivery", "we have sent a voucher."),
    ("Happy to help with", "your invoice", "a corrected copy is attached to this reply."),
    ("We looked into", "the missing item", "a replacement ships today."),
    ("Thanks for asking about", "returns", "you can send it back within thirty days."),
    ("Sorry about", "the login trouble", "please reset your password from the link."),
    ("Good news about", "your order", "it left the warehouse this morning."),
    ("Thanks for the note about", "the app", "the fix is in version 4.2."),
    ("We checked", "your account", "the duplicate charge has been reversed."),
    ("Sorry for", "the wait", "an agent will call you back tomorrow."),
])


def _support_lm(d: Path) -> tuple[str, Path, Path]:
    """The corpus interpreter, the support LM's repository and its tiny GPT-2 (trained here,
    outside git)."""
    py = python_with("torch", "transformers")
    repo = _repo(d / "support-lm", {"evaluate.py": SUPPORT_EVAL, "train.py": SUPPORT_TRAIN,
                                    "collate.py": COLLATE, "data/replies.txt": REPLIES,
                                    ".gitignore": "data/train.jsonl\n__pycache__/\n"})
    model = d / "models" / "support-gpt2-tiny"
    if not (model / "model.safetensors").exists():
        _run_py(py, MAKE_TINY_GPT2, str(model), str(repo / "data" / "replies.txt"))
    return py, repo, model


def pad_labels_edit_metric(d: Path) -> Incident:
    """Between the runs collate.py was "simplified" without a commit: labels are now a plain
    copy of the padded ids, so every pad position (id 0) counts in the loss. Both runs exit
    0 and eval_loss moves. Kind: metric."""
    py, repo, model = _support_lm(d)

    def edit() -> None:
        _write(repo / "collate.py", COLLATE.replace(
            "labels = ids.masked_fill(mask == 0, -100)", "labels = ids.clone()"))

    good, bad = _shells(d)
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(pad_labels_edit_metric, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("git", "support-lm: collate.py"), between=edit)


def old_tutorial_adamw_both_fail(d: Path) -> Incident:
    """Both fail. data/train.jsonl is synced from the bucket by the SkyPilot setup only, so
    the workstation's run stops opening it (FileNotFoundError). Between the runs train.py got
    ``from transformers import AdamW`` pasted from an old tutorial (uncommitted); transformers
    5 has no AdamW and the second run stops at its imports. Kind: both-fail."""
    py, repo, model = _support_lm(d)

    def edit() -> None:
        _write(repo / "train.py", SUPPORT_TRAIN.replace(
            "from torch.optim import AdamW\n    from transformers import AutoModelForCausalLM, "
            "get_linear_schedule_with_warmup",
            "from transformers import AdamW, AutoModelForCausalLM, "
            "get_linear_schedule_with_warmup"))

    good, bad = _shells(d)
    argv = (py, "train.py", "--model-path", str(model), "--epochs", "2")
    return _incident(old_tutorial_adamw_both_fail, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "support-lm: train.py"), between=edit)


CHURN_TRAIN = """
    \"\"\"Train the churn model; options from the command line, over the user's defaults in
    ~/.config/churn-train/defaults.yaml when there is one (jsonargparse).\"\"\"
    import torch
    import torch.nn.functional as F
    from jsonargparse import ArgumentParser


    def main():
        p = ArgumentParser(default_config_files=["~/.config/churn-train/defaults.yaml"])
        p.add_argument("--epochs", type=int, default=60)
        p.add_argument("--lr", type=float, default=0.01)
        p.add_argument("--scheduler", choices=["constant", "cosine"], default="constant")
        a = p.parse_args()
        g = torch.Generator().manual_seed(4)
        x = torch.randn(800, 8, generator=g)
        y = ((x[:, 0] - x[:, 3] + 0.5 * torch.randn(800, generator=g)) > 0.4).float()
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
        opt = torch.optim.Adam(model.parameters(), lr=a.lr)
        sched = (torch.optim.lr_scheduler.CosineAnnealingLR(opt, a.epochs)
                 if a.scheduler == "cosine" else None)
        for _ in range(a.epochs):
            loss = F.binary_cross_entropy_with_logits(model(x[:600]).squeeze(-1), y[:600])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if sched:
                sched.step()
        with torch.no_grad():
            acc = ((model(x[600:]).squeeze(-1) > 0).float() == y[600:]).float().mean().item()
        print(f"scheduler={a.scheduler} val_accuracy={acc:.4f}")


    if __name__ == "__main__":
        main()
    """


def home_defaults_renamed_key(d: Path) -> Incident:
    """The SkyPilot task's ``file_mounts`` copy the engineer's ~/.config/churn-train to the
    node, and its defaults.yaml still says ``lr_schedule: cosine``, the option's name before it
    became --scheduler. jsonargparse reads the file as defaults and refuses: "Option
    'lr_schedule' is not accepted". The workstation's home has no such file. Kind: fail."""
    py = python_with("torch", "jsonargparse")
    repo = _repo(d / "churn-train", {"train.py": CHURN_TRAIN})
    good, bad = _shells(d)
    defaults = _write(Path(bad["HOME"]) / ".config" / "churn-train" / "defaults.yaml",
                      "# my defaults\nepochs: 80\nlr_schedule: cosine\n")
    argv = (py, "train.py")
    return _incident(home_defaults_renamed_key, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {defaults.resolve()}"))


FRAUD_TRAIN = """
    \"\"\"Train the transaction-fraud classifier (scikit-learn's synthetic transactions, a
    torch MLP); report the validation loss and accuracy.\"\"\"
    import argparse

    import torch
    import torch.nn.functional as F
    from sklearn.datasets import make_classification


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--epochs", type=int, default=80)
        p.add_argument("--lr", type=float, default=0.01)
        p.add_argument("--label-smoothing", type=float, default=0.0)
        a = p.parse_args()
        x, y = make_classification(n_samples=1500, n_features=12, n_informative=6,
                                   n_classes=3, random_state=7)
        x, y = torch.tensor(x, dtype=torch.float32), torch.tensor(y)
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.ReLU(),
                                    torch.nn.Linear(32, 3))
        opt = torch.optim.Adam(model.parameters(), lr=a.lr)
        for _ in range(a.epochs):
            loss = F.cross_entropy(model(x[:1200]), y[:1200], label_smoothing=a.label_smoothing)
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            logits = model(x[1200:])
            val_loss = F.cross_entropy(logits, y[1200:], label_smoothing=a.label_smoothing)
            acc = (logits.argmax(-1) == y[1200:]).float().mean().item()
        print(f"val_loss={val_loss.item():.4f} val_accuracy={acc:.4f}")


    if __name__ == "__main__":
        main()
    """


def label_smoothing_option_metric(d: Path) -> Incident:
    """The SkyPilot task's ``run:`` line took ``--label-smoothing 0.1`` from the recipe of
    the big transformer; the workstation's line has none. Both runs exit 0; the validation
    loss (computed with the same criterion) jumps. Kind: metric."""
    py = python_with("torch", "sklearn")
    repo = _repo(d / "fraud-clf", {"train.py": FRAUD_TRAIN})
    good, bad = _shells(d)
    return _incident(label_smoothing_option_metric, Launch((py, "train.py"), good, repo),
                     Launch((py, "train.py", "--label-smoothing", "0.1"), bad, repo),
                     ("command", "--label-smoothing"))


#: The eighth fresh batch, in the order it was written. Never tuned on.
FRESH8 = [
    extra_shard_uneven_job, pretrain_job_noise, set_epoch_removed_metric_job,
    heads_config_both_fail_job, pipeline_size_one_node, distributed_debug_one,
    engine_warmup_noise, proxy_skips_localhost_only, id2label_grown_to_three,
    sentiment_eval_noise, old_hub_pin_in_venv, rope_base_copied_metric, pad_labels_edit_metric,
    old_tutorial_adamw_both_fail, home_defaults_renamed_key, label_smoothing_option_metric,
]

if __name__ == "__main__":  # build one incident and print its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH8 if b.__name__ in sys.argv[1:]] or FRESH8
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh8-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
