"""A nineteenth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh18.py, for their format), how they are run and scored
(benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot reference
(docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job captures
one snapshot per rank. They form the corpus's ``fresh19`` half; report it, never change the
ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a next-basket recommender trained
  with DDP: ``--sparse-embeddings`` copied from the SGD recipe under an Adam optimizer (fail), an
  uncommitted ``mode="sum"`` pooling in model.py (metric), an uncommitted ``dist.gather`` with a
  gather list on every rank in metrics.py on top of a recall gate the good job already misses
  (both fail), and the same job from both shells (noise);
- c10d and engine settings: a TCPStore ``--coordinator-host`` given as ``host:port`` (the store
  cannot reach it and times out quoting the value), ``CUDA_VISIBLE_DEVICES`` holding GPU UUIDs
  that a shard planner parses as integers, ``PL_TRAINER_ACCELERATOR=gpu`` left in the studio's
  environment after it moved to a CPU machine;
- the rest: a BERT sentence-pair folder whose config.json got ``type_vocab_size: 1`` (fail) or
  ``num_hidden_layers: 3`` over weights of two layers (metric) and its evaluation from both shells
  (noise), the team's ``boxkit`` 2.0 in the studio's venv whose ``iou`` default box format
  changed (metric), a team package ``skuvocab`` a major version ahead (fail), an uncommitted
  feature added to features.py against a saved model (fail), a forecast config outside git whose
  window was edited (metric), XGBoost's ``--objective reg:squaredlogerror`` on deltas below -1
  over a missed gate (both fail) and the demand model from both shells (noise).

The shells are :func:`determined_or_studio_shell`: shell 0 a Determined AI trial container
(``DET_*`` with the session token, ``/run/determined`` paths, root, the experiment's
``environment_variables`` tuning of ``NCCL_*``/``OMP_*``/``TORCH_*``/``HF_*``), shell 1 a bash
terminal in a Lightning AI Studio (``LIGHTNING_*`` with the API key, user ``zeus``, the studio's
``cloudspace`` conda env, ``/teamspace`` paths, its own ``CUDA_*``/``TORCH_*``/``NCCL_*``
tuning). The thread counts that change float reductions are pinned alike. The planted side is
either: some incidents work in the trial and fail in the studio, others the reverse.

Kinds: ``fail`` (the good run exits 0, the bad one fails), ``metric`` (both exit 0 and only a
printed ``key=value`` metric differs), ``both-fail`` (both fail, differently), ``noise`` (nothing
planted: success is "nothing counts"). Job incidents (``*_job``) use
:data:`benchmarks.incidents.RANKS_RUNSNAP` and :data:`benchmarks.incidents.RANKS_FOLDER`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.incidents import RANKS_FOLDER, RANKS_RUNSNAP, Incident, Launch, _git, _venv, _write
from benchmarks.thirdparty import Unavailable, _incident, python_with

TRIAL_ID = "48213"


def determined_or_studio_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 a Determined
    AI trial container, 1 a bash terminal in a Lightning AI Studio (``venv`` the interpreter's
    virtual environment, first on ``PATH``); each with its own tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    if n % 2 == 0:  # Determined trial container on a Kubernetes agent, as root
        env = {
            **common, "PATH": f"/run/determined/pythonuserbase/bin:/opt/conda/bin:{path}",
            "USER": "root", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "SHELL": "/bin/bash",
            "HOSTNAME": f"exp-1907-trial-{TRIAL_ID}-0-7c1e2f9a-b6d3-4e8f",
            "DET_MASTER": "https://determined.ml.acme.internal:8443",
            "DET_MASTER_HOST": "determined.ml.acme.internal", "DET_MASTER_PORT": "8443",
            "DET_CLUSTER_ID": "7f0c2b1e-93a4-4d5e-8b61-2a9c0e4f7d13",
            "DET_AGENT_ID": "det-agent-pool-cpu-5f8d7", "DET_CONTAINER_ID": "c3a9e1f04b72",
            "DET_TASK_ID": f"1907.{TRIAL_ID}", "DET_TASK_TYPE": "TRIAL",
            "DET_ALLOCATION_ID": f"1907.{TRIAL_ID}.1", "DET_EXPERIMENT_ID": "1907",
            "DET_TRIAL_ID": TRIAL_ID, "DET_TRIAL_RUN_ID": "1", "DET_TRIAL_SEED": "1294407521",
            "DET_USER": "mbaptiste", "DET_RESOURCES_TYPE": "k8s-pod", "DET_SLOT_IDS": "[0]",
            "DET_SESSION_TOKEN": "v2.public.eyJpZCI6MzEsInVzZXJfaWQiOjE3fQ.d3t5e55i0n-t0k3n",
            "DET_USE_GPU": "false", "DET_PYTHON_EXECUTABLE": "/opt/conda/bin/python3",
            "PYTHONUSERBASE": "/run/determined/pythonuserbase",
            "DET_TRIAL_RUNNER_NETWORK_INTERFACE": "eth0",
            "NCCL_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "WARN", "NCCL_ASYNC_ERROR_HANDLING": "1",
            "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "TORCH_CUDNN_V8_API_ENABLED": "1",
            "HF_HOME": "/run/determined/workdir/.cache/huggingface",
            "HF_HUB_DISABLE_TELEMETRY": "1", "TRANSFORMERS_VERBOSITY": "error",
            "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false",
        }
        if venv:  # the experiment image's environment, first on PATH
            env["PATH"] = f"{venv}/bin:{env['PATH']}"
        return env
    env = {  # Lightning AI Studio, bash in the browser terminal, the cloudspace conda env
        **common,
        "PATH": f"{home}/.local/bin:/home/zeus/miniconda3/envs/cloudspace/bin:"
                f"/home/zeus/miniconda3/condabin:/usr/local/cuda/bin:{path}",
        "USER": "zeus", "LOGNAME": "zeus", "SHELL": "/bin/bash", "LANG": "en_US.UTF-8",
        "TERM": "xterm-256color", "COLORTERM": "truecolor", "SHLVL": "2",
        "PWD": str(home), "OLDPWD": "/teamspace/studios/this_studio",
        "HOSTNAME": "ip-10-192-11-71", "CONDA_DEFAULT_ENV": "cloudspace",
        "CONDA_PREFIX": "/home/zeus/miniconda3/envs/cloudspace", "CONDA_SHLVL": "1",
        "LIGHTNING_CLOUD_URL": "https://lightning.ai",
        "LIGHTNING_CLOUD_PROJECT_ID": "01hx7c9qk2v4m8n6p3r5t7w9y1",
        "LIGHTNING_CLOUD_SPACE_ID": "01jf2d8e6b4a9c7e5g3h1k0m2n",
        "LIGHTNING_CLUSTER_ID": "lightning-public-prod", "LIGHTNING_USER_ID":
            "5c0e7a2b-91d4-4f3e-a8b6-0d2c4e6f8a1b", "LIGHTNING_USERNAME": "mbaptiste",
        "LIGHTNING_API_KEY": "lai-7d9e2f4a6b8c0d1e3f5a7b9c2d4e6f8a",
        "LIGHTNING_CLOUDSPACE_HOST": "01jf2d8e6b4a9c7e5g3h1k0m2n.cloudspaces.litng.ai",
        "LIGHTNING_TEAMSPACE": "recsys", "LIGHTNING_STUDIO": "basket-dev",
        "JUPYTER_SERVER_ROOT": "/teamspace/studios/this_studio",
        "CUDA_VISIBLE_DEVICES": "0", "CUDA_MODULE_LOADING": "LAZY",
        "CUDA_HOME": "/usr/local/cuda", "NCCL_P2P_DISABLE": "0", "NCCL_DEBUG": "INFO",
        "TORCH_CUDA_ARCH_LIST": "8.6;8.9", "TORCH_HOME": "/teamspace/studios/this_studio/.torch",
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "HF_HOME": "/teamspace/cache/huggingface",
        "HF_HUB_ENABLE_HF_TRANSFER": "0", "TOKENIZERS_PARALLELISM": "true",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1", "EDITOR": "nano", "PAGER": "less",
    }
    if venv:  # `conda activate cloudspace` then the project's venv
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "studio", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the Lightning Studio (``bad_in="studio"``) or from the Determined trial (``"trial"``)."""
    trial = determined_or_studio_shell(0, d / "home" / "root", venv)
    studio = determined_or_studio_shell(1, d / "home" / "zeus", venv)
    first, second = (trial, studio) if bad_in == "studio" else (studio, trial)
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


# --------------------------------------------------------------------------- torchrun jobs


BASKET_TRAIN = """
    \"\"\"Train the next-basket category model with DDP over gloo; sizes from
    configs/train.yaml. Rank 0 prints each epoch's loss and the validation recall@5;
    --min-recall refuses a model below it.\"\"\"
    import argparse

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP

    from metrics import global_recall, hits_at_k
    from model import BasketModel


    def baskets(n=2600, items=400, size=6, seed=13):
        \"\"\"Baskets of item ids; the label is the category (item // 20) most items share.\"\"\"
        g = torch.Generator().manual_seed(seed)
        home = torch.randint(0, items // 20, (n, 1), generator=g)
        own = home * 20 + torch.randint(0, 20, (n, size), generator=g)
        other = torch.randint(0, items, (n, size), generator=g)
        x = torch.where(torch.rand(n, size, generator=g) < 0.6, own, other)
        return x, home.squeeze(1)


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--sparse-embeddings", action="store_true")
        p.add_argument("--min-recall", type=float, default=None)
        a = p.parse_args()
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        torch.set_num_threads(1)
        cfg = yaml.safe_load(open("configs/train.yaml"))
        x, y = baskets()
        tx, ty = x[:2000][rank::world], y[:2000][rank::world]
        vx, vy = x[2000:][rank::world], y[2000:][rank::world]
        torch.manual_seed(0)
        model = DDP(BasketModel(400, cfg["dim"], 20, sparse=a.sparse_embeddings))
        opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
        bs = cfg["batch"] // world
        for epoch in range(cfg["epochs"]):
            total, steps = 0.0, 0
            for s in range(0, len(tx), bs):
                loss = F.cross_entropy(model(tx[s:s + bs]), ty[s:s + bs])
                opt.zero_grad()
                loss.backward()
                opt.step()
                total, steps = total + loss.item(), steps + 1
            t = torch.tensor([total / steps])
            dist.all_reduce(t)
            if rank == 0:
                print(f"epoch={epoch} loss={t.item() / world:.5f}")
        with torch.no_grad():
            hits = hits_at_k(model.module(vx), vy, 5)
        recall = global_recall(hits, len(vy))
        if rank == 0:
            print(f"val_recall5={recall:.4f}")
            if a.min_recall is not None and recall < a.min_recall:
                raise RuntimeError(f"val_recall5={recall:.4f} is below --min-recall "
                                   f"{a.min_recall}: not publishing the model")
        dist.barrier()
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

BASKET_MODEL = """
    \"\"\"The basket encoder: pooled item embeddings, then a linear head over categories.\"\"\"
    import torch


    class BasketModel(torch.nn.Module):
        def __init__(self, items, dim, categories, sparse=False):
            super().__init__()
            self.items = torch.nn.EmbeddingBag(items, dim, mode="mean", sparse=sparse)
            self.head = torch.nn.Linear(dim, categories)

        def forward(self, basket):
            return self.head(torch.relu(self.items(basket)))
    """

BASKET_METRICS = """
    \"\"\"Validation metrics, summed over the ranks.\"\"\"
    import torch
    import torch.distributed as dist


    def hits_at_k(logits, labels, k):
        return int((logits.topk(k, dim=1).indices == labels[:, None]).any(1).sum())


    def global_recall(hits, count):
        t = torch.tensor([float(hits), float(count)])
        dist.all_reduce(t)
        return (t[0] / t[1]).item()
    """

BASKET_YAML = "# next-basket category model, grocery app\ndim: 32\nlr: 0.01\nbatch: 100\n" \
              "epochs: 3\n"


def _basket_job(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    return py, _repo(d / "basket-rec", {"train.py": BASKET_TRAIN, "model.py": BASKET_MODEL,
                                        "metrics.py": BASKET_METRICS,
                                        "configs/train.yaml": BASKET_YAML})


def sparse_embeddings_under_adam_job(d: Path) -> Incident:
    """Job against job. The studio's launch line carries ``--sparse-embeddings``, copied from
    the recipe of the big catalogue model that trains with SGD; this job's optimizer is Adam,
    which refuses sparse gradients at the first step on every rank (RuntimeError: Adam does not
    support sparse gradients, please consider SparseAdam instead). Kind: fail."""
    py, repo = _basket_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(sparse_embeddings_under_adam_job, Launch(argv, good, repo),
                     Launch(_torchrun(py, "train.py", "--sparse-embeddings"), bad, repo),
                     ("command", "--sparse-embeddings"))


def sum_pooling_uncommitted_metric_job(d: Path) -> Incident:
    """Job against job. Between the jobs model.py (in git) had its EmbeddingBag pooling
    changed from ``mode="mean"`` to ``mode="sum"`` ("sum pools better in the paper"), not
    committed. Both jobs train; every epoch's loss and the validation recall move.
    Kind: metric."""
    py, repo = _basket_job(d)

    def edited() -> None:
        f = repo / "model.py"
        f.write_text(f.read_text().replace('mode="mean"', 'mode="sum"'))

    good, bad = _shells(d, bad_in="trial", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(sum_pooling_uncommitted_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "basket-rec: model.py"), between=edited)


def gather_list_on_every_rank_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--min-recall 0.99``, which this model never
    reaches: the good job trains and rank 0 refuses to publish it. Between the jobs metrics.py
    (in git) had its all_reduce rewritten, not committed, as a ``dist.gather`` with a gather
    list built on every rank; rank 1 stops at it (ValueError: Argument ``gather_list`` must NOT
    be specified on non-destination ranks). Kind: both-fail."""
    py, repo = _basket_job(d)

    def edited() -> None:
        f = repo / "metrics.py"
        f.write_text(f.read_text().replace(
            "    dist.all_reduce(t)\n    return (t[0] / t[1]).item()\n",
            "    parts = [torch.zeros(2) for _ in range(dist.get_world_size())]\n"
            "    dist.gather(t, gather_list=parts, dst=0)\n"
            "    total = torch.stack(parts).sum(0)\n"
            "    return (total[0] / total[1]).item()\n"))

    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--min-recall", "0.99")
    return _incident(gather_list_on_every_rank_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "basket-rec: metrics.py"), between=edited)


def basket_ddp_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the Determined trial and from the
    Lightning Studio: each job its own rendezvous and rank processes, the shells their own
    DET_*, LIGHTNING_*, CONDA_*, NCCL_*, CUDA_*, TORCH_* and HF_* variables. Nothing planted.
    Kind: noise."""
    py, repo = _basket_job(d)
    good, bad = _shells(d, bad_in="trial", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(basket_ddp_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- c10d and engine


BACKFILL_COORD = """
    \"\"\"Coordinate the feature backfill: host a c10d TCPStore on --coordinator-host and
    --coordinator-port (0: any free port) for the shard workers, publish each day's shard and
    read back the count.\"\"\"
    import argparse
    import datetime

    import torch.distributed as dist


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--coordinator-host", default="127.0.0.1")
        p.add_argument("--coordinator-port", type=int, default=0)
        p.add_argument("--days", type=int, default=30)
        a = p.parse_args()
        store = dist.TCPStore(a.coordinator_host, a.coordinator_port, world_size=1,
                              is_master=True, timeout=datetime.timedelta(seconds=6),
                              wait_for_workers=False)
        for day in range(a.days):
            store.set(f"backfill/day-{day:02d}", f"shard-{day % 5}")
        store.add("published", a.days)
        print(f"days_published={int(store.add('published', 0))} keys={store.num_keys()}")


    if __name__ == "__main__":
        main()
    """


def coordinator_host_with_port(d: Path) -> Incident:
    """The trial's entrypoint was written from the runbook's "coordinator: 127.0.0.1:29561" as
    ``--coordinator-host 127.0.0.1:29561``; the store looks that name up, finds no address and
    gives up after its timeout (DistNetworkError: The client socket has timed out ... while
    trying to connect to (127.0.0.1:29561, 0)). The studio run leaves host and port at their
    defaults. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "feature-backfill", {"coordinate.py": BACKFILL_COORD})
    good, bad = _shells(d, bad_in="trial", venv=_venv_of(py))
    argv = (py, "coordinate.py")
    return _incident(coordinator_host_with_port, Launch(argv, good, repo),
                     Launch((*argv, "--coordinator-host", "127.0.0.1:29561"), bad, repo),
                     ("command", "--coordinator-host"))


SHARD_PLAN = """
    \"\"\"Score the catalogue embeddings in shards, one shard per visible GPU (the ids from
    CUDA_VISIBLE_DEVICES), or one CPU shard when none is visible; prints the plan and the mean
    norm.\"\"\"
    import os

    import torch


    def visible_devices():
        ids = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        return [int(i) for i in ids.split(",") if i.strip()]


    def main():
        torch.set_num_threads(2)
        devices = visible_devices() or [-1]
        g = torch.Generator().manual_seed(3)
        table = torch.randn(6000, 48, generator=g)
        shards = torch.chunk(table, len(devices))
        norms = torch.cat([s.norm(dim=1) for s in shards])
        print(f"shards={len(shards)} rows={len(norms)} mean_norm={norms.mean().item():.5f}")


    if __name__ == "__main__":
        main()
    """


def visible_devices_as_uuids(d: Path) -> Incident:
    """The Determined agent hands the trial ``CUDA_VISIBLE_DEVICES`` as GPU UUIDs
    (``GPU-5b8e...``), as Kubernetes device plugins do; the shard planner turns each id into an
    int and stops (ValueError: invalid literal for int() with base 10: 'GPU-5b8e...'). The
    studio has ``0``. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "catalogue-embed", {"score_shards.py": SHARD_PLAN})
    uuid = "GPU-5b8e3c1d-7a2f-4e96-b0d4-1c9e8f6a3b27"
    good, bad = _shells(d, bad={"CUDA_VISIBLE_DEVICES": uuid}, bad_in="trial",
                        venv=_venv_of(py))
    argv = (py, "score_shards.py")
    return _incident(visible_devices_as_uuids, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "CUDA_VISIBLE_DEVICES"))


PL_FIT = """
    \"\"\"Fit the substitution model (which product replaces an out-of-stock one) with
    Lightning's Trainer; the accelerator is left to Lightning.\"\"\"
    import pytorch_lightning as pl
    import torch
    from torch.utils.data import DataLoader, TensorDataset


    class Substitutes(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                           torch.nn.Linear(32, 1))

        def training_step(self, batch, _):
            x, y = batch
            return torch.nn.functional.binary_cross_entropy_with_logits(
                self.net(x).squeeze(1), y)

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=0.01)


    def main():
        torch.set_num_threads(2)
        pl.seed_everything(0, verbose=False)
        g = torch.Generator().manual_seed(8)
        x = torch.randn(1024, 16, generator=g)
        y = ((x[:, 0] - x[:, 3]) > 0).float()
        trainer = pl.Trainer(max_epochs=3, logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False)
        model = Substitutes()
        trainer.fit(model, DataLoader(TensorDataset(x, y), batch_size=64))
        with torch.no_grad():
            acc = ((model.net(x).squeeze(1) > 0).float() == y).float().mean().item()
        print(f"train_acc={acc:.4f}")


    if __name__ == "__main__":
        main()
    """


def pl_accelerator_gpu_left_in_studio(d: Path) -> Incident:
    """The studio's environment variables (set in its settings when it ran on an A10G) still
    hold ``PL_TRAINER_ACCELERATOR=gpu``; the studio now runs on a CPU machine and Lightning's
    Trainer, which takes its defaults from ``PL_TRAINER_*``, refuses to start
    (MisconfigurationException: No supported gpu backend found!). Kind: fail."""
    py = python_with("torch", "pytorch_lightning")
    repo = _repo(d / "substitutes", {"fit.py": PL_FIT})
    good, bad = _shells(d, bad={"PL_TRAINER_ACCELERATOR": "gpu"}, venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(pl_accelerator_gpu_left_in_studio, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "PL_TRAINER_ACCELERATOR"))


# --------------------------------------------------------------------------- model folders


MAKE_BERT = """
import sys, torch
from transformers import BertConfig, BertForSequenceClassification
torch.manual_seed(0)
cfg = BertConfig(vocab_size=300, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=128, max_position_embeddings=128, type_vocab_size=2,
                 num_labels=2)
model = BertForSequenceClassification(cfg)
g = torch.Generator().manual_seed(1)
ids = torch.randint(1, 300, (96, 24), generator=g)
segments = torch.zeros_like(ids)
segments[:, 12:] = 1
labels = (ids[:, 0] < 150).long()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(40):
    loss = model(input_ids=ids, token_type_ids=segments, labels=labels).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
model.save_pretrained(sys.argv[1])
"""

PAIR_EVAL = """
    \"\"\"Evaluate the duplicate-listing classifier (a BERT folder, --model-path) on listing
    pairs: the first title is segment 0, the second segment 1.\"\"\"
    import argparse

    import torch
    from transformers import AutoModelForSequenceClassification


    def pairs(n=96, seed=1):
        g = torch.Generator().manual_seed(seed)
        ids = torch.randint(1, 300, (n, 24), generator=g)
        segments = torch.zeros_like(ids)
        segments[:, 12:] = 1
        labels = (ids[:, 0] < 150).long()
        return ids, segments, labels


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        torch.set_num_threads(2)
        torch.manual_seed(0)
        model = AutoModelForSequenceClassification.from_pretrained(a.model_path).eval()
        ids, segments, labels = pairs()
        with torch.no_grad():
            out = model(input_ids=ids, token_type_ids=segments, labels=labels)
        acc = (out.logits.argmax(1) == labels).float().mean().item()
        print(f"pairs={len(ids)} loss={out.loss.item():.5f} accuracy={acc:.4f}")


    if __name__ == "__main__":
        main()
    """


def _bert(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers")
    repo = _repo(d / "dedup-listings", {"eval_pairs.py": PAIR_EVAL})
    model = d / "checkpoints" / "dedup-bert"
    _build(py, MAKE_BERT, str(model))
    return py, repo, model


def _edit_config(model: Path, **fields: object) -> None:
    cfg = json.loads((model / "config.json").read_text())
    cfg.update(fields)
    (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def type_vocab_size_from_single_segment_export(d: Path) -> Incident:
    """Between the runs the model folder's config.json (outside git) was rewritten by the
    export script of the single-sentence models with ``"type_vocab_size": 1``; the weights
    still hold two segment rows and transformers refuses to load them (RuntimeError: ...
    ignore_mismatched_sizes, after a MISMATCH report on token_type_embeddings). Kind: fail."""
    py, repo, model = _bert(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "eval_pairs.py", "--model-path", str(model))
    return _incident(type_vocab_size_from_single_segment_export, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: type_vocab_size"),
                     between=lambda: _edit_config(model, type_vocab_size=1))


def num_hidden_layers_over_two_layer_weights_metric(d: Path) -> Incident:
    """Between the runs config.json was copied over from the three-layer teacher's folder
    and now says ``"num_hidden_layers": 3``; the weights hold two layers, so the third is
    freshly initialised (a MISSING note) and the evaluation still runs: the loss and the
    accuracy move. Kind: metric."""
    py, repo, model = _bert(d)
    good, bad = _shells(d, bad_in="trial", venv=_venv_of(py))
    argv = (py, "eval_pairs.py", "--model-path", str(model))
    return _incident(num_hidden_layers_over_two_layer_weights_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: num_hidden_layers"),
                     between=lambda: _edit_config(model, num_hidden_layers=3))


def dedup_eval_noise(d: Path) -> Incident:
    """The duplicate-listing evaluation, the same folder, from the Determined trial and from
    the Lightning Studio. Nothing planted. Kind: noise."""
    py, repo, model = _bert(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "eval_pairs.py", "--model-path", str(model))
    return _incident(dedup_eval_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- packages


BOXKIT = {
    "1.4.1": '''
        """The vision team's box helpers (1.4: boxes are x1, y1, x2, y2 unless told)."""


        def _corners(b, fmt):
            if fmt == "xywh":
                return b[0], b[1], b[0] + b[2], b[1] + b[3]
            return tuple(b)


        def iou(a, b, fmt="xyxy"):
            ax1, ay1, ax2, ay2 = _corners(a, fmt)
            bx1, by1, bx2, by2 = _corners(b, fmt)
            w, h = max(0.0, min(ax2, bx2) - max(ax1, bx1)), max(0.0, min(ay2, by2) - max(ay1, by1))
            inter = w * h
            union = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter
            return inter / union if union > 0 else 0.0
        ''',
    "2.0.0": '''
        """The vision team's box helpers (2.0: boxes are x, y, w, h, as COCO has them)."""


        def _corners(b, fmt):
            if fmt == "xywh":
                return b[0], b[1], b[0] + b[2], b[1] + b[3]
            return tuple(b)


        def iou(a, b, fmt="xywh"):
            ax1, ay1, ax2, ay2 = _corners(a, fmt)
            bx1, by1, bx2, by2 = _corners(b, fmt)
            w, h = max(0.0, min(ax2, bx2) - max(ax1, bx1)), max(0.0, min(ay2, by2) - max(ay1, by1))
            inter = w * h
            union = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter
            return inter / union if union > 0 else 0.0
        ''',
}

SHELF_EVAL = """
    \"\"\"Match the shelf detector's boxes (x1, y1, x2, y2) to the labelled ones: a detection
    counts when its IoU with the label is at least 0.5.\"\"\"
    import csv

    from boxkit import iou


    def main():
        rows = list(csv.DictReader(open("data/shelf_boxes.csv")))
        scores = [iou([float(r[k]) for k in ("px1", "py1", "px2", "py2")],
                      [float(r[k]) for k in ("gx1", "gy1", "gx2", "gy2")]) for r in rows]
        hits = sum(s >= 0.5 for s in scores)
        print(f"boxes={len(rows)} mean_iou={sum(scores) / len(scores):.4f} "
              f"precision50={hits / len(rows):.4f}")


    if __name__ == "__main__":
        main()
    """


def _shelf_boxes() -> str:
    rows = ["id,gx1,gy1,gx2,gy2,px1,py1,px2,py2"]
    for i in range(300):
        x, y = 20 + (i * 37) % 500, 30 + (i * 53) % 300
        w, h = 40 + (i * 11) % 60, 60 + (i * 7) % 80
        dx, dy = (i * 13) % 17 - 8, (i * 19) % 15 - 7
        rows.append(f"b{i},{x},{y},{x + w},{y + h},{x + dx},{y + dy},{x + w + dy},{y + h + dx}")
    return "\n".join(rows) + "\n"


def boxkit_default_format_in_studio_venv(d: Path) -> Incident:
    """The shelf evaluation calls ``boxkit.iou(pred, label)`` on corner boxes. The studio's
    venv was made from an unpinned requirements file and got boxkit 2.0.0, whose ``iou`` now
    reads boxes as x, y, w, h by default; the trial image has 1.4.1. Nothing fails: the mean
    IoU and the precision move. Kind: metric."""
    repo = _repo(d / "shelf-eval", {"match.py": SHELF_EVAL, "data/shelf_boxes.csv": _shelf_boxes()})
    trial_py = _venv(d / "venvs" / "det-image", {"boxkit": ("1.4.1", BOXKIT["1.4.1"])})
    studio_py = _venv(d / "venvs" / "studio-venv", {"boxkit": ("2.0.0", BOXKIT["2.0.0"])})
    good, bad = _shells(d)
    good = {**good, "PATH": f"{trial_py.parent}:{good['PATH']}"}
    bad = {**bad, "VIRTUAL_ENV": str(studio_py.parent.parent),
           "PATH": f"{studio_py.parent}:{bad['PATH']}"}
    argv = ("python", "match.py")
    return _incident(boxkit_default_format_in_studio_venv, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "boxkit"))


SKUVOCAB = {
    "2.3.0": '''
        """The catalogue team's SKU vocabulary (2.3)."""


        def load_vocab(rows):
            return {sku: i for i, sku in enumerate(sorted(set(rows)))}
        ''',
    "3.0.0": '''
        """The catalogue team's SKU vocabulary (3.0: vocabularies are objects)."""


        class Vocab:
            def __init__(self, rows):
                self.index = {sku: i for i, sku in enumerate(sorted(set(rows)))}

            def __len__(self):
                return len(self.index)
        ''',
}

SKU_REPORT = """
    \"\"\"Count the SKUs of this week's orders and the share of the catalogue they cover.\"\"\"
    import csv

    from skuvocab import load_vocab


    def main():
        skus = [r["sku"] for r in csv.DictReader(open("data/orders.csv"))]
        vocab = load_vocab(skus)
        print(f"orders={len(skus)} skus={len(vocab)} coverage={len(vocab) / 250:.4f}")


    if __name__ == "__main__":
        main()
    """


def skuvocab_major_in_trial_image(d: Path) -> Incident:
    """The weekly SKU report imports ``load_vocab`` from the team's ``skuvocab``. The
    experiment image was rebuilt with skuvocab 3.0.0, where vocabularies became a ``Vocab``
    class and ``load_vocab`` is gone; the studio's venv has 2.3.0 (ImportError: cannot import
    name 'load_vocab' from 'skuvocab'). Kind: fail."""
    orders = "\n".join(["order,sku", *(f"o{i},SKU-{(i * 37) % 211:04d}" for i in range(900))])
    repo = _repo(d / "sku-report", {"report.py": SKU_REPORT, "data/orders.csv": orders + "\n"})
    studio_py = _venv(d / "venvs" / "studio-venv", {"skuvocab": ("2.3.0", SKUVOCAB["2.3.0"])})
    trial_py = _venv(d / "venvs" / "det-image", {"skuvocab": ("3.0.0", SKUVOCAB["3.0.0"])})
    good, bad = _shells(d, bad_in="trial")
    good = {**good, "VIRTUAL_ENV": str(studio_py.parent.parent),
            "PATH": f"{studio_py.parent}:{good['PATH']}"}
    bad = {**bad, "PATH": f"{trial_py.parent}:{bad['PATH']}"}
    argv = ("python", "report.py")
    return _incident(skuvocab_major_in_trial_image, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "skuvocab"))


# --------------------------------------------------------------------------- source and configs


RETURNS_SCORE = """
    \"\"\"Score this week's orders with the saved return-risk model (artifacts/returns.pt, a
    linear layer over the columns features.py builds).\"\"\"
    import torch

    from features import build


    def main():
        torch.set_num_threads(2)
        x = build(n=500)
        model = torch.nn.Linear(6, 1)
        model.load_state_dict(torch.load("artifacts/returns.pt"))
        with torch.no_grad():
            risk = torch.sigmoid(model(x)).squeeze(1)
        print(f"orders={len(x)} mean_risk={risk.mean().item():.5f} "
              f"flagged={int((risk > 0.5).sum())}")


    if __name__ == "__main__":
        main()
    """

RETURNS_FEATURES = """
    \"\"\"The return-risk features of an order.\"\"\"
    import torch


    def build(n, seed=12):
        g = torch.Generator().manual_seed(seed)
        price = torch.rand(n, generator=g) * 200
        items = torch.randint(1, 8, (n,), generator=g).float()
        sizes = torch.randint(1, 4, (n,), generator=g).float()
        first_order = (torch.rand(n, generator=g) < 0.2).float()
        discount = torch.rand(n, generator=g) * 0.5
        past_returns = torch.randint(0, 5, (n,), generator=g).float()
        cols = [price / 200, items / 8, sizes / 4, first_order, discount, past_returns / 5]
        return torch.stack(cols, dim=1)
    """

MAKE_RETURNS = """
import sys, torch
torch.manual_seed(0)
torch.save(torch.nn.Linear(6, 1).state_dict(), sys.argv[1])
"""


def feature_added_uncommitted(d: Path) -> Incident:
    """Between the runs features.py (in git) got a seventh column, ``days_since_delivery``,
    not committed, for the next model; the saved model still takes six and scoring stops
    (RuntimeError: mat1 and mat2 shapes cannot be multiplied (500x7 and 6x1)). Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "return-risk", {"score.py": RETURNS_SCORE, "features.py": RETURNS_FEATURES},
                 "__pycache__/\nartifacts/\n")
    (repo / "artifacts").mkdir(exist_ok=True)
    _build(py, MAKE_RETURNS, str(repo / "artifacts" / "returns.pt"))

    def edited() -> None:
        f = repo / "features.py"
        f.write_text(f.read_text().replace(
            "    cols = [",
            "    days = torch.randint(0, 30, (n,), generator=g).float()\n    cols = [")
            .replace("past_returns / 5]", "past_returns / 5, days / 30]"))

    good, bad = _shells(d, bad_in="trial", venv=_venv_of(py))
    argv = (py, "score.py")
    return _incident(feature_added_uncommitted, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "return-risk: features.py"),
                     between=edited)


FORECAST = """
    \"\"\"Train the store-demand forecaster: a linear model over the last `window` days, the
    window, horizon and learning rate from --config (the team's shared experiment folder).\"\"\"
    import argparse
    import math

    import torch
    import yaml


    def series(days=730, seed=4):
        g = torch.Generator().manual_seed(seed)
        t = torch.arange(days, dtype=torch.float32)
        weekly = torch.sin(2 * math.pi * t / 7) * 12
        return 100 + 0.05 * t + weekly + torch.randn(days, generator=g) * 4


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--config", required=True)
        a = p.parse_args()
        cfg = yaml.safe_load(open(a.config))
        torch.set_num_threads(2)
        s = series()
        w, h = cfg["window"], cfg["horizon"]
        x = torch.stack([s[i:i + w] for i in range(len(s) - w - h)])
        y = torch.stack([s[i + w + h - 1] for i in range(len(s) - w - h)])
        mu, sd = x.mean(), x.std()
        x, y = (x - mu) / sd, (y - mu) / sd
        cut = int(len(x) * 0.8)
        torch.manual_seed(0)
        model = torch.nn.Linear(w, 1)
        opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
        for _ in range(cfg["steps"]):
            loss = torch.nn.functional.mse_loss(model(x[:cut]).squeeze(1), y[:cut])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            mae = (model(x[cut:]).squeeze(1) - y[cut:]).abs().mean().item() * sd.item()
        print(f"train_mse={loss.item():.5f} val_mae={mae:.4f}")


    if __name__ == "__main__":
        main()
    """


def forecast_window_edited_in_shared_config(d: Path) -> Incident:
    """The forecaster's config lives in the team's shared experiment folder, outside git.
    Between the runs a colleague shortened its ``window`` from 28 to 10 days for a quick test
    and left it. Both runs train; the training loss and the validation MAE move.
    Kind: metric."""
    py = python_with("torch", "yaml")
    repo = _repo(d / "store-demand", {"forecast.py": FORECAST})
    cfg = _write(d / "shared" / "experiments" / "demand" / "forecast.yaml",
                 "# store demand, daily\nwindow: 28\nhorizon: 7\nlr: 0.01\nsteps: 300\n")

    def edited() -> None:
        cfg.write_text(cfg.read_text().replace("window: 28", "window: 10"))

    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "forecast.py", "--config", str(cfg))
    return _incident(forecast_window_edited_in_shared_config, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {cfg.resolve()}"),
                     between=edited)


# --------------------------------------------------------------------------- XGBoost


DEMAND_DELTA = """
    \"\"\"Train the XGBoost model of next week's demand change (relative to this week, so
    often below zero); --objective picks the loss, --max-rmse refuses a model above it.\"\"\"
    import argparse

    import numpy as np
    import xgboost as xgb


    def weeks(n, seed):
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(n, 8))
        y = 0.6 * x[:, 0] - 0.4 * x[:, 1] * x[:, 2] + rng.normal(scale=0.3, size=n)
        return x, y


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--objective", default="reg:squarederror")
        p.add_argument("--max-rmse", type=float, default=None)
        a = p.parse_args()
        x, y = weeks(1500, 1)
        vx, vy = weeks(400, 2)
        params = {"objective": a.objective, "max_depth": 4, "eta": 0.1, "nthread": 1,
                  "seed": 0}
        booster = xgb.train(params, xgb.DMatrix(x, y), num_boost_round=80)
        rmse = float(np.sqrt(np.mean((booster.predict(xgb.DMatrix(vx)) - vy) ** 2)))
        print(f"rounds=80 val_rmse={rmse:.4f}")
        if a.max_rmse is not None and rmse > a.max_rmse:
            raise SystemExit(f"val_rmse {rmse:.4f} is above --max-rmse {a.max_rmse}: "
                             "keeping last week's model")


    if __name__ == "__main__":
        main()
    """


def _demand(d: Path) -> tuple[str, Path]:
    py = python_with("xgboost", "numpy")
    return py, _repo(d / "demand-delta", {"train.py": DEMAND_DELTA})


def squaredlogerror_on_deltas_both_fail(d: Path) -> Incident:
    """Both fail. Both runs ask for ``--max-rmse 0.05``, which this model never reaches: the
    good run trains and keeps last week's model. The studio run also passes ``--objective
    reg:squaredlogerror`` ("the demand is skewed"), but the target is a change that goes below
    -1 and XGBoost refuses it before the first round (XGBoostError: label must be greater than
    -1 for rmsle). Kind: both-fail."""
    py, repo = _demand(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "train.py", "--max-rmse", "0.05")
    return _incident(squaredlogerror_on_deltas_both_fail, Launch(argv, good, repo),
                     Launch((*argv, "--objective", "reg:squaredlogerror"), bad, repo),
                     ("command", "--objective"))


def demand_delta_noise(d: Path) -> Incident:
    """The demand-change model, the same code and options, from the Lightning Studio and from
    the Determined trial. Nothing planted. Kind: noise."""
    py, repo = _demand(d)
    good, bad = _shells(d, bad_in="trial", venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(demand_delta_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


#: The nineteenth fresh batch, in the order it was written. Never tuned on.
FRESH19 = [
    sparse_embeddings_under_adam_job, sum_pooling_uncommitted_metric_job,
    gather_list_on_every_rank_both_fail_job, basket_ddp_job_noise, coordinator_host_with_port,
    visible_devices_as_uuids, pl_accelerator_gpu_left_in_studio,
    type_vocab_size_from_single_segment_export, num_hidden_layers_over_two_layer_weights_metric,
    dedup_eval_noise, boxkit_default_format_in_studio_venv, skuvocab_major_in_trial_image,
    feature_added_uncommitted, forecast_window_edited_in_shared_config,
    squaredlogerror_on_deltas_both_fail, demand_delta_noise,
]

if __name__ == "__main__":  # build one incident and run its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH19 if b.__name__ in sys.argv[1:]] or FRESH19
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh19-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
