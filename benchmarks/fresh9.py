"""A ninth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh.py ... fresh8.py, for their format), how they are run
and scored (benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot reference
(docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job captures
one snapshot per rank. They form the corpus's ``fresh9`` half; report it, never change the
ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank): an auxiliary head switched on in
  the model config (uncommitted) whose output no loss uses, so DDP's reducer stops at the second
  step; ``device_ids=[local_rank]`` pasted from the GPU version of the script (uncommitted) on
  top of a ``gs://`` output that this image cannot write (both fail); a git-ignored personal
  override file (OmegaConf) left in the Colab checkout (the loss moves); and the same job from
  both shells (noise);
- engines and the c10d store: a ``MASTER_PORT`` that names the port the Colab runtime's own
  server already holds (the TCPStore cannot listen); a ``--max-model-len`` copied from the 8B
  model's launch line past the tiny model's positions; the engine's start from both shells
  (noise);
- model folders (transformers; tiny models trained at build time): a ``quantization_config``
  copied from the 4-bit variant's config.json, a ``sliding_window`` copied from a Mistral
  release config (perplexity moves), and ``--attn-implementation flash_attention_2`` from the
  GPU DAG on top of a results service that is down (both fail);
- the rest: PyTorch Lightning resuming ``ckpt_path="last"`` from a wider experiment's checkpoint
  left in the Colab checkout, ``--precision 16-mixed`` that Lightning turns into bf16 on the CPU
  (the metric moves), Lightning's fit from both shells (noise), ``padding=True`` dropped from a
  tokenizer call in an uncommitted edit, ``PYTHONSAFEPATH=1`` in the Airflow image (the
  script's own folder leaves ``sys.path``), and pandas 3's copy-on-write silently ignoring a
  chained assignment that pandas 2 (the Colab venv) honoured.

The shells are :func:`dag_or_colab_shell`: shell 0 an Apache Airflow task (a BashOperator on a
Celery worker of the official image: ``AIRFLOW_CTX_*``, ``AIRFLOW__*`` settings, ``PIP_USER``,
``DUMB_INIT_SETSID``, the DAG's ``env=`` block), shell 1 a terminal of a Google Colab runtime
(root, ``COLAB_*``, ``KMP_*``, ``TBE_*``, ``CLOUDSDK_*``, ``MPLBACKEND``, the NVIDIA image's
variables, Kaggle credentials a notebook cell exported); each with the tuning variables its own
setup exports (``NCCL_*``, ``TORCH_*``, ``HF_*``, ``CUDA_*``, ``TOKENIZERS_*``) that change
nothing here; the thread counts that change float reductions are pinned alike. The planted
side is either: some incidents work in the notebook and fail in the DAG, others the reverse.

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

#: Sockets that stand for services already listening on the machine (held for the process).
_HELD: list[socket.socket] = []


def dag_or_colab_shell(n: int, home: Path) -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 an Airflow
    task on a Celery worker, 1 a Google Colab terminal; each with the tuning variables its own
    setup exports."""
    home.mkdir(parents=True, exist_ok=True)
    common = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home),
              "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2",
              "HF_HOME": str(home / ".cache" / "huggingface")}
    if n % 2 == 0:  # BashOperator(env={...}, append_env=True) on the official Airflow image
        return {
            **common, "USER": "airflow", "LOGNAME": "airflow", "HOSTNAME": "airflow-worker-1",
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "SHLVL": "0", "PYTHONUNBUFFERED": "1",
            "AIRFLOW_HOME": "/opt/airflow", "AIRFLOW_UID": "50000", "AIRFLOW_VERSION": "2.10.4",
            "AIRFLOW_USER_HOME_DIR": "/home/airflow", "PIP_USER": "true",
            "DUMB_INIT_SETSID": "1", "PYTHON_BASE_IMAGE": "python:3.11-slim-bookworm",
            "GUNICORN_CMD_ARGS": "--worker-tmp-dir /dev/shm",
            "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
            "AIRFLOW__CORE__LOAD_EXAMPLES": "false",
            "AIRFLOW__CELERY__BROKER_URL": "redis://:Qm7vXw2LpR9sTz4K@airflow-redis:6379/0",
            "AIRFLOW_CTX_DAG_OWNER": "ml-platform", "AIRFLOW_CTX_DAG_ID": "nightly_models",
            "AIRFLOW_CTX_TASK_ID": "train", "AIRFLOW_CTX_TRY_NUMBER": "1",
            "AIRFLOW_CTX_EXECUTION_DATE": "2026-12-05T02:00:00+00:00",
            "AIRFLOW_CTX_DAG_RUN_ID": "scheduled__2026-12-05T02:00:00+00:00",
            "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
            "TRANSFORMERS_VERBOSITY": "warning", "TOKENIZERS_PARALLELISM": "false",
            "NCCL_DEBUG": "WARN", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_ASYNC_ERROR_HANDLING": "1",
            "TORCH_NCCL_BLOCKING_WAIT": "1",
            "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "MALLOC_ARENA_MAX": "2",
        }
    return {  # a terminal of a Colab Pro runtime (root, the runtime's own variables)
        **common, "HOSTNAME": "9f3c1d7e2a4b", "SHELL": "/bin/bash", "TERM": "xterm-256color",
        "LANG": "en_US.UTF-8", "SHLVL": "1", "ENV": str(home / ".bashrc"),
        "PWD": "/content", "OLDPWD": "/content/drive/MyDrive",
        "COLAB_GPU": "1", "COLAB_BACKEND_VERSION": "next",
        "COLAB_RELEASE_TAG": "release-colab_20261201-060057_RC00",
        "COLAB_JUPYTER_IP": "172.28.0.12", "COLAB_JUPYTER_TRANSPORT": "ipc",
        "COLAB_KERNEL_MANAGER_PROXY_HOST": "172.28.0.12",
        "COLAB_KERNEL_MANAGER_PROXY_PORT": "6000",
        "COLAB_LANGUAGE_SERVER_PROXY": "/usr/colab/bin/language_service",
        "KMP_LISTEN_PORT": "6000", "KMP_TARGET_PORT": "9000",
        "KMP_EXTRA_ARGS": "--logtostderr --listen_host=172.28.0.12 --target_host=172.28.0.12",
        "TBE_CREDS_ADDR": "172.28.0.1:8008", "TBE_EPHEM_CREDS_ADDR": "172.28.0.1:8009",
        "TBE_RUNTIME_ADDR": "172.28.0.1:8011", "USE_AUTH_EPHEM": "1",
        "CLOUDSDK_CONFIG": "/content/.config", "CLOUDSDK_PYTHON": "python3",
        "GCE_METADATA_TIMEOUT": "3", "NO_GCE_CHECK": "False",
        "GCS_READ_CACHE_BLOCK_SIZE_MB": "16", "ENABLE_DIRECTORYPREFETCHER": "1",
        "TF_FORCE_GPU_ALLOW_GROWTH": "true", "TF_CPP_MIN_LOG_LEVEL": "1",
        "PYTHONWARNINGS": "ignore:::pip._internal.cli.base_command",
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        "CLICOLOR": "1", "PAGER": "cat", "GIT_PAGER": "cat", "JPY_PARENT_PID": "98",
        "PYDEVD_USE_FRAME_EVAL": "NO", "DEBIAN_FRONTEND": "noninteractive",
        "NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        "NV_CUDA_LIB_VERSION": "12.5.1-1", "CUDA_VERSION": "12.5.1",
        "LD_LIBRARY_PATH": "/usr/local/nvidia/lib:/usr/local/nvidia/lib64",
        "LIBRARY_PATH": "/usr/local/cuda/lib64/stubs",
        "KAGGLE_USERNAME": "amira-k", "KAGGLE_KEY": "3f9d2c7ab41e8f06d5c2b9e7a1f40c68",
        "HF_HUB_ENABLE_HF_TRANSFER": "1", "TOKENIZERS_PARALLELISM": "true",
        "CUDA_MODULE_LOADING": "LAZY", "TORCH_CUDNN_V8_API_ENABLED": "1",
        "TORCHINDUCTOR_CACHE_DIR": "/content/inductor-cache", "NCCL_P2P_DISABLE": "1",
    }


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "colab") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one
    from the Colab terminal (``bad_in="colab"``) or from the Airflow task (``"airflow"``)."""
    airflow = dag_or_colab_shell(0, d / "home" / "airflow")
    colab = dag_or_colab_shell(1, d / "home" / "root")
    first, second = (airflow, colab) if bad_in == "colab" else (colab, airflow)
    return {**first, **(good or {})}, {**second, **(bad or {})}


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


def _held_port() -> int:
    """A port something already listens on, for as long as this process lives (a service of
    the machine: the runtime's own server)."""
    s = socket.socket()
    s.bind(("0.0.0.0", 0))
    s.listen(8)
    _HELD.append(s)
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


RANKER_TRAIN = """
    \"\"\"Train the listing ranker with DDP over gloo: a click score, and an optional head
    that predicts the listing's category (configs/model.yaml). Rank 0 writes the weights to
    --out, a local path or an fsspec URL.\"\"\"
    import argparse
    import datetime

    import fsspec
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP


    class Ranker(torch.nn.Module):
        def __init__(self, n_features, hidden, aux_head, n_categories=3):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Linear(n_features, hidden), torch.nn.ReLU())
            self.score = torch.nn.Linear(hidden, 1)
            self.category = torch.nn.Linear(hidden, n_categories) if aux_head else None

        def forward(self, x):
            h = self.body(x)
            category = self.category(h) if self.category is not None else None
            return self.score(h).squeeze(-1), category


    def listings(n=2048, seed=5):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, 12, generator=g)
        clicked = ((x[:, 0] + 0.5 * x[:, 1] - x[:, 2] + 0.3 * torch.randn(n, generator=g)) > 0)
        category = (x[:, 3] > 0).long() + (x[:, 4] > 0).long()
        return x, clicked.float(), category


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--epochs", type=int, default=2)
        p.add_argument("--batch-size", type=int, default=64)
        p.add_argument("--out", default="checkpoints/ranker.pt")
        a = p.parse_args()
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
        rank, world = dist.get_rank(), dist.get_world_size()
        with open("configs/model.yaml") as f:
            cfg = yaml.safe_load(f)
        torch.manual_seed(0)
        model = DDP(Ranker(12, cfg["hidden"], cfg["aux_head"]))
        opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
        x, y, cat = listings()
        xs, ys, cs = x[rank::world], y[rank::world], cat[rank::world]
        for _ in range(a.epochs):
            for i in range(0, len(xs), a.batch_size):
                score, category = model(xs[i:i + a.batch_size])
                loss = F.binary_cross_entropy_with_logits(score, ys[i:i + a.batch_size])
                if category is not None and cfg["aux_weight"] > 0:
                    loss = loss + cfg["aux_weight"] * F.cross_entropy(category,
                                                                      cs[i:i + a.batch_size])
                opt.zero_grad()
                loss.backward()
                opt.step()
        with torch.no_grad():
            score, _ = model.module(x)
            accuracy = ((score > 0).float() == y).float().mean().item()
        if rank == 0:
            print(f"world_size={world} train_loss={loss.item():.5f} accuracy={accuracy:.4f}")
            with fsspec.open(a.out, "wb") as f:
                torch.save(model.module.state_dict(), f)
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

RANKER_MODEL_YAML = ("# listing ranker\nhidden: 32\n# category head (multi-task); its loss "
                     "weight is aux_weight\naux_head: false\naux_weight: 0.0\nlr: 0.003\n")


def _ranker_repo(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml", "fsspec")
    return py, _repo(d / "listing-ranker", {
        "train.py": RANKER_TRAIN, "configs/model.yaml": RANKER_MODEL_YAML,
        "checkpoints/.gitkeep": "", ".gitignore": "checkpoints/*.pt\n__pycache__/\n"})


def aux_head_unused_job(d: Path) -> Incident:
    """Job against job. Between the jobs configs/model.yaml (in git) got ``aux_head: true``,
    not committed, ahead of a multi-task experiment whose ``aux_weight`` is still 0: the
    category head's parameters get no gradient, and DDP's reducer stops at the second step
    ("Expected to have finished reduction in the prior iteration ... find_unused_parameters").
    The notebook ran it first; the DAG's job fails. Kind: fail."""
    py, repo = _ranker_repo(d)

    def edit() -> None:
        (repo / "configs" / "model.yaml").write_text(
            RANKER_MODEL_YAML.replace("aux_head: false", "aux_head: true"))

    good, bad = _shells(d, bad_in="airflow")
    argv = _torchrun_job(py, "train.py")
    return _incident(aux_head_unused_job, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("git", "listing-ranker: configs/model.yaml"), between=edit)


def device_ids_pasted_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs write the weights to ``gs://`` as the
    production DAG does, and this image has no gcsfs: the first trains and stops at the write
    ("Install gcsfs to access Google Storage"). Between the jobs train.py got
    ``DDP(..., device_ids=[local_rank])`` pasted from the GPU version of the script (not
    committed); on CPU modules DDP refuses it at once ("device_ids and output_device arguments
    only work with single-device/multiple-device GPU modules"). Kind: both-fail."""
    py, repo = _ranker_repo(d)

    def edit() -> None:
        _write(repo / "train.py", RANKER_TRAIN.replace(
            'model = DDP(Ranker(12, cfg["hidden"], cfg["aux_head"]))',
            'model = DDP(Ranker(12, cfg["hidden"], cfg["aux_head"]),\n'
            '                    device_ids=[int(os.environ["LOCAL_RANK"])])').replace(
            "import datetime\n", "import datetime\n    import os\n"))

    good, bad = _shells(d)
    argv = _torchrun_job(py, "train.py", "--out", "gs://acme-ml-artifacts/listing-ranker/ranker.pt")
    return _incident(device_ids_pasted_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "listing-ranker: train.py"), between=edit)


DEMAND_TRAIN = """
    \"\"\"Pretrain the demand encoder with DDP over gloo. Settings: configs/train.yaml, then
    configs/local.yaml over it when present (personal overrides, git-ignored).\"\"\"
    import datetime
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from omegaconf import OmegaConf
    from torch.nn.parallel import DistributedDataParallel as DDP


    def settings():
        cfg = OmegaConf.load("configs/train.yaml")
        if os.path.exists("configs/local.yaml"):
            cfg = OmegaConf.merge(cfg, OmegaConf.load("configs/local.yaml"))
        return cfg


    def weeks(n=1536, seed=11):
        g = torch.Generator().manual_seed(seed)
        t = torch.arange(24, dtype=torch.float32)
        phase = torch.rand(n, 1, generator=g) * 6.28
        level = torch.rand(n, 1, generator=g) * 3
        return level + torch.sin(t / 3.8 + phase) + 0.1 * torch.randn(n, 24, generator=g)


    def main():
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
        rank, world = dist.get_rank(), dist.get_world_size()
        cfg = settings()
        torch.manual_seed(cfg.seed)
        model = DDP(torch.nn.Sequential(torch.nn.Linear(18, cfg.model.hidden), torch.nn.Tanh(),
                                        torch.nn.Linear(cfg.model.hidden, 6)))
        opt = torch.optim.SGD(model.parameters(), lr=cfg.optim.lr, momentum=cfg.optim.momentum)
        series = weeks()[rank::world]
        for _ in range(cfg.epochs):
            for batch in series.split(cfg.batch_size):
                loss = F.mse_loss(model(batch[:, :18]), batch[:, 18:])
                opt.zero_grad()
                loss.backward()
                opt.step()
        with torch.no_grad():
            held = weeks(256, seed=12)
            val = F.mse_loss(model.module(held[:, :18]), held[:, 18:]).item()
        if rank == 0:
            print(f"world_size={world} train_loss={loss.item():.5f} val_mse={val:.5f}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

DEMAND_TRAIN_YAML = ("seed: 0\nepochs: 4\nbatch_size: 32\nmodel:\n  hidden: 48\n"
                     "optim:\n  lr: 0.01\n  momentum: 0.9\n")


def _demand_repo(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "omegaconf")
    return py, _repo(d / "demand-pretrain", {
        "train.py": DEMAND_TRAIN, "configs/train.yaml": DEMAND_TRAIN_YAML,
        ".gitignore": "configs/local.yaml\n__pycache__/\n"})


def local_override_ignored_metric_job(d: Path) -> Incident:
    """Job against job. The Colab checkout (on Google Drive) has configs/local.yaml, the
    engineer's git-ignored overrides from a learning-rate sweep in the notebook (``optim.lr:
    0.05``), written between the jobs; train.py merges it over configs/train.yaml when present.
    Both jobs finish; the losses move. Kind: metric."""
    py, repo = _demand_repo(d)
    local = repo / "configs" / "local.yaml"

    def sweep_leftover() -> None:
        local.write_text("# notebook sweep, best so far\noptim:\n  lr: 0.05\n")

    good, bad = _shells(d)
    argv = _torchrun_job(py, "train.py")
    return _incident(local_override_ignored_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {local.resolve()}"),
                     between=sweep_leftover)


def demand_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the Airflow task and from the Colab
    terminal: each job has its own rendezvous, run id and rank processes, the shells their own
    Airflow, Colab, NCCL_*, TORCH_*, CUDA_* and HF_* variables. Nothing planted. Kind:
    noise."""
    py, repo = _demand_repo(d)
    good, bad = _shells(d)
    argv = _torchrun_job(py, "train.py")
    return _incident(demand_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- the c10d store, engines


EMBED_INDEX = """
    \"\"\"Embed the product catalogue and write the index. It joins a process group (env://:
    MASTER_ADDR, MASTER_PORT; one process unless torchrun says otherwise) so that the same
    script shards the catalogue under torchrun.\"\"\"
    import os

    import torch
    import torch.distributed as dist


    def main():
        rank = int(os.environ.get("RANK", "0"))
        world = int(os.environ.get("WORLD_SIZE", "1"))
        dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)
        g = torch.Generator().manual_seed(8)
        catalogue = torch.randn(600, 32, generator=g)
        torch.manual_seed(0)
        encoder = torch.nn.Linear(32, 16)
        with torch.no_grad():
            vecs = torch.nn.functional.normalize(encoder(catalogue[rank::world]), dim=-1)
        spread = vecs.std(dim=0).mean().reshape(1)
        dist.all_reduce(spread)
        print(f"items={len(vecs)} index_spread={spread.item() / world:.5f}")
        torch.save(vecs, f"index-{rank}.pt")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """


def master_port_held_by_runtime(d: Path) -> Incident:
    """The Colab terminal exports MASTER_PORT with the number a tutorial used, which on this
    runtime is the port its own Jupyter server listens on (KMP_TARGET_PORT, the same number):
    the c10d TCPStore of rank 0 cannot listen there ("address already in use", the port
    quoted). The Airflow DAG's env block gives a free port. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "catalogue-index", {"embed_index.py": EMBED_INDEX,
                                         ".gitignore": "index-*.pt\n"})
    held = str(_held_port())
    good, bad = _shells(d, {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port())},
                        {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": held,
                         "KMP_TARGET_PORT": held})
    argv = (py, "embed_index.py")
    return _incident(master_port_held_by_runtime, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "MASTER_PORT"))


MAKE_TINY_LM = """
import sys, torch
from transformers import AutoConfig, AutoModelForCausalLM
arch = sys.argv[3]
cfg = AutoConfig.for_model(arch, vocab_size=256, hidden_size=32, intermediate_size=64,
                           num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                           max_position_embeddings=256, bos_token_id=1, eos_token_id=2,
                           **({"sliding_window": None} if arch == "mistral" else {}))
torch.manual_seed(0)
model = AutoModelForCausalLM.from_config(cfg)
text = open(sys.argv[2]).read().encode()
ids = torch.tensor([list(text[i:i + 96]) for i in range(0, len(text) - 96, 40)][:32])
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for _ in range(40):
    loss = model(ids, labels=ids).loss
    opt.zero_grad(); loss.backward(); opt.step()
model.save_pretrained(sys.argv[1])
"""

HELP_TEXT = "".join(
    f"To {verb} an {thing}, open {place}, pick the {thing} and choose {verb.title()}. "
    f"The {thing} keeps its history after you {verb} it. "
    for verb in ("archive", "export", "restore", "assign")
    for thing, place in (("invoice", "Billing"), ("order", "Orders"), ("alert", "Monitoring"),
                         ("account", "Settings")))


def _tiny_lm(d: Path, arch: str, name: str) -> tuple[str, Path, Path]:
    """The corpus interpreter, a text file and a tiny causal LM (``arch``) trained on it here
    (outside git)."""
    py = python_with("torch", "transformers", "safetensors")
    text = _write(d / "corpora" / "help-center.txt", HELP_TEXT)
    model = d / "models" / name
    if not (model / "model.safetensors").exists():
        _run_py(py, MAKE_TINY_LM, str(model), str(text), arch)
    return py, text, model


TP_SERVE = """
    \"\"\"The CPU engine: checks the launch against the model's config, then starts its
    tensor-parallel workers (mp.spawn); they meet at a TCPStore that rank 0 hosts, load their
    shard of the embedding table, size their KV cache for --max-model-len and warm up.\"\"\"
    import argparse
    import datetime
    import os

    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from safetensors.torch import load_file
    from transformers import AutoConfig


    def worker(rank, a, cfg):
        torch.set_num_threads(1)
        world = a.tensor_parallel_size
        timeout = datetime.timedelta(seconds=30)
        store = dist.TCPStore("127.0.0.1", a.store_port, world, is_master=rank == 0,
                              timeout=timeout)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=timeout)
        weights = load_file(os.path.join(a.model, "model.safetensors"))
        shard = weights["model.embed_tokens.weight"].chunk(world, dim=1)[rank]
        head_dim = cfg.hidden_size // cfg.num_attention_heads
        blocks = -(-a.max_model_len // a.block_size)
        kv = torch.zeros(cfg.num_hidden_layers, 2, blocks, a.block_size,
                         cfg.num_key_value_heads // world, head_dim)
        probe = shard[: a.block_size].square().sum().reshape(1)
        dist.all_reduce(probe)
        if rank == 0:
            print(f"kv_blocks={blocks} kv_bytes={kv.numel() * kv.element_size() * world} "
                  f"warmup_checksum={probe.item():.4f}")
        dist.destroy_process_group()


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model", required=True)
        p.add_argument("--tensor-parallel-size", type=int, default=2)
        p.add_argument("--max-model-len", type=int, default=None)
        p.add_argument("--block-size", type=int, default=16)
        p.add_argument("--store-port", type=int, default=29600)
        a = p.parse_args()
        cfg = AutoConfig.from_pretrained(a.model)
        if a.max_model_len is None:
            a.max_model_len = cfg.max_position_embeddings
        if a.max_model_len > cfg.max_position_embeddings:
            raise ValueError(f"--max-model-len {a.max_model_len} is larger than the model's "
                             f"max_position_embeddings ({cfg.max_position_embeddings})")
        mp.spawn(worker, args=(a, cfg), nprocs=a.tensor_parallel_size)
        print("engine ready")


    if __name__ == "__main__":
        main()
    """


def _engine(d: Path) -> tuple[Path, tuple[str, ...]]:
    py, _, model = _tiny_lm(d, "llama", "help-llama-tiny")
    app = _write(d / "help-engine" / "serve.py", TP_SERVE)
    return app.parent, (py, "serve.py", "--model", str(model), "--tensor-parallel-size", "2",
                        "--store-port", str(_free_port()))


def max_model_len_from_8b(d: Path) -> Incident:
    """The DAG's launch line was copied from the 8B model's and passes ``--max-model-len
    8192``; the tiny help-centre model has 256 positions and the engine refuses at its start,
    quoting both numbers. The notebook's line leaves the length to the model. Kind: fail."""
    cwd, base = _engine(d)
    good, bad = _shells(d, bad_in="airflow")
    return _incident(max_model_len_from_8b, Launch(base, good, cwd),
                     Launch((*base, "--max-model-len", "8192"), bad, cwd),
                     ("command", "--max-model-len"))


def engine_start_noise(d: Path) -> Incident:
    """The engine's start and warm-up, the same launch line (the same store port, one after
    the other), from the Airflow task and from the Colab terminal. Nothing planted. Kind:
    noise."""
    cwd, base = _engine(d)
    good, bad = _shells(d)
    return _incident(engine_start_noise, Launch(base, good, cwd), Launch(base, bad, cwd))


# --------------------------------------------------------------------------- model folders


LM_EVAL = """
    \"\"\"Perplexity of the help-centre LM on held-out passages (byte tokens), then the
    result is posted to the team's results service.\"\"\"
    import argparse
    import math

    import requests
    import torch
    from transformers import AutoModelForCausalLM


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--attn-implementation", default="sdpa")
        p.add_argument("--passage-length", type=int, default=128)
        p.add_argument("--results-url", default=None)
        a = p.parse_args()
        model = AutoModelForCausalLM.from_pretrained(
            a.model_path, attn_implementation=a.attn_implementation).eval()
        with open("data/heldout.txt") as f:
            text = f.read().encode()
        n = a.passage_length
        ids = torch.tensor([list(text[i:i + n]) for i in range(0, len(text) - n, n // 2)])
        with torch.no_grad():
            loss = model(ids, labels=ids).loss.item()
        print(f"passages={len(ids)} eval_loss={loss:.4f} perplexity={math.exp(loss):.3f}")
        if a.results_url:
            requests.post(a.results_url, json={"eval_loss": loss}, timeout=5).raise_for_status()


    if __name__ == "__main__":
        main()
    """


def _lm_eval_repo(d: Path, name: str) -> Path:
    return _repo(d / name, {"evaluate.py": LM_EVAL, "data/heldout.txt": HELP_TEXT[-1400:]})


def quantization_config_copied(d: Path) -> Incident:
    """Between the runs the model folder's config.json was replaced by the one of the team's
    4-bit variant (the same sizes, plus a ``quantization_config`` for bitsandbytes nf4); the
    weights are the plain ones. transformers reads quantization_config at from_pretrained and
    stops: "Using `bitsandbytes` 4-bit quantization requires bitsandbytes". Kind: fail."""
    py, _, model = _tiny_lm(d, "llama", "help-llama-tiny")
    repo = _lm_eval_repo(d, "help-lm-eval")

    def replace() -> None:
        path = model / "config.json"
        cfg = json.loads(path.read_text())
        cfg["quantization_config"] = {
            "quant_method": "bitsandbytes", "load_in_4bit": True, "load_in_8bit": False,
            "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True,
            "bnb_4bit_compute_dtype": "bfloat16"}
        path.write_text(json.dumps(cfg, indent=2) + "\n")

    good, bad = _shells(d)
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(quantization_config_copied, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: quantization_config"),
                     ("models", "--model-path: quantization_config.quant_method"),
                     ("models", "--model-path: quantization_config.load_in_4bit"), between=replace)


def sliding_window_copied_metric(d: Path) -> Incident:
    """Between the runs the tiny Mistral's config.json got ``"sliding_window": 32`` from a
    Mistral release config (it was trained with full attention, ``null``). Passages are 128
    bytes long: attention now sees only the last 32; both runs exit 0 and the perplexity
    moves. Kind: metric."""
    py, _, model = _tiny_lm(d, "mistral", "help-mistral-tiny")
    repo = _lm_eval_repo(d, "help-mistral-eval")

    def edit() -> None:
        path = model / "config.json"
        cfg = json.loads(path.read_text())
        cfg["sliding_window"] = 32
        path.write_text(json.dumps(cfg, indent=2) + "\n")

    good, bad = _shells(d, bad_in="airflow")
    argv = (py, "evaluate.py", "--model-path", str(model), "--attn-implementation", "eager")
    return _incident(sliding_window_copied_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: sliding_window"),
                     between=edit)


def flash_attention_option_both_fail(d: Path) -> Incident:
    """Both fail. The team's results service is down for maintenance (nothing listens at the
    URL), so the notebook's run evaluates and stops posting its result (ConnectionError).
    The DAG's command was copied from the GPU DAG and adds ``--attn-implementation
    flash_attention_2``; on this image there is no flash-attn, and from_pretrained stops
    first ("FlashAttention2 has been toggled on, but it cannot be used"). Kind: both-fail."""
    py, _, model = _tiny_lm(d, "llama", "help-llama-tiny")
    repo = _lm_eval_repo(d, "help-lm-eval")
    base = (py, "evaluate.py", "--model-path", str(model),
            "--results-url", f"http://127.0.0.1:{_free_port()}/api/runs")
    good, bad = _shells(d, bad_in="airflow")
    return _incident(flash_attention_option_both_fail, Launch(base, good, repo),
                     Launch((*base, "--attn-implementation", "flash_attention_2"), bad, repo),
                     ("command", "--attn-implementation"))


# --------------------------------------------------------------------------- Lightning


CHURN_LIGHTNING = """
    \"\"\"Nightly churn model (PyTorch Lightning). Preemptible workers: every fit resumes from
    checkpoints/last.ckpt when there is one (ckpt_path="last").\"\"\"
    import argparse

    import pytorch_lightning as pl
    import torch
    import torch.nn.functional as F
    from pytorch_lightning.callbacks import ModelCheckpoint
    from torch.utils.data import DataLoader, TensorDataset


    class Churn(pl.LightningModule):
        def __init__(self, hidden):
            super().__init__()
            self.save_hyperparameters()
            self.net = torch.nn.Sequential(torch.nn.Linear(10, hidden), torch.nn.ReLU(),
                                           torch.nn.Linear(hidden, 1))

        def training_step(self, batch, _):
            x, y = batch
            return F.binary_cross_entropy_with_logits(self.net(x).squeeze(-1), y)

        def validation_step(self, batch, _):
            x, y = batch
            logits = self.net(x).squeeze(-1)
            self.log("val_loss", F.binary_cross_entropy_with_logits(logits, y))
            self.log("val_accuracy", ((logits > 0).float() == y).float().mean())

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=0.01)


    def customers(n=1200, seed=2):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, 10, generator=g)
        y = ((x[:, 0] - x[:, 5] + 0.4 * torch.randn(n, generator=g)) > 0.3).float()
        return TensorDataset(x[:1000], y[:1000]), TensorDataset(x[1000:], y[1000:])


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--hidden", type=int, default=32)
        p.add_argument("--max-epochs", type=int, default=4)
        a = p.parse_args()
        pl.seed_everything(0)
        train, val = customers()
        trainer = pl.Trainer(max_epochs=a.max_epochs, accelerator="cpu", logger=False,
                             enable_progress_bar=False, enable_model_summary=False,
                             callbacks=[ModelCheckpoint(dirpath="checkpoints", save_last=True)])
        trainer.fit(Churn(a.hidden), DataLoader(train, batch_size=50, shuffle=True),
                    DataLoader(val, batch_size=200), ckpt_path="last")
        m = trainer.callback_metrics
        print(f"val_loss={m['val_loss']:.4f} val_accuracy={m['val_accuracy']:.4f}")


    if __name__ == "__main__":
        main()
    """


def stale_last_ckpt_in_checkout(d: Path) -> Incident:
    """The DAG runs in a fresh clone; the notebook runs in the engineer's checkout on Google
    Drive (the same commit), where yesterday's ``--hidden 64`` experiment left
    checkpoints/last.ckpt (git-ignored). The fit resumes from "last", and the 32-wide model
    cannot take the 64-wide weights ("size mismatch for net.0.weight"). Kind: fail."""
    py = python_with("torch", "pytorch_lightning")
    files = {"train.py": CHURN_LIGHTNING, ".gitignore": "checkpoints/\n__pycache__/\n"}
    clone = _repo(d / "workers" / "nightly-churn", files)
    drive = _repo(d / "drive" / "MyDrive" / "nightly-churn", files)
    ckpt = drive / "checkpoints" / "last.ckpt"
    if not ckpt.exists():
        _run_py(py, "import runpy, sys; sys.argv = ['train.py', '--hidden', '64', "
                "'--max-epochs', '1']; runpy.run_path('train.py', run_name='__main__')",
                cwd=drive)
    good, bad = _shells(d)
    argv = (py, "train.py")
    return _incident(stale_last_ckpt_in_checkout, Launch(argv, good, clone),
                     Launch(argv, bad, drive), ("runtime", f"file {ckpt.resolve()}"))


FORECAST_LIGHTNING = """
    \"\"\"Store-demand forecaster (PyTorch Lightning): fit, then print the validation
    error.\"\"\"
    import argparse

    import pytorch_lightning as pl
    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset


    class Forecaster(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(14, 64), torch.nn.GELU(),
                                           torch.nn.Linear(64, 64), torch.nn.GELU(),
                                           torch.nn.Linear(64, 7))

        def training_step(self, batch, _):
            x, y = batch
            return F.mse_loss(self(x), y)

        def forward(self, x):
            return self.net(x)

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=3e-3)


    def sales(n=1400, seed=6):
        g = torch.Generator().manual_seed(seed)
        t = torch.arange(21, dtype=torch.float32)
        base = 5 + 3 * torch.rand(n, 1, generator=g)
        week = torch.sin(2 * 3.14159 * t / 7 + torch.rand(n, 1, generator=g))
        s = base + week + 0.2 * torch.randn(n, 21, generator=g)
        return s[:, :14], s[:, 14:]


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--precision", default="32-true")
        p.add_argument("--max-epochs", type=int, default=6)
        a = p.parse_args()
        pl.seed_everything(0)
        x, y = sales()
        trainer = pl.Trainer(max_epochs=a.max_epochs, accelerator="cpu", precision=a.precision,
                             logger=False, enable_checkpointing=False,
                             enable_model_summary=False)
        model = Forecaster()
        trainer.fit(model, DataLoader(TensorDataset(x[:1200], y[:1200]), batch_size=40,
                                      shuffle=True))
        with torch.no_grad():
            mae = (model(x[1200:]) - y[1200:]).abs().mean().item()
        print(f"val_mae={mae:.5f}")


    if __name__ == "__main__":
        main()
    """


def precision_16_mixed_metric(d: Path) -> Incident:
    """The DAG's command line was copied from the GPU DAG and passes ``--precision
    16-mixed``; on the CPU Lightning warns and trains in bf16-mixed instead. Both runs exit 0;
    the validation error moves. The notebook's line keeps 32-true. Kind: metric."""
    py = python_with("torch", "pytorch_lightning")
    repo = _repo(d / "store-forecast", {"train.py": FORECAST_LIGHTNING})
    good, bad = _shells(d, bad_in="airflow")
    return _incident(precision_16_mixed_metric, Launch((py, "train.py"), good, repo),
                     Launch((py, "train.py", "--precision", "16-mixed"), bad, repo),
                     ("command", "--precision"))


def lightning_fit_noise(d: Path) -> Incident:
    """The forecaster's fit from the Airflow task and from the Colab terminal (Lightning's
    progress bar reads COLAB_GPU; the shells differ in their Airflow, Colab and tuning
    variables). Nothing planted. Kind: noise."""
    py = python_with("torch", "pytorch_lightning")
    repo = _repo(d / "store-forecast", {"train.py": FORECAST_LIGHTNING})
    good, bad = _shells(d)
    argv = (py, "train.py", "--max-epochs", "3")
    return _incident(lightning_fit_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- the rest


MAKE_INTENT_TOKENIZER = """
import sys
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast
lines = [l.strip() for l in open(sys.argv[2]) if l.strip()]
tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tok.train_from_iterator(lines, trainers.WordLevelTrainer(special_tokens=["[PAD]", "[UNK]"]))
PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]",
                        unk_token="[UNK]").save_pretrained(sys.argv[1])
"""

INTENT_ENCODE = """
    \"\"\"Turn utterances into model inputs with the router's tokenizer.\"\"\"


    def encode(tokenizer, texts, max_length=16):
        return tokenizer(texts, padding=True, truncation=True, max_length=max_length,
                         return_tensors="pt")
    """

INTENT_TRAIN = """
    \"\"\"Train the support-ticket intent router (bag of embeddings) on data/tickets.tsv.\"\"\"
    import torch
    import torch.nn.functional as F
    from transformers import AutoTokenizer

    from encode import encode


    def main():
        tokenizer = AutoTokenizer.from_pretrained("tokenizer")
        rows = [line.rstrip("\\n").split("\\t") for line in open("data/tickets.tsv")]
        intents = sorted({r[0] for r in rows})
        y = torch.tensor([intents.index(r[0]) for r in rows])
        torch.manual_seed(0)
        embed = torch.nn.EmbeddingBag(len(tokenizer), 24, mode="mean",
                                      padding_idx=tokenizer.pad_token_id)
        head = torch.nn.Linear(24, len(intents))
        params = [*embed.parameters(), *head.parameters()]
        opt = torch.optim.Adam(params, lr=0.05)
        for _ in range(30):
            for i in range(0, len(rows), 16):
                batch = encode(tokenizer, [r[1] for r in rows[i:i + 16]])
                loss = F.cross_entropy(head(embed(batch["input_ids"])), y[i:i + 16])
                opt.zero_grad()
                loss.backward()
                opt.step()
        with torch.no_grad():
            batch = encode(tokenizer, [r[1] for r in rows])
            accuracy = (head(embed(batch["input_ids"])).argmax(-1) == y).float().mean().item()
        print(f"intents={len(intents)} train_loss={loss.item():.4f} accuracy={accuracy:.4f}")


    if __name__ == "__main__":
        main()
    """

TICKETS = "".join(f"{intent}\t{text}\n" for intent, text in [
    (i, t) for i, ts in {
        "billing": ["I was charged twice this month", "refund the extra charge please",
                    "my invoice shows the wrong amount", "why did my card get billed again",
                    "cancel the duplicate payment"],
        "login": ["I cannot sign in", "password reset link does not work",
                  "my account is locked after three tries", "two factor code never arrives",
                  "sign in page keeps reloading"],
        "shipping": ["where is my parcel", "the tracking number shows nothing",
                     "package arrived damaged and late", "can you change the delivery address",
                     "my order has not shipped yet"],
    }.items() for t in ts] * 3)


def padding_dropped_from_encode(d: Path) -> Incident:
    """Between the runs encode.py lost ``padding=True`` in an uncommitted edit ("the collator
    will pad", it does not); tickets of different lengths cannot become one tensor and the
    tokenizer refuses: "Unable to create tensor, you should probably activate truncation
    and/or padding". Kind: fail."""
    py = python_with("torch", "transformers", "tokenizers")
    repo = _repo(d / "intent-router", {"train.py": INTENT_TRAIN, "encode.py": INTENT_ENCODE,
                                       "data/tickets.tsv": TICKETS})
    if not (repo / "tokenizer" / "tokenizer.json").exists():
        (repo / "data" / "texts.txt").write_text(
            "".join(line.split("\t")[1] for line in TICKETS.splitlines(keepends=True)))
        _run_py(py, MAKE_INTENT_TOKENIZER, str(repo / "tokenizer"), str(repo / "data" / "texts.txt"))
        (repo / "data" / "texts.txt").unlink()
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "the router's tokenizer")

    def edit() -> None:
        _write(repo / "encode.py", INTENT_ENCODE.replace("padding=True, ", ""))

    good, bad = _shells(d, bad_in="airflow")
    argv = (py, "train.py")
    return _incident(padding_dropped_from_encode, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "intent-router: encode.py"), between=edit)


LEADS_FEATURES = """
    \"\"\"Features of the lead-scoring model.\"\"\"
    import numpy as np


    def add_features(df):
        df["log_visits"] = np.log1p(df["visits"])
        df["pages_per_visit"] = df["pages"] / df["visits"].clip(lower=1)
        return df
    """

LEADS_SCORE = """
    \"\"\"Score this week's leads (scikit-learn), features from features.py beside it.\"\"\"
    import numpy as np
    import pandas as pd
    from sklearn.linear_model import LogisticRegression

    from features import add_features


    def main():
        rng = np.random.default_rng(3)
        df = pd.DataFrame({"visits": rng.poisson(4, 800), "pages": rng.poisson(9, 800)})
        df = add_features(df)
        y = (df["pages_per_visit"] + rng.normal(0, 1, 800) > 2.5).astype(int)
        cols = ["log_visits", "pages_per_visit"]
        clf = LogisticRegression().fit(df[cols][:600], y[:600])
        print(f"leads={len(df)} holdout_accuracy={clf.score(df[cols][600:], y[600:]):.4f}")


    if __name__ == "__main__":
        main()
    """


def safe_path_in_airflow_image(d: Path) -> Incident:
    """The platform team's hardened Airflow image sets PYTHONSAFEPATH=1 (Dockerfile ENV), so
    ``python score_leads.py`` no longer puts the script's folder on sys.path and ``from
    features import add_features`` fails (ModuleNotFoundError). It runs in the notebook's
    terminal. Kind: fail."""
    py = python_with("pandas", "sklearn")
    repo = _repo(d / "lead-scoring", {"score_leads.py": LEADS_SCORE,
                                      "features.py": LEADS_FEATURES})
    good, bad = _shells(d, {}, {"PYTHONSAFEPATH": "1"}, bad_in="airflow")
    argv = (py, "score_leads.py")
    return _incident(safe_path_in_airflow_image, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "PYTHONSAFEPATH"))


VISITS_REPORT = """
    \"\"\"Weekly visits model: clean the export (negative counts are logging errors, set to 0),
    fit a ridge regression, print the holdout error.\"\"\"
    import numpy as np
    import pandas as pd
    from sklearn.linear_model import Ridge


    def main():
        rng = np.random.default_rng(9)
        df = pd.DataFrame({"ads": rng.gamma(2.0, 2.0, 900), "emails": rng.poisson(3, 900)})
        df["visits"] = (40 + 6 * df["ads"] + 3 * df["emails"] + rng.normal(0, 4, 900)).round()
        broken = rng.choice(900, 90, replace=False)
        df.loc[broken, "visits"] = -999  # the tracker's error code
        df["visits"][df["visits"] < 0] = 0
        model = Ridge(alpha=1.0).fit(df[["ads", "emails"]][:700], df["visits"][:700])
        err = (model.predict(df[["ads", "emails"]][700:]) - df["visits"][700:]).abs().mean()
        print(f"rows={len(df)} mean_visits={df['visits'].mean():.3f} holdout_mae={err:.4f}")


    if __name__ == "__main__":
        main()
    """


def _pandas2_venv(py: str, proj: Path) -> Path:
    """A venv layered on the corpus interpreter's packages (a .pth file) with pandas 2.3.3 of
    its own (and pytz, which pandas 2 needs), as the Colab runtime's preinstalled pandas 2 was
    pinned."""
    vpy = proj / "bin" / "python"
    if vpy.exists():
        return vpy
    base = subprocess.check_output([py, "-c", "import sys; print(sys._base_executable)"],
                                   text=True).strip()
    subprocess.run([base, "-m", "venv", "--without-pip", str(proj)], check=True)
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(subprocess.check_output([str(vpy), "-c", purelib], text=True).strip())
    shared = subprocess.check_output([py, "-c", purelib], text=True).strip()
    res = subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
                          "pandas==2.3.3", "pytz"], capture_output=True, text=True, check=False)
    if res.returncode:
        raise Unavailable("pip could not install pandas 2.3.3: " + res.stderr[-200:])
    (site / "_shared_env.pth").write_text(shared + "\n")
    return vpy


def pandas3_chained_assignment_metric(d: Path) -> Incident:
    """The notebook ran in the project's venv on the Colab runtime, pandas 2.3.3 (layered on
    the shared environment); the Airflow image has pandas 3, whose copy-on-write makes the
    chained assignment ``df["visits"][df["visits"] < 0] = 0`` change nothing (a
    ChainedAssignmentError warning): the -999 error codes stay in the target. Both runs exit
    0; the mean and the holdout error move. Kind: metric."""
    py = python_with("pandas", "sklearn")
    repo = _repo(d / "visits-model", {"report.py": VISITS_REPORT, ".gitignore": ".venv/\n",
                                      "requirements.txt": "pandas==2.3.3\npytz\nscikit-learn\n"})
    proj = repo / ".venv"
    _pandas2_venv(py, proj)
    shared_bin = str(Path(py).parent)
    good, bad = _shells(d, bad_in="airflow")
    good = {**good, "VIRTUAL_ENV": str(proj), "PATH": f"{proj / 'bin'}:{good['PATH']}"}
    bad = {**bad, "PATH": f"{shared_bin}:{bad['PATH']}"}
    argv = ("python", "report.py")
    return _incident(pandas3_chained_assignment_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "pandas"),
                     ("packages", "interpreter"))


#: The ninth fresh batch, in the order it was written. Never tuned on.
FRESH9 = [
    aux_head_unused_job, device_ids_pasted_both_fail_job, local_override_ignored_metric_job,
    demand_job_noise, master_port_held_by_runtime, max_model_len_from_8b, engine_start_noise,
    quantization_config_copied, sliding_window_copied_metric, flash_attention_option_both_fail,
    stale_last_ckpt_in_checkout, precision_16_mixed_metric, lightning_fit_noise,
    padding_dropped_from_encode, safe_path_in_airflow_image, pandas3_chained_assignment_metric,
]

if __name__ == "__main__":  # build one incident and print its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH9 if b.__name__ in sys.argv[1:]] or FRESH9
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh9-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
