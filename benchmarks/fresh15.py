"""A fifteenth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh.py ... fresh14.py, for their format), how they are
run and scored (benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot
reference (docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job
captures one snapshot per rank. They form the corpus's ``fresh15`` half; report it, never change
the ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a spam filter trained with DDP: an
  uncommitted edit that saves the DDP wrapper's ``state_dict`` (the export check cannot load its
  ``module.``-prefixed keys), SageMaker's ``SM_HP_WEIGHT_DECAY`` hyperparameter reaching the
  script (loss moves), ``TORCH_DIST_INIT_BARRIER=true`` on top of an F1 gate the good job already
  misses (both fail), and the same job from both shells (noise);
- engines on the CPU: a feature cache on a c10d TCPStore whose wait timeout is
  ``FEATURE_STORE_TIMEOUT_MS=30`` (meant as seconds), and an embedding engine that starts one
  worker per GPU from ``SM_NUM_GPUS``, which is 0 on the CPU instance the job was moved to;
- model folders (transformers, a tiny GPT-2 made at build time): ``n_head`` set to 7 by a card
  sync (48 is not divisible by 7), ``layer_norm_epsilon`` from the distilled variant's card
  (perplexity moves), and the evaluation from both shells (noise);
- the rest: the team's ``featurekit-geo`` plugin (an entry point) missing from the training
  container's venv, an uncommitted refactor that dropped ``model.eval()`` (validation moves),
  ``--nesterov`` from the ResNet recipe without a momentum, a git-ignored ``params.local.json``
  with SageMaker's string ``"batch_size": "64"`` on top of an AUC gate (both fail), a commit that
  drops two features (error moves), an OmegaConf config written for SageMaker
  (``${oc.env:SM_CHANNEL_TRAIN}``) run in the notebook terminal, and the intent classifier's
  training from both shells (noise).

The shells are :func:`gradient_or_sagemaker_shell`: shell 0 a Paperspace Gradient notebook's
terminal (root in ``/notebooks``, ``PAPERSPACE_*``, the Jupyter server's ``JPY_*``, the image's
``NVIDIA_*``/``CUDA_*`` and a team ``~/.bashrc`` on ``/storage`` exporting ``NCCL_*``, ``TORCH_*``
and ``HF_*``), shell 1 an Amazon SageMaker training job's container (``SM_*``, ``TRAINING_JOB_*``,
``AWS_*`` with the container-credentials path, ``/opt/ml``, the DLC image's ``NCCL_*``/``FI_*``
EFA tuning, the project venv first on ``PATH``). The thread counts that change float reductions
are pinned alike. The planted side is either: some incidents work in the notebook and fail in
the training job, others the reverse.

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

from benchmarks.incidents import RANKS_FOLDER, RANKS_RUNSNAP, Incident, Launch, _git, _write
from benchmarks.thirdparty import Unavailable, _incident, python_with

JOB_NAME = "spamnet-train-2026-12-05-09-41-17-552"


def gradient_or_sagemaker_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 a Paperspace
    Gradient notebook's terminal, 1 a SageMaker training job's container (``venv`` the project's
    virtual environment, first on ``PATH``); each with its own tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    if n % 2 == 0:  # Paperspace Gradient notebook, JupyterLab terminal as root
        return {
            **common, "PATH": f"/usr/local/nvidia/bin:/usr/local/cuda/bin:{path}",
            "SHELL": "/bin/bash", "TERM": "xterm-256color", "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8", "HOSTNAME": "nqx8v2kd3m", "SHLVL": "2", "PWD": "/notebooks",
            "PS1": r"\u@\h:\w\$ ", "JPY_PARENT_PID": "7", "JPY_SESSION_NAME": "terminals/1",
            "JUPYTER_SERVER_ROOT": "/notebooks", "JUPYTER_SERVER_URL": "http://nqx8v2kd3m:8888/",
            "PAPERSPACE_CLUSTER_ID": "clg07azjl", "PAPERSPACE_NOTEBOOK_ID": "nqx8v2kd3m",
            "PAPERSPACE_NOTEBOOK_REPO_ID": "rz0q5n3x1c", "PAPERSPACE_FQDN":
            "nqx8v2kd3m.clg07azjl.paperspacegradient.com", "PAPERSPACE_METRIC_WORKLOAD_ID":
            "1f4c7e2a-6b3d-4a9e-8c15-d2e0b7a94f61", "NVIDIA_VISIBLE_DEVICES": "all",
            "NVIDIA_DRIVER_CAPABILITIES": "compute,utility", "NV_CUDA_LIB_VERSION": "12.1.1-1",
            "CUDA_VERSION": "12.1.1", "CUDA_MODULE_LOADING": "LAZY",
            "TORCH_CUDA_ARCH_LIST": "8.0 8.6 9.0", "TORCH_CUDNN_V8_API_ENABLED": "1",
            "NCCL_P2P_LEVEL": "SYS", "NCCL_SHM_DISABLE": "0", "NCCL_DEBUG": "VERSION",
            "HF_HOME": "/storage/.cache/huggingface", "HF_DATASETS_CACHE":
            "/storage/.cache/huggingface/datasets", "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
            "PIP_ROOT_USER_ACTION": "ignore", "MPLBACKEND": "module://matplotlib_inline.backend_inline",
            "GRADIENT_STORAGE": "/storage",
        }
    env = {  # SageMaker training job container (PyTorch DLC), instance ml.g5.2xlarge
        **common, "PATH": f"/opt/conda/bin:/usr/local/cuda/bin:{path}",
        "LANG": "C.UTF-8", "HOSTNAME": "ip-10-2-214-87.eu-west-1.compute.internal",
        "PYTHONUNBUFFERED": "TRUE", "PYTHONDONTWRITEBYTECODE": "TRUE",
        "TRAINING_JOB_NAME": JOB_NAME,
        "TRAINING_JOB_ARN": f"arn:aws:sagemaker:eu-west-1:381492165330:training-job/{JOB_NAME}",
        "AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/9c4e1f0a-3b7d-4e62-a8f5",
        "SM_CURRENT_HOST": "algo-1", "SM_HOSTS": '["algo-1"]', "SM_NUM_GPUS": "1",
        "SM_NUM_CPUS": "8", "SM_CURRENT_INSTANCE_TYPE": "ml.g5.2xlarge", "SM_LOG_LEVEL": "20",
        "SM_NETWORK_INTERFACE_NAME": "eth0", "SM_USER_ENTRY_POINT": "train.py",
        "SM_MODEL_DIR": "/opt/ml/model", "SM_OUTPUT_DATA_DIR": "/opt/ml/output/data",
        "SM_CHANNEL_TRAIN": "/opt/ml/input/data/train", "SM_CHANNELS": '["train"]',
        "SM_INPUT_DIR": "/opt/ml/input", "SM_INPUT_CONFIG_DIR": "/opt/ml/input/config",
        "SM_HPS": "{}", "SM_MODULE_DIR": f"s3://sagemaker-eu-west-1-381492165330/{JOB_NAME}/"
                                         "source/sourcedir.tar.gz",
        "SAGEMAKER_REGION": "eu-west-1", "SAGEMAKER_PROGRAM": "train.py",
        "SAGEMAKER_SUBMIT_DIRECTORY": "/opt/ml/code", "DMLC_INTERFACE": "eth0",
        "NCCL_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "WARN", "NCCL_PROTO": "simple",
        "NCCL_IB_DISABLE": "1", "FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1",
        "RDMAV_FORK_SAFE": "1", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
        "TORCH_NVCC_FLAGS": "-Xfatbin -compress-all", "CUDA_HOME": "/usr/local/cuda",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_HOME": "/opt/ml/input/data/hf",
    }
    if venv:
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "sagemaker", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the SageMaker container (``bad_in="sagemaker"``) or from the Gradient terminal
    (``"gradient"``)."""
    nb = gradient_or_sagemaker_shell(0, d / "home" / "root-gradient")
    sm = gradient_or_sagemaker_shell(1, d / "home" / "root-sagemaker", venv)
    first, second = (nb, sm) if bad_in == "sagemaker" else (sm, nb)
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


SPAM_DDP = """
    \"\"\"Train the spam filter (an MLP over hashed tokens) with DDP over gloo. Settings from
    configs/train.yaml; SageMaker passes the estimator's hyperparameters as SM_HP_* variables,
    which win when set. Rank 0 saves the weights to --out and checks that they load into a fresh
    model (what the export step does); --gate-f1 refuses a model below that validation F1.\"\"\"
    import argparse
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP

    TOKENS = 64


    def messages(n=3200, seed=5):
        g = torch.Generator().manual_seed(seed)
        x = (torch.rand(n, TOKENS, generator=g) < 0.12).float()
        w = torch.randn(TOKENS, generator=g)
        y = ((x @ w + 0.6 * torch.randn(n, generator=g)) > 0.3).float()
        return x, y


    class SpamNet(torch.nn.Module):
        def __init__(self, hidden):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Linear(TOKENS, hidden), torch.nn.ReLU())
            self.out = torch.nn.Linear(hidden, 1)

        def forward(self, x):
            return self.out(self.body(x)).squeeze(1)


    def hp(name, default, cast):
        return cast(os.environ.get("SM_HP_" + name.upper(), default))


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--out", default="artifacts/spamnet.pt")
        p.add_argument("--gate-f1", type=float, default=None)
        a = p.parse_args()
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        with open("configs/train.yaml") as f:
            cfg = yaml.safe_load(f)
        epochs, lr = hp("epochs", cfg["epochs"], int), hp("lr", cfg["lr"], float)
        decay = hp("weight_decay", 0.0, float)
        x, y = messages()
        tx, ty = x[:2600][rank::world], y[:2600][rank::world]
        torch.manual_seed(0)
        model = DDP(SpamNet(cfg["hidden"]))
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=decay)
        for epoch in range(epochs):
            total, steps = 0.0, 0
            for s in range(0, len(tx), cfg["batch"]):
                loss = F.binary_cross_entropy_with_logits(model(tx[s:s + cfg["batch"]]),
                                                          ty[s:s + cfg["batch"]])
                opt.zero_grad()
                loss.backward()
                opt.step()
                total, steps = total + loss.item(), steps + 1
            t = torch.tensor([total / steps])
            dist.all_reduce(t)
            if rank == 0:
                print(f"epoch={epoch} loss={t.item() / world:.5f}")
        vx, vy = x[2600:][rank::world], y[2600:][rank::world]
        with torch.no_grad():
            flag = (model(vx) > 0).float()
        counts = torch.stack([(flag * vy).sum(), (flag * (1 - vy)).sum(), ((1 - flag) * vy).sum()])
        dist.all_reduce(counts)
        tp, fp, fn = counts.tolist()
        f1 = 2 * tp / max(2 * tp + fp + fn, 1.0)
        dist.barrier()
        if rank == 0:
            os.makedirs(os.path.dirname(a.out), exist_ok=True)
            torch.save(model.module.state_dict(), a.out)
            check = SpamNet(cfg["hidden"])
            check.load_state_dict(torch.load(a.out))
            print(f"val_f1={f1:.4f} saved={a.out}")
            if a.gate_f1 is not None and f1 < a.gate_f1:
                raise RuntimeError(f"quality gate: val_f1={f1:.4f} is below --gate-f1 "
                                   f"{a.gate_f1}, not registering the model")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

SPAM_YAML = "# spam filter\nlr: 0.01\nhidden: 32\nepochs: 3\nbatch: 64\n"


def _spam_job(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    repo = _repo(d / "spamnet", {"train.py": SPAM_DDP, "configs/train.yaml": SPAM_YAML},
                 "__pycache__/\nartifacts/\n")
    return py, repo


def ddp_wrapper_state_dict_uncommitted_job(d: Path) -> Incident:
    """Job against job. Between the jobs train.py got an uncommitted "simplification":
    ``torch.save(model.state_dict(), ...)`` instead of ``model.module.state_dict()``. The
    checkpoint now holds the DDP wrapper's ``module.``-prefixed keys and rank 0's export check
    cannot load them into a plain SpamNet (RuntimeError: Missing key(s) ... Unexpected key(s)
    "module.body.0.weight"). Kind: fail."""
    py, repo = _spam_job(d)

    def edited() -> None:
        f = repo / "train.py"
        f.write_text(f.read_text().replace("torch.save(model.module.state_dict(), a.out)",
                                           "torch.save(model.state_dict(), a.out)"))

    good, bad = _shells(d, bad_in="gradient", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(ddp_wrapper_state_dict_uncommitted_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "spamnet: train.py"), between=edited)


def sm_hp_weight_decay_metric_job(d: Path) -> Incident:
    """Job against job. The SageMaker estimator was cloned from the BERT fine-tuning one, whose
    hyperparameters carry ``weight_decay: 0.05``; SageMaker exports it as
    ``SM_HP_WEIGHT_DECAY=0.05`` and the script's ``hp()`` takes it over the default 0. Both jobs
    train; every epoch's loss moves. Kind: metric."""
    py, repo = _spam_job(d)
    good, bad = _shells(d, bad={"SM_HP_WEIGHT_DECAY": "0.05",
                                "SM_HPS": '{"weight_decay": 0.05}'}, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(sm_hp_weight_decay_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "SM_HP_WEIGHT_DECAY"))


def init_barrier_true_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--gate-f1 0.99``, which this filter never
    reaches: the Gradient job trains and rank 0 refuses to register it. The SageMaker estimator's
    ``environment`` has ``TORCH_DIST_INIT_BARRIER=true`` (meant as "on"); torch reads it as an
    integer and every rank stops in init_process_group (ValueError quoting ``true``).
    Kind: both-fail."""
    py, repo = _spam_job(d)
    good, bad = _shells(d, bad={"TORCH_DIST_INIT_BARRIER": "true"}, venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--gate-f1", "0.99")
    return _incident(init_barrier_true_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "TORCH_DIST_INIT_BARRIER"))


def spam_ddp_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the Gradient terminal and from the
    SageMaker container: each job its own rendezvous and rank processes, the shells their own
    Paperspace, Jupyter, SageMaker, AWS, NCCL_*, FI_*, TORCH_*, CUDA_* and HF_* variables.
    Nothing planted. Kind: noise."""
    py, repo = _spam_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(spam_ddp_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- engines on the CPU


FEATURE_CACHE = """
    \"\"\"Warm the merchant feature cache: host a c10d TCPStore, let the loader thread page each
    merchant's embedding in from the feature service and publish it, and wait for its ``ready``
    key. The store's timeout is FEATURE_STORE_TIMEOUT_MS (milliseconds; 10 s when unset).\"\"\"
    import datetime
    import os
    import threading
    import time

    import torch
    import torch.distributed as dist


    def load(port, merchants):
        client = dist.TCPStore("127.0.0.1", port, is_master=False,
                               timeout=datetime.timedelta(seconds=10))
        g = torch.Generator().manual_seed(3)
        emb = torch.randn(merchants, 16, generator=g)
        time.sleep(0.6)  # the feature service pages the table out slowly
        for i in range(merchants):
            client.set(f"merchant/{i}/norm", f"{emb[i].norm().item():.5f}")
        client.set("ready", "1")


    def main():
        ms = int(os.environ.get("FEATURE_STORE_TIMEOUT_MS", "10000"))
        server = dist.TCPStore("127.0.0.1", 0, world_size=1, is_master=True,
                               timeout=datetime.timedelta(milliseconds=ms),
                               wait_for_workers=False)
        loader = threading.Thread(target=load, args=(server.port, 150))
        loader.start()
        server.wait(["ready"])
        loader.join()
        total = sum(float(server.get(f"merchant/{i}/norm")) for i in range(150))
        print(f"merchants={server.num_keys() - 1} norm_sum={total:.4f}")


    if __name__ == "__main__":
        main()
    """


def store_timeout_ms_given_seconds(d: Path) -> Incident:
    """The feature cache's store timeout is read in milliseconds. The SageMaker estimator's
    ``environment`` got ``FEATURE_STORE_TIMEOUT_MS=30`` from the service's runbook, where the
    figure is seconds; the wait for the loader's ``ready`` key gives up after 30 ms
    (DistStoreError: wait timeout after 30ms). The notebook sets nothing. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "feature-cache", {"warm.py": FEATURE_CACHE})
    good, bad = _shells(d, bad={"FEATURE_STORE_TIMEOUT_MS": "30"}, venv=_venv_of(py))
    argv = (py, "warm.py")
    return _incident(store_timeout_ms_given_seconds, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "FEATURE_STORE_TIMEOUT_MS"))


EMBED_ENGINE = """
    \"\"\"Batch embedding engine: one worker process per GPU (SM_NUM_GPUS, as SageMaker reports
    it; 2 when unset), each embedding its shard of the catalogue; the parent sums the norms.\"\"\"
    import os

    import torch
    import torch.multiprocessing as mp


    def worker(rank, shard, out):
        torch.manual_seed(0)
        proj = torch.nn.Linear(shard.shape[1], 8)
        with torch.no_grad():
            out.put((rank, proj(shard).norm(dim=1).sum().item()))


    def main():
        workers = int(os.environ.get("SM_NUM_GPUS", "2"))
        g = torch.Generator().manual_seed(12)
        catalogue = torch.randn(400, 24, generator=g)
        shards = torch.chunk(catalogue, workers)
        ctx = mp.get_context("fork")
        out = ctx.Queue()
        procs = [ctx.Process(target=worker, args=(r, s, out)) for r, s in enumerate(shards)]
        for proc in procs:
            proc.start()
        sums = dict(out.get(timeout=60) for _ in procs)
        for proc in procs:
            proc.join()
        print(f"workers={len(procs)} items={len(catalogue)} norm_sum={sum(sums.values()):.4f}")


    if __name__ == "__main__":
        main()
    """


def sm_num_gpus_zero_on_cpu_instance(d: Path) -> Incident:
    """The embedding job was moved to a CPU instance (ml.c5.4xlarge) to save money; there
    SageMaker exports ``SM_NUM_GPUS=0`` and the engine splits the catalogue into zero shards
    (RuntimeError: chunk expects ``chunks`` to be greater than 0, got: 0). The notebook sets no
    SM_NUM_GPUS and runs two workers. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "embed-engine", {"engine.py": EMBED_ENGINE})
    good, bad = _shells(d, bad={"SM_NUM_GPUS": "0", "SM_NUM_CPUS": "16",
                                "SM_CURRENT_INSTANCE_TYPE": "ml.c5.4xlarge"},
                        venv=_venv_of(py))
    argv = (py, "engine.py")
    return _incident(sm_num_gpus_zero_on_cpu_instance, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "SM_NUM_GPUS"))


# --------------------------------------------------------------------------- model folders


MAKE_GPT2 = """
import os, sys, torch
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(0)
cfg = GPT2Config(vocab_size=256, n_positions=96, n_embd=48, n_layer=2, n_head=4,
                 initializer_range=0.25, bos_token_id=0, eos_token_id=0)
GPT2LMHeadModel(cfg).save_pretrained(sys.argv[1])
"""

TITLE_PPL = """
    \"\"\"Perplexity of the product-title completion model (a GPT-2 folder, --model-path) on the
    held-out catalogue titles, byte-level, in windows of 64 bytes.\"\"\"
    import argparse
    import math

    import torch
    from transformers import AutoModelForCausalLM


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        model = AutoModelForCausalLM.from_pretrained(a.model_path).eval()
        data = list(open("data/titles.txt", "rb").read())
        ids = torch.tensor(data[: len(data) // 64 * 64]).view(-1, 64)
        with torch.no_grad():
            loss = model(input_ids=ids, labels=ids).loss.item()
        print(f"windows={len(ids)} loss={loss:.5f} ppl={math.exp(loss):.4f}")


    if __name__ == "__main__":
        main()
    """


def _titles() -> str:
    words = ["wireless", "earbuds", "stainless", "steel", "water", "bottle", "kids", "rain",
             "jacket", "usb-c", "charger", "65w", "linen", "shirt", "oak", "desk", "lamp",
             "trail", "running", "shoes", "ceramic", "mug", "set", "of", "4"]
    return "\n".join(" ".join(words[(i * 5 + j * 11) % len(words)] for j in range(3 + i % 5))
                     for i in range(300)) + "\n"


def _gpt2(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers")
    repo = _repo(d / "title-complete", {"eval_ppl.py": TITLE_PPL, "data/titles.txt": _titles()})
    model = d / "models" / "title-gpt2"
    _build(py, MAKE_GPT2, str(model))
    return py, repo, model


def _edit_config(model: Path, **fields: object) -> None:
    cfg = json.loads((model / "config.json").read_text())
    cfg.update(fields)
    (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def n_head_from_card_sync(d: Path) -> Incident:
    """Between the runs the model-card sync rewrote the folder's config.json (outside git) with
    ``"n_head": 7`` from the card of the 56-wide variant; this model is 48 wide and building its
    attention stops (ValueError: `embed_dim` must be divisible by num_heads, quoting 48 and 7).
    Kind: fail."""
    py, repo, model = _gpt2(d)

    def synced() -> None:
        _edit_config(model, n_head=7)

    good, bad = _shells(d, bad_in="gradient", venv=_venv_of(py))
    argv = (py, "eval_ppl.py", "--model-path", str(model))
    return _incident(n_head_from_card_sync, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("models", "--model-path: n_head"), between=synced)


def layer_norm_epsilon_from_card_metric(d: Path) -> Incident:
    """Between the runs config.json (outside git) got ``"layer_norm_epsilon": 0.05`` from the
    distilled variant's card. The weights load as before; every layer norm divides by a larger
    figure and the loss and the perplexity move. Kind: metric."""
    py, repo, model = _gpt2(d)

    def edited() -> None:
        _edit_config(model, layer_norm_epsilon=0.05)

    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "eval_ppl.py", "--model-path", str(model))
    return _incident(layer_norm_epsilon_from_card_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: layer_norm_epsilon"),
                     between=edited)


def title_ppl_noise(d: Path) -> Incident:
    """The title model's perplexity, the same folder and data, from the Gradient terminal and
    from the SageMaker container. Nothing planted. Kind: noise."""
    py, repo, model = _gpt2(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "eval_ppl.py", "--model-path", str(model))
    return _incident(title_ppl_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- packages


FEATUREKIT = '''
    """The team's feature transforms; more come from plugins (entry points
    ``featurekit.transforms``)."""
    from importlib.metadata import entry_points

    BUILTIN = {"log1p": lambda t: t.log1p(), "scale": lambda t: t / t.abs().max()}


    def get_transform(name):
        if name in BUILTIN:
            return BUILTIN[name]
        for ep in entry_points(group="featurekit.transforms"):
            if ep.name == name:
                return ep.load()
        raise KeyError(f"unknown transform {name!r}: install the plugin that provides it "
                       f"(built in: {', '.join(sorted(BUILTIN))})")
    '''

FEATUREKIT_GEO = '''
    """Geographic transforms for featurekit."""


    def geo_grid(t):
        return (t / 5.0).floor() / 36.0
    '''

RISK_SCORE = """
    \"\"\"Score merchant risk: build the features that features.yaml lists with featurekit, then
    apply the risk model's weights.\"\"\"
    import torch
    import yaml
    from featurekit import get_transform


    def main():
        with open("features.yaml") as f:
            spec = yaml.safe_load(f)["features"]
        g = torch.Generator().manual_seed(8)
        raw = {c: torch.rand(500, generator=g) * 180 for c in ("amount", "lat", "lon", "age")}
        x = torch.stack([get_transform(s["transform"])(raw[s["column"]]) for s in spec], 1)
        w = torch.linspace(-1.0, 1.0, x.shape[1])
        risk = torch.sigmoid(x @ w)
        print(f"features={x.shape[1]} mean_risk={risk.mean().item():.4f} "
              f"flagged={int((risk > 0.5).sum())}")


    if __name__ == "__main__":
        main()
    """

RISK_FEATURES = """
    features:
      - {column: amount, transform: log1p}
      - {column: age, transform: scale}
      - {column: lat, transform: geo_grid}
      - {column: lon, transform: geo_grid}
    """


def _layered_venv(py: str, path: Path, dists: dict[str, tuple[str, str, str]]) -> Path:
    """A venv made by the corpus interpreter, layered on its packages with a .pth file (as the
    image's setup does), holding distributions ``name -> (version, module, source)`` and, for a
    plugin, its entry points (``module`` ``name:...`` lines in ``entry_points.txt``)."""
    subprocess.run([py, "-m", "venv", "--without-pip", str(path)], check=True,
                   capture_output=True)
    vpy = path / "bin" / "python"
    site = Path(subprocess.check_output(
        [str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        text=True).strip())
    base = subprocess.check_output(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip()
    (site / "_base_image.pth").write_text(base + "\n")
    for name, (version, module, source) in dists.items():
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\n"
                                       f"Version: {version}\n")
        (info / "INSTALLER").write_text("pip\n")
        (info / "top_level.txt").write_text(module + "\n")
        (info / "RECORD").write_text(f"{module}/__init__.py,,\n")
        _write(site / module / "__init__.py", source)
        if name.endswith("-geo"):
            (info / "entry_points.txt").write_text(
                "[featurekit.transforms]\ngeo_grid = featurekit_geo:geo_grid\n")
    return vpy


def featurekit_geo_plugin_missing(d: Path) -> Incident:
    """The risk scorer's ``geo_grid`` transform comes from the ``featurekit-geo`` plugin (an
    entry point). It was pip-installed by hand in the notebook's venv and never added to
    requirements.txt, so the training image's venv has featurekit 2.3.0 alone and
    ``get_transform`` finds no ``geo_grid`` (KeyError quoting it). Kind: fail."""
    py = python_with("torch", "yaml")
    repo = _repo(d / "merchant-risk", {"score.py": RISK_SCORE, "features.yaml": RISK_FEATURES,
                                       "requirements.txt": "featurekit==2.3.0\ntorch\npyyaml\n"})
    core = {"featurekit": ("2.3.0", "featurekit", FEATUREKIT)}
    nb_py = _layered_venv(py, d / "venvs" / "notebook-venv",
                          {**core, "featurekit-geo": ("0.4.1", "featurekit_geo", FEATUREKIT_GEO)})
    sm_py = _layered_venv(py, d / "venvs" / "image-venv", core)
    good, bad = _shells(d, venv=str(sm_py.parent.parent))
    good = {**good, "VIRTUAL_ENV": str(nb_py.parent.parent),
            "PATH": f"{nb_py.parent}:{good['PATH']}"}
    argv = ("python", "score.py")
    return _incident(featurekit_geo_plugin_missing, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "featurekit-geo"),
                     ("packages", "featurekit_geo"))


# --------------------------------------------------------------------------- training scripts


INTENT_TRAIN = """
    \"\"\"Train the support-intent classifier (an MLP with dropout over sentence features) and
    report the validation figures.\"\"\"
    import torch

    from evaluate import evaluate


    def data(n=1500, seed=17):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, 32, generator=g)
        y = (x[:, :6] @ torch.randn(6, 5, generator=g)).argmax(1)
        return x, y


    def main():
        x, y = data()
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                    torch.nn.Dropout(0.4), torch.nn.Linear(64, 5))
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        for epoch in range(8):
            model.train()
            for s in range(0, 1200, 100):
                loss = torch.nn.functional.cross_entropy(model(x[s:s + 100]), y[s:s + 100])
                opt.zero_grad()
                loss.backward()
                opt.step()
        val_loss, val_acc = evaluate(model, x[1200:], y[1200:])
        print(f"train_loss={loss.item():.5f} val_loss={val_loss:.5f} val_acc={val_acc:.4f}")


    if __name__ == "__main__":
        main()
    """

INTENT_EVAL = """
    \"\"\"Validation loss and accuracy of the intent classifier.\"\"\"
    import torch


    def evaluate(model, x, y):
        model.eval()
        torch.manual_seed(1)
        with torch.no_grad():
            logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits, y).item()
        return loss, (logits.argmax(1) == y).float().mean().item()
    """


def _intent(d: Path) -> tuple[str, Path]:
    py = python_with("torch")
    return py, _repo(d / "support-intent", {"train.py": INTENT_TRAIN, "evaluate.py": INTENT_EVAL})


def eval_mode_dropped_uncommitted_metric(d: Path) -> Incident:
    """Between the runs evaluate.py lost its ``model.eval()`` in an uncommitted refactor ("the
    caller switches modes"; it does not): validation now runs with dropout on. Both runs exit
    0; the validation loss and accuracy move. Kind: metric."""
    py, repo = _intent(d)

    def edited() -> None:
        f = repo / "evaluate.py"
        f.write_text(f.read_text().replace("    model.eval()\n", ""))

    good, bad = _shells(d, bad_in="gradient", venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(eval_mode_dropped_uncommitted_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "support-intent: evaluate.py"),
                     between=edited)


def intent_train_noise(d: Path) -> Incident:
    """The intent classifier's training and validation, the same code, from the Gradient
    terminal and from the SageMaker container. Nothing planted. Kind: noise."""
    py, repo = _intent(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(intent_train_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


TAGGER_TRAIN = """
    \"\"\"Train the image-tag head on precomputed embeddings; optimiser options on the command
    line.\"\"\"
    import argparse

    import torch


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--lr", type=float, default=0.05)
        p.add_argument("--momentum", type=float, default=0.0)
        p.add_argument("--nesterov", action="store_true")
        p.add_argument("--epochs", type=int, default=20)
        a = p.parse_args()
        g = torch.Generator().manual_seed(23)
        x = torch.randn(900, 40, generator=g)
        y = (x @ torch.randn(40, 6, generator=g) > 0.5).float()
        torch.manual_seed(0)
        head = torch.nn.Linear(40, 6)
        opt = torch.optim.SGD(head.parameters(), lr=a.lr, momentum=a.momentum,
                              nesterov=a.nesterov)
        for epoch in range(a.epochs):
            loss = torch.nn.functional.binary_cross_entropy_with_logits(head(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epochs={a.epochs} bce={loss.item():.5f}")


    if __name__ == "__main__":
        main()
    """


def nesterov_from_resnet_recipe(d: Path) -> Incident:
    """The SageMaker job's entry-point arguments took ``--nesterov`` from the ResNet recipe but
    not its ``--momentum 0.9``; with this script's default momentum 0 SGD refuses (ValueError:
    Nesterov momentum requires a momentum and zero dampening). Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "image-tags", {"train_head.py": TAGGER_TRAIN})
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "train_head.py")
    return _incident(nesterov_from_resnet_recipe, Launch(argv, good, repo),
                     Launch((*argv, "--nesterov"), bad, repo), ("command", "--nesterov"))


RETURNS_FIT = """
    \"\"\"Fit the returns predictor (logistic head, DataLoader batches) with params.json (in git)
    under the machine's git-ignored params.local.json; --min-auc refuses to publish below it.\"\"\"
    import argparse
    import json
    import os

    import torch
    from sklearn.metrics import roc_auc_score
    from torch.utils.data import DataLoader, TensorDataset


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--min-auc", type=float, default=None)
        a = p.parse_args()
        params = json.load(open("params.json"))
        if os.path.exists("params.local.json"):
            params.update(json.load(open("params.local.json")))
        g = torch.Generator().manual_seed(31)
        x = torch.randn(2500, 12, generator=g)
        y = ((x[:, 0] - 0.7 * x[:, 3] + torch.randn(2500, generator=g)) > 0.5).float()
        loader = DataLoader(TensorDataset(x[:2000], y[:2000]), batch_size=params["batch_size"],
                            shuffle=True, generator=torch.Generator().manual_seed(0))
        torch.manual_seed(0)
        head = torch.nn.Linear(12, 1)
        opt = torch.optim.Adam(head.parameters(), lr=params["lr"])
        for epoch in range(params["epochs"]):
            for bx, by in loader:
                loss = torch.nn.functional.binary_cross_entropy_with_logits(head(bx).squeeze(1), by)
                opt.zero_grad()
                loss.backward()
                opt.step()
        with torch.no_grad():
            auc = roc_auc_score(y[2000:].numpy(), head(x[2000:]).squeeze(1).numpy())
        print(f"epochs={params['epochs']} val_auc={auc:.4f}")
        if a.min_auc is not None and auc < a.min_auc:
            raise SystemExit(f"val_auc {auc:.4f} is below --min-auc {a.min_auc}: not publishing")


    if __name__ == "__main__":
        main()
    """


def batch_size_string_local_params_both_fail(d: Path) -> Incident:
    """Both fail. Both runs pass ``--min-auc 0.97`` from the new release checklist, which this
    model never reaches: the first fits and stops at the gate. params.local.json is git-ignored
    (each machine's overrides); between the runs it was replaced by one written from the
    SageMaker job's hyperparameters, where every value is a string: ``"batch_size": "64"``, and
    the DataLoader refuses it (ValueError: batch_size should be a positive integer value, but
    got batch_size=64). Kind: both-fail."""
    py = python_with("torch", "sklearn")
    repo = _repo(d / "returns-model", {"fit.py": RETURNS_FIT,
                                       "params.json": '{"lr": 0.02, "epochs": 4, '
                                                      '"batch_size": 128}\n'},
                 "__pycache__/\nparams.local.json\n")
    local = repo / "params.local.json"
    local.write_text('{"batch_size": 64}\n')

    def replaced() -> None:
        local.write_text('{"batch_size": "64", "epochs": "4"}\n')

    good, bad = _shells(d, bad_in="gradient", venv=_venv_of(py))
    argv = (py, "fit.py", "--min-auc", "0.97")
    return _incident(batch_size_string_local_params_both_fail, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {local.resolve()}"),
                     between=replaced)


BASKET_FIT = """
    \"\"\"Fit the basket-value regressor (ridge) on the columns configs/features.yaml lists and
    report the held-out error.\"\"\"
    import numpy as np
    import yaml
    from sklearn.linear_model import Ridge
    from sklearn.metrics import mean_absolute_error

    COLUMNS = ["items", "unit_price", "discount", "loyalty_years", "session_minutes",
               "pages_viewed", "hour", "returning"]


    def main():
        with open("configs/features.yaml") as f:
            use = yaml.safe_load(f)["columns"]
        rng = np.random.default_rng(14)
        x = rng.normal(size=(2000, len(COLUMNS)))
        y = x @ np.array([3.0, 2.0, -1.5, 0.4, 1.2, 0.9, 0.1, 0.6]) + rng.normal(size=2000)
        cols = [COLUMNS.index(c) for c in use]
        model = Ridge(alpha=1.0).fit(x[:1600, cols], y[:1600])
        mae = mean_absolute_error(y[1600:], model.predict(x[1600:, cols]))
        print(f"features={len(cols)} val_mae={mae:.4f}")


    if __name__ == "__main__":
        main()
    """

BASKET_FEATURES = """
    columns:
      - items
      - unit_price
      - discount
      - loyalty_years
      - session_minutes
      - pages_viewed
      - hour
      - returning
    """


def session_features_dropped_commit_metric(d: Path) -> Incident:
    """Between the runs a commit ("drop the stale session features") removed
    ``session_minutes`` and ``pages_viewed`` from configs/features.yaml; the second run is at
    that commit. Both exit 0; the held-out error moves. Kind: metric."""
    py = python_with("sklearn", "yaml", "numpy")
    repo = _repo(d / "basket-value", {"fit.py": BASKET_FIT,
                                      "configs/features.yaml": BASKET_FEATURES})

    def committed() -> None:
        f = repo / "configs" / "features.yaml"
        f.write_text(f.read_text().replace("  - session_minutes\n", "")
                     .replace("  - pages_viewed\n", ""))
        _git(repo, "commit", "-qam", "drop the stale session features")

    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(session_features_dropped_commit_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "basket-value.commit"),
                     ("git", "basket-value: configs/features.yaml"), between=committed)


CHURN_FIT = """
    \"\"\"Fit the subscription-churn head; where the data is comes from conf/train.yaml
    (OmegaConf, written for the SageMaker job).\"\"\"
    import os

    import torch
    from omegaconf import OmegaConf


    def main():
        cfg = OmegaConf.load("conf/train.yaml")
        rows = [line.split(",") for line in open(os.path.join(cfg.data.dir, "train.csv"))][1:]
        x = torch.tensor([[float(v) for v in r[:-1]] for r in rows])
        y = torch.tensor([float(r[-1]) for r in rows])
        torch.manual_seed(0)
        head = torch.nn.Linear(x.shape[1], 1)
        opt = torch.optim.Adam(head.parameters(), lr=cfg.optim.lr)
        for step in range(cfg.optim.steps):
            loss = torch.nn.functional.binary_cross_entropy_with_logits(head(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"rows={len(rows)} bce={loss.item():.5f}")


    if __name__ == "__main__":
        main()
    """

CHURN_YAML = """
    data:
      dir: ${oc.env:SM_CHANNEL_TRAIN}
    optim:
      lr: 0.05
      steps: 80
    """


def _churn_csv() -> str:
    lines = ["tenure,monthly,tickets,churned"]
    for i in range(400):
        tenure, monthly, tickets = (i * 7) % 60, 10 + (i * 13) % 50, (i * 3) % 5
        lines.append(f"{tenure},{monthly},{tickets},{int(tickets > 2 and tenure < 20)}")
    return "\n".join(lines) + "\n"


def sm_channel_missing_in_notebook(d: Path) -> Incident:
    """conf/train.yaml (in git) was written for the SageMaker job: ``dir:
    ${oc.env:SM_CHANNEL_TRAIN}``, the folder SageMaker mounts the train channel at. In the
    notebook terminal no SM_CHANNEL_TRAIN is set and OmegaConf stops resolving it
    (InterpolationResolutionError: Environment variable 'SM_CHANNEL_TRAIN' not found).
    Kind: fail."""
    py = python_with("torch", "omegaconf")
    repo = _repo(d / "churn-head", {"fit.py": CHURN_FIT, "conf/train.yaml": CHURN_YAML})
    channel = d / "opt" / "ml" / "input" / "data" / "train"
    _write(channel / "train.csv", _churn_csv())
    good, bad = _shells(d, good={"SM_CHANNEL_TRAIN": str(channel)}, bad_in="gradient",
                        venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(sm_channel_missing_in_notebook, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "SM_CHANNEL_TRAIN"))


#: The fifteenth fresh batch, in the order it was written. Never tuned on.
FRESH15 = [
    ddp_wrapper_state_dict_uncommitted_job, sm_hp_weight_decay_metric_job,
    init_barrier_true_both_fail_job, spam_ddp_job_noise, store_timeout_ms_given_seconds,
    sm_num_gpus_zero_on_cpu_instance, n_head_from_card_sync, layer_norm_epsilon_from_card_metric,
    title_ppl_noise, featurekit_geo_plugin_missing, eval_mode_dropped_uncommitted_metric,
    intent_train_noise, nesterov_from_resnet_recipe, batch_size_string_local_params_both_fail,
    session_features_dropped_commit_metric, sm_channel_missing_in_notebook,
]

if __name__ == "__main__":  # build one incident and print its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH15 if b.__name__ in sys.argv[1:]] or FRESH15
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh15-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
