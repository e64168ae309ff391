"""An eighteenth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh16.py, for their format), how they are run and scored
(benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot reference
(docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job captures
one snapshot per rank. They form the corpus's ``fresh18`` half; report it, never change the
ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Seventeen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a click-through-rate model trained
  with DDP: ``GLOO_SOCKET_IFNAME=ens5`` from the bare-metal dotfiles in a pod that only has
  eth0, ``--label-smoothing 0.1`` (loss moves), an uncommitted ``optimizer: adamw8bit`` in the
  git-tracked config on top of a quality gate the good job already misses (both fail), and the
  same job from both shells (noise);
- c10d and engine settings: ``WORLD_SIZE``/``RANK``/``MASTER_*`` left exported by an earlier
  manual test, so a one-process evaluation waits for a second rank in init_process_group, a
  ``--store-port`` typed with one digit too many (the TCPStore refuses the value),
  ``TORCH_DETERMINISTIC_DEBUG_MODE=true`` handed to ``torch.set_deterministic_debug_mode`` and
  ``TORCH_LOGS`` naming a log option that does not exist (``recompile``);
- the rest: a GPT-2 folder whose config.json got ``n_positions: 64`` (the saved position table
  no longer fits the model) and that model's evaluation from both shells (noise), the team's
  ``geohashkit`` 2.0 in the workspace's venv (a keyword renamed), a git-ignored
  ``settings.local.toml`` read by dynaconf whose learning rate changed (metric),
  ``PYTHONHASHSEED`` set in the job cluster and unset in the workspace (hashed features move),
  ``--num-leaves 255`` on a LightGBM ranker (metric), an uncommitted collate edit stacking
  ragged sequences, an uncommitted ``bagging_fraction: 1.5`` in the ranker's git-tracked params
  on top of a missed gate (both fail), and the ranker from both shells (noise).

The shells are :func:`databricks_or_coder_shell`: shell 0 a Databricks job-cluster task on the
driver node (``DATABRICKS_*``, ``DB_*``, ``SPARK_*``, ``MLFLOW_*`` with the job's tracking URI,
``/databricks`` paths, root, the cluster's init-script tuning of ``NCCL_*``/``OMP_*``/``HF_*``),
shell 1 a zsh terminal in a Coder workspace pod (``CODER_*`` with the agent token,
``VSCODE_*``/``TERM_PROGRAM`` of code-server, ``KUBERNETES_*``, user ``coder``, the dotfiles'
own ``TORCH_*``/``CUDA_*``/``NCCL_*`` tuning). The thread counts that change float reductions
are pinned alike. The planted side is either: some incidents work on the job cluster and fail in
the workspace, others the reverse.

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

RUN_ID = "884120375519204"


def databricks_or_coder_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 a Databricks
    job-cluster task on the driver, 1 a zsh terminal in a Coder workspace (``venv`` the
    interpreter's virtual environment, first on ``PATH``); each with its own tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    if n % 2 == 0:  # Databricks job cluster, a Python script task on the driver node, as root
        env = {
            **common, "PATH": f"/databricks/python3/bin:/usr/local/nvidia/bin:{path}",
            "USER": "root", "LANG": "C.UTF-8", "SHELL": "/bin/bash",
            "DATABRICKS_RUNTIME_VERSION": "16.4", "DATABRICKS_ROOT_VIRTUALENV_ENV":
                "/databricks/python3", "DATABRICKS_HOST": "https://adb-3307521746021985.5."
                                                          "azuredatabricks.net",
            "DATABRICKS_TOKEN": "dapi5e0c1b7f94a3d26e8c0f1a9b2d3e4f5a-2",
            "DB_HOME": "/databricks", "DB_CLUSTER_ID": "1205-183214-k9x2mq7a",
            "DB_CLUSTER_NAME": "job-77412-run-1", "DB_IS_DRIVER": "TRUE",
            "DB_IS_JOB_CLUSTER": "TRUE", "DB_DRIVER_IP": "10.139.64.12",
            "DB_INSTANCE_TYPE": "Standard_NC24ads_A100_v4", "MLR_PYTHONPATH": "/databricks/jars",
            "SPARK_HOME": "/databricks/spark", "SPARK_LOCAL_DIRS": "/local_disk0/spark",
            "SPARK_LOCAL_IP": "10.139.64.12", "SPARK_PUBLIC_DNS": "10.139.64.12",
            "PYSPARK_PYTHON": "/databricks/python3/bin/python3",
            "PYTHONHASHSEED": "0", "PYTHONUNBUFFERED": "1",
            "MLFLOW_TRACKING_URI": "databricks", "MLFLOW_RUN_ID": "6f2d0c9a81b34e57a0c4",
            "MLFLOW_EXPERIMENT_ID": "1840227716403392", "DATABRICKS_JOB_RUN_ID": RUN_ID,
            "JAVA_HOME": "/usr/lib/jvm/zulu17-ca-amd64",
            "NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_DISABLE": "1", "NCCL_DEBUG": "WARN",
            "CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
            "HF_HOME": "/local_disk0/hf", "HF_DATASETS_CACHE": "/local_disk0/hf/datasets",
            "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1", "TOKENIZERS_PARALLELISM": "false",
        }
        if venv:  # the cluster's library install: the task's interpreter first
            env["PATH"] = f"{venv}/bin:{env['PATH']}"
        return env
    work = home / "src" / "growth-ml"
    work.mkdir(parents=True, exist_ok=True)
    env = {  # Coder workspace pod, zsh in code-server's integrated terminal
        **common, "PATH": f"{home}/.local/bin:/usr/local/cuda/bin:{path}",
        "USER": "coder", "LOGNAME": "coder", "SHELL": "/usr/bin/zsh", "LANG": "en_US.UTF-8",
        "TERM": "xterm-256color", "COLORTERM": "truecolor", "TERM_PROGRAM": "vscode",
        "TERM_PROGRAM_VERSION": "1.103.2", "ZSH": f"{home}/.oh-my-zsh", "PWD": str(work),
        "CODER": "true", "CODER_WORKSPACE_NAME": "ml-dev", "CODER_WORKSPACE_OWNER_NAME": "lkovac",
        "CODER_WORKSPACE_AGENT_NAME": "main", "CODER_AGENT_URL": "https://coder.acme.internal/",
        "CODER_AGENT_TOKEN": "c0d3r-4g3nt-2b7e9f31a6d04c58b1e7f9a2c3d4e5f6",
        "CODER_AGENT_AUTH": "token", "GIT_ASKPASS": "/tmp/coder.Wk3f/coder",
        "VSCODE_GIT_IPC_HANDLE": "/tmp/vscode-git-8a1c2e.sock", "VSCODE_IPC_HOOK_CLI":
            "/tmp/vscode-ipc-4f9d7c1e.sock", "BROWSER": "/tmp/code-server/bin/helpers/browser.sh",
        "KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
        "HOSTNAME": "coder-lkovac-ml-dev-6c9f8d7b5-x2kqp",
        "CUDA_VISIBLE_DEVICES": "0,1", "CUDA_HOME": "/usr/local/cuda",
        "NCCL_SOCKET_IFNAME": "eth0", "NCCL_P2P_DISABLE": "1", "NCCL_DEBUG": "INFO",
        "TORCH_CUDA_ARCH_LIST": "8.0;8.6", "TORCH_HOME": f"{home}/.cache/torch",
        "TORCHINDUCTOR_CACHE_DIR": f"{home}/.cache/inductor", "HF_HOME": f"{home}/.cache/hf",
        "HF_HUB_ENABLE_HF_TRANSFER": "0", "PIP_INDEX_URL": "https://pypi.acme.internal/simple",
        "EDITOR": "vim", "LESS": "-R", "PAGER": "less",
    }
    if venv:  # `source .venv/bin/activate` in .zshrc
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "coder", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the Coder workspace (``bad_in="coder"``) or from the Databricks job (``"databricks"``)."""
    db = databricks_or_coder_shell(0, d / "home" / "root", venv)
    coder = databricks_or_coder_shell(1, d / "home" / "coder", venv)
    first, second = (db, coder) if bad_in == "coder" else (coder, db)
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


CTR_DDP = """
    \"\"\"Train the ad click-through-rate model with DDP over gloo; sizes and the optimizer from
    configs/train.yaml. Rank 0 prints each epoch's loss and the validation log-loss and AUC;
    --min-auc refuses a model below that AUC.\"\"\"
    import argparse

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP

    OPTIMIZERS = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}


    def impressions(n=3000, fields=12, seed=21):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, fields, generator=g)
        w = torch.randn(fields, generator=g)
        y = (torch.sigmoid(x @ w - 1.0) > torch.rand(n, generator=g)).long()
        return x, y


    def auc(score, y):
        order = score.argsort()
        ranks = torch.empty_like(score)
        ranks[order] = torch.arange(1, len(score) + 1, dtype=score.dtype)
        pos = y.sum().item()
        return (ranks[y == 1].sum().item() - pos * (pos + 1) / 2) / (pos * (len(y) - pos))


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--label-smoothing", type=float, default=0.0)
        p.add_argument("--min-auc", type=float, default=None)
        a = p.parse_args()
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        cfg = yaml.safe_load(open("configs/train.yaml"))
        x, y = impressions()
        tx, ty = x[:2400][rank::world], y[:2400][rank::world]
        torch.manual_seed(0)
        model = DDP(torch.nn.Sequential(torch.nn.Linear(x.shape[1], cfg["hidden"]),
                                        torch.nn.ReLU(), torch.nn.Linear(cfg["hidden"], 2)))
        opt = OPTIMIZERS[cfg["optimizer"]](model.parameters(), lr=cfg["lr"])
        bs = cfg["batch"] // world
        for epoch in range(cfg["epochs"]):
            total, steps = 0.0, 0
            for s in range(0, len(tx), bs):
                loss = F.cross_entropy(model(tx[s:s + bs]), ty[s:s + bs],
                                       label_smoothing=a.label_smoothing)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total, steps = total + loss.item(), steps + 1
            t = torch.tensor([total / steps])
            dist.all_reduce(t)
            if rank == 0:
                print(f"epoch={epoch} loss={t.item() / world:.5f}")
        with torch.no_grad():
            logits = model.module(x[2400:])
        logloss = F.cross_entropy(logits, y[2400:]).item()
        val_auc = auc(logits[:, 1] - logits[:, 0], y[2400:])
        if rank == 0:
            print(f"val_logloss={logloss:.5f} val_auc={val_auc:.4f}")
            if a.min_auc is not None and val_auc < a.min_auc:
                raise RuntimeError(f"val_auc={val_auc:.4f} is below --min-auc {a.min_auc}: "
                                   "not promoting the model")
        dist.barrier()
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

CTR_YAML = "# ad click-through rate, display inventory\noptimizer: adam\nlr: 0.005\nhidden: 32\n" \
           "batch: 128\nepochs: 3\n"


def _ctr_job(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    return py, _repo(d / "ctr-model", {"train.py": CTR_DDP, "configs/train.yaml": CTR_YAML})


def gloo_ifname_from_dotfiles_job(d: Path) -> Incident:
    """Job against job. The workspace's dotfiles, copied from the team's bare-metal training
    boxes, export ``GLOO_SOCKET_IFNAME=ens5``; the workspace pod only has eth0 and lo, and every
    rank stops in init_process_group (RuntimeError: ... Unable to find address for: ens5).
    Kind: fail."""
    py, repo = _ctr_job(d)
    good, bad = _shells(d, bad={"GLOO_SOCKET_IFNAME": "ens5"}, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(gloo_ifname_from_dotfiles_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "GLOO_SOCKET_IFNAME"))


def label_smoothing_option_metric_job(d: Path) -> Incident:
    """Job against job. The job cluster's task parameters carry ``--label-smoothing 0.1``, from
    the image classifier's task it was cloned from. Both jobs train; every epoch's loss and the
    validation log-loss move. Kind: metric."""
    py, repo = _ctr_job(d)
    good, bad = _shells(d, bad_in="databricks", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    bad_argv = _torchrun(py, "train.py", "--label-smoothing", "0.1")
    return _incident(label_smoothing_option_metric_job, Launch(argv, good, repo),
                     Launch(bad_argv, bad, repo), ("command", "--label-smoothing"))


def adamw8bit_uncommitted_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--min-auc 0.99``, which this model never
    reaches: the good job trains and rank 0 refuses to promote it. Between the jobs
    configs/train.yaml (in git) got ``optimizer: adamw8bit``, not committed, from a GPU
    notebook; the CPU job's optimizer table has no such name and every rank stops (KeyError:
    'adamw8bit'). Kind: both-fail."""
    py, repo = _ctr_job(d)

    def edited() -> None:
        cfg = repo / "configs" / "train.yaml"
        cfg.write_text(cfg.read_text().replace("optimizer: adam\n", "optimizer: adamw8bit\n"))

    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--min-auc", "0.99")
    return _incident(adamw8bit_uncommitted_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "ctr-model: configs/train.yaml"),
                     between=edited)


def click_model_ddp_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the Databricks job cluster and from
    the Coder workspace: each job its own rendezvous and rank processes, the shells their own
    DATABRICKS_*, DB_*, SPARK_*, MLFLOW_*, CODER_*, VSCODE_*, KUBERNETES_*, NCCL_*, CUDA_* and
    HF_* variables. Nothing planted. Kind: noise."""
    py, repo = _ctr_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(click_model_ddp_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- c10d and engine


EVAL_DIST = """
    \"\"\"Evaluate the intent classifier; when launched by torchrun (WORLD_SIZE set) the shards
    are split over the ranks and the counts all-reduced, else one process does it all.\"\"\"
    import datetime
    import os

    import torch
    import torch.distributed as dist


    def main():
        distributed = "WORLD_SIZE" in os.environ
        if distributed:
            dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
        rank = dist.get_rank() if distributed else 0
        world = dist.get_world_size() if distributed else 1
        g = torch.Generator().manual_seed(4)
        x = torch.randn(2000, 24, generator=g)
        y = (x[:, :6].sum(1) > 0).long()
        torch.manual_seed(0)
        net = torch.nn.Linear(24, 2)
        with torch.no_grad():
            net.weight.copy_(torch.cat([torch.ones(1, 24) * -0.1, torch.ones(1, 24) * 0.1]))
            hits = (net(x[rank::world]).argmax(1) == y[rank::world]).sum()
        if distributed:
            dist.all_reduce(hits)
            dist.destroy_process_group()
        if rank == 0:
            print(f"examples={len(x)} accuracy={hits.item() / len(x):.4f}")


    if __name__ == "__main__":
        main()
    """


def world_size_left_exported(d: Path) -> Incident:
    """Earlier in the workspace's terminal the engineer ran a rank by hand with ``export
    WORLD_SIZE=2 RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29731``; the one-process evaluation
    now takes the torchrun path and waits for a second rank that never comes
    (DistStoreError: timed out after 15 s, world size 2). Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "intent-eval", {"evaluate.py": EVAL_DIST})
    left = {"WORLD_SIZE": "2", "RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29731"}
    good, bad = _shells(d, bad=left, venv=_venv_of(py))
    argv = (py, "evaluate.py")
    return _incident(world_size_left_exported, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "WORLD_SIZE"))


ROLLOUT_STORE = """
    \"\"\"Coordinate the offline rollout workers: host a c10d TCPStore on --store-port (0: any
    free port), publish each shard's assignment and read back the count.\"\"\"
    import argparse
    import datetime

    import torch.distributed as dist


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--store-port", type=int, default=0)
        p.add_argument("--shards", type=int, default=64)
        a = p.parse_args()
        wait = datetime.timedelta(seconds=10)
        store = dist.TCPStore("127.0.0.1", a.store_port, world_size=1, is_master=True,
                              timeout=wait, wait_for_workers=False)
        for shard in range(a.shards):
            store.set(f"shard/{shard}", f"worker-{shard % 4}")
        store.add("published", a.shards)
        print(f"port_open=1 shards={int(store.add('published', 0))} keys={store.num_keys()}")


    if __name__ == "__main__":
        main()
    """


def store_port_extra_digit(d: Path) -> Incident:
    """The Databricks task's parameters were retyped from the runbook with ``--store-port
    295010`` (one digit too many for 29501); the store refuses a port past 65535 (TypeError:
    incompatible constructor arguments ... quoting 295010). The workspace run leaves the port to
    the system. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "rollout-coord", {"coordinate.py": ROLLOUT_STORE})
    good, bad = _shells(d, bad_in="databricks", venv=_venv_of(py))
    argv = (py, "coordinate.py")
    return _incident(store_port_extra_digit, Launch(argv, good, repo),
                     Launch((*argv, "--store-port", "295010"), bad, repo),
                     ("command", "--store-port"))


DETERMINISTIC = """
    \"\"\"Fine-tune the fraud scorer reproducibly: the debug mode of torch's determinism checks
    comes from TORCH_DETERMINISTIC_DEBUG_MODE (default, warn or error).\"\"\"
    import os

    import torch


    def main():
        torch.set_deterministic_debug_mode(os.environ.get("TORCH_DETERMINISTIC_DEBUG_MODE",
                                                          "default"))
        g = torch.Generator().manual_seed(30)
        x = torch.randn(1200, 10, generator=g)
        y = (x[:, 2] * x[:, 5] > 0.1).float()
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
        opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        for _ in range(60):
            loss = torch.nn.functional.binary_cross_entropy_with_logits(net(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"mode={torch.get_deterministic_debug_mode()} loss={loss.item():.5f}")


    if __name__ == "__main__":
        main()
    """


def deterministic_debug_mode_true(d: Path) -> Incident:
    """The workspace's .zshrc exports ``TORCH_DETERMINISTIC_DEBUG_MODE=true`` ("turn it on");
    the scorer hands it to ``torch.set_deterministic_debug_mode``, which only takes default,
    warn or error (RuntimeError: invalid value of debug_mode ... but got true). Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "fraud-scorer", {"finetune.py": DETERMINISTIC})
    good, bad = _shells(d, bad={"TORCH_DETERMINISTIC_DEBUG_MODE": "true"}, venv=_venv_of(py))
    argv = (py, "finetune.py")
    return _incident(deterministic_debug_mode_true, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "TORCH_DETERMINISTIC_DEBUG_MODE"))


def torch_logs_unknown_option(d: Path) -> Incident:
    """The Databricks cluster's init script exports ``TORCH_LOGS=graph_breaks,recompile`` to
    debug the compiled model; ``recompile`` is not a log option (recompiles is) and torch
    refuses it as it is imported (ValueError: Unknown ... recompile, with every valid name).
    Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "fraud-scorer", {"finetune.py": DETERMINISTIC})
    good, bad = _shells(d, bad={"TORCH_LOGS": "graph_breaks,recompile"}, bad_in="databricks",
                        venv=_venv_of(py))
    argv = (py, "finetune.py")
    return _incident(torch_logs_unknown_option, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "TORCH_LOGS"))


# --------------------------------------------------------------------------- model folders


MAKE_GPT2 = """
import sys, torch
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(0)
cfg = GPT2Config(vocab_size=256, n_positions=256, n_embd=64, n_layer=2, n_head=4,
                 bos_token_id=0, eos_token_id=0)
GPT2LMHeadModel(cfg).save_pretrained(sys.argv[1])
"""

LOG_PPL = """
    \"\"\"Perplexity of the log-line language model (a GPT-2 folder, --model-path) on held-out
    service logs, byte-level, in windows of 128 bytes.\"\"\"
    import argparse
    import math

    import torch
    from transformers import AutoModelForCausalLM


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        torch.set_num_threads(2)
        model = AutoModelForCausalLM.from_pretrained(a.model_path).eval()
        data = list(open("data/logs.txt").read().encode())
        ids = torch.tensor(data[: len(data) // 128 * 128]).view(-1, 128)
        with torch.no_grad():
            loss = model(input_ids=ids, labels=ids).loss.item()
        print(f"windows={len(ids)} loss={loss:.5f} ppl={math.exp(loss):.4f}")


    if __name__ == "__main__":
        main()
    """


def _logs() -> str:
    levels, services = ["INFO", "WARN", "ERROR", "DEBUG"], ["auth", "cart", "search", "payments"]
    return "\n".join(f"2026-12-0{1 + i % 5}T{i % 24:02d}:{i % 60:02d}:00Z {levels[i % 4]} "
                     f"{services[(i * 3) % 4]} request_id={i * 7919 % 100000} latency_ms="
                     f"{(i * 37) % 900}" for i in range(240)) + "\n"


def _gpt2(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers")
    repo = _repo(d / "log-lm", {"eval_ppl.py": LOG_PPL, "data/logs.txt": _logs()})
    model = d / "artifacts" / "log-gpt2"
    _build(py, MAKE_GPT2, str(model))
    return py, repo, model


def n_positions_shrunk_in_config(d: Path) -> Incident:
    """Between the runs the model folder's config.json (outside git) was rewritten by the
    distillation export with ``"n_positions": 64`` (its windows are 64 long); the weights still
    hold a position table of 256 and transformers refuses to load them into the smaller model
    (RuntimeError: ... size mismatch for transformer.wpe.weight ... ignore_mismatched_sizes).
    Kind: fail."""
    py, repo, model = _gpt2(d)

    def rewritten() -> None:
        cfg = json.loads((model / "config.json").read_text())
        cfg["n_positions"] = 64
        (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")

    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "eval_ppl.py", "--model-path", str(model))
    return _incident(n_positions_shrunk_in_config, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: n_positions"),
                     between=rewritten)


def log_lm_noise(d: Path) -> Incident:
    """The log model's perplexity, the same folder and data, from the Databricks job and from
    the Coder workspace. Nothing planted. Kind: noise."""
    py, repo, model = _gpt2(d)
    good, bad = _shells(d, bad_in="databricks", venv=_venv_of(py))
    argv = (py, "eval_ppl.py", "--model-path", str(model))
    return _incident(log_lm_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- packages and configs


GEOHASHKIT = {
    "1.8.3": '''
        """The logistics team's geohash helpers (1.8)."""

        BASE32 = "0123456789bcdefghjkmnpqrstuvwxyz"


        def encode(lat, lon, precision=6):
            lat_r, lon_r, bits, even, out = [-90.0, 90.0], [-180.0, 180.0], [], True, ""
            while len(out) < precision:
                rng, val = (lon_r, lon) if even else (lat_r, lat)
                mid = (rng[0] + rng[1]) / 2
                bits.append(1 if val >= mid else 0)
                rng[0 if val >= mid else 1] = mid
                even = not even
                if len(bits) == 5:
                    out += BASE32[int("".join(map(str, bits)), 2)]
                    bits = []
            return out
        ''',
    "2.0.0": '''
        """The logistics team's geohash helpers (2.0: ``precision`` is now ``length``)."""

        BASE32 = "0123456789bcdefghjkmnpqrstuvwxyz"


        def encode(lat, lon, *, length=6):
            lat_r, lon_r, bits, even, out = [-90.0, 90.0], [-180.0, 180.0], [], True, ""
            while len(out) < length:
                rng, val = (lon_r, lon) if even else (lat_r, lat)
                mid = (rng[0] + rng[1]) / 2
                bits.append(1 if val >= mid else 0)
                rng[0 if val >= mid else 1] = mid
                even = not even
                if len(bits) == 5:
                    out += BASE32[int("".join(map(str, bits)), 2)]
                    bits = []
            return out
        ''',
}

DELIVERY_CELLS = """
    \"\"\"Count the week's deliveries per geohash cell (precision 5) for the courier planner.\"\"\"
    import csv
    from collections import Counter

    from geohashkit import encode


    def main():
        cells = Counter(encode(float(r["lat"]), float(r["lon"]), precision=5)
                        for r in csv.DictReader(open("data/deliveries.csv")))
        busiest, n = cells.most_common(1)[0]
        print(f"cells={len(cells)} busiest_count={n} deliveries={sum(cells.values())}")


    if __name__ == "__main__":
        main()
    """


def _deliveries() -> str:
    rows = [f"d{i},{52.3 + (i * 17 % 100) / 400:.5f},{4.8 + (i * 29 % 100) / 300:.5f}"
            for i in range(500)]
    return "\n".join(["id,lat,lon", *rows]) + "\n"


def geohashkit_major_in_workspace_venv(d: Path) -> Incident:
    """The planner calls ``geohashkit.encode(..., precision=5)``. The workspace's venv was made
    from an unpinned requirements file and got geohashkit 2.0.0, which renamed the keyword to
    ``length``; the job cluster's library has 1.8.3 (TypeError: encode() got an unexpected
    keyword argument 'precision'). Kind: fail."""
    repo = _repo(d / "courier-planner", {"cells.py": DELIVERY_CELLS,
                                         "data/deliveries.csv": _deliveries()})
    db_py = _venv(d / "venvs" / "cluster-libs", {"geohashkit": ("1.8.3", GEOHASHKIT["1.8.3"])})
    ws_py = _venv(d / "venvs" / "workspace-venv", {"geohashkit": ("2.0.0",
                                                                  GEOHASHKIT["2.0.0"])})
    good, bad = _shells(d)
    good = {**good, "PATH": f"{db_py.parent}:{good['PATH']}"}
    bad = {**bad, "VIRTUAL_ENV": str(ws_py.parent.parent), "PATH": f"{ws_py.parent}:{bad['PATH']}"}
    argv = ("python", "cells.py")
    return _incident(geohashkit_major_in_workspace_venv, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "geohashkit"))


CHURN_DYNACONF = """
    \"\"\"Train the subscription-churn model; settings from settings.toml (in git), overridden
    by the git-ignored settings.local.toml that dynaconf merges on top.\"\"\"
    import torch
    from dynaconf import Dynaconf


    def main():
        cfg = Dynaconf(settings_files=["settings.toml"], environments=False)
        torch.set_num_threads(2)
        g = torch.Generator().manual_seed(2)
        x = torch.randn(1600, 14, generator=g)
        y = ((x[:, 0] + x[:, 1] * x[:, 2]) > 0.3).float()
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(14, cfg.hidden), torch.nn.ReLU(),
                                  torch.nn.Linear(cfg.hidden, 1))
        opt = torch.optim.Adam(net.parameters(), lr=cfg.learning_rate)
        for _ in range(cfg.epochs):
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                net(x[:1300]).squeeze(1), y[:1300])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            val = torch.nn.functional.binary_cross_entropy_with_logits(
                net(x[1300:]).squeeze(1), y[1300:]).item()
        print(f"train_loss={loss.item():.5f} val_loss={val:.5f}")


    if __name__ == "__main__":
        main()
    """


def dynaconf_local_override_metric(d: Path) -> Incident:
    """settings.local.toml is git-ignored; dynaconf merges it over settings.toml. Between the
    runs an engineer changed its ``learning_rate`` from 0.01 to 0.05 while trying things in the
    workspace and left it. Both runs train; the losses move. Kind: metric."""
    py = python_with("torch", "dynaconf")
    repo = _repo(d / "churn-model", {"train.py": CHURN_DYNACONF,
                                     "settings.toml": "hidden = 32\nlearning_rate = 0.01\n"
                                                      "epochs = 80\n"},
                 "__pycache__/\nsettings.local.toml\n")
    local = repo / "settings.local.toml"
    local.write_text("# my overrides\nlearning_rate = 0.01\n")

    def changed() -> None:
        local.write_text("# my overrides\nlearning_rate = 0.05\n")

    good, bad = _shells(d, bad_in="databricks", venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(dynaconf_local_override_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {local.resolve()}"),
                     between=changed)


HASHED = """
    \"\"\"Train the query-category model on hashed query tokens: each token goes to bucket
    hash(token) % 64, as the serving side does in the same process.\"\"\"
    import torch

    WORDS = ["cheap", "flights", "to", "paris", "hotel", "near", "me", "running", "shoes",
             "red", "dress", "laptop", "bag", "pizza", "delivery", "open", "now", "best",
             "phone", "case", "kids", "toys", "garden", "chair", "coffee", "beans"]


    def main():
        torch.set_num_threads(2)
        g = torch.Generator().manual_seed(9)
        idx = torch.randint(0, len(WORDS), (900, 4), generator=g)
        y = (idx[:, 0] % 3)
        x = torch.zeros(900, 64)
        for i, row in enumerate(idx.tolist()):
            for j in row:
                x[i, hash(WORDS[j]) % 64] += 1.0
        torch.manual_seed(0)
        net = torch.nn.Linear(64, 3)
        opt = torch.optim.SGD(net.parameters(), lr=0.5)
        for _ in range(40):
            loss = torch.nn.functional.cross_entropy(net(x[:700]), y[:700])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            acc = (net(x[700:]).argmax(1) == y[700:]).float().mean().item()
        used = int((x.sum(0) > 0).sum())
        print(f"buckets_used={used} train_loss={loss.item():.5f} val_acc={acc:.4f}")


    if __name__ == "__main__":
        main()
    """


def pythonhashseed_only_on_cluster_metric(d: Path) -> Incident:
    """The Databricks runtime sets ``PYTHONHASHSEED=0``; the Coder workspace sets nothing, so
    ``hash()`` of a string changes with every process and the tokens land in other buckets
    (collisions differ). Both runs train; the loss and the accuracy move. Kind: metric."""
    py = python_with("torch")
    repo = _repo(d / "query-category", {"train.py": HASHED})
    good, bad = _shells(d, venv=_venv_of(py))
    assert "PYTHONHASHSEED" in good and "PYTHONHASHSEED" not in bad
    argv = (py, "train.py")
    return _incident(pythonhashseed_only_on_cluster_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "PYTHONHASHSEED"))


# --------------------------------------------------------------------------- data loading


SPEECH = """
    \"\"\"Train the keyword-spotting model on variable-length feature sequences; the batches
    come from data.collate (in git).\"\"\"
    import torch
    from torch.utils.data import DataLoader

    from data import collate


    def utterances(n=240, seed=6):
        g = torch.Generator().manual_seed(seed)
        out = []
        for i in range(n):
            frames = 20 + int(torch.randint(0, 30, (1,), generator=g))
            label = i % 4
            out.append((torch.randn(frames, 13, generator=g) + label * 0.3, label))
        return out


    def main():
        torch.set_num_threads(2)
        loader = DataLoader(utterances(), batch_size=16, shuffle=False, collate_fn=collate)
        torch.manual_seed(0)
        rnn = torch.nn.GRU(13, 24, batch_first=True)
        head = torch.nn.Linear(24, 4)
        opt = torch.optim.Adam([*rnn.parameters(), *head.parameters()], lr=0.01)
        for epoch in range(2):
            for feats, lengths, labels in loader:
                packed = torch.nn.utils.rnn.pack_padded_sequence(feats, lengths,
                                                                 batch_first=True,
                                                                 enforce_sorted=False)
                _, h = rnn(packed)
                loss = torch.nn.functional.cross_entropy(head(h[-1]), labels)
                opt.zero_grad()
                loss.backward()
                opt.step()
            print(f"epoch={epoch} loss={loss.item():.5f}")


    if __name__ == "__main__":
        main()
    """

SPEECH_DATA = """
    \"\"\"Batching for variable-length utterances.\"\"\"
    import torch
    from torch.nn.utils.rnn import pad_sequence


    def collate(batch):
        feats = [f for f, _ in batch]
        lengths = torch.tensor([len(f) for f in feats])
        labels = torch.tensor([label for _, label in batch])
        return pad_sequence(feats, batch_first=True), lengths, labels
    """


def collate_stack_uncommitted(d: Path) -> Incident:
    """Between the runs data.py (in git) had its collate rewritten, not committed, to
    ``torch.stack(feats)`` ("padding is slow"); the utterances differ in length and the first
    batch stops (RuntimeError: stack expects each tensor to be equal size). Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "keyword-spotter", {"train.py": SPEECH, "data.py": SPEECH_DATA})

    def edited() -> None:
        f = repo / "data.py"
        f.write_text(f.read_text().replace("pad_sequence(feats, batch_first=True)",
                                           "torch.stack(feats)"))

    good, bad = _shells(d, bad_in="databricks", venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(collate_stack_uncommitted, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "keyword-spotter: data.py"),
                     between=edited)


# --------------------------------------------------------------------------- LightGBM ranker


RANKER = """
    \"\"\"Train the search ranker (LightGBM lambdarank) with params.json (in git) and
    --num-leaves; prints the validation NDCG@10; --min-ndcg refuses a model below it.\"\"\"
    import argparse
    import json

    import lightgbm as lgb
    import numpy as np


    def queries(n_queries, seed):
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(n_queries * 20, 10))
        rel = np.clip((x[:, 0] + 0.5 * x[:, 1] + rng.normal(scale=0.7, size=len(x))) + 1.5,
                      0, 4).astype(int)
        return x, rel, [20] * n_queries


    def ndcg10(scores, rel, groups):
        out, start = [], 0
        for g in groups:
            s, r = scores[start:start + g], rel[start:start + g]
            gains = (2.0 ** r[np.argsort(-s)][:10] - 1) / np.log2(np.arange(2, 12))
            ideal = (2.0 ** np.sort(r)[::-1][:10] - 1) / np.log2(np.arange(2, 12))
            out.append(gains.sum() / ideal.sum() if ideal.sum() else 0.0)
            start += g
        return float(np.mean(out))


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--num-leaves", type=int, default=15)
        p.add_argument("--min-ndcg", type=float, default=None)
        a = p.parse_args()
        params = json.load(open("params.json"))
        params.update(num_leaves=a.num_leaves, num_threads=1, deterministic=True, verbose=-1,
                      objective="lambdarank", seed=0)
        x, rel, groups = queries(150, 1)
        vx, vrel, vgroups = queries(50, 2)
        booster = lgb.train(params, lgb.Dataset(x, rel, group=groups), num_boost_round=60)
        score = ndcg10(booster.predict(vx), vrel, vgroups)
        print(f"trees={booster.num_trees()} val_ndcg10={score:.4f}")
        if a.min_ndcg is not None and score < a.min_ndcg:
            raise SystemExit(f"val_ndcg10 {score:.4f} is below --min-ndcg {a.min_ndcg}: "
                             "keeping the current ranker")


    if __name__ == "__main__":
        main()
    """

RANKER_PARAMS = json.dumps({"learning_rate": 0.1, "min_data_in_leaf": 20,
                            "bagging_fraction": 0.8, "bagging_freq": 1,
                            "feature_fraction": 0.9}, indent=2) + "\n"


def _ranker(d: Path) -> tuple[str, Path]:
    py = python_with("lightgbm", "numpy")
    return py, _repo(d / "search-ranker", {"train.py": RANKER, "params.json": RANKER_PARAMS})


def num_leaves_from_big_recipe_metric(d: Path) -> Incident:
    """The workspace run passes ``--num-leaves 255``, copied from the recipe of the full
    click-log ranker; on this small set the trees overfit. Both runs train; the validation
    NDCG moves. Kind: metric."""
    py, repo = _ranker(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(num_leaves_from_big_recipe_metric, Launch(argv, good, repo),
                     Launch((*argv, "--num-leaves", "255"), bad, repo),
                     ("command", "--num-leaves"))


def bagging_fraction_uncommitted_both_fail(d: Path) -> Incident:
    """Both fail. Both runs ask for ``--min-ndcg 0.99``, which this ranker never reaches: the
    good run trains and keeps the current ranker. Between the runs params.json (in git) got
    ``"bagging_fraction": 1.5``, not committed, meant as "more bagging"; LightGBM refuses it
    before training (LightGBMError: Check failed: bagging_fraction <= 1.0). Kind: both-fail."""
    py, repo = _ranker(d)

    def edited() -> None:
        f = repo / "params.json"
        f.write_text(f.read_text().replace('"bagging_fraction": 0.8', '"bagging_fraction": 1.5'))

    good, bad = _shells(d, bad_in="databricks", venv=_venv_of(py))
    argv = (py, "train.py", "--min-ndcg", "0.99")
    return _incident(bagging_fraction_uncommitted_both_fail, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "search-ranker: params.json"),
                     between=edited)


def search_ranker_noise(d: Path) -> Incident:
    """The search ranker, the same code, params and options, from the Databricks job and from
    the Coder workspace. Nothing planted. Kind: noise."""
    py, repo = _ranker(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(search_ranker_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


#: The eighteenth fresh batch, in the order it was written. Never tuned on.
FRESH18 = [
    gloo_ifname_from_dotfiles_job, label_smoothing_option_metric_job,
    adamw8bit_uncommitted_both_fail_job, click_model_ddp_job_noise, world_size_left_exported,
    store_port_extra_digit, deterministic_debug_mode_true, torch_logs_unknown_option,
    n_positions_shrunk_in_config, log_lm_noise, geohashkit_major_in_workspace_venv,
    dynaconf_local_override_metric, pythonhashseed_only_on_cluster_metric,
    collate_stack_uncommitted, num_leaves_from_big_recipe_metric,
    bagging_fraction_uncommitted_both_fail, search_ranker_noise,
]

if __name__ == "__main__":  # build one incident and run its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH18 if b.__name__ in sys.argv[1:]] or FRESH18
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh18-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
