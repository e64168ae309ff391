"""An eleventh fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh.py ... fresh10.py, for their format), how they are
run and scored (benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot
reference (docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job
captures one snapshot per rank. They form the corpus's ``fresh11`` half; report it, never change
the ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a card-fraud MLP trained with
  DDP: an uncommitted edit that lets only rank 0 run the validation (its all-reduce then has no
  partner); the model folder's ``dropout`` raised by a registry sync (the losses move); a
  ``batch_size: ${BATCH}`` placeholder that PyYAML does not expand, on top of a checkpoint
  folder that does not exist (both fail); and the same job from both shells (noise);
- the c10d rendezvous and torch settings: ``--dist-url tcp://...`` copied from the multi-node
  docs into the service's ``ExecStart`` (the tcp:// rendezvous wants a rank and a world size;
  env:// took them from the environment); the same scoring group from both shells (noise);
  ``--interop-threads`` given to a server whose runtime module already set the inter-op pool;
  ``TORCH_FORCE_WEIGHTS_ONLY_LOAD=1`` in the service's hardened EnvironmentFile over a
  checkpoint holding an ``argparse.Namespace``;
- model folders (transformers; tiny Llamas made at build time): ``rms_norm_eps`` rewritten from
  a Llama-1 template (perplexity moves), ``intermediate_size`` copied from the bigger sibling's
  config (the weights no longer fit), the same evaluation from both shells (noise), and a model
  named by its Hub id that only one home's ``HF_HOME`` holds in its cache (offline);
- the rest: the team's ``fraudfeat`` installed editable from a dev checkout where a feature was
  renamed, ``FRAUD_DATA_DIR`` pointing at last week's export (the threshold and recall move), a
  git-ignored ``thresholds.json`` rewritten by a recalibration between the runs (the flagged
  rate moves), and ``--class-weight balanced_subsample`` copied from the forest recipe on top of
  a holdout that is still a Git LFS pointer (both fail).

The shells are :func:`systemd_or_byobu_shell`: shell 0 a systemd service unit on a bare-metal
training box (``User=mlsvc``, ``EnvironmentFile=/etc/fraud/train.env``, ``StateDirectory=``:
``INVOCATION_ID``, ``JOURNAL_STREAM``, ``SYSTEMD_EXEC_PID``, ``*_DIRECTORY``, no terminal),
shell 1 a fish shell inside a byobu (tmux) session on a Lambda Cloud instance reached over SSH
(``BYOBU_*``, ``TMUX``, ``SSH_*``, ``XDG_*``); each with the tuning variables its own setup
exports (``NCCL_*``, ``TORCH_*``, ``CUDA_*``, ``HF_*``, ``MALLOC_ARENA_MAX``) that change nothing
here; the thread counts that change float reductions are pinned alike. The planted side is
either: some incidents work from the service and fail in byobu, others the reverse.

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

from benchmarks.incidents import RANKS_FOLDER, RANKS_RUNSNAP, Incident, Launch, _git, _write
from benchmarks.thirdparty import Unavailable, _incident, python_with


def systemd_or_byobu_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 a systemd
    service unit with an EnvironmentFile, 1 fish in a byobu session over SSH on a Lambda Cloud
    instance (``venv`` the virtual environment it activated); each with its own tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2",
              "HF_HOME": str(home / ".cache" / "huggingface")}
    if n % 2 == 0:  # systemd: fraud-train.service, EnvironmentFile=/etc/fraud/train.env
        env = {
            **common, "PATH": f"/opt/fraud/bin:{path}", "USER": "mlsvc", "LOGNAME": "mlsvc",
            "SHELL": "/usr/sbin/nologin", "LANG": "C.UTF-8",
            "INVOCATION_ID": "5f0d8c2e71a94b3b9e6d1c40a7f2b913",
            "JOURNAL_STREAM": "8:1849203", "SYSTEMD_EXEC_PID": "48213",
            "STATE_DIRECTORY": "/var/lib/fraud", "CACHE_DIRECTORY": "/var/cache/fraud",
            "LOGS_DIRECTORY": "/var/log/fraud", "RUNTIME_DIRECTORY": "/run/fraud",
            "CREDENTIALS_DIRECTORY": "/run/credentials/fraud-train.service",
            "MALLOC_ARENA_MAX": "2", "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1",
            "NCCL_SOCKET_IFNAME": "bond0", "NCCL_IB_HCA": "mlx5_0,mlx5_1",
            "NCCL_NET_GDR_LEVEL": "PHB", "NCCL_DEBUG": "WARN",
            "TORCH_NCCL_BLOCKING_WAIT": "1", "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
            "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_MODULE_LOADING": "LAZY",
            "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
            "AWS_REGION": "eu-central-1", "AWS_SHARED_CREDENTIALS_FILE":
                "/run/credentials/fraud-train.service/aws",
        }
        return env
    env = {  # fish in byobu (tmux backend), ~/.config/fish/conf.d/ml.fish
        **common, "PATH": f"{home}/.local/bin:{path}", "USER": "ubuntu", "LOGNAME": "ubuntu",
        "SHELL": "/usr/bin/fish", "TERM": "screen-256color", "SHLVL": "3",
        "LANG": "en_US.UTF-8", "MOTD_SHOWN": "pam", "XDG_SESSION_ID": "7",
        "XDG_SESSION_TYPE": "tty", "XDG_RUNTIME_DIR": "/run/user/1000",
        "XDG_DATA_DIRS": "/usr/local/share:/usr/share:/var/lib/snapd/desktop",
        "SSH_CLIENT": "84.17.42.201 53122 22", "SSH_TTY": "/dev/pts/1",
        "SSH_CONNECTION": "84.17.42.201 53122 10.19.66.140 22",
        "TMUX": "/tmp/tmux-1000/default,2811,0", "TMUX_PANE": "%3",
        "BYOBU_BACKEND": "tmux", "BYOBU_CONFIG_DIR": f"{home}/.config/byobu",
        "BYOBU_PREFIX": "/usr", "BYOBU_RUN_DIR": "/dev/shm/byobu-ubuntu-Qk3m7rTz",
        "BYOBU_SED": "sed", "BYOBU_PYTHON": "python3", "BYOBU_DISTRO": "Ubuntu",
        "BYOBU_CHARMAP": "UTF-8", "BYOBU_PAGER": "sensible-pager", "BYOBU_TTY": "/dev/pts/1",
        "BYOBU_ULIMIT": "ulimit", "BYOBU_DATE": "%Y-%m-%d ", "BYOBU_TIME": "%H:%M:%S",
        "BYOBU_LIGHT": "#EEEEEE", "BYOBU_DARK": "#333333", "BYOBU_ACCENT": "#75507B",
        "BYOBU_HIGHLIGHT": "#DD4814", "BYOBU_WINDOW_NAME": "-",
        "EDITOR": "micro", "PAGER": "less",
        "NCCL_DEBUG": "INFO", "NCCL_P2P_LEVEL": "NVL", "NCCL_NVLS_ENABLE": "0",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "CUDA_HOME": "/usr/lib/cuda",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "TORCHINDUCTOR_CACHE_DIR": f"{home}/.cache/inductor",
        "HF_HUB_ENABLE_HF_TRANSFER": "1", "TOKENIZERS_PARALLELISM": "false",
        "HF_TOKEN": "hf_Zr8TqWm3LpXc5VbN2KdJ7YhGf4Sa9Ue6Ro",
        "WANDB_API_KEY": "3f9c1e7a2b8d4f6e0a5c9b1d7e3f2a8c4b6d0e9f", "WANDB_ENTITY": "fraud-ml",
    }
    if venv:
        env["VIRTUAL_ENV"] = venv
        env["VIRTUAL_ENV_PROMPT"] = Path(venv).name
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "byobu", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the byobu session (``bad_in="byobu"``) or from the systemd service (``"systemd"``)."""
    unit = systemd_or_byobu_shell(0, d / "home" / "mlsvc")
    byobu = systemd_or_byobu_shell(1, d / "home" / "ubuntu", venv)
    first, second = (unit, byobu) if bad_in == "byobu" else (byobu, unit)
    return {**first, **(good or {})}, {**second, **(bad or {})}


def _corpus_venv(py: str) -> str:
    return str(Path(py).parent.parent)


def _repo(path: Path, files: dict[str, str]) -> Path:
    """A git repository holding ``files``, all committed."""
    for name, text in files.items():
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


def _edit_json(path: Path, **fields: object) -> None:
    cfg = json.loads(path.read_text())
    cfg.update(fields)
    path.write_text(json.dumps(cfg, indent=2) + "\n")


# --------------------------------------------------------------------------- torchrun jobs


FRAUD_TRAIN = """
    \"\"\"Train the card-fraud MLP with DDP over gloo. The architecture comes from the model
    folder's config.json (--model-path), the optimisation from configs/train.yaml. Rank 0
    prints each epoch's loss (averaged over the ranks) and the validation figures, which every
    rank computes on its own shard and all-reduces.\"\"\"
    import argparse
    import datetime
    import json
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


    def transactions(n=4000, seed=5):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, 12, generator=g)
        score = 1.3 * x[:, 0] + 0.8 * x[:, 1] * x[:, 2] - 0.9 * x[:, 3].abs() - 1.9
        y = (torch.rand(n, generator=g) < torch.sigmoid(score)).float()
        return x, y


    def build(cfg):
        return torch.nn.Sequential(
            torch.nn.Linear(cfg["in_features"], cfg["hidden_size"]), torch.nn.ReLU(),
            torch.nn.Dropout(cfg["dropout"]),
            torch.nn.Linear(cfg["hidden_size"], cfg["hidden_size"]), torch.nn.ReLU(),
            torch.nn.Dropout(cfg["dropout"]), torch.nn.Linear(cfg["hidden_size"], 1))


    def evaluate(model, x, y):
        model.eval()
        with torch.no_grad():
            pred = (model(x).squeeze(-1) > 0).float()
        counts = torch.tensor([(pred * y).sum(), pred.sum(), y.sum(), (pred == y).sum(),
                               float(len(y))])
        dist.all_reduce(counts)
        tp, flagged, fraud, right, n = counts.tolist()
        return {"val_recall": tp / max(fraud, 1), "val_precision": tp / max(flagged, 1),
                "val_acc": right / n}


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--epochs", type=int, default=3)
        p.add_argument("--ckpt-dir", default=None)
        a = p.parse_args()
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
        rank, world = dist.get_rank(), dist.get_world_size()
        with open(os.path.join(a.model_path, "config.json")) as f:
            arch = json.load(f)
        with open("configs/train.yaml") as f:
            cfg = yaml.safe_load(f)
        torch.manual_seed(0)
        model = DDP(build(arch))
        opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"],
                                weight_decay=cfg["weight_decay"])
        x, y = transactions()
        train = TensorDataset(x[:3200], y[:3200])
        sampler = DistributedSampler(train, num_replicas=world, rank=rank, seed=0)
        loader = DataLoader(train, batch_size=cfg["batch_size"], sampler=sampler)
        for epoch in range(a.epochs):
            sampler.set_epoch(epoch)
            model.train()
            total, batches = 0.0, 0
            for xb, yb in loader:
                loss = F.binary_cross_entropy_with_logits(model(xb).squeeze(-1), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total, batches = total + loss.item(), batches + 1
            t = torch.tensor([total / batches])
            dist.all_reduce(t)
            if rank == 0:
                print(f"epoch={epoch} loss={t.item() / world:.5f}")
        xv, yv = x[3200:][rank::world], y[3200:][rank::world]
        metrics = evaluate(model.module, xv, yv)
        if rank == 0:
            print(" ".join(f"{k}={v:.4f}" for k, v in metrics.items()))
        if a.ckpt_dir and rank == 0:
            torch.save(model.module.state_dict(), os.path.join(a.ckpt_dir, "fraud-mlp.pt"))
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

FRAUD_YAML = "# card-fraud MLP\nlr: 0.003\nweight_decay: 0.01\nbatch_size: 64\n"
FRAUD_ARCH = {"model_type": "fraud-mlp", "in_features": 12, "hidden_size": 48, "dropout": 0.0}


def _fraud_job(d: Path) -> tuple[str, Path, Path]:
    """The job's interpreter, repository and model folder (outside git, synced from the
    model registry)."""
    py = python_with("torch", "yaml")
    repo = _repo(d / "fraud-ddp", {"train.py": FRAUD_TRAIN, "configs/train.yaml": FRAUD_YAML,
                                   ".gitignore": "__pycache__/\n"})
    model = d / "registry" / "fraud-mlp-v3"
    model.mkdir(parents=True, exist_ok=True)
    (model / "config.json").write_text(json.dumps(FRAUD_ARCH, indent=2) + "\n")
    return py, repo, model


def eval_allreduce_rank0_only_job(d: Path) -> Incident:
    """Job against job. Between the jobs train.py got an uncommitted edit "only rank 0 needs
    the validation figures": the evaluation moved under ``if rank == 0``. Its all-reduce now
    has no partner: rank 1 finishes and leaves the group, rank 0 fails in the collective (a
    gloo error). Kind: fail."""
    py, repo, model = _fraud_job(d)

    def edit() -> None:
        (repo / "train.py").write_text((repo / "train.py").read_text().replace(
            "    metrics = evaluate(model.module, xv, yv)\n    if rank == 0:\n",
            "    if rank == 0:\n        metrics = evaluate(model.module, xv, yv)\n"))

    good, bad = _shells(d, venv=_corpus_venv(py))
    argv = _torchrun_job(py, "train.py", "--model-path", str(model))
    return _incident(eval_allreduce_rank0_only_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "fraud-ddp: train.py"), between=edit)


def registry_dropout_metric_job(d: Path) -> Incident:
    """Job against job. Between the jobs the nightly registry sync rewrote the model folder's
    config.json (outside git) with ``"dropout": 0.3`` from the experiment that won the sweep.
    Both jobs finish; the losses and the validation figures move. Kind: metric."""
    py, repo, model = _fraud_job(d)

    def synced() -> None:
        _edit_json(model / "config.json", dropout=0.3)

    good, bad = _shells(d, bad_in="systemd", venv=_corpus_venv(py))
    argv = _torchrun_job(py, "train.py", "--model-path", str(model))
    return _incident(registry_dropout_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: dropout"),
                     between=synced)


def batch_placeholder_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs save to ``--ckpt-dir`` on a mount that is not
    there (the first trains, validates, then fails in torch.save). Between the jobs
    configs/train.yaml (in git) got ``batch_size: ${BATCH}``, not committed, in the belief that
    the loader expands variables; PyYAML does not, and every rank stops at the DataLoader
    ("batch_size should be a positive integer value, but got batch_size=${BATCH}"). Kind:
    both-fail."""
    py, repo, model = _fraud_job(d)

    def edit() -> None:
        (repo / "configs" / "train.yaml").write_text(
            FRAUD_YAML.replace("batch_size: 64", "batch_size: ${BATCH}"))

    good, bad = _shells(d, {"BATCH": "64"}, {"BATCH": "64"}, venv=_corpus_venv(py))
    argv = _torchrun_job(py, "train.py", "--model-path", str(model),
                         "--ckpt-dir", str(d / "mnt" / "ckpt" / "fraud"))
    return _incident(batch_placeholder_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "fraud-ddp: configs/train.yaml"),
                     between=edit)


def fraud_job_noise(d: Path) -> Incident:
    """Job against job, the same code, settings and model folder, from the systemd service and
    from the byobu session: each job has its own rendezvous and rank processes, the shells
    their own systemd, byobu, SSH, NCCL_*, TORCH_*, CUDA_* and HF_* variables. Nothing
    planted. Kind: noise."""
    py, repo, model = _fraud_job(d)
    good, bad = _shells(d, venv=_corpus_venv(py))
    argv = _torchrun_job(py, "train.py", "--model-path", str(model))
    return _incident(fraud_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- c10d, torch settings


SCORE_GROUP = """
    \"\"\"Score the day's transactions in a process group (one shard per rank; run alone it is
    rank 0 of 1). The rendezvous is --dist-url: env:// by default, which takes RANK,
    WORLD_SIZE, MASTER_ADDR and MASTER_PORT from the environment.\"\"\"
    import argparse
    import datetime

    import torch
    import torch.distributed as dist


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--dist-url", default="env://")
        p.add_argument("--world-size", type=int, default=-1)
        p.add_argument("--rank", type=int, default=-1)
        a = p.parse_args()
        dist.init_process_group("gloo", init_method=a.dist_url, world_size=a.world_size,
                                rank=a.rank, timeout=datetime.timedelta(seconds=10))
        rank, world = dist.get_rank(), dist.get_world_size()
        g = torch.Generator().manual_seed(12)
        tx = torch.randn(1500, 12, generator=g)[rank::world]
        torch.manual_seed(3)
        scorer = torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.Tanh(),
                                     torch.nn.Linear(24, 1))
        with torch.no_grad():
            risk = torch.sigmoid(scorer(tx)).squeeze(-1)
        flagged = (risk > 0.55).sum().reshape(1).float()
        dist.all_reduce(flagged)
        print(f"world={world} scored={len(risk)} flagged={int(flagged.item())} "
              f"mean_risk={risk.mean():.5f}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """


def _score_group(d: Path) -> tuple[str, Path, dict[str, str]]:
    py = python_with("torch")
    repo = _repo(d / "fraud-scoring", {"score.py": SCORE_GROUP})
    rdzv = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()), "RANK": "0",
            "WORLD_SIZE": "1"}
    return py, repo, rdzv


def dist_url_tcp_from_multinode_docs(d: Path) -> Incident:
    """The service's ``ExecStart`` was extended with ``--dist-url tcp://127.0.0.1:PORT``
    copied from the multi-node section of the team's docs (where every node also passes
    ``--rank`` and ``--world-size``). The tcp:// rendezvous does not read RANK and WORLD_SIZE
    from the environment the way env:// does, and init_process_group refuses ("Error
    initializing torch.distributed using tcp:// rendezvous: rank parameter missing"). From
    byobu the script keeps its env:// default. Kind: fail."""
    py, repo, rdzv = _score_group(d)
    good, bad = _shells(d, rdzv, rdzv, bad_in="systemd", venv=_corpus_venv(py))
    argv = (py, "score.py")
    url = f"tcp://127.0.0.1:{rdzv['MASTER_PORT']}"
    return _incident(dist_url_tcp_from_multinode_docs, Launch(argv, good, repo),
                     Launch((*argv, "--dist-url", url), bad, repo), ("command", "--dist-url"))


def scoring_group_noise(d: Path) -> Incident:
    """The scoring group of one rank (env://, its own free MASTER_PORT in each shell) from the
    service and from byobu. Nothing planted. Kind: noise."""
    py, repo, rdzv = _score_group(d)
    other = {**rdzv, "MASTER_PORT": str(_free_port())}
    good, bad = _shells(d, rdzv, other, venv=_corpus_venv(py))
    argv = (py, "score.py")
    return _incident(scoring_group_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


SERVE_RUNTIME = """
    \"\"\"The scoring server's runtime: thread pools sized once, at import, for the 16-core
    serving nodes' cgroup share.\"\"\"
    import torch

    INTRA_OP, INTER_OP = 2, 2
    torch.set_num_threads(INTRA_OP)
    torch.set_num_interop_threads(INTER_OP)
    """

SERVE_MAIN = """
    \"\"\"Warm the fraud scorer up on a replayed batch and report what it flags (the smoke test
    the service runs before it takes traffic).\"\"\"
    import argparse

    import torch

    from serving import runtime


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--interop-threads", type=int, default=None,
                       help="size of torch's inter-op pool (default: serving.runtime's)")
        p.add_argument("--batch", type=int, default=512)
        a = p.parse_args()
        if a.interop_threads is not None:
            torch.set_num_interop_threads(a.interop_threads)
        torch.manual_seed(0)
        scorer = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.ReLU(),
                                     torch.nn.Linear(32, 1)).eval()
        g = torch.Generator().manual_seed(9)
        batch = torch.randn(a.batch, 12, generator=g)
        with torch.inference_mode():
            risk = torch.sigmoid(scorer(batch)).squeeze(-1)
        print(f"threads={torch.get_num_threads()}/{runtime.INTER_OP} batch={a.batch} "
              f"flagged={int((risk > 0.5).sum())}")


    if __name__ == "__main__":
        main()
    """


def interop_threads_set_twice(d: Path) -> Incident:
    """The service unit's ``ExecStart`` passes ``--interop-threads 8`` (kept from the GPU
    box's unit); the server's runtime module already sized the inter-op pool at import, and
    torch refuses a second call ("cannot set number of interop threads after parallel work has
    started or set_num_interop_threads called"). The smoke test runs from byobu without the
    option. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "fraud-serve", {"serve.py": SERVE_MAIN, "serving/__init__.py": "",
                                     "serving/runtime.py": SERVE_RUNTIME})
    good, bad = _shells(d, bad_in="systemd", venv=_corpus_venv(py))
    argv = (py, "serve.py")
    return _incident(interop_threads_set_twice, Launch(argv, good, repo),
                     Launch((*argv, "--interop-threads", "8"), bad, repo),
                     ("command", "--interop-threads"))


MAKE_RESUME_CKPT = """
import argparse, sys, torch
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
args = argparse.Namespace(lr=0.003, batch_size=64, epochs=3, hidden=32)
torch.save({"model": net.state_dict(), "epoch": 3, "args": args}, sys.argv[1])
"""

EVAL_CKPT = """
    \"\"\"Evaluate last night's checkpoint (our own file, written by train.py with its argparse
    arguments beside the weights) on the week's labelled transactions.\"\"\"
    import torch


    def main():
        ckpt = torch.load("checkpoints/nightly.pt", map_location="cpu", weights_only=False)
        hidden = ckpt["args"].hidden
        net = torch.nn.Sequential(torch.nn.Linear(12, hidden), torch.nn.ReLU(),
                                  torch.nn.Linear(hidden, 1))
        net.load_state_dict(ckpt["model"])
        g = torch.Generator().manual_seed(31)
        x = torch.randn(800, 12, generator=g)
        y = (x[:, 0] + 0.5 * x[:, 1] > 1.0).float()
        with torch.no_grad():
            pred = (net(x).squeeze(-1) > 0).float()
        print(f"epoch={ckpt['epoch']} week_acc={(pred == y).float().mean():.4f}")


    if __name__ == "__main__":
        main()
    """


def forced_weights_only_in_unit(d: Path) -> Incident:
    """After the pickle advisories, the platform team added ``TORCH_FORCE_WEIGHTS_ONLY_LOAD=1``
    to the service's EnvironmentFile; torch.load then ignores the script's
    ``weights_only=False`` and refuses the checkpoint's ``argparse.Namespace`` ("Weights only
    load failed ... Unsupported global: GLOBAL argparse.Namespace"). From byobu it loads.
    Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "fraud-eval", {"eval_ckpt.py": EVAL_CKPT,
                                    ".gitignore": "checkpoints/\n"})
    ckpt = repo / "checkpoints" / "nightly.pt"
    if not ckpt.exists():
        ckpt.parent.mkdir(parents=True, exist_ok=True)
        _run_py(py, MAKE_RESUME_CKPT, str(ckpt))
    good, bad = _shells(d, {}, {"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "1"}, bad_in="systemd",
                        venv=_corpus_venv(py))
    argv = (py, "eval_ckpt.py")
    return _incident(forced_weights_only_in_unit, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "TORCH_FORCE_WEIGHTS_ONLY_LOAD"))


# --------------------------------------------------------------------------- model folders


MAKE_TINY_LLAMA = """
import sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
torch.manual_seed(int(sys.argv[2]))
cfg = LlamaConfig(vocab_size=256, hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                  rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2)
LlamaForCausalLM(cfg).save_pretrained(sys.argv[1])
"""

PPL_EVAL = """
    \"\"\"Perplexity of the support-chat language model (byte tokens) on held-out replies.\"\"\"
    import argparse
    import math

    import torch
    from transformers import AutoModelForCausalLM


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        model = AutoModelForCausalLM.from_pretrained(a.model_path).eval()
        text = open("data/replies.txt").read().encode()
        ids = torch.tensor([list(text[i:i + 48]) for i in range(0, len(text) - 48, 24)])
        with torch.no_grad():
            loss = model(input_ids=ids, labels=ids).loss.item()
        print(f"windows={len(ids)} eval_loss={loss:.5f} perplexity={math.exp(loss):.4f}")


    if __name__ == "__main__":
        main()
    """

REPLIES = ("Thanks for reaching out. Your card was blocked because of an unusual payment; "
           "confirm it in the app and the block is lifted within minutes. If you did not make "
           "the payment, report it and we send a new card. ") * 3


def _tiny_llama(d: Path, name: str, seed: int = 0) -> tuple[str, Path]:
    py = python_with("torch", "transformers", "safetensors")
    model = d / "models" / name
    if not (model / "config.json").exists():
        _run_py(py, MAKE_TINY_LLAMA, str(model), str(seed))
    return py, model


def _ppl_repo(d: Path) -> Path:
    return _repo(d / "support-lm-eval", {"eval_ppl.py": PPL_EVAL, "data/replies.txt": REPLIES})


def rms_norm_eps_llama1_template_metric(d: Path) -> Incident:
    """The support model's config.json (the model folder, outside git) was regenerated by an
    export script whose template still carries Llama 1's ``"rms_norm_eps": 1e-06``; the
    weights load and every RMSNorm divides by another epsilon. Both runs exit 0; the
    perplexity moves. Kind: metric."""
    py, model = _tiny_llama(d, "support-llama-tiny")
    repo = _ppl_repo(d)

    def regenerated() -> None:
        _edit_json(model / "config.json", rms_norm_eps=1e-06)

    good, bad = _shells(d, venv=_corpus_venv(py))
    argv = (py, "eval_ppl.py", "--model-path", str(model))
    return _incident(rms_norm_eps_llama1_template_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: rms_norm_eps"),
                     between=regenerated)


def intermediate_size_from_sibling(d: Path) -> Incident:
    """When the model folders were reorganised, the support model's config.json was replaced
    by a copy of its bigger sibling's, ``"intermediate_size": 192``; the MLP weights on disk
    are 96 wide and from_pretrained refuses them (size mismatch, "You set
    `ignore_mismatched_sizes` to `False`, thus raising an error"). Kind: fail."""
    py, model = _tiny_llama(d, "support-llama-tiny-b", seed=1)
    _edit_json(model / "config.json", intermediate_size=96)
    repo = _ppl_repo(d)

    def copied() -> None:
        _edit_json(model / "config.json", intermediate_size=192)

    good, bad = _shells(d, bad_in="systemd", venv=_corpus_venv(py))
    argv = (py, "eval_ppl.py", "--model-path", str(model))
    return _incident(intermediate_size_from_sibling, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: intermediate_size"),
                     between=copied)


def support_lm_eval_noise(d: Path) -> Incident:
    """The perplexity evaluation of the support model from the service and from byobu, the
    model folder untouched. Nothing planted. Kind: noise."""
    py, model = _tiny_llama(d, "support-llama-tiny-c", seed=2)
    repo = _ppl_repo(d)
    good, bad = _shells(d, venv=_corpus_venv(py))
    argv = (py, "eval_ppl.py", "--model-path", str(model))
    return _incident(support_lm_eval_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


HUB_EVAL = PPL_EVAL.replace('p.add_argument("--model-path", required=True)',
                            'p.add_argument("--model", default="acme-fraud/support-llama-tiny")'
                            ).replace("from_pretrained(a.model_path)", "from_pretrained(a.model)")


def _hub_cache(hf_home: Path, repo_id: str, model: Path) -> None:
    """``repo_id`` in the Hugging Face cache under ``hf_home``, as a download leaves it."""
    commit = "9b3e1f0c7a2d4e6f8a1b3c5d7e9f0a2b4c6d8e0f"
    root = hf_home / "hub" / ("models--" + repo_id.replace("/", "--"))
    snap = root / "snapshots" / commit
    if snap.exists():
        return
    snap.mkdir(parents=True)
    for f in model.iterdir():
        (snap / f.name).write_bytes(f.read_bytes())
    (root / "refs").mkdir(exist_ok=True)
    (root / "refs" / "main").write_text(commit)


def hub_model_cached_in_other_home(d: Path) -> Incident:
    """The evaluation names the model by its Hub id; both launches run offline
    (``HF_HUB_OFFLINE=1``: the box has no egress, the instance's fish config copies it). The
    model was downloaded last week from byobu, into ~ubuntu's ``HF_HOME``; the service's
    ``HF_HOME`` (its StateDirectory) holds no copy, and from_pretrained cannot find it
    (offline, not in the cache). Kind: fail."""
    py, model = _tiny_llama(d, "support-llama-tiny-d", seed=3)
    repo = _repo(d / "support-lm-hub-eval", {"eval_ppl.py": HUB_EVAL,
                                             "data/replies.txt": REPLIES})
    offline = {"HF_HUB_OFFLINE": "1"}
    good, bad = _shells(d, offline, offline, bad_in="systemd", venv=_corpus_venv(py))
    _hub_cache(Path(good["HF_HOME"]), "acme-fraud/support-llama-tiny", model)
    Path(bad["HF_HOME"]).mkdir(parents=True, exist_ok=True)
    argv = (py, "eval_ppl.py")
    return _incident(hub_model_cached_in_other_home, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "HF_HOME"))


# --------------------------------------------------------------------------- the rest


FRAUDFEAT = {
    "0.4.0": '''
        """Feature engineering for card transactions."""
        import numpy as np

        __version__ = "0.4.0"
        FEATURES = ["amount_log", "hour_sin", "hour_cos", "merchant_risk"]


        def build_features(amount, hour, merchant_risk):
            return np.stack([np.log1p(amount), np.sin(hour / 24 * 2 * np.pi),
                             np.cos(hour / 24 * 2 * np.pi), merchant_risk], axis=1)
        ''',
    "0.5.0.dev3": '''
        """Feature engineering for card transactions (0.5: names follow the feature store:
        ``log_amount``; ``amount_log`` is gone)."""
        import numpy as np

        __version__ = "0.5.0.dev3"
        FEATURES = ["log_amount", "hour_sin", "hour_cos", "merchant_risk"]


        def build_features(amount, hour, merchant_risk):
            return np.stack([np.log1p(amount), np.sin(hour / 24 * 2 * np.pi),
                             np.cos(hour / 24 * 2 * np.pi), merchant_risk], axis=1)
        ''',
}

RULES_REPORT = """
    \"\"\"Weekly rule report: how many transactions the large-amount rule flags, computed on
    fraudfeat's features.\"\"\"
    import numpy as np
    from fraudfeat import FEATURES, build_features


    def main():
        rng = np.random.default_rng(4)
        amount = rng.lognormal(3.0, 1.2, 5000)
        hour = rng.integers(0, 24, 5000)
        risk = rng.beta(2, 8, 5000)
        x = build_features(amount, hour, risk)
        big = x[:, FEATURES.index("amount_log")] > np.log1p(200.0)
        print(f"transactions={len(x)} flagged_large={int(big.sum())}")


    if __name__ == "__main__":
        main()
    """


def _editable_venv(py: str, where: Path, checkout: Path, version: str) -> Path:
    """A venv of the corpus interpreter's Python layered on its packages (a .pth file) with
    fraudfeat ``version`` installed editable from ``checkout`` (as pip -e leaves it)."""
    vpy = where / "bin" / "python"
    if vpy.exists():
        return vpy
    _repo(checkout, {"src/fraudfeat/__init__.py": FRAUDFEAT[version],
                     "pyproject.toml": f'[project]\nname = "fraudfeat"\nversion = "{version}"\n'})
    base = subprocess.check_output([py, "-c", "import sys; print(sys._base_executable)"],
                                   text=True).strip()
    subprocess.run([base, "-m", "venv", "--without-pip", str(where)], check=True)
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(subprocess.check_output([str(vpy), "-c", purelib], text=True).strip())
    shared = subprocess.check_output([py, "-c", purelib], text=True).strip()
    (site / "_layered_on_corpus.pth").write_text(shared + "\n")
    (site / "__editable__.fraudfeat-0.pth").write_text(str(checkout / "src") + "\n")
    info = site / f"fraudfeat-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fraudfeat\n"
                                   f"Version: {version}\n")
    (info / "INSTALLER").write_text("pip\n")
    (info / "direct_url.json").write_text(json.dumps(
        {"url": checkout.resolve().as_uri(), "dir_info": {"editable": True}}))
    (info / "RECORD").write_text("__editable__.fraudfeat-0.pth,,\n")
    return vpy


def fraudfeat_editable_dev_checkout(d: Path) -> Incident:
    """The service's venv (/opt/fraud/venv) has the team's ``fraudfeat`` 0.4.0 installed
    editable from the release checkout; the venv activated in byobu has it editable from the
    engineer's dev checkout, 0.5.0.dev3, where ``amount_log`` was renamed ``log_amount``: the
    report stops at ``FEATURES.index("amount_log")`` (ValueError). Both venvs are layered over
    the same Python and packages. Kind: fail."""
    py = python_with("numpy")
    repo = _repo(d / "fraud-rules", {"report.py": RULES_REPORT})
    svc = d / "opt" / "fraud" / "venv"
    svc_py = _editable_venv(py, svc, d / "srv" / "fraudfeat-release", "0.4.0")
    dev = d / "home" / "ubuntu" / "venvs" / "fraud"
    _editable_venv(py, dev, d / "home" / "ubuntu" / "src" / "fraudfeat", "0.5.0.dev3")
    good, bad = _shells(d, venv=str(dev))
    good = {**good, "PATH": f"{svc / 'bin'}:{good['PATH']}"}
    bad = {**bad, "PATH": f"{dev / 'bin'}:{bad['PATH']}"}
    return _incident(fraudfeat_editable_dev_checkout,
                     Launch((str(svc_py), "report.py"), good, repo),
                     Launch(("python", "report.py"), bad, repo), ("packages", "fraudfeat"))


CALIBRATE = """
    \"\"\"Pick the fraud threshold on the latest labelled export: the lowest score threshold
    whose precision reaches 0.8, and the recall it keeps.\"\"\"
    import os

    import numpy as np


    def main():
        where = os.environ.get("FRAUD_DATA_DIR", "exports/latest")
        table = np.loadtxt(os.path.join(where, "scored.csv"), delimiter=",", skiprows=1)
        score, label = table[:, 0], table[:, 1]
        for t in np.linspace(0.05, 0.95, 91):
            flagged = score >= t
            if flagged.sum() and (label[flagged].mean() >= 0.8):
                break
        recall = (flagged & (label == 1)).sum() / max((label == 1).sum(), 1)
        print(f"rows={len(label)} threshold={t:.2f} recall_at_p80={recall:.4f}")


    if __name__ == "__main__":
        main()
    """


def _export(folder: Path, seed: int, shift: float) -> None:
    """A labelled, scored export (score,label), ``shift`` moving the fraud scores."""
    rng = random.Random(seed)
    rows = ["score,label"]
    for _ in range(3000):
        fraud = rng.random() < 0.08
        mean = 0.62 + shift if fraud else 0.3
        rows.append(f"{min(max(rng.gauss(mean, 0.15), 0.0), 1.0):.4f},{int(fraud)}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scored.csv").write_text("\n".join(rows) + "\n")


def data_dir_last_week_metric(d: Path) -> Incident:
    """The service's EnvironmentFile sets ``FRAUD_DATA_DIR`` to the export of 2026-11-28 (pinned
    there for an audit and never unpinned); from byobu the script reads exports/latest. Both
    exports exist (outside git); both runs exit 0; the threshold and the recall move. Kind:
    metric."""
    py = python_with("numpy")
    repo = _repo(d / "fraud-calibrate", {"calibrate.py": CALIBRATE,
                                         ".gitignore": "exports/\n"})
    _export(repo / "exports" / "latest", 7, 0.08)
    _export(repo / "exports" / "2026-11-28", 3, 0.0)
    pinned = {"FRAUD_DATA_DIR": str(repo / "exports" / "2026-11-28")}
    good, bad = _shells(d, {}, pinned, bad_in="systemd", venv=_corpus_venv(py))
    argv = (py, "calibrate.py")
    return _incident(data_dir_last_week_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "FRAUD_DATA_DIR"))


FLAG_REPORT = """
    \"\"\"Daily flag report: score the day's transactions and flag those above the per-segment
    thresholds in calibration/thresholds.json (written by the calibration job; git-ignored).\"\"\"
    import json

    import numpy as np


    def main():
        with open("calibration/thresholds.json") as f:
            thresholds = json.load(f)
        rng = np.random.default_rng(21)
        segment = rng.choice(["card_present", "online", "atm"], 6000, p=[0.5, 0.4, 0.1])
        score = rng.beta(2, 7, 6000)
        limit = np.array([thresholds[s] for s in segment])
        flagged = score >= limit
        print(f"transactions={len(score)} flagged={int(flagged.sum())} "
              f"flag_rate={flagged.mean():.5f}")


    if __name__ == "__main__":
        main()
    """


def thresholds_recalibrated_metric(d: Path) -> Incident:
    """calibration/thresholds.json is git-ignored: the calibration job writes it. Between the
    runs someone reran the calibration on the holiday data and it lowered the online
    threshold. Both runs exit 0; the flagged count and rate move. Kind: metric."""
    py = python_with("numpy")
    repo = _repo(d / "fraud-flags", {"flag_report.py": FLAG_REPORT,
                                     ".gitignore": "calibration/\n"})
    th = repo / "calibration" / "thresholds.json"
    th.parent.mkdir(parents=True, exist_ok=True)
    th.write_text(json.dumps({"card_present": 0.55, "online": 0.45, "atm": 0.6}) + "\n")

    def recalibrated() -> None:
        th.write_text(json.dumps({"card_present": 0.55, "online": 0.38, "atm": 0.6}) + "\n")

    good, bad = _shells(d, venv=_corpus_venv(py))
    argv = (py, "flag_report.py")
    return _incident(thresholds_recalibrated_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {th.resolve()}"),
                     between=recalibrated)


LR_BASELINE = """
    \"\"\"Logistic-regression baseline for merchant fraud: fit on the training CSV, then score
    the holdout (a parquet file tracked with Git LFS).\"\"\"
    import argparse

    import numpy as np
    import pandas as pd
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--class-weight", default=None)
        a = p.parse_args()
        train = pd.read_csv("data/train.csv")
        clf = LogisticRegression(class_weight=a.class_weight, max_iter=300)
        clf.fit(train.drop(columns="fraud"), train["fraud"])
        seen = clf.predict_proba(train.drop(columns="fraud"))[:, 1]
        print(f"train_auc={roc_auc_score(train['fraud'], seen):.4f}")
        holdout = pd.read_parquet("data/holdout.parquet")
        scores = clf.predict_proba(holdout.drop(columns="fraud"))[:, 1]
        auc = roc_auc_score(holdout["fraud"], scores)
        print(f"holdout_auc={auc:.4f}")


    if __name__ == "__main__":
        main()
    """


def _merchant_csv() -> str:
    rng = random.Random(13)
    rows = ["amount,velocity,new_device,fraud"]
    for _ in range(800):
        a, v, n = rng.gauss(0, 1), rng.gauss(0, 1), int(rng.random() < 0.2)
        fraud = int(0.9 * a + 0.7 * v + 1.2 * n + rng.gauss(0, 1) > 1.6)
        rows.append(f"{a:.4f},{v:.4f},{n},{fraud}")
    return "\n".join(rows) + "\n"


def class_weight_option_both_fail(d: Path) -> Incident:
    """Both checkouts hold data/holdout.parquet as a Git LFS pointer (``git lfs pull`` never
    ran): the service's run fits, prints the training AUC and stops at the holdout (pyarrow:
    "Parquet magic bytes not found in footer"). In byobu the engineer added ``--class-weight
    balanced_subsample``, copied from the random-forest recipe; LogisticRegression refuses it
    at fit, quoting the value. Kind: both-fail."""
    py = python_with("sklearn", "pandas", "pyarrow")
    pointer = ("version https://git-lfs.github.com/spec/v1\n"
               "oid sha256:4d7a2146a3e1a0b5c6f8e9d0c1b2a3f4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0\n"
               "size 182113\n")
    repo = _repo(d / "merchant-baseline", {
        "baseline.py": LR_BASELINE, "data/train.csv": _merchant_csv(),
        "data/holdout.parquet": pointer,
        ".gitattributes": "*.parquet filter=lfs diff=lfs merge=lfs -text\n"})
    good, bad = _shells(d, venv=_corpus_venv(py))
    argv = (py, "baseline.py")
    return _incident(class_weight_option_both_fail, Launch(argv, good, repo),
                     Launch((*argv, "--class-weight", "balanced_subsample"), bad, repo),
                     ("command", "--class-weight"))


#: The eleventh fresh batch, in the order it was written. Never tuned on.
FRESH11 = [
    eval_allreduce_rank0_only_job, registry_dropout_metric_job, batch_placeholder_both_fail_job,
    fraud_job_noise, dist_url_tcp_from_multinode_docs, scoring_group_noise,
    interop_threads_set_twice, forced_weights_only_in_unit, rms_norm_eps_llama1_template_metric,
    intermediate_size_from_sibling, support_lm_eval_noise, hub_model_cached_in_other_home,
    fraudfeat_editable_dev_checkout, data_dir_last_week_metric, thresholds_recalibrated_metric,
    class_weight_option_both_fail,
]

if __name__ == "__main__":  # build one incident and print its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH11 if b.__name__ in sys.argv[1:]] or FRESH11
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh11-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
