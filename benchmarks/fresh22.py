"""A twenty-second fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh20.py, for their format), how they are run and scored
(benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot reference
(docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job captures
one snapshot per rank. They form the corpus's ``fresh22`` half; report it, never change the
ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a pump-failure classifier trained
  with DDP: an uncommitted ``dropout: 1.5`` (meant 0.15) in the git-tracked configs/train.yaml,
  ``SEED`` exported by the Kaggle terminal (metric), an uncommitted gradient clipping that reads a
  config key nobody added on top of a quality gate the good job already misses (both fail), and
  the same job from both shells (noise);
- torch settings and the c10d rendezvous on the CPU: ``TRAIN_DETERMINISTIC=1`` exported by the
  Nomad job (``torch.use_deterministic_algorithms`` refuses ``put_``), a checkpoint holding a
  numpy scalar that loads only where the Nomad job exports ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD``,
  and a single-process ``env://`` rendezvous from a terminal that exports ``MASTER_ADDR`` but not
  ``MASTER_PORT``;
- model folders under transformers: a tiny BERT classifier whose config.json got
  ``vocab_size`` 30522 from bert-base, ``num_attention_heads`` 8 for 4 (metric), and its
  evaluation from both shells (noise);
- the rest: team packages ``gaugecal`` 2.0 (``calibrate``'s table became keyword-only: fail)
  and ``tsfeat`` 0.10 (``rolling_mean`` now centred: metric) in one of two venvs, a git-ignored
  ``.env`` whose ``TEST_SIZE`` became 20, scikit-learn random forest ``--max-depth 3`` (metric),
  an uncommitted ``StandardScaler()`` on sparse features on top of a missed gate (both fail) and
  the energy regressor from both shells (noise).

The shells are :func:`nomad_or_kaggle_shell`: shell 0 a HashiCorp Nomad batch job (raw_exec
driver, ``NOMAD_*``, ``CONSUL_HTTP_ADDR``, ``VAULT_ADDR``, root in the allocation's task folder,
the job's launch script exporting ``NCCL_*``/``OMP_*``/``HF_*``/``TORCH_*``), shell 1 bash in
a Kaggle notebook's terminal (``KAGGLE_*``, ``JPY_*``, ``MPLBACKEND``, ``PYTHONUSERBASE``,
``/kaggle/working``, the image's ``CUDA_*``/``NVIDIA_*``/``TF_*`` settings). The thread counts
that change float reductions are pinned alike. The planted side is either: some incidents work
on Nomad and fail on Kaggle, others the reverse.

Kinds: ``fail`` (the good run exits 0, the bad one fails), ``metric`` (both exit 0 and only a
printed ``key=value`` metric differs), ``both-fail`` (both fail, differently), ``noise`` (nothing
planted: success is "nothing counts"). Job incidents (``*_job``) use
:data:`benchmarks.incidents.RANKS_RUNSNAP` and :data:`benchmarks.incidents.RANKS_FOLDER`.
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
from pathlib import Path

from benchmarks.incidents import RANKS_FOLDER, RANKS_RUNSNAP, Incident, Launch, _git, _venv, _write
from benchmarks.thirdparty import Unavailable, _incident, python_with

ALLOC = "5d2f8c41-9a7e-3b06-e1c4-8f2a7d09b6e3"


def nomad_or_kaggle_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 a Nomad batch
    job's raw_exec task, 1 bash in a Kaggle notebook's terminal (``venv`` the interpreter's
    virtual environment, first on ``PATH``); each with its own tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    if n % 2 == 0:  # Nomad raw_exec task of a dispatched batch job, as the agent's root user
        task = f"/opt/nomad/data/alloc/{ALLOC}/train"
        env = {
            **common, "PATH": f"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:{path}",
            "USER": "root", "LANG": "C.UTF-8", "HOSTNAME": "nomad-client-cpu-14",
            "NOMAD_ALLOC_ID": ALLOC, "NOMAD_SHORT_ALLOC_ID": ALLOC[:8],
            "NOMAD_ALLOC_NAME": "ml-train/dispatch-1764970512-3c9a1f.trainer[0]",
            "NOMAD_ALLOC_INDEX": "0", "NOMAD_JOB_NAME": "ml-train",
            "NOMAD_JOB_ID": "ml-train/dispatch-1764970512-3c9a1f",
            "NOMAD_JOB_PARENT_ID": "ml-train", "NOMAD_GROUP_NAME": "trainer",
            "NOMAD_TASK_NAME": "train", "NOMAD_NAMESPACE": "ml", "NOMAD_REGION": "eu",
            "NOMAD_DC": "fra1", "NOMAD_CPU_LIMIT": "8000", "NOMAD_CPU_CORES": "4-11",
            "NOMAD_MEMORY_LIMIT": "16384", "NOMAD_MEMORY_MAX_LIMIT": "24576",
            "NOMAD_ALLOC_DIR": f"/opt/nomad/data/alloc/{ALLOC}/alloc",
            "NOMAD_TASK_DIR": f"{task}/local", "NOMAD_SECRETS_DIR": f"{task}/secrets",
            "NOMAD_META_team": "reliability", "NOMAD_META_dataset": "plant-7-2026-11",
            "NOMAD_PARENT_CGROUP": "nomad.slice", "NOMAD_IP_metrics": "10.20.4.14",
            "NOMAD_PORT_metrics": "25871", "NOMAD_ADDR_metrics": "10.20.4.14:25871",
            "CONSUL_HTTP_ADDR": "127.0.0.1:8500", "VAULT_ADDR": "https://vault.service.consul:8200",
            "PYTHONUNBUFFERED": "1", "NCCL_SOCKET_IFNAME": "ens5", "NCCL_IB_DISABLE": "1",
            "NCCL_DEBUG": "WARN", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
            "TORCH_SHOW_CPP_STACKTRACES": "1", "HF_HOME": f"{task}/local/hf",
            "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
            "TORCH_HOME": f"{task}/local/torch", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        }
        if venv:  # the launch script activates the job's venv on the client
            env["VIRTUAL_ENV"] = venv
            env["PATH"] = f"{venv}/bin:{env['PATH']}"
        return env
    env = {  # bash in the terminal of a Kaggle notebook (the Kaggle Python image, as root)
        **common, "PATH": f"/opt/conda/bin:/usr/local/nvidia/bin:/usr/local/cuda/bin:{path}",
        "USER": "root", "SHELL": "/bin/bash", "LANG": "C.UTF-8", "TERM": "xterm-256color",
        "HOSTNAME": "0b5e7c2d91fa", "PWD": "/kaggle/working", "SHLVL": "1",
        "COLUMNS": "132", "LINES": "41",
        "KAGGLE_KERNEL_RUN_TYPE": "Interactive", "KAGGLE_URL_BASE": "https://www.kaggle.com",
        "KAGGLE_KERNEL_INTEGRATIONS": "", "KAGGLE_DATA_PROXY_URL": "https://dp.kaggle.net",
        "KAGGLE_DATA_PROXY_PROJECT": "kaggle-161607", "KAGGLE_GCP_ZONE": "us-central1-a",
        "KAGGLE_CONTAINER_NAME": "kaggle_4kQ9wz1rT7", "KAGGLE_DOCKER_IMAGE":
            "gcr.io/kaggle-images/python@sha256:3f0e9b7c1d2a", "JPY_PARENT_PID": "7",
        "JUPYTER_SERVER_ROOT": "/kaggle/working", "MPLBACKEND": "agg",
        "PYTHONUSERBASE": "/root/.local", "GIT_PYTHON_REFRESH": "quiet",
        "TESSERACT_PATH": "/usr/bin/tesseract", "PROJ_LIB": "/opt/conda/share/proj",
        "CUDA_VERSION": "12.4.1", "NVIDIA_VISIBLE_DEVICES": "all",
        "NVIDIA_DRIVER_CAPABILITIES": "compute,utility", "CUDA_VISIBLE_DEVICES": "0,1",
        "TF_CPP_MIN_LOG_LEVEL": "2", "TF_FORCE_GPU_ALLOW_GROWTH": "true",
        "TOKENIZERS_PARALLELISM": "false", "HF_HUB_DISABLE_TELEMETRY": "1",
        "KMP_WARNINGS": "0", "NCCL_P2P_DISABLE": "1",
    }
    if venv:  # `source /kaggle/working/.venv/bin/activate`
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "kaggle", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the Kaggle terminal (``bad_in="kaggle"``) or from the Nomad job (``"nomad"``)."""
    nomad = nomad_or_kaggle_shell(0, d / "home" / "root-nomad", venv)
    kaggle = nomad_or_kaggle_shell(1, d / "home" / "root-kaggle", venv)
    first, second = (nomad, kaggle) if bad_in == "kaggle" else (kaggle, nomad)
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


PUMP_DDP = """
    \"\"\"Train the pump-failure classifier with DDP over gloo; sizes from configs/train.yaml.
    SEED (default 0) seeds the weights and the shuffling. Rank 0 prints each epoch's loss and
    the validation accuracy; --min-acc refuses a model below it.\"\"\"
    import argparse
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP


    def readings(n=2400, width=16, seed=23):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, width, generator=g)
        score = x[:, 0] * 1.3 - x[:, 3] + 0.6 * x[:, 5] * x[:, 6] + 0.4 * torch.randn(n, generator=g)
        return x, (score > 0.5).long()


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--min-acc", type=float, default=None)
        a = p.parse_args()
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        cfg = yaml.safe_load(open("configs/train.yaml"))
        seed = int(os.environ.get("SEED", "0"))
        x, y = readings()
        tx, ty = x[:2000][rank::world], y[:2000][rank::world]
        torch.manual_seed(seed)
        net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], cfg["hidden"]), torch.nn.ReLU(),
                                  torch.nn.Dropout(cfg["dropout"]),
                                  torch.nn.Linear(cfg["hidden"], 2))
        model = DDP(net)
        opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9)
        bs = cfg["batch_size"] // world
        order = torch.Generator().manual_seed(seed + 1)
        for epoch in range(cfg["epochs"]):
            perm = torch.randperm(len(tx), generator=order)
            total, steps = 0.0, 0
            for s in range(0, len(tx), bs):
                idx = perm[s:s + bs]
                loss = F.cross_entropy(model(tx[idx]), ty[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                total, steps = total + loss.item(), steps + 1
            t = torch.tensor([total / steps])
            dist.all_reduce(t)
            if rank == 0:
                print(f"epoch={epoch} loss={t.item() / world:.5f}")
        net.eval()
        with torch.no_grad():
            acc = (net(x[2000:]).argmax(1) == y[2000:]).float().mean().item()
        if rank == 0:
            print(f"val_acc={acc:.4f} failures={int(y[2000:].sum())}")
            if a.min_acc is not None and acc < a.min_acc:
                raise RuntimeError(f"val_acc={acc:.4f} is below --min-acc {a.min_acc}: "
                                   "keeping the deployed model")
        dist.barrier()
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

PUMP_YAML = ("# pump telemetry, plant 7\nlr: 0.05\nhidden: 48\ndropout: 0.15\nbatch_size: 64\n"
             "epochs: 4\n")


def _pump_job(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    return py, _repo(d / "pump-ddp", {"train.py": PUMP_DDP, "configs/train.yaml": PUMP_YAML})


def dropout_typo_uncommitted_config_job(d: Path) -> Incident:
    """Job against job. Between the jobs configs/train.yaml (in git) had its dropout edited,
    not committed, to ``1.5`` (meant 0.15); every rank refuses to build the model
    (ValueError: dropout probability has to be between 0 and 1, but got 1.5). Kind: fail."""
    py, repo = _pump_job(d)

    def edited() -> None:
        f = repo / "configs" / "train.yaml"
        f.write_text(f.read_text().replace("dropout: 0.15", "dropout: 1.5"))

    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(dropout_typo_uncommitted_config_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "pump-ddp: configs/train.yaml"),
                     between=edited)


def seed_from_kaggle_env_metric_job(d: Path) -> Incident:
    """Job against job. The Kaggle terminal exports ``SEED=42`` (set with ``%env`` in the
    notebook for another competition, inherited by the terminal); the trainer seeds its weights
    and its shuffling with it. Both jobs train; the losses and the accuracy move.
    Kind: metric."""
    py, repo = _pump_job(d)
    good, bad = _shells(d, bad={"SEED": "42"}, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(seed_from_kaggle_env_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "SEED"))


def grad_clip_key_uncommitted_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--min-acc 0.999``, which this model never
    reaches: the good job trains and rank 0 keeps the deployed model. Between the jobs
    train.py (in git) got gradient clipping, not committed, reading ``cfg["clip_norm"]``, a key
    configs/train.yaml does not have; every rank stops at the first step (KeyError:
    'clip_norm'). Kind: both-fail."""
    py, repo = _pump_job(d)

    def edited() -> None:
        f = repo / "train.py"
        f.write_text(f.read_text().replace(
            "            loss.backward()\n",
            "            loss.backward()\n"
            "            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg[\"clip_norm\"])\n"))

    good, bad = _shells(d, bad_in="nomad", venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--min-acc", "0.999")
    return _incident(grad_clip_key_uncommitted_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "pump-ddp: train.py"), between=edited)


def pump_ddp_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the Kaggle terminal and from the Nomad
    job: each job its own rendezvous and rank processes, the shells their own NOMAD_*,
    KAGGLE_*, NCCL_*, CUDA_*, TF_* and HF_* variables. Nothing planted. Kind: noise."""
    py, repo = _pump_job(d)
    good, bad = _shells(d, bad_in="nomad", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(pump_ddp_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- torch settings


BATTERY = """
    \"\"\"Fine-tune the forklift battery-health regressor from checkpoints/base.pt. Charger
    readings are scattered onto the depot's 8x8 charger grid with put_; TRAIN_DETERMINISTIC=1
    asks torch for deterministic algorithms (the audit's reproducibility rule).\"\"\"
    import os

    import torch


    def grid_features(n, g):
        cells = torch.randint(0, 64, (n, 6), generator=g)
        volts = 40 + 8 * torch.rand(n, 6, generator=g)
        rows = []
        for c, v in zip(cells, volts):
            grid = torch.zeros(64)
            grid.put_(c, v)
            rows.append(grid)
        return torch.stack(rows) / 48, volts.mean(1, keepdim=True)


    def main():
        torch.use_deterministic_algorithms(os.environ.get("TRAIN_DETERMINISTIC") == "1")
        torch.set_num_threads(2)
        ckpt = torch.load("checkpoints/base.pt")
        net = torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
        net.load_state_dict(ckpt["state_dict"])
        g = torch.Generator().manual_seed(31)
        x, health = grid_features(600, g)
        opt = torch.optim.Adam(net.parameters(), lr=0.01)
        for _ in range(80):
            loss = torch.nn.functional.mse_loss(net(x[:500]), health[:500] / 48)
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            val = torch.nn.functional.mse_loss(net(x[500:]), health[500:] / 48).item()
        print(f"base_val={float(ckpt['best_val']):.5f} train_mse={loss.item():.6f} "
              f"val_mse={val:.6f}")


    if __name__ == "__main__":
        main()
    """

MAKE_BASE = """
import sys
import numpy as np
import torch
torch.manual_seed(5)
net = torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
best = np.float64(0.01875) if sys.argv[2] == "numpy" else 0.01875
torch.save({"state_dict": net.state_dict(), "best_val": best}, sys.argv[1])
"""


def _battery(d: Path, best: str) -> tuple[str, Path]:
    py = python_with("torch", "numpy")
    repo = _repo(d / "battery-health", {"finetune.py": BATTERY}, "__pycache__/\ncheckpoints/\n")
    (repo / "checkpoints").mkdir(exist_ok=True)
    _build(py, MAKE_BASE, str(repo / "checkpoints" / "base.pt"), best)
    return py, repo


def deterministic_put_in_nomad_launch(d: Path) -> Incident:
    """The Nomad job's launch script exports ``TRAIN_DETERMINISTIC=1`` for the audit; the
    fine-tuner then asks torch for deterministic algorithms, and ``put_`` has none
    (RuntimeError: put_ does not have a deterministic implementation, but you set
    'torch.use_deterministic_algorithms(True)'). From the Kaggle terminal it trains.
    Kind: fail."""
    py, repo = _battery(d, "float")
    good, bad = _shells(d, bad={"TRAIN_DETERMINISTIC": "1"}, bad_in="nomad",
                        venv=_venv_of(py))
    argv = (py, "finetune.py")
    return _incident(deterministic_put_in_nomad_launch, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "TRAIN_DETERMINISTIC"))


def weights_only_numpy_scalar_on_kaggle(d: Path) -> Incident:
    """The base checkpoint keeps its best validation loss as a numpy scalar. The Nomad job's
    launch script exports ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` (added when torch went to 2.6);
    the Kaggle terminal does not, and ``torch.load``'s weights-only default refuses the numpy
    global (UnpicklingError: Weights only load failed ... Unsupported global).
    Kind: fail."""
    py, repo = _battery(d, "numpy")
    good, bad = _shells(d, good={"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}, venv=_venv_of(py))
    argv = (py, "finetune.py")
    return _incident(weights_only_numpy_scalar_on_kaggle, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"))


SHARD_EVAL = """
    \"\"\"Evaluate the pump classifier's shards with the team's distributed helpers, here as a
    single process: init_process_group over env:// (MASTER_ADDR and MASTER_PORT), then an
    all_reduce of the per-shard counts.\"\"\"
    import torch
    import torch.distributed as dist


    def main():
        dist.init_process_group("gloo", init_method="env://", rank=0, world_size=1)
        g = torch.Generator().manual_seed(3)
        scores = torch.rand(4, 500, generator=g)
        hits = torch.tensor([(s > 0.5).sum().item() for s in scores], dtype=torch.float64)
        dist.all_reduce(hits)
        print(f"shards={len(hits)} positive_rate={hits.sum().item() / scores.numel():.4f}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def master_port_missing_in_kaggle_terminal(d: Path) -> Incident:
    """The shard evaluation rendezvous over ``env://``. The Nomad job exports ``MASTER_ADDR``
    and ``MASTER_PORT`` (its ``rendezvous`` port); the Kaggle terminal has only
    ``MASTER_ADDR=localhost`` from the notebook's ``%env`` (ValueError: Error initializing
    torch.distributed using env:// rendezvous: environment variable MASTER_PORT expected, but
    not set). Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "pump-shard-eval", {"shard_eval.py": SHARD_EVAL})
    good, bad = _shells(d, good={"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port())},
                        bad={"MASTER_ADDR": "localhost"}, venv=_venv_of(py))
    argv = (py, "shard_eval.py")
    return _incident(master_port_missing_in_kaggle_terminal, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "MASTER_PORT"))


# --------------------------------------------------------------------------- model folders


MAKE_BERT = """
import sys
import torch
from transformers import BertConfig, BertForSequenceClassification
cfg = BertConfig(vocab_size=256, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=64, max_position_embeddings=96, num_labels=3,
                 initializer_range=0.4,
                 id2label={0: "routine", 1: "urgent", 2: "safety"},
                 label2id={"routine": 0, "urgent": 1, "safety": 2})
torch.manual_seed(11)
BertForSequenceClassification(cfg).save_pretrained(sys.argv[1])
"""

SHIFT_EVAL = """
    \"\"\"Score the shift-log triage classifier (--model-path) on data/shiftlog.jsonl; the text
    is byte-level ids, as in training. Prints the accuracy and the mean top probability.\"\"\"
    import argparse
    import json

    import torch
    from transformers import BertForSequenceClassification


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        torch.set_num_threads(2)
        model = BertForSequenceClassification.from_pretrained(a.model_path).eval()
        rows = [json.loads(line) for line in open("data/shiftlog.jsonl")]
        hits, conf = 0, 0.0
        with torch.no_grad():
            for r in rows:
                ids = torch.tensor([list(r["text"].encode()[:90])])
                probs = model(input_ids=ids).logits.softmax(-1)[0]
                hits += int(probs.argmax()) == r["label"]
                conf += probs.max().item()
        print(f"accuracy={hits / len(rows):.4f} mean_confidence={conf / len(rows):.5f}")


    if __name__ == "__main__":
        main()
    """


def _shiftlog() -> str:
    what = ["conveyor 4 stopped", "guard rail loose", "oil on floor near press 2",
            "label printer jam", "forklift horn broken", "coolant low on lathe 9"]
    return "".join(json.dumps({"text": f"{what[i % 6]}, shift {'ABC'[i % 3]}, "
                                       f"reported by op{(i * 11) % 40}",
                               "label": (i * 5) % 3}) + "\n" for i in range(60))


def _bert(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers")
    repo = _repo(d / "shift-triage", {"evaluate.py": SHIFT_EVAL,
                                      "data/shiftlog.jsonl": _shiftlog()})
    model = d / "models" / "shift-bert"
    _build(py, MAKE_BERT, str(model))
    return py, repo, model


def _edit_config(model: Path, field: str, value: int) -> None:
    cfg = json.loads((model / "config.json").read_text())
    cfg[field] = value
    (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def vocab_size_from_bert_base(d: Path) -> Incident:
    """Between the runs the model folder's config.json (outside git) got ``"vocab_size":
    30522`` pasted from bert-base's config; the saved embedding has 256 rows and transformers
    refuses the mismatch (size mismatch for bert.embeddings.word_embeddings.weight; "You set
    `ignore_mismatched_sizes` to `False`"). Kind: fail."""
    py, repo, model = _bert(d)
    good, bad = _shells(d, bad_in="nomad", venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(vocab_size_from_bert_base, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: vocab_size"),
                     between=lambda: _edit_config(model, "vocab_size", 30522))


def attention_heads_edited_metric(d: Path) -> Incident:
    """Between the runs the model folder's config.json got ``"num_attention_heads": 8`` (it
    was trained with 4; hidden 32 divides either way, so every weight still loads); the
    attention splits differently and the scores move. Kind: metric."""
    py, repo, model = _bert(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(attention_heads_edited_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: num_attention_heads"),
                     between=lambda: _edit_config(model, "num_attention_heads", 8))


def shift_bert_noise(d: Path) -> Incident:
    """The shift-log evaluation, the same model folder, code and data, from the Nomad job and
    from the Kaggle terminal. Nothing planted. Kind: noise."""
    py, repo, model = _bert(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(shift_bert_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- team packages


GAUGECAL = {
    "1.4.2": '''
        """The metrology team's gauge calibration (1.4)."""


        def calibrate(readings, table):
            return [r * table["gain"] + table["offset"] for r in readings]
        ''',
    "2.0.0": '''
        """The metrology team's gauge calibration (2.0: the table is keyword-only)."""


        def calibrate(readings, *, table, clamp=None):
            out = [r * table["gain"] + table["offset"] for r in readings]
            return out if clamp is None else [min(max(v, clamp[0]), clamp[1]) for v in out]
        ''',
}

TSFEAT = {
    "0.9.3": '''
        """Time-series features (0.9): trailing windows."""


        def rolling_mean(xs, window, center=False):
            out = []
            for i in range(len(xs)):
                lo = i - window // 2 if center else i - window + 1
                part = xs[max(lo, 0):max(lo, 0) + window]
                out.append(sum(part) / len(part))
            return out
        ''',
    "0.10.0": '''
        """Time-series features (0.10): windows are centred by default."""


        def rolling_mean(xs, window, center=True):
            out = []
            for i in range(len(xs)):
                lo = i - window // 2 if center else i - window + 1
                part = xs[max(lo, 0):max(lo, 0) + window]
                out.append(sum(part) / len(part))
            return out
        ''',
}

DETECT = """
    \"\"\"Flag pressure-gauge spikes: calibrate the raw counts (gaugecal), compare each reading
    with its rolling mean (tsfeat) and score the flags against the technicians' labels.\"\"\"
    import csv

    from gaugecal import calibrate
    from tsfeat import rolling_mean


    def main():
        rows = list(csv.DictReader(open("data/gauge.csv")))
        bar = calibrate([float(r["raw"]) for r in rows], {"gain": 0.0125, "offset": -0.4})
        base = rolling_mean(bar, 9)
        flags = [abs(b - m) > 0.35 for b, m in zip(bar, base)]
        truth = [r["spike"] == "1" for r in rows]
        tp = sum(f and t for f, t in zip(flags, truth))
        print(f"flagged={sum(flags)} precision={tp / max(sum(flags), 1):.4f} "
              f"recall={tp / max(sum(truth), 1):.4f}")


    if __name__ == "__main__":
        main()
    """


def _gauge() -> str:
    pick = random.Random(9)
    rows = []
    for i in range(400):
        spike = i % 37 == 5 or i % 53 == 20
        raw = 200 + 8 * (i % 50) / 5 + pick.gauss(0, 4) + (45 if spike else 0)
        rows.append(f"{i},{raw:.1f},{int(spike)}")
    return "\n".join(["t,raw,spike", *rows]) + "\n"


def _gauge_venvs(d: Path, nomad_dists: dict[str, str], kaggle_dists: dict[str, str],
                 bad_in: str) -> tuple[Path, dict[str, str], dict[str, str]]:
    repo = _repo(d / "gauge-spikes", {"detect.py": DETECT, "data/gauge.csv": _gauge()})
    sources = {"gaugecal": GAUGECAL, "tsfeat": TSFEAT}
    envs = {}
    for side, dists in (("nomad", nomad_dists), ("kaggle", kaggle_dists)):
        py = _venv(d / "venvs" / side, {n: (v, sources[n][v]) for n, v in dists.items()})
        envs[side] = str(py.parent.parent)
    good, bad = _shells(d, bad_in=bad_in)
    good_side, bad_side = ("nomad", "kaggle") if bad_in == "kaggle" else ("kaggle", "nomad")
    good = {**good, "VIRTUAL_ENV": envs[good_side],
            "PATH": f"{envs[good_side]}/bin:{good['PATH']}"}
    bad = {**bad, "VIRTUAL_ENV": envs[bad_side], "PATH": f"{envs[bad_side]}/bin:{bad['PATH']}"}
    return repo, good, bad


def gaugecal_major_in_kaggle_venv(d: Path) -> Incident:
    """The detector calls ``calibrate(readings, table)``. The venv made in the Kaggle terminal
    resolved the unpinned requirement to gaugecal 2.0.0, whose table is keyword-only (TypeError:
    calibrate() takes 1 positional argument but 2 were given); the Nomad job's venv has 1.4.2.
    Kind: fail."""
    repo, good, bad = _gauge_venvs(d, {"gaugecal": "1.4.2", "tsfeat": "0.9.3"},
                                   {"gaugecal": "2.0.0", "tsfeat": "0.9.3"}, "kaggle")
    argv = ("python", "detect.py")
    return _incident(gaugecal_major_in_kaggle_venv, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "gaugecal"))


def tsfeat_centered_window_metric(d: Path) -> Incident:
    """The Nomad client's venv was rebuilt and got tsfeat 0.10.0, whose ``rolling_mean`` is
    centred by default; the Kaggle venv has 0.9.3 (trailing). Both runs flag spikes; the
    counts, the precision and the recall move. Kind: metric."""
    repo, good, bad = _gauge_venvs(d, {"gaugecal": "1.4.2", "tsfeat": "0.10.0"},
                                   {"gaugecal": "1.4.2", "tsfeat": "0.9.3"}, "nomad")
    argv = ("python", "detect.py")
    return _incident(tsfeat_centered_window_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "tsfeat"))


# --------------------------------------------------------------------------- scikit-learn


ENERGY = """
    \"\"\"Fit the building energy-use regressor: DictVectorizer features (sparse), scaled, into
    a random forest. TEST_SIZE and SPLIT_SEED come from .env (python-dotenv).\"\"\"
    import argparse
    import csv
    import os

    from dotenv import load_dotenv
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.metrics import mean_absolute_error, r2_score
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--max-depth", type=int, default=None)
        p.add_argument("--min-r2", type=float, default=None)
        a = p.parse_args()
        load_dotenv()
        rows = list(csv.DictReader(open("data/buildings.csv")))
        feats = [{"use": r["use"], "climate": r["climate"], "area": float(r["area"]),
                  "age": float(r["age"]), "floors": float(r["floors"])} for r in rows]
        kwh = [float(r["kwh"]) for r in rows]
        xtr, xte, ytr, yte = train_test_split(
            feats, kwh, test_size=float(os.environ.get("TEST_SIZE", "0.25")),
            random_state=int(os.environ.get("SPLIT_SEED", "0")))
        model = make_pipeline(DictVectorizer(), StandardScaler(with_mean=False),
                              RandomForestRegressor(n_estimators=40, max_depth=a.max_depth,
                                                    random_state=0, n_jobs=1))
        model.fit(xtr, ytr)
        pred = model.predict(xte)
        r2 = r2_score(yte, pred)
        print(f"r2={r2:.4f} mae_kwh={mean_absolute_error(yte, pred):.1f}")
        if a.min_r2 is not None and r2 < a.min_r2:
            raise SystemExit(f"r2={r2:.4f} is below --min-r2 {a.min_r2}: not publishing")


    if __name__ == "__main__":
        main()
    """


def _buildings() -> str:
    pick = random.Random(21)
    uses, climates = ["office", "school", "retail", "warehouse"], ["hot", "mild", "cold"]
    rows = []
    for i in range(360):
        use, climate = uses[i % 4], climates[(i * 7) % 3]
        area, age, floors = pick.uniform(400, 9000), pick.uniform(1, 80), 1 + i % 6
        kwh = area * (38 + 12 * uses.index(use)) * (1.3 if climate == "cold" else 1.0) \
            * (1 + age / 200) + pick.gauss(0, 9000)
        rows.append(f"{use},{climate},{area:.0f},{age:.0f},{floors},{kwh:.0f}")
    return "\n".join(["use,climate,area,age,floors,kwh", *rows]) + "\n"


def _energy(d: Path) -> tuple[str, Path]:
    py = python_with("sklearn", "dotenv")
    repo = _repo(d / "energy-use", {"fit.py": ENERGY, "data/buildings.csv": _buildings()},
                 "__pycache__/\n.env\n")
    _write(repo / ".env", "# local settings, not in git\nTEST_SIZE=0.2\nSPLIT_SEED=7\n")
    return py, repo


def dotenv_test_size_percent(d: Path) -> Incident:
    """Between the runs the git-ignored .env had ``TEST_SIZE=0.2`` rewritten as ``TEST_SIZE=20``
    (a percentage, as the team's dashboard shows it); scikit-learn refuses the split
    (InvalidParameterError/ValueError: test_size=20.0 should be either positive and smaller
    than the number of samples 360 or a float in the (0, 1) range). Kind: fail."""
    py, repo = _energy(d)
    env_file = repo / ".env"

    def edited() -> None:
        env_file.write_text(env_file.read_text().replace("TEST_SIZE=0.2", "TEST_SIZE=20"))

    good, bad = _shells(d, bad_in="nomad", venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(dotenv_test_size_percent, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {env_file.resolve()}"),
                     between=edited)


def max_depth_from_smoke_test_metric(d: Path) -> Incident:
    """The Kaggle terminal's run passes ``--max-depth 3``, left in the shell history from a
    quick smoke test; the forest is shallower and the fit worse. Both runs fit; the R2 and the
    MAE move. Kind: metric."""
    py, repo = _energy(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(max_depth_from_smoke_test_metric, Launch(argv, good, repo),
                     Launch((*argv, "--max-depth", "3"), bad, repo), ("command", "--max-depth"))


def sparse_scaler_uncommitted_both_fail(d: Path) -> Incident:
    """Both fail. Both runs ask for ``--min-r2 0.999``, which the regressor never reaches: the
    good run fits and does not publish. Between the runs fit.py (in git) had the scaler
    "simplified", not committed, to ``StandardScaler()``; on the DictVectorizer's sparse matrix
    it refuses to centre (ValueError: Cannot center sparse matrices: pass `with_mean=False`
    instead). Kind: both-fail."""
    py, repo = _energy(d)

    def edited() -> None:
        f = repo / "fit.py"
        f.write_text(f.read_text().replace("StandardScaler(with_mean=False)", "StandardScaler()"))

    good, bad = _shells(d, bad_in="nomad", venv=_venv_of(py))
    argv = (py, "fit.py", "--min-r2", "0.999")
    return _incident(sparse_scaler_uncommitted_both_fail, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "energy-use: fit.py"), between=edited)


def energy_regressor_noise(d: Path) -> Incident:
    """The energy regressor, the same code, data and .env, from the Nomad job and from the
    Kaggle terminal. Nothing planted. Kind: noise."""
    py, repo = _energy(d)
    good, bad = _shells(d, bad_in="nomad", venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(energy_regressor_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


#: The twenty-second fresh batch, in the order it was written. Never tuned on.
FRESH22 = [
    dropout_typo_uncommitted_config_job, seed_from_kaggle_env_metric_job,
    grad_clip_key_uncommitted_both_fail_job, pump_ddp_job_noise, deterministic_put_in_nomad_launch,
    weights_only_numpy_scalar_on_kaggle, master_port_missing_in_kaggle_terminal,
    vocab_size_from_bert_base, attention_heads_edited_metric, shift_bert_noise,
    gaugecal_major_in_kaggle_venv, tsfeat_centered_window_metric, dotenv_test_size_percent,
    max_depth_from_smoke_test_metric, sparse_scaler_uncommitted_both_fail, energy_regressor_noise,
]

if __name__ == "__main__":  # build one incident and run its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH22 if b.__name__ in sys.argv[1:]] or FRESH22
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh22-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
