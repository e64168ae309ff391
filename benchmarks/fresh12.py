"""A twelfth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh.py ... fresh11.py, for their format), how they are
run and scored (benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot
reference (docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job
captures one snapshot per rank. They form the corpus's ``fresh12`` half; report it, never change
the ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a two-tower retrieval model
  trained with DDP: ``GLOO_SOCKET_IFNAME=ens4`` copied from a GCP launch script into a WSL2
  ``~/.bashrc`` (no such interface); ``--negatives 2`` instead of the default 16 (recall moves);
  the model folder's ``item_vocab`` shrunk by a registry sync of the pruned catalogue, on top of
  a quality gate the good job already misses (both fail); and the same job from both shells
  (noise);
- c10d and torch settings: a feature-cache warmer whose ``TCPStore`` takes its world size from
  ``WORLD_SIZE``, which the Vertex AI container sets for a two-replica pool (the master waits for
  a client that never comes); ``DIST_BACKEND=nccl`` from the GPU launch docs on a CPU-only
  build; a typo in ``TORCH_LOGS`` (``recompile``) that ``import torch`` refuses;
- model folders (transformers; tiny models made at build time): ``hidden_act: swiglu`` pasted
  from a Llama template into a BERT classifier, ``scale_attn_by_inverse_layer_idx`` switched on
  in a GPT-2 folder (perplexity moves), and the BERT classifier's evaluation from both shells
  (noise);
- the rest: a container image whose venv is not on ``PATH`` (``python3`` is the system one,
  without numpy), an uncommitted ``top_k`` in a git-tracked eval config (recall@k moves), feature
  hashing with ``hash()`` where only one shell pins ``PYTHONHASHSEED`` (AUC moves), an
  uncommitted refactor renaming a layer the checkpoint still names, ``--penalty elasticnet``
  given to a liblinear logistic regression on top of a missed quality gate (both fail), and the
  offline recsys evaluation from both shells (noise).

The shells are :func:`vertex_or_wsl_shell`: shell 0 a Vertex AI custom-training container
(``CLOUD_ML_*``, ``AIP_*``, ``CLUSTER_SPEC``, ``TF_CONFIG``, Kubernetes service variables, no
terminal, ``/root`` as home), shell 1 a bash terminal in WSL2 Ubuntu under Windows Terminal
(``WSL_*``, ``WSLENV``, ``WT_*``, WSLg's ``DISPLAY``/``WAYLAND_DISPLAY``/``PULSE_SERVER``, a
``PATH`` ending in Windows folders with spaces); each with the tuning its own setup exports
(``NCCL_*``, ``TORCH_*``, ``CUDA_*``, ``HF_*``) that changes nothing here; the thread counts that
change float reductions are pinned alike. The planted side is either: some incidents work in
the container and fail in WSL, others the reverse.

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

WINDOWS_PATH = ("/mnt/c/Windows/system32:/mnt/c/Windows:/mnt/c/Windows/System32/Wbem:"
                "/mnt/c/Program Files/Docker/Docker/resources/bin:"
                "/mnt/c/Users/dana/AppData/Local/Programs/Microsoft VS Code/bin")


def vertex_or_wsl_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 a Vertex AI
    custom-training container, 1 bash in WSL2 Ubuntu (``venv`` the virtual environment it
    activated, put first on ``PATH``); each with its own tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2",
              "HF_HOME": str(home / ".cache" / "huggingface")}
    if n % 2 == 0:  # Vertex AI CustomJob, one n1-standard-16 replica of the chief pool
        job = "8314960275120357376"
        spec = {"cluster": {"workerpool0": ["cmle-training-workerpool0-4b1f9e27c3-0:2222"]},
                "environment": "cloud", "task": {"type": "workerpool0", "index": 0}}
        return {
            **common, "PATH": f"/usr/local/nvidia/bin:/usr/local/cuda/bin:{path}",
            "LD_LIBRARY_PATH": "/usr/local/nvidia/lib64:/usr/local/cuda/lib64",
            "HOSTNAME": "cmle-training-workerpool0-4b1f9e27c3-0", "LANG": "C.UTF-8",
            "CLOUD_ML_JOB_ID": job, "CLOUD_ML_PROJECT_ID": "acme-recsys",
            "CLOUD_ML_REGION": "europe-west4",
            "AIP_MODEL_DIR": f"gs://acme-recsys-vertex/two-tower/{job}/model/",
            "AIP_CHECKPOINT_DIR": f"gs://acme-recsys-vertex/two-tower/{job}/checkpoints/",
            "AIP_TENSORBOARD_LOG_DIR": f"gs://acme-recsys-vertex/two-tower/{job}/logs/",
            "CLUSTER_SPEC": json.dumps(spec), "TF_CONFIG": json.dumps({**spec, "job": {}}),
            "KUBERNETES_SERVICE_HOST": "10.12.0.1", "KUBERNETES_SERVICE_PORT": "443",
            "KUBERNETES_PORT": "tcp://10.12.0.1:443",
            "GOOGLE_CLOUD_PROJECT": "acme-recsys", "PYTHONUNBUFFERED": "1",
            "PIP_NO_CACHE_DIR": "1", "DEBIAN_FRONTEND": "noninteractive",
            "NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
            "NCCL_SOCKET_IFNAME": "eth0", "NCCL_CROSS_NIC": "0", "NCCL_ALGO": "Ring,Tree",
            "NCCL_PROTO": "Simple", "NCCL_DEBUG": "WARN",
            "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "TORCH_CUDA_ARCH_LIST": "7.0;8.0",
            "CUDA_DEVICE_MAX_CONNECTIONS": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
            "HF_DATASETS_OFFLINE": "1",
        }
    env = {  # bash in WSL2 Ubuntu-24.04 under Windows Terminal, ~/.bashrc of its own
        **common, "PATH": f"{home}/.local/bin:{path}:{WINDOWS_PATH}",
        "USER": "dana", "LOGNAME": "dana", "SHELL": "/bin/bash", "TERM": "xterm-256color",
        "SHLVL": "1", "LANG": "C.UTF-8", "HOSTTYPE": "x86_64", "NAME": "DESKTOP-7K2QH4M",
        "OLDPWD": str(home), "WSL_DISTRO_NAME": "Ubuntu-24.04",
        "WSL_INTEROP": "/run/WSL/412_interop", "WSLENV": "WT_SESSION:WT_PROFILE_ID:",
        "WT_SESSION": "0f6c2a9e-5d1b-4c83-9a7e-2b4f81d3c6a0",
        "WT_PROFILE_ID": "{51855cb2-8cce-5362-8f54-464b92b32386}",
        "DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0",
        "XDG_RUNTIME_DIR": "/mnt/wslg/runtime-dir", "PULSE_SERVER": "unix:/mnt/wslg/PulseServer",
        "LS_COLORS": "rs=0:di=01;34:ln=01;36", "LESSOPEN": "| /usr/bin/lesspipe %s",
        "LESSCLOSE": "/usr/bin/lesspipe %s %s", "EDITOR": "code --wait",
        "NCCL_P2P_DISABLE": "1", "NCCL_IB_DISABLE": "1", "CUDA_VISIBLE_DEVICES": "0",
        "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128", "TORCH_CUDNN_V8_API_ENABLED": "1",
        "HF_HUB_DISABLE_SYMLINKS_WARNING": "1", "WANDB_MODE": "offline",
        "HF_TOKEN": "hf_Kq7VwN3xTz9LbM2cRj5YpD8sGf4Ha6Ue1Wo",
    }
    if venv:
        env["VIRTUAL_ENV"] = venv
        env["VIRTUAL_ENV_PROMPT"] = Path(venv).name
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "wsl", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the WSL2 terminal (``bad_in="wsl"``) or from the Vertex AI container (``"vertex"``)."""
    vertex = vertex_or_wsl_shell(0, d / "home" / "root")
    wsl = vertex_or_wsl_shell(1, d / "home" / "dana", venv)
    first, second = (vertex, wsl) if bad_in == "wsl" else (wsl, vertex)
    return {**first, **(good or {})}, {**second, **(bad or {})}


def _venv_of(py: str) -> str:
    return str(Path(py).parent.parent)


def _repo(path: Path, files: dict[str, str], ignore: str = "__pycache__/\n") -> Path:
    """A git repository holding ``files`` and a .gitignore, all committed."""
    for name, text in {**files, ".gitignore": ignore}.items():
        _write(path / name, text)
    if not (path / ".git").exists():
        _git(path, "init", "-q")
        _git(path, "add", "-A")
        _git(path, "commit", "-qm", "first version")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _build(py: str, code: str, *args: str) -> None:
    """Run ``code`` in the corpus interpreter to make data or a model; Unavailable if it fails."""
    res = subprocess.run([py, "-c", code, *args], capture_output=True, text=True, check=False)
    if res.returncode:
        raise Unavailable("could not build the incident's files: " + res.stderr[-300:])


def _torchrun(py: str, script: str, *args: str) -> tuple[str, ...]:
    """A torchrun job of two ranks, each captured by runsnap into the job's folder."""
    runner = Path(py).parent / "torchrun"
    if not runner.exists():
        raise Unavailable(f"no torchrun beside {py}")
    return (str(runner), "--standalone", "--nproc-per-node", "2", "--no-python", RANKS_RUNSNAP,
            "capture", "-o", f"{RANKS_FOLDER}/{{host}}-{{rank}}.toml", "--", py, script, *args)


def _set_json(path: Path, **fields: object) -> None:
    cfg = json.loads(path.read_text())
    cfg.update(fields)
    path.write_text(json.dumps(cfg, indent=2) + "\n")


# --------------------------------------------------------------------------- torchrun jobs


TWO_TOWER = """
    \"\"\"Train the two-tower retrieval model with DDP over gloo: a user tower and an item tower
    (sizes from the model folder's config.json, --model-path), a sampled softmax over
    --negatives random items per positive (settings from configs/train.yaml). Rank 0 prints each
    epoch's loss and recall@10 on the held-out interactions, which every rank counts on its own
    shard and all-reduces; --gate-recall makes it refuse a model below that recall.\"\"\"
    import argparse
    import datetime
    import json
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP

    USERS, ITEMS, GENRES = 300, 500, 10


    def interactions(seed=11):
        g = torch.Generator().manual_seed(seed)
        taste = torch.randint(0, GENRES, (USERS,), generator=g)
        users = torch.randint(0, USERS, (6000,), generator=g)
        pick = torch.randint(0, ITEMS // GENRES, (6000,), generator=g)
        items = taste[users] * (ITEMS // GENRES) + pick
        return users, items


    class TwoTower(torch.nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.users = torch.nn.Embedding(cfg["user_vocab"], cfg["emb_dim"])
            self.items = torch.nn.Embedding(cfg["item_vocab"], cfg["emb_dim"])
            self.user_mlp = torch.nn.Sequential(
                torch.nn.Linear(cfg["emb_dim"], cfg["tower_hidden"]), torch.nn.ReLU(),
                torch.nn.Linear(cfg["tower_hidden"], cfg["emb_dim"]))

        def forward(self, users, items):
            u = F.normalize(self.user_mlp(self.users(users)), dim=-1)
            return u, F.normalize(self.items(items), dim=-1)


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--negatives", type=int, default=16)
        p.add_argument("--epochs", type=int, default=3)
        p.add_argument("--gate-recall", type=float, default=None)
        a = p.parse_args()
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
        rank, world = dist.get_rank(), dist.get_world_size()
        with open(os.path.join(a.model_path, "config.json")) as f:
            arch = json.load(f)
        with open("configs/train.yaml") as f:
            cfg = yaml.safe_load(f)
        torch.manual_seed(0)
        model = DDP(TwoTower(arch))
        opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
        users, items = interactions()
        tu, ti = users[:5000][rank::world], items[:5000][rank::world]
        g = torch.Generator().manual_seed(100 + rank)
        for epoch in range(a.epochs):
            total, steps = 0.0, 0
            for s in range(0, len(tu), cfg["batch_size"]):
                bu, bi = tu[s:s + cfg["batch_size"]], ti[s:s + cfg["batch_size"]]
                neg = torch.randint(0, ITEMS, (len(bu), a.negatives), generator=g)
                u, pos = model(bu, bi)
                _, negv = model(bu, neg)
                logits = torch.cat([(u * pos).sum(-1, keepdim=True),
                                    torch.einsum("bd,bkd->bk", u, negv)], 1)
                loss = F.cross_entropy(logits / cfg["temperature"],
                                       torch.zeros(len(bu), dtype=torch.long))
                opt.zero_grad()
                loss.backward()
                opt.step()
                total, steps = total + loss.item(), steps + 1
            t = torch.tensor([total / steps])
            dist.all_reduce(t)
            if rank == 0:
                print(f"epoch={epoch} loss={t.item() / world:.5f}")
        net = model.module.eval()
        vu, vi = users[5000:][rank::world], items[5000:][rank::world]
        with torch.no_grad():
            u, _ = net(vu, vi)
            every = F.normalize(net.items.weight[:ITEMS], dim=-1)
            top = (u @ every.T).topk(10, dim=1).indices
        counts = torch.tensor([float((top == vi[:, None]).any(1).sum()), float(len(vi))])
        dist.all_reduce(counts)
        recall = counts[0].item() / counts[1].item()
        if rank == 0:
            print(f"recall_at_10={recall:.4f}")
            if a.gate_recall is not None and recall < a.gate_recall:
                raise RuntimeError(f"quality gate: recall_at_10={recall:.4f} is below "
                                   f"--gate-recall {a.gate_recall}, not exporting")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

TOWER_YAML = "# two-tower retrieval\nlr: 0.01\nbatch_size: 128\ntemperature: 0.1\n"
TOWER_ARCH = {"model_type": "two-tower", "user_vocab": 300, "item_vocab": 500, "emb_dim": 24,
              "tower_hidden": 48}


def _tower_job(d: Path) -> tuple[str, Path, Path]:
    """The job's interpreter, repository and model folder (outside git, synced from the
    model registry)."""
    py = python_with("torch", "yaml")
    repo = _repo(d / "two-tower", {"train.py": TWO_TOWER, "configs/train.yaml": TOWER_YAML})
    model = d / "registry" / "two-tower-v7"
    model.mkdir(parents=True, exist_ok=True)
    (model / "config.json").write_text(json.dumps(TOWER_ARCH, indent=2) + "\n")
    return py, repo, model


def gloo_ifname_from_gcp_script_job(d: Path) -> Incident:
    """Job against job. The WSL2 terminal's ~/.bashrc got ``export GLOO_SOCKET_IFNAME=ens4``,
    pasted with the rest of the team's GCP VM launch script (GCP VMs name their NIC ens4; WSL2
    has eth0). Every rank's gloo device stops at init ("Unable to find address for: ens4"); from
    the Vertex container the job trains. Kind: fail."""
    py, repo, model = _tower_job(d)
    good, bad = _shells(d, bad={"GLOO_SOCKET_IFNAME": "ens4"}, venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--model-path", str(model))
    return _incident(gloo_ifname_from_gcp_script_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "GLOO_SOCKET_IFNAME"))


def negatives_option_metric_job(d: Path) -> Incident:
    """Job against job. The WSL2 run was started from the shell history of a quick smoke test,
    ``--negatives 2`` still on it; the container's job takes the default 16. Both train; the
    losses and recall@10 move. Kind: metric."""
    py, repo, model = _tower_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--model-path", str(model))
    return _incident(negatives_option_metric_job, Launch(argv, good, repo),
                     Launch((*argv, "--negatives", "2"), bad, repo), ("command", "--negatives"))


def item_vocab_pruned_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--gate-recall 0.9``, which this model never
    reaches: the first trains and rank 0 refuses to export. Between the jobs the registry sync
    rewrote the model folder's config.json (outside git) from the pruned catalogue's model,
    ``"item_vocab": 400``, while the interactions still name items up to 499: every rank stops
    in the item embedding ("index out of range in self"). Kind: both-fail."""
    py, repo, model = _tower_job(d)

    def synced() -> None:
        _set_json(model / "config.json", item_vocab=400)

    good, bad = _shells(d, bad_in="vertex", venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--model-path", str(model), "--gate-recall", "0.9")
    return _incident(item_vocab_pruned_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: item_vocab"),
                     between=synced)


def two_tower_job_noise(d: Path) -> Incident:
    """Job against job, the same code, settings and model folder, from the Vertex container and
    from the WSL2 terminal: each job its own rendezvous and rank processes, the shells their own
    Vertex, Kubernetes, WSL, Windows Terminal, NCCL_*, TORCH_*, CUDA_* and HF_* variables.
    Nothing planted. Kind: noise."""
    py, repo, model = _tower_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--model-path", str(model))
    return _incident(two_tower_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- c10d, torch settings


CACHE_WARMER = """
    \"\"\"Warm the feature cache: publish each item's embedding norm into a c10d TCPStore that
    the ranking workers read. This process is the store's master; the store waits for as many
    processes as the job has (WORLD_SIZE, 1 when run alone).\"\"\"
    import argparse
    import datetime
    import os

    import torch
    import torch.distributed as dist


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--store-port", type=int, required=True)
        p.add_argument("--items", type=int, default=200)
        a = p.parse_args()
        world = int(os.environ.get("WORLD_SIZE", "1"))
        store = dist.TCPStore("127.0.0.1", a.store_port, world_size=world, is_master=True,
                              timeout=datetime.timedelta(seconds=6))
        g = torch.Generator().manual_seed(4)
        table = torch.randn(a.items, 16, generator=g)
        for i, row in enumerate(table.norm(dim=1).tolist()):
            store.set(f"item/{i}/norm", f"{row:.6f}")
        back = sum(float(store.get(f"item/{i}/norm")) for i in range(a.items))
        print(f"published={store.num_keys()} norm_sum={back:.3f}")


    if __name__ == "__main__":
        main()
    """


def tcpstore_world_size_from_vertex(d: Path) -> Incident:
    """The feature-cache warmer runs as a step of a Vertex AI job whose chief pool has two
    replicas: Vertex sets ``WORLD_SIZE=2`` (with ``RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``)
    in the container, and the warmer's store, sized from ``WORLD_SIZE``, waits for a second
    client that never comes ("Timed out after 6 seconds waiting for clients. 1/2 clients
    joined"). From the WSL2 terminal it publishes. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "feature-cache", {"warm.py": CACHE_WARMER})
    vertex = {"WORLD_SIZE": "2", "RANK": "0", "MASTER_PORT": "3333",
              "MASTER_ADDR": "cmle-training-workerpool0-4b1f9e27c3-0"}
    good, bad = _shells(d, bad=vertex, bad_in="vertex", venv=_venv_of(py))
    argv = (py, "warm.py", "--store-port", str(_free_port()))
    return _incident(tcpstore_world_size_from_vertex, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "WORLD_SIZE"))


BATCH_SCORE = """
    \"\"\"Score the nightly candidate lists in a process group (rank 0 of 1 when run alone,
    env:// rendezvous). The backend is DIST_BACKEND, gloo unless the launch says otherwise.\"\"\"
    import datetime
    import os

    import torch
    import torch.distributed as dist


    def main():
        backend = os.environ.get("DIST_BACKEND", "gloo")
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=15))
        rank, world = dist.get_rank(), dist.get_world_size()
        g = torch.Generator().manual_seed(21)
        users = torch.randn(400, 16, generator=g)[rank::world]
        items = torch.randn(120, 16, generator=g)
        scores = users @ items.T
        hits = (scores.topk(5, dim=1).values > 2.0).sum().reshape(1).float()
        dist.all_reduce(hits)
        print(f"backend={backend} users={len(users)} confident_hits={int(hits.item())}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """


def dist_backend_nccl_from_gpu_docs(d: Path) -> Incident:
    """The WSL2 terminal's ~/.bashrc exports ``DIST_BACKEND=nccl`` from the team's GPU launch
    docs; the laptop's torch is the CPU build and init_process_group refuses ("Distributed
    package doesn't have NCCL built in"). The Vertex CPU container keeps gloo. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "batch-score", {"score.py": BATCH_SCORE})
    rdzv = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()), "RANK": "0",
            "WORLD_SIZE": "1"}
    good, bad = _shells(d, rdzv, {**rdzv, "DIST_BACKEND": "nccl"}, venv=_venv_of(py))
    argv = (py, "score.py")
    return _incident(dist_backend_nccl_from_gpu_docs, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "DIST_BACKEND"))


EXPORT_EMB = """
    \"\"\"Export the item embeddings of the latest two-tower weights as a float16 table.\"\"\"
    import torch


    def main():
        torch.manual_seed(8)
        table = torch.nn.Embedding(500, 24)
        with torch.no_grad():
            half = torch.nn.functional.normalize(table.weight, dim=-1).half()
        torch.save(half, "item_table.pt")
        print(f"items={half.shape[0]} dim={half.shape[1]} max_abs={half.abs().max().item():.4f}")


    if __name__ == "__main__":
        main()
    """


def torch_logs_typo_in_bashrc(d: Path) -> Incident:
    """While chasing recompilations the engineer added ``export TORCH_LOGS=recompile`` to the
    WSL2 ~/.bashrc (the setting is ``recompiles``); ``import torch`` parses TORCH_LOGS and
    refuses the unknown name, listing the valid settings. The export runs in the Vertex
    container. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "emb-export", {"export.py": EXPORT_EMB}, "__pycache__/\n*.pt\n")
    good, bad = _shells(d, bad={"TORCH_LOGS": "recompile"}, venv=_venv_of(py))
    argv = (py, "export.py")
    return _incident(torch_logs_typo_in_bashrc, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "TORCH_LOGS"))


# --------------------------------------------------------------------------- model folders


MAKE_BERT = """
import sys, torch
from transformers import BertConfig, BertForSequenceClassification
torch.manual_seed(0)
cfg = BertConfig(vocab_size=400, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=64, max_position_embeddings=64, num_labels=3,
                 id2label={0: "order_status", 1: "refund", 2: "other"},
                 label2id={"order_status": 0, "refund": 1, "other": 2})
BertForSequenceClassification(cfg).save_pretrained(sys.argv[1])
"""

INTENT_EVAL = """
    \"\"\"Evaluate the support-intent classifier (a BERT folder, --model-path) on the labelled
    queries of data/queries.tsv; token ids come from the queries' bytes.\"\"\"
    import argparse

    import torch
    from transformers import AutoModelForSequenceClassification


    def encode(text, length=24):
        ids = [2 + b % 398 for b in text.encode()][:length]
        return ids + [0] * (length - len(ids)), [1] * len(ids) + [0] * (length - len(ids))


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        model = AutoModelForSequenceClassification.from_pretrained(a.model_path).eval()
        rows = [line.rstrip("\\n").split("\\t") for line in open("data/queries.tsv")]
        ids, mask = zip(*(encode(text) for _, text in rows))
        gold = torch.tensor([model.config.label2id[label] for label, _ in rows])
        with torch.no_grad():
            logits = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask)).logits
        pred = logits.argmax(-1)
        print(f"queries={len(rows)} acc={(pred == gold).float().mean():.4f} "
              f"mean_conf={logits.softmax(-1).max(-1).values.mean():.5f}")


    if __name__ == "__main__":
        main()
    """

QUERIES = "".join(f"{label}\t{text}\n" for label, text in [
    ("order_status", "where is my parcel"), ("refund", "i want my money back"),
    ("order_status", "has order 5531 shipped yet"), ("other", "do you sell gift cards"),
    ("refund", "the blender arrived broken please refund"), ("other", "change my password"),
    ("order_status", "tracking number does not work"), ("refund", "return label for shoes"),
    ("other", "opening hours on sunday"), ("order_status", "delivery is two days late"),
])


def _intent(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers", "safetensors")
    repo = _repo(d / "support-intent", {"evaluate.py": INTENT_EVAL, "data/queries.tsv": QUERIES})
    model = d / "models" / "intent-bert-tiny"
    if not (model / "config.json").exists():
        _build(py, MAKE_BERT, str(model))
    return py, repo, model


def hidden_act_swiglu_from_llama_template(d: Path) -> Incident:
    """Between the runs someone "modernised" the classifier folder's config.json (outside git)
    from a Llama template: ``"hidden_act": "swiglu"``. BERT looks its activation up by name and
    there is no such entry (a KeyError quoting ``swiglu``). Kind: fail."""
    py, repo, model = _intent(d)

    def edited() -> None:
        _set_json(model / "config.json", hidden_act="swiglu")

    good, bad = _shells(d, bad_in="vertex", venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(hidden_act_swiglu_from_llama_template, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: hidden_act"),
                     between=edited)


def intent_eval_noise(d: Path) -> Incident:
    """The intent classifier's evaluation, the same folder and data, from the Vertex container
    and from the WSL2 terminal. Nothing planted. Kind: noise."""
    py, repo, model = _intent(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(intent_eval_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


MAKE_GPT2 = """
import sys, torch
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(0)
cfg = GPT2Config(vocab_size=256, n_positions=128, n_embd=32, n_layer=3, n_head=4,
                 initializer_range=0.3)
GPT2LMHeadModel(cfg).save_pretrained(sys.argv[1])
"""

PPL_EVAL = """
    \"\"\"Perplexity of the query-completion LM (a GPT-2 folder, --model-path) on the held-out
    query log, byte-level.\"\"\"
    import argparse
    import math

    import torch
    from transformers import AutoModelForCausalLM


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        model = AutoModelForCausalLM.from_pretrained(a.model_path).eval()
        text = open("data/queries.txt", "rb").read()
        ids = torch.tensor(list(text[: 64 * 6])).view(6, 64)
        with torch.no_grad():
            loss = model(ids, labels=ids).loss.item()
        print(f"tokens={ids.numel()} loss={loss:.5f} ppl={math.exp(loss):.4f}")


    if __name__ == "__main__":
        main()
    """

QUERY_LOG = "".join(f"{q}\n" for q in [
    "running shoes women size 39", "usb c charger 65w", "kids rain jacket yellow",
    "espresso machine with grinder", "noise cancelling headphones sale", "yoga mat thick",
    "standing desk oak 140cm", "gift for dad who likes fishing", "4k monitor 27 inch",
    "winter tyres 205 55 r16", "lego technic car", "organic coffee beans 1kg",
    "hiking boots waterproof men", "air fryer 5l", "robot vacuum pet hair",
    "bluetooth speaker waterproof", "office chair lumbar support", "led strip lights bedroom",
    "mechanical keyboard brown switches", "electric toothbrush heads",
] * 2)


def scale_attn_by_layer_idx_metric(d: Path) -> Incident:
    """Between the evaluations the GPT-2 folder's config.json (outside git) got
    ``"scale_attn_by_inverse_layer_idx": true``, copied from the team's stability settings for
    the big model. The weights load the same; every layer past the first scales its attention
    down and the perplexity moves. Kind: metric."""
    py = python_with("torch", "transformers", "safetensors")
    repo = _repo(d / "query-lm", {"perplexity.py": PPL_EVAL, "data/queries.txt": QUERY_LOG})
    model = d / "models" / "query-gpt2-tiny"
    if not (model / "config.json").exists():
        _build(py, MAKE_GPT2, str(model))

    def edited() -> None:
        _set_json(model / "config.json", scale_attn_by_inverse_layer_idx=True)

    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "perplexity.py", "--model-path", str(model))
    return _incident(scale_attn_by_layer_idx_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo),
                     ("models", "--model-path: scale_attn_by_inverse_layer_idx"), between=edited)


# --------------------------------------------------------------------------- the rest


CANDIDATES = """
    \"\"\"Export tonight's candidate lists: the 20 nearest items of every user, from the
    embedding tables the training job left, as a compressed numpy archive.\"\"\"
    import numpy as np


    def main():
        rng = np.random.default_rng(17)
        users, items = rng.normal(size=(300, 16)), rng.normal(size=(500, 16))
        top = np.argsort(-(users @ items.T), axis=1)[:, :20]
        np.savez_compressed("candidates.npz", top=top)
        print(f"users={top.shape[0]} per_user={top.shape[1]} distinct={len(np.unique(top))}")


    if __name__ == "__main__":
        main()
    """

CONTAINER_PATH = ("/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:"
                  "/usr/sbin:/usr/bin:/sbin:/bin")


def image_venv_not_on_path(d: Path) -> Incident:
    """The export moved into a new container image: its Dockerfile installs the requirements
    into a venv but never puts the venv on ``PATH``, so the job's ``python3`` is the image's
    system interpreter, which has no numpy (ModuleNotFoundError). In the WSL2 terminal the
    project venv is active. Kind: fail."""
    py = python_with("numpy")
    venv = _venv_of(py)
    if not (Path(venv) / "bin" / "python3").exists():
        raise Unavailable(f"no python3 in {venv}/bin")
    system = subprocess.run(["/usr/bin/python3", "-c", "import numpy"], capture_output=True,
                            check=False) if Path("/usr/bin/python3").exists() else None
    if system is None or system.returncode == 0:
        raise Unavailable("this machine's /usr/bin/python3 is missing or has numpy")
    repo = _repo(d / "candidate-export", {"export.py": CANDIDATES}, "__pycache__/\n*.npz\n")
    good, bad = _shells(d, bad={"PATH": CONTAINER_PATH}, bad_in="vertex", venv=venv)
    argv = ("python3", "export.py")
    return _incident(image_venv_not_on_path, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("packages", "interpreter"), ("env", "PATH"))


RECSYS_EVAL = """
    \"\"\"Offline evaluation of the ranker's scores against the next day's clicks: recall and
    NDCG at the cut-off of configs/eval.json.\"\"\"
    import json

    import numpy as np


    def main():
        with open("configs/eval.json") as f:
            cfg = json.load(f)
        k = cfg["top_k"]
        rng = np.random.default_rng(cfg["seed"])
        scores = rng.normal(size=(400, 300))
        clicked = rng.integers(0, 300, size=(400, 3))
        scores[np.arange(400)[:, None], clicked] += 1.2
        ranked = np.argsort(-scores, axis=1)[:, :k]
        hits = np.array([[item in set(row) for item in ranked_row]
                         for row, ranked_row in zip(clicked, ranked)])
        recall = hits.sum(1).mean() / clicked.shape[1]
        ndcg = (hits / np.log2(np.arange(2, k + 2))).sum(1).mean()
        print(f"users={len(scores)} recall_at_k={recall:.4f} ndcg_at_k={ndcg:.4f}")


    if __name__ == "__main__":
        main()
    """

EVAL_JSON = '{\n  "top_k": 10,\n  "seed": 3,\n  "min_interactions": 3\n}\n'


def _recsys_eval(d: Path) -> tuple[str, Path]:
    py = python_with("numpy")
    return py, _repo(d / "recsys-eval", {"evaluate.py": RECSYS_EVAL,
                                         "configs/eval.json": EVAL_JSON})


def eval_top_k_uncommitted_metric(d: Path) -> Incident:
    """Between the evaluations configs/eval.json (in git) got ``"top_k": 50``, not committed,
    to look at the long tail for a product question. Both finish; recall and NDCG at the
    cut-off jump and the weekly report compares them to last week's @10. Kind: metric."""
    py, repo = _recsys_eval(d)

    def edited() -> None:
        _set_json(repo / "configs" / "eval.json", top_k=50)

    good, bad = _shells(d, bad_in="vertex", venv=_venv_of(py))
    argv = (py, "evaluate.py")
    return _incident(eval_top_k_uncommitted_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "recsys-eval: configs/eval.json"),
                     between=edited)


def recsys_eval_noise(d: Path) -> Incident:
    """The offline evaluation, the same code and config, from the Vertex container and from
    the WSL2 terminal. Nothing planted. Kind: noise."""
    py, repo = _recsys_eval(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py")
    return _incident(recsys_eval_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


HASHED_LR = """
    \"\"\"Click-through baseline: merchant and category names hashed into 64 buckets with
    Python's hash(), a logistic regression fitted by gradient descent, AUC on the last 600
    impressions.\"\"\"
    import numpy as np

    BUCKETS = 64


    def features(merchants, categories):
        x = np.zeros((len(merchants), 2 * BUCKETS))
        for i, (m, c) in enumerate(zip(merchants, categories)):
            x[i, hash(m) % BUCKETS] = 1.0
            x[i, BUCKETS + hash(c) % BUCKETS] = 1.0
        return x


    def auc(score, y):
        order = np.argsort(score)
        ranks = np.empty(len(score))
        ranks[order] = np.arange(1, len(score) + 1)
        pos = y == 1
        return (ranks[pos].sum() - pos.sum() * (pos.sum() + 1) / 2) / (pos.sum() * (~pos).sum())


    def main():
        rng = np.random.default_rng(5)
        merchants = [f"merchant-{i}" for i in rng.integers(0, 180, 3000)]
        categories = [f"cat-{i}" for i in rng.integers(0, 90, 3000)]
        appeal = {m: rng.normal() for m in sorted(set(merchants))}
        y = np.array([rng.random() < 1 / (1 + np.exp(-appeal[m] + 1)) for m in merchants], float)
        x = features(merchants, categories)
        w = np.zeros(x.shape[1])
        for _ in range(300):
            p = 1 / (1 + np.exp(-(x[:2400] @ w)))
            w -= 0.5 * x[:2400].T @ (p - y[:2400]) / 2400
        print(f"train_rows=2400 auc={auc(x[2400:] @ w, y[2400:]):.5f}")


    if __name__ == "__main__":
        main()
    """


def hash_seed_only_in_image(d: Path) -> Incident:
    """The container image's Dockerfile sets ``ENV PYTHONHASHSEED=0``; the WSL2 terminal does
    not, so Python salts string hashes per process and the merchants land in other buckets
    (other collisions): both runs finish, the AUC moves. Kind: metric."""
    py = python_with("numpy")
    repo = _repo(d / "ctr-baseline", {"baseline.py": HASHED_LR})
    good, bad = _shells(d, good={"PYTHONHASHSEED": "0"}, venv=_venv_of(py))
    argv = (py, "baseline.py")
    return _incident(hash_seed_only_in_image, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("env", "PYTHONHASHSEED"))


CTR_MODEL = """
    \"\"\"The click-through model the serving smoke test loads.\"\"\"
    import torch


    class CTRNet(torch.nn.Module):
        def __init__(self, features=32, hidden=64):
            super().__init__()
            self.embed = torch.nn.Linear(features, hidden)
            self.proj = torch.nn.Linear(hidden, 1)

        def forward(self, x):
            return self.proj(torch.relu(self.embed(x))).squeeze(-1)
    """

CTR_SMOKE = """
    \"\"\"Serving smoke test: load the released checkpoint into CTRNet and score a replayed
    batch of impressions.\"\"\"
    import torch

    from model import CTRNet


    def main():
        net = CTRNet()
        net.load_state_dict(torch.load("checkpoints/ctr-release.pt", map_location="cpu"))
        g = torch.Generator().manual_seed(6)
        batch = torch.randn(256, 32, generator=g)
        with torch.no_grad():
            ctr = torch.sigmoid(net.eval()(batch))
        print(f"scored={len(ctr)} mean_ctr={ctr.mean():.5f}")


    if __name__ == "__main__":
        main()
    """

MAKE_CTR = """
import sys, torch
sys.path.insert(0, sys.argv[1])
from model import CTRNet
torch.manual_seed(0)
torch.save(CTRNet().state_dict(), sys.argv[1] + "/checkpoints/ctr-release.pt")
"""


def proj_renamed_uncommitted_refactor(d: Path) -> Incident:
    """Between the smoke tests model.py got an uncommitted refactor, ``self.proj`` renamed
    ``self.projection`` "for readability"; the released checkpoint (git-ignored, in
    checkpoints/) still names ``proj.weight``, and the strict load_state_dict refuses (missing
    ``projection.weight``, unexpected ``proj.weight``). Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "ctr-serve", {"model.py": CTR_MODEL, "smoke.py": CTR_SMOKE},
                 "__pycache__/\ncheckpoints/\n")
    if not (repo / "checkpoints" / "ctr-release.pt").exists():
        (repo / "checkpoints").mkdir(exist_ok=True)
        _build(py, MAKE_CTR, str(repo))

    def refactor() -> None:
        (repo / "model.py").write_text((repo / "model.py").read_text().replace(
            "self.proj", "self.projection"))

    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "smoke.py")
    return _incident(proj_renamed_uncommitted_refactor, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "ctr-serve: model.py"), between=refactor)


RETURNS_LR = """
    \"\"\"Return-risk baseline: a logistic regression on data/orders.csv, refused below
    --min-auc on the last quarter of the rows.\"\"\"
    import argparse

    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--solver", default="lbfgs")
        p.add_argument("--penalty", default=None)
        p.add_argument("--C", type=float, default=1.0)
        p.add_argument("--min-auc", type=float, default=0.6)
        a = p.parse_args()
        data = np.loadtxt("data/orders.csv", delimiter=",", skiprows=1)
        x, y = data[:, :-1], data[:, -1]
        cut = len(y) * 3 // 4
        extra = {"penalty": a.penalty} if a.penalty else {}
        model = LogisticRegression(solver=a.solver, C=a.C, max_iter=500, **extra)
        model.fit(x[:cut], y[:cut])
        auc = roc_auc_score(y[cut:], model.predict_proba(x[cut:])[:, 1])
        print(f"rows={len(y)} auc={auc:.4f}")
        if auc < a.min_auc:
            raise SystemExit(f"quality gate: auc={auc:.4f} is below --min-auc {a.min_auc}")


    if __name__ == "__main__":
        main()
    """


def _orders_csv() -> str:
    import random

    rnd = random.Random(9)
    lines = ["basket_eur,items,days_since_last,discount,returned"]
    for _ in range(800):
        basket, items = rnd.uniform(5, 400), rnd.randint(1, 9)
        days, disc = rnd.randint(0, 120), rnd.choice([0, 0, 0.1, 0.2, 0.3])
        risk = 0.004 * basket + 0.15 * items + 2.0 * disc - 1.8 + rnd.gauss(0, 1.2)
        lines.append(f"{basket:.2f},{items},{days},{disc},{int(risk > 0)}")
    return "\n".join(lines) + "\n"


def penalty_elasticnet_liblinear_both_fail(d: Path) -> Incident:
    """Both runs fail. Both pass ``--min-auc 0.95`` from the new release checklist, which this
    baseline never reaches: the first fits and stops at the gate. The Vertex job's args also
    got ``--penalty elasticnet`` (from the saga sweep) while ``--solver liblinear`` stayed:
    scikit-learn refuses at fit ("Only 'saga' solver supports elasticnet penalty, got
    solver=liblinear."). Kind: both-fail."""
    py = python_with("sklearn", "numpy")
    repo = _repo(d / "returns-risk", {"train.py": RETURNS_LR, "data/orders.csv": _orders_csv()})
    good, bad = _shells(d, bad_in="vertex", venv=_venv_of(py))
    argv = (py, "train.py", "--solver", "liblinear", "--min-auc", "0.95")
    return _incident(penalty_elasticnet_liblinear_both_fail, Launch(argv, good, repo),
                     Launch((*argv, "--penalty", "elasticnet"), bad, repo),
                     ("command", "--penalty"))


#: The twelfth fresh batch, in the order it was written. Never tuned on.
FRESH12 = [
    gloo_ifname_from_gcp_script_job, negatives_option_metric_job,
    item_vocab_pruned_both_fail_job, two_tower_job_noise, tcpstore_world_size_from_vertex,
    dist_backend_nccl_from_gpu_docs, torch_logs_typo_in_bashrc,
    hidden_act_swiglu_from_llama_template, intent_eval_noise, scale_attn_by_layer_idx_metric,
    image_venv_not_on_path, eval_top_k_uncommitted_metric, recsys_eval_noise,
    hash_seed_only_in_image, proj_renamed_uncommitted_refactor,
    penalty_elasticnet_liblinear_both_fail,
]

if __name__ == "__main__":  # build one incident and print its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH12 if b.__name__ in sys.argv[1:]] or FRESH12
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh12-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
