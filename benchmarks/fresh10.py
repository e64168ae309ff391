"""A tenth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh.py ... fresh9.py, for their format), how they are run
and scored (benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot reference
(docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job captures
one snapshot per rank. They form the corpus's ``fresh10`` half; report it, never change the
ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a churn classifier with
  BatchNorm: ``--sync-bn`` copied from the GPU cluster's job spec (DDP refuses SyncBatchNorm on
  CPU modules); ``pos_weight`` raised in the training config, not committed (recall and
  precision move); a gradient clipping edit that reads a config key nobody added, on top of a
  DVC-tracked holdout file that was never pulled (both fail); and the same job from both
  shells (noise);
- the c10d store and an engine: ``TORCHELASTIC_USE_AGENT_STORE=True`` copied with a torchrun
  worker's environment into a Ray job's ``env_vars`` (a lone rank 0 waits for an agent's store
  that does not exist, the port quoted); a TensorPipe RPC embedding server's start from both
  shells (noise);
- model folders (transformers; tiny models made at build time): ``problem_type:
  multi_label_classification`` copied into a single-label router's config.json, and
  ``scale_attn_weights: false`` in a small LM's config.json (perplexity moves);
- the rest: ``PYTHONOPTIMIZE=2`` in the Ray image (transformers' docstring checks fail at
  import), ``--dtype bfloat16`` before a ``.numpy()`` call, ``torch.load(..., mmap=True)``
  added in an uncommitted edit over a checkpoint in the legacy format, a uv project venv whose
  lock moved ``textnorm`` to 2.0 (its ``normalize`` renamed), accelerate's
  ``default_config.yaml`` left in one home's ``HF_HOME`` (bf16 autocast; the loss moves),
  ``PL_GLOBAL_SEED`` inherited from a Ray Tune driver (Lightning's seed moves), ``--val-fraction
  0`` on top of an MLflow server that is not port-forwarded (both fail), and accelerate's
  launch from both shells (noise).

The shells are :func:`ray_or_nix_shell`: shell 0 the entrypoint of a Ray job on a KubeRay CPU
worker pod (``ray job submit`` with ``runtime_env`` ``env_vars``: ``RAY_*``, ``KUBERAY_*``,
``KUBERNETES_*``, the pod's cloud credentials), shell 1 ``uv run`` from a direnv-loaded Nix
flake dev shell on a workstation (``IN_NIX_SHELL``, ``NIX_*``, ``DIRENV_*``, ``UV_*``,
``VIRTUAL_ENV``, ``SOURCE_DATE_EPOCH``, a Wayland session); each with the tuning variables its
own setup exports (``NCCL_*``, ``TORCH_*``, ``HF_*``, ``CUDA_*``, ``TP_SOCKET_IFNAME``) that
change nothing here; the thread counts that change float reductions are pinned alike. The
planted side is either: some incidents work from the Ray job and fail in the dev shell, others
the reverse.

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


def ray_or_nix_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 a Ray job's
    entrypoint on a KubeRay worker pod, 1 ``uv run`` in a direnv/Nix dev shell (``venv`` the
    project environment uv activates); each with the tuning variables its own setup exports."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2",
              "HF_HOME": str(home / ".cache" / "huggingface")}
    if n % 2 == 0:  # ray job submit --runtime-env-json '{"env_vars": {...}}' on KubeRay
        return {
            **common, "PATH": f"/home/ray/anaconda3/bin:{path}", "USER": "ray",
            "HOSTNAME": "raycluster-ml-cpu-worker-cpu-group-7x2kq", "LANG": "C.UTF-8",
            "RAY_ADDRESS": "10.42.3.17:6379", "RAY_CLUSTER_NAME": "raycluster-ml",
            "RAY_JOB_SUBMISSION_ID": "raysubmit_Xq3kP9vN2mLwT7bC", "RAY_PORT": "6379",
            "RAY_IP": "raycluster-ml-head-svc",
            "FQ_RAY_IP": "raycluster-ml-head-svc.ml.svc.cluster.local",
            "RAY_USAGE_STATS_ENABLED": "0", "RAY_USAGE_STATS_KUBERAY_IN_USE": "1",
            "RAY_memory_monitor_refresh_ms": "0", "RAY_CLOUD_INSTANCE_ID": "i-0c3f9e71a2b4d5e68",
            "RAY_NODE_TYPE_NAME": "cpu-group",
            "KUBERAY_GEN_RAY_START_CMD": "ray start --address=raycluster-ml-head-svc:6379 "
                                         "--block --num-cpus=16 --metrics-export-port=8080",
            "KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
            "KUBERNETES_PORT": "tcp://10.96.0.1:443", "MY_POD_IP": "10.42.5.23",
            "AWS_DEFAULT_REGION": "us-west-2", "AWS_ACCESS_KEY_ID": "AKIA4XJ7QW2MZP8KD3RT",
            "AWS_SECRET_ACCESS_KEY": "m9Qx2vLr7TcWk4Zp1Bn8Hs3Dy6Fg0Ju5Ea",
            "HF_HUB_ENABLE_HF_TRANSFER": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
            "TOKENIZERS_PARALLELISM": "false", "NCCL_SOCKET_IFNAME": "eth0",
            "NCCL_IB_DISABLE": "1", "NCCL_DEBUG": "INFO", "TP_SOCKET_IFNAME": "eth0",
            "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
            "TORCH_CUDA_ARCH_LIST": "8.0;9.0",
            "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        }
    tmp = home / "tmp" / "nix-shell.Xk29Qf"  # nix develop's TMPDIR, alive while the shell is
    tmp.mkdir(parents=True, exist_ok=True)
    store = "/nix/store/8lq4gyvmz0l0a6kq3i2xr1s9p3zd7c5w"
    env = {
        **common, "PATH": f"{store}-uv-0.9.7/bin:{store}-git-2.47.1/bin:{path}",
        "USER": "dana", "LOGNAME": "dana", "SHELL": "/run/current-system/sw/bin/zsh",
        "TERM": "xterm-kitty", "COLORTERM": "truecolor", "SHLVL": "2", "LANG": "en_US.UTF-8",
        "LOCALE_ARCHIVE": "/run/current-system/sw/lib/locale/locale-archive",
        "TMPDIR": str(tmp), "XDG_RUNTIME_DIR": "/run/user/1000", "XDG_SESSION_TYPE": "wayland",
        "WAYLAND_DISPLAY": "wayland-1", "EDITOR": "hx", "PAGER": "less -R",
        "SSH_AUTH_SOCK": "/run/user/1000/gnupg/S.gpg-agent.ssh",
        "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus",
        "IN_NIX_SHELL": "impure", "name": "nix-shell-env", "SOURCE_DATE_EPOCH": "315532800",
        "NIX_PATH": "nixpkgs=flake:nixpkgs", "NIX_STORE": "/nix/store",
        "NIX_SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt", "NIX_BUILD_CORES": "0",
        "NIX_CC": f"{store}-gcc-wrapper-13.3.0", "NIX_ENFORCE_NO_NATIVE": "1",
        "DIRENV_DIR": "-/home/dana/src/ml", "DIRENV_FILE": "/home/dana/src/ml/.envrc",
        "DIRENV_WATCHES": "eJx0zrEKwjAQBuB3ydwhN5mm7", "DIRENV_DIFF": "eJzsvWmT4zaWKPpXGPWhx3a7",
        "UV": f"{store}-uv-0.9.7/bin/uv", "UV_PYTHON": "3.11", "UV_RUN_RECURSION_DEPTH": "1",
        "UV_CACHE_DIR": str(home / ".cache" / "uv"),
        "CUDA_HOME": f"{store}-cuda-merged-12.8", "CUDA_PATH": f"{store}-cuda-merged-12.8",
        "TORCH_CUDA_ARCH_LIST": "8.9", "NCCL_P2P_DISABLE": "1",
        "PYTORCH_CUDA_ALLOC_CONF": "garbage_collection_threshold:0.8",
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "HF_HUB_ENABLE_HF_TRANSFER": "0",
        "HF_TOKEN": "hf_qWc4RzT8yLm2NvXb6KpJd9FhGs3Ue7Ao1Z", "TOKENIZERS_PARALLELISM": "true",
        "WANDB_MODE": "offline",
    }
    if venv:
        env["VIRTUAL_ENV"] = venv
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "nix", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the Nix dev shell (``bad_in="nix"``) or from the Ray job (``"ray"``)."""
    ray = ray_or_nix_shell(0, d / "home" / "ray")
    nix = ray_or_nix_shell(1, d / "home" / "dana", venv)
    first, second = (ray, nix) if bad_in == "nix" else (nix, ray)
    return {**first, **(good or {})}, {**second, **(bad or {})}


def _corpus_venv(py: str) -> str:
    """The corpus interpreter's environment (what ``uv run`` reports as ``VIRTUAL_ENV``)."""
    return str(Path(py).parent.parent)


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


def _run_py(py: str, code: str, *args: str, cwd: Path | None = None) -> None:
    """Run ``code`` in the corpus interpreter (to build data or a model); Unavailable if it
    fails."""
    res = subprocess.run([py, "-c", code, *args], capture_output=True, text=True, check=False,
                         cwd=cwd)
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


CHURN_TRAIN = """
    \"\"\"Train the churn classifier (an MLP with BatchNorm over account features) with DDP
    over gloo; settings in configs/train.yaml. Rank 0 prints the loss of each epoch (averaged
    over the ranks) and the holdout recall and precision.\"\"\"
    import argparse
    import datetime

    import numpy as np
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP


    def accounts(n=3000, seed=21):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, 10, generator=g)
        logit = 1.4 * x[:, 0] - 0.9 * x[:, 1] + 0.6 * x[:, 2] * x[:, 3] - 1.6
        y = (torch.rand(n, generator=g) < torch.sigmoid(logit)).float()
        return x, y


    def mean_over_ranks(value):
        t = torch.tensor([value])
        dist.all_reduce(t)
        return t.item() / dist.get_world_size()


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--epochs", type=int, default=3)
        p.add_argument("--sync-bn", action="store_true",
                       help="synchronise the BatchNorm statistics across the ranks")
        p.add_argument("--holdout", default=None,
                       help="CSV of labelled accounts to evaluate on (default: the last 600)")
        a = p.parse_args()
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
        rank, world = dist.get_rank(), dist.get_world_size()
        with open("configs/train.yaml") as f:
            cfg = yaml.safe_load(f)
        torch.manual_seed(0)
        hidden = cfg["hidden"]
        net = torch.nn.Sequential(torch.nn.Linear(10, hidden), torch.nn.BatchNorm1d(hidden),
                                  torch.nn.ReLU(), torch.nn.Linear(hidden, 1))
        if a.sync_bn:
            net = torch.nn.SyncBatchNorm.convert_sync_batchnorm(net)
        model = DDP(net)
        opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
        x, y = accounts()
        xs, ys = x[:2400][rank::world], y[:2400][rank::world]
        pos_weight = torch.tensor(float(cfg["pos_weight"]))
        size = cfg["batch_size"]
        for epoch in range(a.epochs):
            total, batches = 0.0, 0
            for i in range(0, len(xs), size):
                out = model(xs[i:i + size]).squeeze(-1)
                loss = F.binary_cross_entropy_with_logits(out, ys[i:i + size],
                                                          pos_weight=pos_weight)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total, batches = total + loss.item(), batches + 1
            epoch_loss = mean_over_ranks(total / batches)
            if rank == 0:
                print(f"epoch={epoch} loss={epoch_loss:.5f}")
        if a.holdout:
            table = np.loadtxt(a.holdout, delimiter=",", skiprows=1, dtype=np.float32)
            xh, yh = torch.from_numpy(table[:, :10]), torch.from_numpy(table[:, 10])
        else:
            xh, yh = x[2400:], y[2400:]
        model.eval()
        with torch.no_grad():
            pred = (model.module(xh).squeeze(-1) > 0).float()
        hits = (pred * yh).sum().item()
        if rank == 0:
            print(f"holdout_recall={hits / max(yh.sum().item(), 1):.4f} "
                  f"holdout_precision={hits / max(pred.sum().item(), 1):.4f}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

CHURN_YAML = "# churn classifier\nhidden: 32\nlr: 0.01\nbatch_size: 50\npos_weight: 1.0\n"


def _churn_repo(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml", "numpy")
    return py, _repo(d / "churn-ddp", {
        "train.py": CHURN_TRAIN, "configs/train.yaml": CHURN_YAML,
        "data/holdout.csv.dvc": "outs:\n- md5: 4c1f0e2b9a7d3e5f6a8b0c2d4e6f8a1b\n"
                                "  size: 48211\n  path: holdout.csv\n",
        "data/.gitignore": "/holdout.csv\n", ".gitignore": "__pycache__/\n"})


def sync_bn_option_from_gpu_job(d: Path) -> Incident:
    """Job against job. The Ray job's entrypoint was copied from the GPU cluster's job spec
    and passes ``--sync-bn``; on CPU modules DDP refuses SyncBatchNorm at once ("SyncBatchNorm
    layers only work with GPU modules"). From the dev shell the job runs without it. Kind:
    fail."""
    py, repo = _churn_repo(d)
    good, bad = _shells(d, bad_in="ray", venv=_corpus_venv(py))
    return _incident(sync_bn_option_from_gpu_job,
                     Launch(_torchrun_job(py, "train.py"), good, repo),
                     Launch(_torchrun_job(py, "train.py", "--sync-bn"), bad, repo),
                     ("command", "--sync-bn"))


def pos_weight_edit_metric_job(d: Path) -> Incident:
    """Job against job. Between the jobs configs/train.yaml (in git) got ``pos_weight: 3.0``,
    not committed, to try to lift the recall of churners. Both jobs finish; the losses, the
    holdout recall and precision move. Kind: metric."""
    py, repo = _churn_repo(d)

    def edit() -> None:
        (repo / "configs" / "train.yaml").write_text(
            CHURN_YAML.replace("pos_weight: 1.0", "pos_weight: 3.0"))

    good, bad = _shells(d, venv=_corpus_venv(py))
    argv = _torchrun_job(py, "train.py")
    return _incident(pos_weight_edit_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "churn-ddp: configs/train.yaml"),
                     between=edit)


def grad_clip_key_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs evaluate on data/holdout.csv, tracked by DVC and
    never pulled in either checkout: the first trains, then stops at the holdout
    (FileNotFoundError). Between the jobs train.py got gradient clipping, not committed, that
    reads ``cfg["max_grad_norm"]``, a key nobody added to configs/train.yaml: every rank stops
    at its first step (KeyError: 'max_grad_norm'). Kind: both-fail."""
    py, repo = _churn_repo(d)

    def edit() -> None:
        _write(repo / "train.py", CHURN_TRAIN.replace(
            "                loss.backward()\n",
            "                loss.backward()\n"
            "                torch.nn.utils.clip_grad_norm_(model.parameters(),\n"
            "                                               cfg[\"max_grad_norm\"])\n"))

    good, bad = _shells(d, venv=_corpus_venv(py))
    argv = _torchrun_job(py, "train.py", "--holdout", "data/holdout.csv")
    return _incident(grad_clip_key_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "churn-ddp: train.py"), between=edit)


def churn_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the Ray job and from the dev shell:
    each job has its own rendezvous, run id and rank processes, the shells their own Ray,
    KubeRay, Nix, direnv, NCCL_*, TORCH_*, CUDA_* and HF_* variables. Nothing planted. Kind:
    noise."""
    py, repo = _churn_repo(d)
    good, bad = _shells(d, venv=_corpus_venv(py))
    argv = _torchrun_job(py, "train.py")
    return _incident(churn_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- the c10d store, engines


SCORE_SHARDS = """
    \"\"\"Score this week's accounts, one shard per process. It joins a process group
    (env://: MASTER_ADDR, MASTER_PORT) so that the same script shards the accounts under
    torchrun; started alone it is rank 0 of 1.\"\"\"
    import datetime
    import os

    import torch
    import torch.distributed as dist


    def main():
        rank = int(os.environ.get("RANK", "0"))
        world = int(os.environ.get("WORLD_SIZE", "1"))
        dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=5))
        g = torch.Generator().manual_seed(4)
        accounts = torch.randn(900, 10, generator=g)[rank::world]
        torch.manual_seed(0)
        scorer = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(),
                                     torch.nn.Linear(16, 1))
        with torch.no_grad():
            risk = torch.sigmoid(scorer(accounts)).squeeze(-1)
        flagged = (risk > 0.5).sum().reshape(1).float()
        dist.all_reduce(flagged)
        print(f"scored={len(risk)} flagged={int(flagged.item())} mean_risk={risk.mean():.5f}")
        torch.save(risk, f"risk-{rank}.pt")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """


def agent_store_var_copied(d: Path) -> Incident:
    """To reproduce rank 0 of a torchrun job alone, the engineer pasted that worker's
    environment dump into the Ray job's ``runtime_env`` ``env_vars``, with
    ``TORCHELASTIC_USE_AGENT_STORE=True`` (and the other ``TORCHELASTIC_*`` variables) in it:
    init_process_group then connects to the elastic agent's store as a client instead of
    hosting the TCPStore, and there is no agent ("The client socket has timed out ... while
    trying to connect to (127.0.0.1, PORT)"). From the dev shell rank 0 hosts its store. Kind:
    fail."""
    py = python_with("torch")
    repo = _repo(d / "churn-scoring", {"score_shards.py": SCORE_SHARDS,
                                       ".gitignore": "risk-*.pt\n"})
    dump = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()), "RANK": "0",
            "WORLD_SIZE": "1", "LOCAL_RANK": "0", "TORCHELASTIC_RUN_ID": "none",
            "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
            "TORCHELASTIC_USE_AGENT_STORE": "True"}
    good, bad = _shells(d, {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port())},
                        dump, bad_in="ray", venv=_corpus_venv(py))
    argv = (py, "score_shards.py")
    return _incident(agent_store_var_copied, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("env", "TORCHELASTIC_USE_AGENT_STORE"))


EMBED_SERVER = """
    \"\"\"The embedding server: a front end (rank 0) and a shard server (rank 1) over
    TensorPipe RPC; the front end looks up a batch of ids remotely and reports the mean norm
    of what came back.\"\"\"
    import argparse

    import torch
    import torch.distributed.rpc as rpc
    import torch.multiprocessing as mp

    TABLE = None


    def lookup(ids):
        return TABLE[ids]


    def serve(rank, port, world):
        global TABLE
        torch.manual_seed(1)
        TABLE = torch.randn(5000, 32)
        options = rpc.TensorPipeRpcBackendOptions(init_method=f"tcp://127.0.0.1:{port}",
                                                  rpc_timeout=30)
        rpc.init_rpc(f"worker{rank}", rank=rank, world_size=world, rpc_backend_options=options)
        if rank == 0:
            ids = torch.arange(0, 5000, 37)
            rows = rpc.rpc_sync("worker1", lookup, args=(ids,))
            print(f"lookups={len(ids)} mean_norm={rows.norm(dim=1).mean():.5f}")
        rpc.shutdown()


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--port", type=int, required=True)
        a = p.parse_args()
        mp.spawn(serve, args=(a.port, 2), nprocs=2)
        print("server stopped cleanly")


    if __name__ == "__main__":
        main()
    """


def embedding_server_noise(d: Path) -> Incident:
    """The RPC embedding server's start, a lookup and its shutdown, the same launch line (the
    same port, one run after the other), from the Ray job and from the dev shell (which
    differ in TP_SOCKET_IFNAME among the rest). Nothing planted. Kind: noise."""
    py = python_with("torch")
    app = _write(d / "embedding-server" / "serve.py", EMBED_SERVER)
    good, bad = _shells(d, venv=_corpus_venv(py))
    argv = (py, "serve.py", "--port", str(_free_port()))
    return _incident(embedding_server_noise, Launch(argv, good, app.parent),
                     Launch(argv, bad, app.parent))


# --------------------------------------------------------------------------- model folders


FAQ_TEXT = "".join(
    f"Q: How do I {verb} my {thing}? A: Open {place}, select the {thing} and press {verb}. "
    f"Your {thing} is {state} within a minute. "
    for verb, state in (("pause", "paused"), ("renew", "renewed"), ("transfer", "moved"),
                        ("close", "closed"))
    for thing, place in (("plan", "Billing"), ("domain", "Domains"), ("mailbox", "Mail"),
                         ("backup", "Storage")))

MAKE_TINY_GPT2 = """
import sys, torch
from transformers import GPT2Config, GPT2LMHeadModel
cfg = GPT2Config(vocab_size=256, n_positions=128, n_embd=32, n_layer=2, n_head=4,
                 bos_token_id=1, eos_token_id=2)
torch.manual_seed(0)
model = GPT2LMHeadModel(cfg)
text = open(sys.argv[2]).read().encode()
ids = torch.tensor([list(text[i:i + 96]) for i in range(0, len(text) - 96, 48)][:32])
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for _ in range(40):
    loss = model(ids, labels=ids).loss
    opt.zero_grad(); loss.backward(); opt.step()
model.save_pretrained(sys.argv[1])
"""

MAKE_TINY_ROUTER = """
import sys, torch
from transformers import BertConfig, BertForSequenceClassification
labels = ["billing", "outage", "account"]
cfg = BertConfig(vocab_size=256, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=64, max_position_embeddings=64, num_labels=3,
                 id2label=dict(enumerate(labels)), label2id={l: i for i, l in enumerate(labels)})
torch.manual_seed(0)
BertForSequenceClassification(cfg).save_pretrained(sys.argv[1])
"""


def _tiny_gpt2(d: Path, name: str) -> tuple[str, Path, Path]:
    """The corpus interpreter, the FAQ text and a tiny GPT-2 trained on it here (outside
    git)."""
    py = python_with("torch", "transformers", "safetensors")
    text = _write(d / "corpora" / "faq.txt", FAQ_TEXT)
    model = d / "models" / name
    if not (model / "model.safetensors").exists():
        _run_py(py, MAKE_TINY_GPT2, str(model), str(text))
    return py, text, model


def _edit_config(model: Path, **fields: object) -> None:
    cfg = json.loads((model / "config.json").read_text())
    cfg.update(fields)
    (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")


ROUTER_FINETUNE = """
    \"\"\"Fine-tune the ticket router (a small BERT, byte tokens) on data/tickets.tsv and print
    the training accuracy.\"\"\"
    import argparse

    import torch
    from transformers import AutoModelForSequenceClassification


    def encode(texts, length=48):
        rows = [list(t.encode()[:length]) for t in texts]
        ids = torch.tensor([r + [0] * (length - len(r)) for r in rows])
        return ids, (ids != 0).long()


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--epochs", type=int, default=6)
        a = p.parse_args()
        model = AutoModelForSequenceClassification.from_pretrained(a.model_path)
        rows = [line.rstrip("\\n").split("\\t") for line in open("data/tickets.tsv")]
        labels = torch.tensor([model.config.label2id[r[0]] for r in rows])
        ids, mask = encode([r[1] for r in rows])
        opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
        torch.manual_seed(0)
        for _ in range(a.epochs):
            for i in range(0, len(rows), 8):
                out = model(input_ids=ids[i:i + 8], attention_mask=mask[i:i + 8],
                            labels=labels[i:i + 8])
                opt.zero_grad()
                out.loss.backward()
                opt.step()
        model.eval()
        with torch.no_grad():
            pred = model(input_ids=ids, attention_mask=mask).logits.argmax(-1)
        print(f"tickets={len(rows)} train_loss={out.loss.item():.4f} "
              f"accuracy={(pred == labels).float().mean().item():.4f}")


    if __name__ == "__main__":
        main()
    """

TICKETS = "".join(f"{label}\t{text}\n" for label, texts in {
    "billing": ["charged twice for the same plan", "invoice total looks wrong",
                "refund for the cancelled domain", "card declined on renewal"],
    "outage": ["site is down since noon", "mail server not responding",
               "dns changes never propagate", "backup job failed overnight"],
    "account": ["cannot log in to the panel", "reset my two factor device",
                "change the owner of the account", "add a second admin user"],
}.items() for text in texts * 2)


def problem_type_multilabel_copied(d: Path) -> Incident:
    """The router's config.json (the model folder, outside git) got ``"problem_type":
    "multi_label_classification"`` copied from the ticket tagger's config when both were
    regenerated; with one integer label per ticket the loss becomes BCE and refuses the
    labels' shape ("Target size (torch.Size([8])) must be the same as input size
    (torch.Size([8, 3]))"). Kind: fail."""
    py = python_with("torch", "transformers", "safetensors")
    repo = _repo(d / "ticket-router", {"finetune.py": ROUTER_FINETUNE,
                                       "data/tickets.tsv": TICKETS})
    model = d / "models" / "ticket-router-bert"
    if not (model / "model.safetensors").exists():
        _run_py(py, MAKE_TINY_ROUTER, str(model))
    _edit_config(model, problem_type="single_label_classification")

    def copied() -> None:
        _edit_config(model, problem_type="multi_label_classification")

    good, bad = _shells(d, venv=_corpus_venv(py))
    argv = (py, "finetune.py", "--model-path", str(model))
    return _incident(problem_type_multilabel_copied, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: problem_type"),
                     between=copied)


FAQ_EVAL = """
    \"\"\"Perplexity of the FAQ language model on its held-out answers (byte tokens).\"\"\"
    import argparse
    import math

    import torch
    from transformers import AutoModelForCausalLM


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        model = AutoModelForCausalLM.from_pretrained(a.model_path).eval()
        text = open("data/heldout.txt").read().encode()
        ids = torch.tensor([list(text[i:i + 64]) for i in range(0, len(text) - 64, 32)])
        with torch.no_grad():
            loss = model(ids, labels=ids).loss.item()
        print(f"passages={len(ids)} eval_loss={loss:.4f} perplexity={math.exp(loss):.3f}")


    if __name__ == "__main__":
        main()
    """

HELDOUT = ("Q: How do I renew my mailbox? A: Open Mail, select the mailbox and press renew. "
           "Your mailbox is renewed within a minute. Q: How do I pause my backup? A: Open "
           "Storage, select the backup and press pause. Your backup is paused within a "
           "minute. ") * 3


def scale_attn_weights_copied_metric(d: Path) -> Incident:
    """The FAQ model's config.json (outside git) was rewritten by an old conversion script
    that writes ``"scale_attn_weights": false``; the weights still load and the attention
    scores lose their 1/sqrt(d) scale. Both runs exit 0; the perplexity moves. Kind:
    metric."""
    py, _, model = _tiny_gpt2(d, "faq-gpt2-tiny")
    _edit_config(model, scale_attn_weights=True)
    repo = _repo(d / "faq-eval", {"eval_ppl.py": FAQ_EVAL, "data/heldout.txt": HELDOUT})

    def converted() -> None:
        _edit_config(model, scale_attn_weights=False)

    good, bad = _shells(d, venv=_corpus_venv(py))
    argv = (py, "eval_ppl.py", "--model-path", str(model))
    return _incident(scale_attn_weights_copied_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: scale_attn_weights"),
                     between=converted)


LORA_TUNE = """
    \"\"\"LoRA-tune the FAQ model on the new answers (peft) and print the loss.\"\"\"
    import argparse

    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--steps", type=int, default=20)
        a = p.parse_args()
        model = AutoModelForCausalLM.from_pretrained(a.model_path)
        model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"],
                                                 fan_in_fan_out=True))
        text = open("data/new_answers.txt").read().encode()
        ids = torch.tensor([list(text[i:i + 64]) for i in range(0, len(text) - 64, 32)])
        opt = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=5e-3)
        for _ in range(a.steps):
            loss = model(input_ids=ids, labels=ids).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"lora_loss={loss.item():.4f}")


    if __name__ == "__main__":
        main()
    """


def pythonoptimize_in_ray_image(d: Path) -> Incident:
    """The Ray worker image's Dockerfile sets ``PYTHONOPTIMIZE=2`` ("strip docstrings, save
    memory"): docstrings are gone, and transformers, which builds its model output classes'
    documentation at import, stops there ("No `Args` or `Parameters` section is found in the
    docstring of ..."). The LoRA tune runs from the dev shell. Kind: fail."""
    py, _, model = _tiny_gpt2(d, "faq-gpt2-tiny")
    py = python_with("torch", "transformers", "peft")
    repo = _repo(d / "faq-lora", {"lora_tune.py": LORA_TUNE,
                                  "data/new_answers.txt": HELDOUT.replace("minute", "day")})
    good, bad = _shells(d, {}, {"PYTHONOPTIMIZE": "2"}, bad_in="ray", venv=_corpus_venv(py))
    argv = (py, "lora_tune.py", "--model-path", str(model))
    return _incident(pythonoptimize_in_ray_image, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "PYTHONOPTIMIZE"))


# --------------------------------------------------------------------------- the rest


SCORE_FAQ = """
    \"\"\"Score each FAQ answer by its mean log-probability under the model, in the dtype
    asked for, and write the scores for the review sheet.\"\"\"
    import argparse

    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
        a = p.parse_args()
        dtype = getattr(torch, a.dtype)
        model = AutoModelForCausalLM.from_pretrained(a.model_path, dtype=dtype).eval()
        answers = [line.strip() for line in open("data/answers.txt") if line.strip()]
        scores = []
        with torch.no_grad():
            for text in answers:
                ids = torch.tensor([list(text.encode()[:96])])
                logp = model(ids).logits[0, :-1].log_softmax(-1)
                picked = logp.gather(-1, ids[0, 1:, None]).squeeze(-1)
                scores.append(picked.mean().numpy())
        scores = np.array(scores)
        np.savetxt("scores.txt", scores, fmt="%.5f")
        print(f"answers={len(scores)} mean_logprob={scores.mean():.4f}")


    if __name__ == "__main__":
        main()
    """


def bf16_dtype_before_numpy(d: Path) -> Incident:
    """The dev shell's justfile recipe passes ``--dtype bfloat16`` (copied from the GPU box's
    recipe); the model runs in bf16 and ``.numpy()`` refuses the result ("Got unsupported
    ScalarType BFloat16"). The Ray job's entrypoint keeps float32. Kind: fail."""
    py, _, model = _tiny_gpt2(d, "faq-gpt2-tiny")
    answers = "\n".join(s.strip() + "." for s in FAQ_TEXT.split(".") if s.strip())
    repo = _repo(d / "faq-review", {"score_faq.py": SCORE_FAQ, "data/answers.txt": answers,
                                    ".gitignore": "scores.txt\n"})
    good, bad = _shells(d, venv=_corpus_venv(py))
    argv = (py, "score_faq.py", "--model-path", str(model))
    return _incident(bf16_dtype_before_numpy, Launch(argv, good, repo),
                     Launch((*argv, "--dtype", "bfloat16"), bad, repo), ("command", "--dtype"))


PREDICT = """
    \"\"\"Batch churn predictions with the 2023 model (weights/churn-2023.pt).\"\"\"
    import torch


    def main():
        state = torch.load("weights/churn-2023.pt", map_location="cpu")
        model = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(),
                                    torch.nn.Linear(16, 1))
        model.load_state_dict(state)
        g = torch.Generator().manual_seed(12)
        with torch.no_grad():
            risk = torch.sigmoid(model(torch.randn(500, 10, generator=g))).squeeze(-1)
        print(f"predicted={len(risk)} mean_risk={risk.mean():.5f}")


    if __name__ == "__main__":
        main()
    """

MAKE_LEGACY_CKPT = """
import sys, torch
torch.manual_seed(3)
model = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
torch.save(model.state_dict(), sys.argv[1], _use_new_zipfile_serialization=False)
"""


def mmap_load_edit_legacy_ckpt(d: Path) -> Incident:
    """Between the runs predict.py got ``torch.load(..., mmap=True)`` in an uncommitted edit
    ("loads big checkpoints without copying them"); the 2023 checkpoint was written in the
    legacy (pre-zipfile) format and torch refuses to map it ("mmap can only be used with files
    saved with `torch.save(..., _use_new_zipfile_serialization=True)"). Kind: fail."""
    py = python_with("torch")
    repo = d / "churn-predict"
    if not (repo / ".git").exists():
        (repo / "weights").mkdir(parents=True, exist_ok=True)
        _run_py(py, MAKE_LEGACY_CKPT, str(repo / "weights" / "churn-2023.pt"))
        _repo(repo, {"predict.py": PREDICT})

    def edit() -> None:
        _write(repo / "predict.py", PREDICT.replace('map_location="cpu")',
                                                    'map_location="cpu", mmap=True)'))

    good, bad = _shells(d, venv=_corpus_venv(py))
    argv = (py, "predict.py")
    return _incident(mmap_load_edit_legacy_ckpt, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "churn-predict: predict.py"), between=edit)


TEXTNORM = {
    "1.4.2": '''
        """Text normalisation for search and classification."""
        import re
        import unicodedata

        __version__ = "1.4.2"


        def normalize(text, lowercase=True):
            text = unicodedata.normalize("NFKC", text)
            text = re.sub(r"\\s+", " ", text).strip()
            return text.lower() if lowercase else text
        ''',
    "2.0.0": '''
        """Text normalisation for search and classification. 2.0: ``normalize`` is now
        ``normalize_text`` (the old name was removed after its deprecation in 1.5)."""
        import re
        import unicodedata

        __version__ = "2.0.0"


        def normalize_text(text, *, lowercase=True, form="NFKC"):
            text = unicodedata.normalize(form, text)
            text = re.sub(r"\\s+", " ", text).strip()
            return text.lower() if lowercase else text
        ''',
}

TICKET_CLF = """
    \"\"\"Classify support tickets (TF-IDF and logistic regression) after normalising them
    with textnorm.\"\"\"
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from textnorm import normalize


    def main():
        rows = [line.rstrip("\\n").split("\\t") for line in open("data/tickets.tsv")]
        texts = [normalize(r[1]) for r in rows]
        labels = [r[0] for r in rows]
        vec = TfidfVectorizer()
        clf = LogisticRegression(max_iter=500).fit(vec.fit_transform(texts), labels)
        print(f"tickets={len(rows)} train_accuracy={clf.score(vec.transform(texts), labels):.4f}")


    if __name__ == "__main__":
        main()
    """


def _layered_venv(py: str, where: Path, version: str) -> Path:
    """A venv of the corpus interpreter's Python, layered on its packages (a .pth file), with
    textnorm ``version`` installed in it (as pip would: a dist-info and the package)."""
    vpy = where / "bin" / "python"
    if vpy.exists():
        return vpy
    base = subprocess.check_output([py, "-c", "import sys; print(sys._base_executable)"],
                                   text=True).strip()
    subprocess.run([base, "-m", "venv", "--without-pip", str(where)], check=True)
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(subprocess.check_output([str(vpy), "-c", purelib], text=True).strip())
    shared = subprocess.check_output([py, "-c", purelib], text=True).strip()
    (site / "_shared_env.pth").write_text(shared + "\n")
    _write(site / "textnorm" / "__init__.py", TEXTNORM[version])
    info = site / f"textnorm-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: textnorm\nVersion: {version}\n")
    (info / "INSTALLER").write_text("uv\n" if version.startswith("2") else "pip\n")
    (info / "top_level.txt").write_text("textnorm\n")
    (info / "RECORD").write_text("textnorm/__init__.py,,\n")
    return vpy


def textnorm_major_in_uv_lock(d: Path) -> Incident:
    """The Ray job's ``runtime_env`` installs ``textnorm==1.4.2`` into its own virtualenv
    (over the image's packages); in the dev shell ``uv run`` uses the project's .venv, where
    ``uv lock --upgrade`` moved textnorm to 2.0.0, which renamed ``normalize`` to
    ``normalize_text``: ``from textnorm import normalize`` fails (ImportError, the package's
    path quoted). Both interpreters are venvs over the same Python and packages. Kind:
    fail."""
    py = python_with("sklearn")
    repo = _repo(d / "ticket-clf", {"classify.py": TICKET_CLF, "data/tickets.tsv": TICKETS,
                                    ".gitignore": ".venv/\n",
                                    "pyproject.toml": "[project]\nname = \"ticket-clf\"\n"
                                                      "version = \"0.3.0\"\ndependencies = "
                                                      "[\"scikit-learn\", \"textnorm>=1.4\"]\n"})
    ray_env = d / "ray-runtime-env" / "pip" / "virtualenv"
    ray_py = _layered_venv(py, ray_env, "1.4.2")
    proj = repo / ".venv"
    _layered_venv(py, proj, "2.0.0")
    good, bad = _shells(d, venv=str(proj))
    good = {**good, "VIRTUAL_ENV": str(ray_env), "PATH": f"{ray_env / 'bin'}:{good['PATH']}"}
    bad = {**bad, "PATH": f"{proj / 'bin'}:{bad['PATH']}"}
    return _incident(textnorm_major_in_uv_lock, Launch((str(ray_py), "classify.py"), good, repo),
                     Launch(("python", "classify.py"), bad, repo), ("packages", "textnorm"))


ACCEL_TRAIN = """
    \"\"\"Train the usage-forecast MLP with accelerate (started by ``accelerate launch``) and
    print the validation loss.\"\"\"
    import torch
    import torch.nn.functional as F
    from accelerate import Accelerator
    from torch.utils.data import DataLoader, TensorDataset


    def usage(n=2000, seed=8):
        g = torch.Generator().manual_seed(seed)
        x = torch.rand(n, 12, generator=g) * 4
        y = (x[:, :6].sin().sum(1, keepdim=True) + 0.3 * x[:, 6:].sqrt().sum(1, keepdim=True)
             + 0.05 * torch.randn(n, 1, generator=g))
        return x, y


    def main():
        accelerator = Accelerator()
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(12, 64), torch.nn.GELU(),
                                    torch.nn.Linear(64, 64), torch.nn.GELU(),
                                    torch.nn.Linear(64, 1))
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        x, y = usage()
        loader = DataLoader(TensorDataset(x[:1600], y[:1600]), batch_size=64, shuffle=True,
                            generator=torch.Generator().manual_seed(0))
        model, opt, loader = accelerator.prepare(model, opt, loader)
        for _ in range(5):
            for xb, yb in loader:
                loss = F.mse_loss(model(xb), yb)
                opt.zero_grad()
                accelerator.backward(loss)
                opt.step()
        model.eval()
        with torch.no_grad(), accelerator.autocast():
            val = F.mse_loss(model(x[1600:]).float(), y[1600:]).item()
        accelerator.print(f"mixed_precision={accelerator.mixed_precision} "
                          f"val_mse={val:.5f}")


    if __name__ == "__main__":
        main()
    """

ACCEL_DEFAULT_CONFIG = """\
compute_environment: LOCAL_MACHINE
debug: false
distributed_type: 'NO'
downcast_bf16: 'no'
enable_cpu_affinity: false
machine_rank: 0
main_training_function: main
mixed_precision: bf16
num_machines: 1
num_processes: 1
rdzv_backend: static
same_network: true
tpu_env: []
tpu_use_cluster: false
tpu_use_sudo: false
use_cpu: true
"""


def _accel_repo(d: Path) -> tuple[str, Path, tuple[str, ...]]:
    py = python_with("torch", "accelerate")
    repo = _repo(d / "usage-forecast", {"train.py": ACCEL_TRAIN})
    return py, repo, (py, "-m", "accelerate.commands.launch", "train.py")


def accelerate_default_config_in_home(d: Path) -> Incident:
    """``accelerate config``, answered months ago in the workstation's dev shell, left
    $HF_HOME/accelerate/default_config.yaml (outside git) with ``mixed_precision: bf16``;
    ``accelerate launch`` reads it and the run trains under bf16 autocast. The Ray pod's
    HF_HOME has no such file. Both runs exit 0; the validation loss moves. Kind: metric."""
    py, repo, argv = _accel_repo(d)
    good, bad = _shells(d, venv=_corpus_venv(py))
    cfg = _write(Path(bad["HF_HOME"]) / "accelerate" / "default_config.yaml",
                 ACCEL_DEFAULT_CONFIG)
    return _incident(accelerate_default_config_in_home, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {cfg.resolve()}"))


def accelerate_launch_noise(d: Path) -> Incident:
    """``accelerate launch`` of the usage forecaster from the Ray job and from the dev shell,
    neither home holding an accelerate config (each HF_HOME its own). Nothing planted. Kind:
    noise."""
    py, repo, argv = _accel_repo(d)
    good, bad = _shells(d, venv=_corpus_venv(py))
    return _incident(accelerate_launch_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


ANOMALY_LIGHTNING = """
    \"\"\"Sensor anomaly autoencoder (PyTorch Lightning): seeded with ``seed_everything()``,
    fit, then print the reconstruction error on held-out readings.\"\"\"
    import pytorch_lightning as pl
    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset


    class AutoEncoder(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.enc = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Tanh(),
                                           torch.nn.Linear(8, 3))
            self.dec = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(),
                                           torch.nn.Linear(8, 16))

        def forward(self, x):
            return self.dec(self.enc(x))

        def training_step(self, batch, _):
            (x,) = batch
            return F.mse_loss(self(x), x)

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=1e-2)


    def readings(n=1200):
        g = torch.Generator().manual_seed(30)
        z = torch.randn(n, 3, generator=g)
        mix = torch.randn(3, 16, generator=g)
        return z @ mix + 0.05 * torch.randn(n, 16, generator=g)


    def main():
        seed = pl.seed_everything()
        x = readings()
        model = AutoEncoder()
        trainer = pl.Trainer(max_epochs=3, accelerator="cpu", logger=False,
                             enable_checkpointing=False, enable_model_summary=False,
                             enable_progress_bar=False)
        trainer.fit(model, DataLoader(TensorDataset(x[:1000]), batch_size=50, shuffle=True))
        with torch.no_grad():
            err = F.mse_loss(model(x[1000:]), x[1000:]).item()
        print(f"seed={seed} val_recon={err:.5f}")


    if __name__ == "__main__":
        main()
    """


def pl_global_seed_from_tune_driver(d: Path) -> Incident:
    """The Ray job was submitted from a Ray Tune driver script that had called
    ``seed_everything(1234)``, which exports ``PL_GLOBAL_SEED=1234``; the variable reached the
    job's entrypoint, and the autoencoder's ``seed_everything()`` (no argument: 0 unless that
    variable says otherwise) takes 1234. Both runs exit 0; the reconstruction error moves. The
    dev shell has no such variable. Kind: metric."""
    py = python_with("torch", "pytorch_lightning")
    repo = _repo(d / "sensor-anomaly", {"train.py": ANOMALY_LIGHTNING})
    good, bad = _shells(d, {}, {"PL_GLOBAL_SEED": "1234"}, bad_in="ray", venv=_corpus_venv(py))
    argv = (py, "train.py")
    return _incident(pl_global_seed_from_tune_driver, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "PL_GLOBAL_SEED"))


CHURN_SKLEARN = """
    \"\"\"Churn baseline (gradient boosting): split off a validation set, fit, and log the
    validation AUC to the team's MLflow server.\"\"\"
    import argparse

    import mlflow
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--val-fraction", type=float, default=0.2)
        a = p.parse_args()
        rng = np.random.default_rng(17)
        x = rng.normal(size=(2000, 8))
        y = (x[:, 0] - 0.7 * x[:, 1] + 0.5 * x[:, 2] * x[:, 3]
             + rng.normal(0, 0.8, 2000) > 0.4).astype(int)
        xtr, xva, ytr, yva = train_test_split(x, y, test_size=a.val_fraction, random_state=0)
        clf = HistGradientBoostingClassifier(max_iter=60, random_state=0).fit(xtr, ytr)
        auc = roc_auc_score(yva, clf.predict_proba(xva)[:, 1])
        print(f"val_auc={auc:.4f}")
        mlflow.set_experiment("churn-baseline")
        with mlflow.start_run():
            mlflow.log_param("val_fraction", a.val_fraction)
            mlflow.log_metric("val_auc", auc)


    if __name__ == "__main__":
        main()
    """


def val_fraction_zero_both_fail(d: Path) -> Incident:
    """Both runs log to the team's MLflow server through a port-forward
    (MLFLOW_TRACKING_URI=http://127.0.0.1:PORT) that nobody started: the Ray job fits, prints
    its AUC and stops at the logging (connection refused). The dev shell's justfile recipe
    passes ``--val-fraction 0`` ("train on everything for the final model"), and
    train_test_split refuses at once, quoting ``test_size=0.0``. Kind: both-fail."""
    py = python_with("sklearn", "mlflow")
    repo = _repo(d / "churn-baseline", {"baseline.py": CHURN_SKLEARN})
    mlflow_env = {"MLFLOW_TRACKING_URI": f"http://127.0.0.1:{_free_port()}",
                  "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}
    good, bad = _shells(d, mlflow_env, mlflow_env, venv=_corpus_venv(py))
    argv = (py, "baseline.py")
    return _incident(val_fraction_zero_both_fail, Launch(argv, good, repo),
                     Launch((*argv, "--val-fraction", "0"), bad, repo),
                     ("command", "--val-fraction"))


#: The tenth fresh batch, in the order it was written. Never tuned on.
FRESH10 = [
    sync_bn_option_from_gpu_job, pos_weight_edit_metric_job, grad_clip_key_both_fail_job,
    churn_job_noise, agent_store_var_copied, embedding_server_noise,
    problem_type_multilabel_copied, scale_attn_weights_copied_metric,
    pythonoptimize_in_ray_image, bf16_dtype_before_numpy, mmap_load_edit_legacy_ckpt,
    textnorm_major_in_uv_lock, accelerate_default_config_in_home, accelerate_launch_noise,
    pl_global_seed_from_tune_driver, val_fraction_zero_both_fail,
]

if __name__ == "__main__":  # build one incident and print its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH10 if b.__name__ in sys.argv[1:]] or FRESH10
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh10-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
