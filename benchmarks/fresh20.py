"""A twentieth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh18.py, for their format), how they are run and scored
(benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot reference
(docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job captures
one snapshot per rank. They form the corpus's ``fresh20`` half; report it, never change the
ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a vibration-anomaly classifier
  with BatchNorm trained with DDP: ``--batch-size 2`` from a smoke test (one sample per rank, and
  BatchNorm refuses a batch of one), ``EMA_DECAY`` exported by the workstation's mise ``[env]``
  (the evaluated weights are an average: metric), an uncommitted switch of the loss to
  ``binary_cross_entropy_with_logits`` on integer labels on top of a quality gate the good job
  already misses (both fail), and the same job from both shells (noise);
- settings CPU code parses and engines: ``OMP_NUM_THREADS=2,1`` (a nested OpenMP list libgomp
  takes, that the trainer's ``int()`` refuses, quoting it), a ``CKPT_ROOT`` of ``s3://...`` set
  by the flow's ``@environment`` that ``torch.save`` takes for a local folder, and
  ``--num-workers 2`` on a DataLoader whose dataset holds an open sqlite connection (spawned
  workers cannot pickle it);
- model folders under transformers: a RoBERTa classifier whose config.json got the upstream
  ``pad_token_id`` 50264 (past the small vocabulary), ``--max-length 128`` past its 64 positions,
  and its evaluation from both shells (noise);
- the rest: a team package ``textclean`` 1.3 in the workstation's venv whose ``normalize``
  now also drops digits (metric), normalization statistics outside git regenerated from a newer
  dump (metric), an uncommitted ``.view`` for ``.reshape`` on a transposed tensor, scikit-learn
  TF-IDF ``--min-df 5`` (metric), ``--ngram-max 0`` on top of a missed gate (both fail) and the
  ticket router from both shells (noise).

The shells are :func:`metaflow_batch_or_zellij_shell`: shell 0 a Metaflow step running on AWS
Batch (``METAFLOW_*``, ``AWS_BATCH_*``, ``ECS_*``, ``AWS_*`` with the task role's credentials
URI, root in ``/metaflow``, the flow's ``@environment`` tuning of ``NCCL_*``/``OMP_*``/``HF_*``),
shell 1 zsh in a zellij pane over SSH on a bare-metal workstation (``ZELLIJ*``, ``MISE_*``,
``STARSHIP_*``, ``SSH_*``, user ``mtanaka``, the dotfiles' own ``TORCH_*``/``CUDA_*``/``NCCL_*``
tuning). The thread counts that change float reductions are pinned alike. The planted side is
either: some incidents work on Batch and fail on the workstation, others the reverse.

Kinds: ``fail`` (the good run exits 0, the bad one fails), ``metric`` (both exit 0 and only a
printed ``key=value`` metric differs), ``both-fail`` (both fail, differently), ``noise`` (nothing
planted: success is "nothing counts"). Job incidents (``*_job``) use
:data:`benchmarks.incidents.RANKS_RUNSNAP` and :data:`benchmarks.incidents.RANKS_FOLDER`.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

from benchmarks.incidents import RANKS_FOLDER, RANKS_RUNSNAP, Incident, Launch, _git, _venv, _write
from benchmarks.thirdparty import Unavailable, _incident, python_with

BATCH_JOB = "3f6c1a2e-8d47-4b19-9e0a-5c7d2b1f4e83"


def metaflow_batch_or_zellij_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 a Metaflow
    step on AWS Batch, 1 zsh in a zellij pane on a workstation (``venv`` the interpreter's
    virtual environment, first on ``PATH``); each with its own tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    if n % 2 == 0:  # Metaflow @batch step: the task's container on an ECS instance, as root
        env = {
            **common, "PATH": f"/usr/local/bin:/opt/conda/bin:{path}",
            "USER": "root", "LANG": "C.UTF-8", "HOSTNAME": "ip-10-42-17-203.ec2.internal",
            "METAFLOW_FLOW_NAME": "VibrationAnomalyFlow", "METAFLOW_RUN_ID": "1873",
            "METAFLOW_STEP_NAME": "train", "METAFLOW_TASK_ID": "55120",
            "METAFLOW_RETRY_COUNT": "0", "METAFLOW_USER": "mtanaka",
            "METAFLOW_DEFAULT_DATASTORE": "s3", "METAFLOW_DEFAULT_METADATA": "service",
            "METAFLOW_DATASTORE_SYSROOT_S3": "s3://acme-ml-metaflow/metaflow",
            "METAFLOW_SERVICE_URL": "https://metaflow.acme.internal/api",
            "METAFLOW_CODE_URL": "s3://acme-ml-metaflow/metaflow/VibrationAnomalyFlow/data/"
                                 "4e/4e1d7b0c9a2f",
            "METAFLOW_CODE_SHA": "4e1d7b0c9a2f83d65e0b71c4a9f2d3e8b5c6a7f0",
            "METAFLOW_CODE_DS": "s3", "METAFLOW_RUNTIME_ENVIRONMENT": "local",
            "AWS_BATCH_JOB_ID": BATCH_JOB, "AWS_BATCH_JOB_ATTEMPT": "1",
            "AWS_BATCH_JQ_NAME": "ml-cpu-spot", "AWS_BATCH_CE_NAME": "ml-cpu-spot-ce-c6i",
            "AWS_EXECUTION_ENV": "AWS_ECS_EC2", "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_REGION": "us-east-1",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/9b1e2c4d-7f3a-4c85-b",
            "ECS_CONTAINER_METADATA_URI": "http://169.254.170.2/v3/a1b2c3d4-e5f6",
            "ECS_CONTAINER_METADATA_URI_V4": "http://169.254.170.2/v4/a1b2c3d4-e5f6",
            "PYTHONUNBUFFERED": "1", "MF_PATHSPEC": "VibrationAnomalyFlow/1873/train/55120",
            "NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_DISABLE": "1", "NCCL_DEBUG": "WARN",
            "NCCL_ASYNC_ERROR_HANDLING": "1", "HF_HOME": "/metaflow/.hf",
            "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TOKENIZERS_PARALLELISM": "false",
        }
        if venv:  # the step's @pypi environment: its interpreter first
            env["PATH"] = f"{venv}/bin:{env['PATH']}"
        return env
    work = home / "code" / "anomaly"
    work.mkdir(parents=True, exist_ok=True)
    env = {  # zsh in a zellij pane, over SSH from a laptop, mise activating the project's tools
        **common, "PATH": f"{home}/.local/share/mise/shims:{home}/.local/bin:"
                          f"/usr/local/cuda-12.8/bin:{path}",
        "USER": "mtanaka", "LOGNAME": "mtanaka", "SHELL": "/usr/bin/zsh",
        "LANG": "en_US.UTF-8", "LC_ALL": "en_US.UTF-8", "TERM": "xterm-256color",
        "COLORTERM": "truecolor", "PWD": str(work), "OLDPWD": f"{home}/code",
        "SHLVL": "2", "ZELLIJ": "0", "ZELLIJ_SESSION_NAME": "anomaly-dev",
        "ZELLIJ_PANE_ID": "3", "MISE_SHELL": "zsh", "__MISE_SESSION": "eJyrVkrLz1eyUkpKLFKqBQ",
        "STARSHIP_SHELL": "zsh", "STARSHIP_SESSION_KEY": "7315904862210483",
        "SSH_CLIENT": "192.168.7.41 53122 22", "SSH_TTY": "/dev/pts/6",
        "SSH_CONNECTION": "192.168.7.41 53122 192.168.7.20 22",
        "SSH_AUTH_SOCK": "/tmp/ssh-Xq3k9Lw2/agent.48213",
        "XDG_RUNTIME_DIR": "/run/user/1001", "XDG_SESSION_ID": "118",
        "CUDA_VISIBLE_DEVICES": "0,1,2,3", "CUDA_HOME": "/usr/local/cuda-12.8",
        "CUDA_MODULE_LOADING": "LAZY", "NCCL_P2P_LEVEL": "NVL", "NCCL_DEBUG": "INFO",
        "TORCH_CUDA_ARCH_LIST": "8.9", "TORCH_HOME": f"{home}/.cache/torch",
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "HF_HOME": f"{home}/.cache/huggingface",
        "HF_HUB_OFFLINE": "1", "PIP_REQUIRE_VIRTUALENV": "true", "EDITOR": "hx",
        "PAGER": "less", "LESS": "-FRX",
    }
    if venv:  # mise's `python.uv_venv_auto`: the project's .venv first on PATH
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "zellij", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the zellij pane (``bad_in="zellij"``) or from the Metaflow Batch step (``"batch"``)."""
    batch = metaflow_batch_or_zellij_shell(0, d / "home" / "root", venv)
    zellij = metaflow_batch_or_zellij_shell(1, d / "home" / "mtanaka", venv)
    first, second = (batch, zellij) if bad_in == "zellij" else (zellij, batch)
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


VIBRATION_DDP = """
    \"\"\"Train the bearing vibration-anomaly classifier with DDP over gloo; sizes from
    configs/train.yaml, --batch-size the global batch. EMA_DECAY (unset: none) evaluates an
    exponential moving average of the weights. Rank 0 prints each epoch's loss and the
    validation F1 of the anomaly class; --min-f1 refuses a model below it.\"\"\"
    import argparse
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn


    def windows(n=2800, width=24, seed=17):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, width, generator=g)
        y = (x[:, :4].abs().sum(1) + 0.5 * torch.randn(n, generator=g) > 3.6).long()
        x[y == 1, 4:8] += 0.8
        return x, y


    def f1(pred, y):
        tp = ((pred == 1) & (y == 1)).sum().item()
        fp = ((pred == 1) & (y == 0)).sum().item()
        fn = ((pred == 0) & (y == 1)).sum().item()
        return 2 * tp / max(2 * tp + fp + fn, 1)


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--batch-size", type=int, default=64)
        p.add_argument("--min-f1", type=float, default=None)
        a = p.parse_args()
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        cfg = yaml.safe_load(open("configs/train.yaml"))
        x, y = windows()
        tx, ty = x[:2400][rank::world], y[:2400][rank::world]
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], cfg["hidden"]),
                                  torch.nn.BatchNorm1d(cfg["hidden"]), torch.nn.ReLU(),
                                  torch.nn.Linear(cfg["hidden"], 2))
        model = DDP(net)
        decay = float(os.environ.get("EMA_DECAY", "0"))
        ema = AveragedModel(net, multi_avg_fn=get_ema_multi_avg_fn(decay)) if decay else None
        opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9)
        bs = a.batch_size // world
        for epoch in range(cfg["epochs"]):
            total, steps = 0.0, 0
            for s in range(0, len(tx), bs):
                logits = model(tx[s:s + bs])
                loss = F.cross_entropy(logits, ty[s:s + bs])
                opt.zero_grad()
                loss.backward()
                opt.step()
                if ema is not None:
                    ema.update_parameters(net)
                total, steps = total + loss.item(), steps + 1
            t = torch.tensor([total / steps])
            dist.all_reduce(t)
            if rank == 0:
                print(f"epoch={epoch} loss={t.item() / world:.5f}")
        scorer = (ema.module if ema is not None else net).eval()
        with torch.no_grad():
            pred = scorer(x[2400:]).argmax(1)
        score = f1(pred, y[2400:])
        if rank == 0:
            print(f"val_f1={score:.4f} anomalies={int(y[2400:].sum())}")
            if a.min_f1 is not None and score < a.min_f1:
                raise RuntimeError(f"val_f1={score:.4f} is below --min-f1 {a.min_f1}: "
                                   "not registering the model")
        dist.barrier()
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

VIBRATION_YAML = "# bearing vibration windows, plant 3\nlr: 0.05\nhidden: 32\nepochs: 4\n"


def _vibration_job(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    return py, _repo(d / "vibration-anomaly", {"train.py": VIBRATION_DDP,
                                               "configs/train.yaml": VIBRATION_YAML})


def batchnorm_batch_of_one_job(d: Path) -> Incident:
    """Job against job. The workstation's launch passes ``--batch-size 2``, left from a smoke
    test; split over two ranks that is one window per rank, and BatchNorm refuses to train on a
    batch of one (ValueError: Expected more than 1 value per channel when training, got input
    size torch.Size([1, 32])). Kind: fail."""
    py, repo = _vibration_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    return _incident(batchnorm_batch_of_one_job, Launch(_torchrun(py, "train.py"), good, repo),
                     Launch(_torchrun(py, "train.py", "--batch-size", "2"), bad, repo),
                     ("command", "--batch-size"))


def ema_decay_from_mise_env_metric_job(d: Path) -> Incident:
    """Job against job. The workstation's ``~/.config/mise/config.toml`` has ``[env]
    EMA_DECAY = "0.99"`` for another project; mise exports it in every pane, and the trainer
    evaluates an exponential moving average of the weights. Both jobs train; the validation F1
    moves (the training losses do not). Kind: metric."""
    py, repo = _vibration_job(d)
    good, bad = _shells(d, bad={"EMA_DECAY": "0.99"}, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(ema_decay_from_mise_env_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "EMA_DECAY"))


def bce_loss_uncommitted_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--min-f1 0.99``, which this model never
    reaches: the good job trains and rank 0 refuses to register it. Between the jobs train.py
    (in git) had its loss switched, not committed, to ``binary_cross_entropy_with_logits`` on
    the anomaly logit, with the integer labels as they were; every rank stops at the first step
    (RuntimeError: result type Float can't be cast to the desired output type Long).
    Kind: both-fail."""
    py, repo = _vibration_job(d)

    def edited() -> None:
        f = repo / "train.py"
        f.write_text(f.read_text().replace(
            "F.cross_entropy(logits, ty[s:s + bs])",
            "F.binary_cross_entropy_with_logits(logits[:, 1], ty[s:s + bs])"))

    good, bad = _shells(d, bad_in="batch", venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--min-f1", "0.99")
    return _incident(bce_loss_uncommitted_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "vibration-anomaly: train.py"),
                     between=edited)


def vibration_ddp_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the Metaflow Batch step and from the
    zellij pane: each job its own rendezvous and rank processes, the shells their own
    METAFLOW_*, AWS_*, ECS_*, ZELLIJ_*, MISE_*, SSH_*, NCCL_*, CUDA_* and HF_* variables.
    Nothing planted. Kind: noise."""
    py, repo = _vibration_job(d)
    good, bad = _shells(d, bad_in="batch", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(vibration_ddp_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- settings and engines


TURBINE = """
    \"\"\"Fit the wind-turbine power-curve regressor; intra-op threads follow OMP_NUM_THREADS,
    the checkpoint goes to CKPT_ROOT (default checkpoints/) under the run's name.\"\"\"
    import os

    import torch


    def main():
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
        g = torch.Generator().manual_seed(8)
        wind = torch.rand(1500, 1, generator=g) * 25
        power = torch.clamp((wind - 3) ** 3 / 1000, 0, 3.5) + 0.05 * torch.randn(1500, 1,
                                                                                generator=g)
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(1, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
        opt = torch.optim.Adam(net.parameters(), lr=0.02)
        x = wind / 25
        for _ in range(150):
            loss = torch.nn.functional.mse_loss(net(x[:1200]), power[:1200])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            val = torch.nn.functional.mse_loss(net(x[1200:]), power[1200:]).item()
        root = os.environ.get("CKPT_ROOT", "checkpoints")
        torch.save(net.state_dict(), os.path.join(root, "power-curve.pt"))
        print(f"train_mse={loss.item():.5f} val_mse={val:.5f}")


    if __name__ == "__main__":
        main()
    """


def _turbine(d: Path) -> tuple[str, Path]:
    py = python_with("torch")
    repo = _repo(d / "power-curve", {"fit.py": TURBINE}, "__pycache__/\ncheckpoints/\n")
    (repo / "checkpoints").mkdir(exist_ok=True)
    return py, repo


def omp_nested_list_in_dotfiles(d: Path) -> Incident:
    """The workstation's .zshenv exports ``OMP_NUM_THREADS=2,1`` (a nested OpenMP list, for the
    team's C++ solver); libgomp and torch take it, but the regressor sizes its threads with
    ``int(os.environ["OMP_NUM_THREADS"])`` (ValueError: invalid literal for int() with base 10:
    '2,1'). Kind: fail."""
    py, repo = _turbine(d)
    good, bad = _shells(d, bad={"OMP_NUM_THREADS": "2,1"}, venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(omp_nested_list_in_dotfiles, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "OMP_NUM_THREADS"))


def ckpt_root_s3_url_on_batch(d: Path) -> Incident:
    """The flow's ``@environment`` sets ``CKPT_ROOT=s3://acme-ml-metaflow/ckpt/power-curve``
    for the step on Batch; ``torch.save`` takes the URL for a local path and refuses to write
    (RuntimeError: Parent directory s3:/acme-ml-metaflow/... does not exist). On the
    workstation the checkpoint goes to checkpoints/. Kind: fail."""
    py, repo = _turbine(d)
    good, bad = _shells(d, bad={"CKPT_ROOT": "s3://acme-ml-metaflow/ckpt/power-curve"},
                        bad_in="batch", venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(ckpt_root_s3_url_on_batch, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "CKPT_ROOT"))


SQLITE_LOADER = """
    \"\"\"Train the meter-reading classifier from the readings database (data/readings.db) with
    a DataLoader; --num-workers loader processes, started with spawn (the team's rule: no fork
    after threads).\"\"\"
    import argparse
    import sqlite3

    import torch
    from torch.utils.data import DataLoader, Dataset


    class Readings(Dataset):
        def __init__(self, path):
            self.db = sqlite3.connect(path)
            self.n = self.db.execute("select count(*) from readings").fetchone()[0]

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            row = self.db.execute("select v0, v1, v2, v3, label from readings where id = ?",
                                  (i,)).fetchone()
            return torch.tensor(row[:4], dtype=torch.float32), row[4]


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--num-workers", type=int, default=0)
        a = p.parse_args()
        torch.set_num_threads(2)
        ctx = "spawn" if a.num_workers else None
        loader = DataLoader(Readings("data/readings.db"), batch_size=50, shuffle=False,
                            num_workers=a.num_workers, multiprocessing_context=ctx)
        torch.manual_seed(0)
        net = torch.nn.Linear(4, 3)
        opt = torch.optim.SGD(net.parameters(), lr=0.2)
        for epoch in range(3):
            for xb, yb in loader:
                loss = torch.nn.functional.cross_entropy(net(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
            print(f"epoch={epoch} loss={loss.item():.5f}")


    if __name__ == "__main__":
        main()
    """

MAKE_READINGS = """
import random, sqlite3, sys
random.seed(3)
db = sqlite3.connect(sys.argv[1])
db.execute("create table readings (id integer primary key, v0 real, v1 real, v2 real, v3 real,"
           " label integer)")
for i in range(600):
    v = [random.gauss(0, 1) for _ in range(4)]
    db.execute("insert into readings values (?, ?, ?, ?, ?, ?)",
               (i, *v, (0 if v[0] < -0.4 else 1 if v[0] < 0.4 else 2)))
db.commit()
"""


def num_workers_sqlite_spawn(d: Path) -> Incident:
    """The Batch step's parameters add ``--num-workers 2`` ("the loader is the bottleneck");
    the spawned workers get the dataset pickled, and its open sqlite connection cannot be
    (TypeError: cannot pickle 'sqlite3.Connection' object). Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "meter-classifier", {"train.py": SQLITE_LOADER},
                 "__pycache__/\ndata/\n")
    (repo / "data").mkdir(exist_ok=True)
    _build(py, MAKE_READINGS, str(repo / "data" / "readings.db"))
    good, bad = _shells(d, bad_in="batch", venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(num_workers_sqlite_spawn, Launch(argv, good, repo),
                     Launch((*argv, "--num-workers", "2"), bad, repo),
                     ("command", "--num-workers"))


# --------------------------------------------------------------------------- model folders


MAKE_ROBERTA = """
import sys, torch
from transformers import RobertaConfig, RobertaForSequenceClassification
torch.manual_seed(0)
cfg = RobertaConfig(vocab_size=300, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=66, pad_token_id=1,
                    bos_token_id=0, eos_token_id=2, num_labels=3)
RobertaForSequenceClassification(cfg).save_pretrained(sys.argv[1])
"""

ALERT_EVAL = """
    \"\"\"Evaluate the alert-severity classifier (a RoBERTa folder, --model-path) on held-out
    alert texts, byte-level ids (byte + 3), padded or cut to --max-length.\"\"\"
    import argparse
    import json

    import torch
    from transformers import AutoModelForSequenceClassification


    def encode(text, length):
        ids = [0] + [b + 3 for b in text.encode()][: length - 2] + [2]
        return ids + [1] * (length - len(ids))


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--max-length", type=int, default=64)
        a = p.parse_args()
        torch.set_num_threads(2)
        model = AutoModelForSequenceClassification.from_pretrained(a.model_path).eval()
        rows = [json.loads(line) for line in open("data/alerts.jsonl")]
        ids = torch.tensor([encode(r["text"], a.max_length) for r in rows])
        labels = torch.tensor([r["severity"] for r in rows])
        with torch.no_grad():
            out = model(input_ids=ids, attention_mask=(ids != 1).long(), labels=labels)
        acc = (out.logits.argmax(1) == labels).float().mean().item()
        print(f"alerts={len(rows)} loss={out.loss.item():.5f} accuracy={acc:.4f}")


    if __name__ == "__main__":
        main()
    """


def _alerts() -> str:
    hosts, what = ["db-3", "edge-12", "kafka-1", "api-7"], ["disk 91% full", "p99 latency 2.4s",
                                                            "consumer lag 120k", "5xx rate 3%"]
    return "".join(json.dumps({"text": f"[{hosts[i % 4]}] {what[(i * 3) % 4]} for "
                                       f"{(i * 7) % 60} min (rule r{i % 9}); runbook "
                                       f"https://wiki.acme.internal/oncall/{hosts[i % 4]}/"
                                       f"{(i * 13) % 97}; paged team sre-{i % 5}",
                               "severity": i % 3}) + "\n" for i in range(90))


def _roberta(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers")
    repo = _repo(d / "alert-severity", {"evaluate.py": ALERT_EVAL, "data/alerts.jsonl": _alerts()})
    model = d / "models" / "alert-roberta"
    _build(py, MAKE_ROBERTA, str(model))
    return py, repo, model


def pad_token_id_from_upstream_config(d: Path) -> Incident:
    """Between the runs the model folder's config.json (outside git) was "fixed" by hand from
    the upstream config, taking ``"pad_token_id": 50264`` (the <mask> id of roberta-base's
    vocabulary, copied from the wrong line); this model's vocabulary has 300 ids and torch
    refuses the embedding (AssertionError: Padding_idx must be within num_embeddings).
    Kind: fail."""
    py, repo, model = _roberta(d)

    def rewritten() -> None:
        cfg = json.loads((model / "config.json").read_text())
        cfg["pad_token_id"] = 50264
        (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")

    good, bad = _shells(d, bad_in="batch", venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(pad_token_id_from_upstream_config, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: pad_token_id"),
                     between=rewritten)


def max_length_past_positions(d: Path) -> Incident:
    """The workstation's run passes ``--max-length 128``, from the production model's README;
    this model has 64 positions (66 with RoBERTa's offset) and the position embedding is
    indexed past its end (RuntimeError: index 66 is out of bounds for dimension 1 with size
    66). Kind: fail."""
    py, repo, model = _roberta(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(max_length_past_positions, Launch(argv, good, repo),
                     Launch((*argv, "--max-length", "128"), bad, repo),
                     ("command", "--max-length"))


def alert_roberta_noise(d: Path) -> Incident:
    """The alert classifier's evaluation, the same folder and data, from the Batch step and
    from the zellij pane. Nothing planted. Kind: noise."""
    py, repo, model = _roberta(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(alert_roberta_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- packages and files


TEXTCLEAN = {
    "1.2.4": '''
        """The platform team's text normalization (1.2)."""
        import re


        def normalize(text):
            return re.sub(r"\\s+", " ", text.lower()).strip()
        ''',
    "1.3.0": '''
        """The platform team's text normalization (1.3: digits are dropped by default)."""
        import re


        def normalize(text, keep_digits=False):
            text = text.lower() if keep_digits else re.sub(r"[0-9]+", " ", text.lower())
            return re.sub(r"\\s+", " ", text).strip()
        ''',
}

WORKORDER = """
    \"\"\"Route maintenance work orders to a crew by nearest word centroid; the texts are
    normalized with textclean.normalize, as the intake service does.\"\"\"
    import csv
    from collections import Counter

    from textclean import normalize


    def bag(text):
        return Counter(normalize(text).split())


    def main():
        rows = list(csv.DictReader(open("data/workorders.csv")))
        train, test = rows[:160], rows[160:]
        centroids = {}
        for r in train:
            centroids.setdefault(r["crew"], Counter()).update(bag(r["text"]))
        hits = 0
        for r in test:
            words = bag(r["text"])
            best = max(centroids, key=lambda c: sum(min(n, centroids[c][w]) / (1 + len(centroids[c]))
                                                    for w, n in words.items()))
            hits += best == r["crew"]
        vocab = len(set().union(*centroids.values()))
        print(f"vocab={vocab} accuracy={hits / len(test):.4f}")


    if __name__ == "__main__":
        main()
    """


def _workorders() -> str:
    parts = {"electrical": ["breaker tripped", "panel sparks", "outlet dead"],
             "hvac": ["unit blowing warm", "filter clogged", "fan noisy"],
             "plumbing": ["pipe leaking", "drain slow", "valve stuck"]}
    tags = {"electrical": "4411", "hvac": "7720", "plumbing": "3095"}
    crews, pick = list(parts), random.Random(4)
    rows = []
    for i in range(220):
        crew = crews[(i * 7) % 3]
        other = pick.choice(crews)
        if i % 2:  # the intake form's asset tag, beside a nearby complaint for another crew
            near = pick.choice(parts[other])
            text = f"check asset {tags[crew]} in room {100 + i % 17} near {near}"
        else:
            text = f"{parts[crew][i % 3]} in room {100 + i % 17}"
        rows.append(f"w{i},{text},{crew}")
    return "\n".join(["id,text,crew", *rows]) + "\n"


def textclean_minor_in_workstation_venv(d: Path) -> Incident:
    """The router calls ``textclean.normalize``. The workstation's venv was synced from an
    unpinned requirements file and got textclean 1.3.0, which now drops digits by default; the
    Batch step's ``@pypi`` environment has 1.2.4. Both runs route; the vocabulary and the
    accuracy move. Kind: metric."""
    repo = _repo(d / "workorder-router", {"route.py": WORKORDER,
                                          "data/workorders.csv": _workorders()})
    batch_py = _venv(d / "venvs" / "step-pypi", {"textclean": ("1.2.4", TEXTCLEAN["1.2.4"])})
    ws_py = _venv(d / "venvs" / "workstation", {"textclean": ("1.3.0", TEXTCLEAN["1.3.0"])})
    good, bad = _shells(d)
    good = {**good, "PATH": f"{batch_py.parent}:{good['PATH']}"}
    bad = {**bad, "VIRTUAL_ENV": str(ws_py.parent.parent), "PATH": f"{ws_py.parent}:{bad['PATH']}"}
    argv = ("python", "route.py")
    return _incident(textclean_minor_in_workstation_venv, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "textclean"))


LOAD_FORECAST = """
    \"\"\"Forecast the next hour's feeder load from the last six; inputs standardized with the
    shared statistics file (--stats, written by the data team's nightly export).\"\"\"
    import argparse
    import json

    import torch


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--stats", required=True)
        a = p.parse_args()
        torch.set_num_threads(2)
        stats = json.load(open(a.stats))
        g = torch.Generator().manual_seed(12)
        t = torch.arange(3000, dtype=torch.float32)
        load = 420 + 80 * torch.sin(t * 6.283 / 24) + 10 * torch.randn(3000, generator=g)
        z = (load - stats["mean"]) / stats["std"]
        x = torch.stack([z[i:i + 6] for i in range(len(z) - 6)])
        y = z[6:].unsqueeze(1)
        torch.manual_seed(0)
        net = torch.nn.Linear(6, 1)
        opt = torch.optim.SGD(net.parameters(), lr=0.05)
        for _ in range(60):
            loss = torch.nn.functional.mse_loss(net(x[:2500]), y[:2500])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            mae_kw = ((net(x[2500:]) - y[2500:]).abs().mean() * stats["std"]).item()
        print(f"train_loss={loss.item():.5f} val_mae_kw={mae_kw:.3f}")


    if __name__ == "__main__":
        main()
    """


def shared_stats_regenerated_metric(d: Path) -> Incident:
    """The standardization statistics live on the shared volume (outside git); between the
    runs the nightly export rewrote them from a newer dump that includes a heat wave (mean 420
    -> 505, std 60 -> 95). Both runs train; the losses and the MAE move. Kind: metric."""
    py = python_with("torch")
    repo = _repo(d / "feeder-load", {"forecast.py": LOAD_FORECAST})
    stats = d / "shared" / "feature-stats" / "feeder_load.json"
    _write(stats, json.dumps({"mean": 420.0, "std": 60.0, "rows": 2_184_000}) + "\n")

    def regenerated() -> None:
        stats.write_text(json.dumps({"mean": 505.0, "std": 95.0, "rows": 2_351_000}) + "\n")

    good, bad = _shells(d, bad_in="batch", venv=_venv_of(py))
    argv = (py, "forecast.py", "--stats", str(stats))
    return _incident(shared_stats_regenerated_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {stats.resolve()}"),
                     between=regenerated)


SEISMIC = """
    \"\"\"Classify seismic station windows (3 channels x 50 samples) with a small 1-D CNN; the
    model is in model.py (in git).\"\"\"
    import torch

    from model import Picker


    def main():
        torch.set_num_threads(2)
        g = torch.Generator().manual_seed(5)
        x = torch.randn(400, 3, 50, generator=g)
        y = (x[:, 0, 20:30].mean(1) > 0).long()
        torch.manual_seed(0)
        net = Picker()
        opt = torch.optim.Adam(net.parameters(), lr=0.01)
        for _ in range(30):
            loss = torch.nn.functional.cross_entropy(net(x[:320]), y[:320])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            acc = (net(x[320:]).argmax(1) == y[320:]).float().mean().item()
        print(f"train_loss={loss.item():.5f} val_acc={acc:.4f}")


    if __name__ == "__main__":
        main()
    """

SEISMIC_MODEL = """
    \"\"\"The phase picker: a conv over time, then a linear head over (time, channel).\"\"\"
    import torch


    class Picker(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv1d(3, 8, 5, padding=2)
            self.head = torch.nn.Linear(8 * 50, 2)

        def forward(self, x):
            h = torch.relu(self.conv(x)).transpose(1, 2)
            return self.head(h.reshape(len(h), -1))
    """


def view_for_reshape_uncommitted(d: Path) -> Incident:
    """Between the runs model.py (in git) had ``.reshape`` swapped for ``.view``, not
    committed ("view never copies"); after the transpose the tensor is not contiguous and the
    first forward stops (RuntimeError: view size is not compatible with input tensor's size
    and stride ... Use .reshape(...) instead). Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "phase-picker", {"train.py": SEISMIC, "model.py": SEISMIC_MODEL})

    def edited() -> None:
        f = repo / "model.py"
        f.write_text(f.read_text().replace("h.reshape(len(h), -1)", "h.view(len(h), -1)"))

    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(view_for_reshape_uncommitted, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "phase-picker: model.py"),
                     between=edited)


# --------------------------------------------------------------------------- scikit-learn router


TICKETS = """
    \"\"\"Route support tickets to a queue: TF-IDF (--min-df, --ngram-max) and logistic
    regression; prints the validation macro-F1; --min-macro-f1 refuses a model below it.\"\"\"
    import argparse
    import csv

    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--min-df", type=int, default=1)
        p.add_argument("--ngram-max", type=int, default=2)
        p.add_argument("--min-macro-f1", type=float, default=None)
        a = p.parse_args()
        rows = list(csv.DictReader(open("data/tickets.csv")))
        texts, queues = [r["text"] for r in rows], [r["queue"] for r in rows]
        vec = TfidfVectorizer(min_df=a.min_df, ngram_range=(1, a.ngram_max))
        x = vec.fit_transform(texts[:300])
        clf = LogisticRegression(max_iter=500).fit(x, queues[:300])
        pred = clf.predict(vec.transform(texts[300:]))
        score = f1_score(queues[300:], pred, average="macro")
        print(f"features={x.shape[1]} val_macro_f1={score:.4f}")
        if a.min_macro_f1 is not None and score < a.min_macro_f1:
            raise SystemExit(f"val_macro_f1 {score:.4f} is below --min-macro-f1 "
                             f"{a.min_macro_f1}: keeping the current router")


    if __name__ == "__main__":
        main()
    """


def _tickets() -> str:
    words = {"billing": ["invoice", "refund", "charged twice", "card declined", "vat"],
             "access": ["password reset", "locked out", "sso", "2fa code", "invite"],
             "outage": ["down", "500 error", "timeout", "slow dashboard", "cannot load"]}
    filler = ["please help", "since yesterday", "urgent", "for our team", "again", "thanks"]
    queues, rng, rows = list(words), random.Random(11), []
    for i in range(400):
        q = rng.choice(queues)
        # a third of the tickets only name the customer's product code, seen a few times
        said = rng.choice(words[rng.choice(queues)]) if i % 3 == 0 else rng.choice(words[q])
        text = f"{said} {rng.choice(filler)} acct{rng.randrange(37)} {q[:2]}x{rng.randrange(60)}"
        label = rng.choice(queues) if rng.random() < 0.08 else q  # triage mistakes
        rows.append(f"t{i},{text},{label}")
    return "\n".join(["id,text,queue", *rows]) + "\n"


def _router(d: Path) -> tuple[str, Path]:
    py = python_with("sklearn")
    return py, _repo(d / "ticket-router", {"train.py": TICKETS, "data/tickets.csv": _tickets()})


def min_df_from_big_corpus_metric(d: Path) -> Incident:
    """The Batch step's parameters carry ``--min-df 5``, from the recipe of the full ticket
    archive; on this small set it drops most rare n-grams. Both runs train; the feature count
    and the macro-F1 move. Kind: metric."""
    py, repo = _router(d)
    good, bad = _shells(d, bad_in="batch", venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(min_df_from_big_corpus_metric, Launch(argv, good, repo),
                     Launch((*argv, "--min-df", "5"), bad, repo), ("command", "--min-df"))


def ngram_max_zero_both_fail(d: Path) -> Incident:
    """Both fail. Both runs ask for ``--min-macro-f1 0.999``, which the router never reaches:
    the good run trains and keeps the current router. The workstation's run also passes
    ``--ngram-max 0`` (meant as "no n-grams"); scikit-learn refuses the range before fitting
    (ValueError: Invalid value for ngram_range=(1, 0) ...). Kind: both-fail."""
    py, repo = _router(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "train.py", "--min-macro-f1", "0.999")
    return _incident(ngram_max_zero_both_fail, Launch(argv, good, repo),
                     Launch((*argv, "--ngram-max", "0"), bad, repo), ("command", "--ngram-max"))


def ticket_router_noise(d: Path) -> Incident:
    """The ticket router, the same code, data and options, from the Batch step and from the
    zellij pane. Nothing planted. Kind: noise."""
    py, repo = _router(d)
    good, bad = _shells(d, bad_in="batch", venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(ticket_router_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


#: The twentieth fresh batch, in the order it was written. Never tuned on.
FRESH20 = [
    batchnorm_batch_of_one_job, ema_decay_from_mise_env_metric_job,
    bce_loss_uncommitted_both_fail_job, vibration_ddp_job_noise, omp_nested_list_in_dotfiles,
    ckpt_root_s3_url_on_batch, num_workers_sqlite_spawn, pad_token_id_from_upstream_config,
    max_length_past_positions, alert_roberta_noise, textclean_minor_in_workstation_venv,
    shared_stats_regenerated_metric, view_for_reshape_uncommitted, min_df_from_big_corpus_metric,
    ngram_max_zero_both_fail, ticket_router_noise,
]

if __name__ == "__main__":  # build one incident and run its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH20 if b.__name__ in sys.argv[1:]] or FRESH20
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh20-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
