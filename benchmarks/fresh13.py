"""A thirteenth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh.py ... fresh12.py, for their format), how they are
run and scored (benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot
reference (docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job
captures one snapshot per rank. They form the corpus's ``fresh13`` half; report it, never change
the ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Fifteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a sensor-fault classifier trained
  with DDP that stages each rank's shard in node-local scratch (``$TMPDIR``): a RunPod template's
  ``TMPDIR=/workspace/tmp`` on a pod started without its network volume; an uncommitted
  ``label_smoothing`` in the git-tracked train config (loss moves); ``GLOO_DEVICE_TRANSPORT=uv``
  copied into a ``~/.cshrc`` from a Windows laptop's notes, on top of a quality gate the good
  job already misses (both fail); and the same job from both shells (noise);
- c10d: a feature store's client that connects to ``MASTER_ADDR``, which the RunPod template sets
  to the pod's public address (the connection never gets an answer from a store);
- model folders (transformers; tiny models made at build time): a ``neutral`` label added to a
  DistilBERT sentiment classifier's ``id2label`` (the classifier head no longer fits),
  ``use_parallel_residual`` switched off in a GPT-NeoX folder (perplexity moves),
  ``--dtype bfloat16`` given to the sentiment evaluation (accuracy and confidence move),
  ``EVAL_MAX_LENGTH`` set in the cluster's ``~/.cshrc`` from a latency benchmark (inputs
  truncated, accuracy moves) and the sentiment evaluation from both shells (noise);
- the rest: the team's ``storecal`` package one major version behind in the cluster's venv, an
  uncommitted feature added to a demand model's ``features.py`` that names a column the data does
  not have, a git-ignored ``.env`` read by python-dotenv naming an old label column, XGBoost's
  ``--tree-method gpu_hist`` from a GPU recipe on top of a missed quality gate (both fail), and
  the demand model's training from both shells (noise).

The shells are :func:`runpod_or_tcsh_shell`: shell 0 a RunPod pod's web terminal (``RUNPOD_*``,
``PUBLIC_KEY``, ``/root`` as home, the pod template's ``NCCL_*``/``CUDA_*``/``HF_*``/``TORCH_*``
tuning), shell 1 a tcsh login in an interactive PBS Pro job on a university cluster's GPU node
(``PBS_*``, tcsh's ``HOST``/``HOSTTYPE``/``VENDOR``/``OSTYPE``/``MACHTYPE``/``GROUP``,
environment modules' ``LOADEDMODULES``/``_LMFILES_``, the job's own ``TMPDIR``, an InfiniBand
``NCCL_*`` setup, ``activate.csh``'s venv). The thread counts that change float reductions are
pinned alike. The planted side is either: some incidents work on the pod and fail on the
cluster, others the reverse.

Kinds: ``fail`` (the good run exits 0, the bad one fails), ``metric`` (both exit 0 and only a
printed ``key=value`` metric differs), ``both-fail`` (both fail, differently), ``noise`` (nothing
planted: success is "nothing counts"). Job incidents (``*_job``) use
:data:`benchmarks.incidents.RANKS_RUNSNAP` and :data:`benchmarks.incidents.RANKS_FOLDER`.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.incidents import RANKS_FOLDER, RANKS_RUNSNAP, Incident, Launch, _git, _venv, _write
from benchmarks.thirdparty import Unavailable, _incident, python_with

PBS_JOB = "4417823.pbs-head01"


def runpod_or_tcsh_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 a RunPod
    pod's web terminal, 1 tcsh in an interactive PBS Pro job on a cluster's GPU node (``venv``
    the virtual environment ``activate.csh`` put first on ``PATH``); each with its own tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    if n % 2 == 0:  # RunPod pod, the PyTorch 2.x template, web terminal as root
        pod = "k7x2m9q4w1z8ab"
        return {
            **common, "PATH": f"/usr/local/nvidia/bin:/usr/local/cuda/bin:{path}",
            "HOSTNAME": "3f9c1e7a2b84", "LANG": "C.UTF-8", "TERM": "xterm",
            "RUNPOD_POD_ID": pod, "RUNPOD_POD_HOSTNAME": f"{pod}-64410d2f",
            "RUNPOD_GPU_COUNT": "1", "RUNPOD_CPU_COUNT": "16", "RUNPOD_MEM_GB": "125",
            "RUNPOD_PUBLIC_IP": "203.0.113.41", "RUNPOD_TCP_PORT_22": "22091",
            "RUNPOD_DC_ID": "EU-RO-1", "RUNPOD_VOLUME_ID": "",
            "RUNPOD_API_KEY": "rpa_9XK2LQ7M4VZ8P1T6R3YB0WC5NDHJFGSA2E7U",
            "PUBLIC_KEY": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH3k9v2Qb7 dana@laptop",
            "JUPYTER_PORT": "8888", "PYTHONUNBUFFERED": "1", "PIP_ROOT_USER_ACTION": "ignore",
            "DEBIAN_FRONTEND": "noninteractive", "NVIDIA_VISIBLE_DEVICES": "GPU-7c1f2e9a",
            "NVIDIA_DRIVER_CAPABILITIES": "compute,utility", "NVIDIA_REQUIRE_CUDA": "cuda>=12.4",
            "CUDA_VERSION": "12.4.1", "CUDA_MODULE_LOADING": "LAZY",
            "NCCL_P2P_LEVEL": "NVL", "NCCL_NVLS_ENABLE": "0", "NCCL_IB_DISABLE": "1",
            "NCCL_DEBUG": "INFO", "TORCH_NCCL_BLOCKING_WAIT": "1",
            "TORCH_HOME": str(home / ".cache" / "torch"),
            "HF_HOME": str(home / ".cache" / "huggingface"), "HF_HUB_ENABLE_HF_TRANSFER": "1",
        }
    tmp = home / "pbs-tmp" / f"pbs.{PBS_JOB}"  # PBS makes the job's TMPDIR and removes it after
    tmp.mkdir(parents=True, exist_ok=True)
    env = {  # tcsh login inside `qsub -I -q gpu_short`, ~/.cshrc of its own
        **common, "PATH": f"/apps/cuda/12.4/bin:/opt/pbs/bin:{path}",
        "USER": "jkowal", "LOGNAME": "jkowal", "SHELL": "/bin/tcsh", "TERM": "xterm-256color",
        "SHLVL": "2", "LANG": "en_US.UTF-8", "HOST": "gpu-r3n14", "HOSTTYPE": "x86_64-linux",
        "VENDOR": "unknown", "OSTYPE": "linux", "MACHTYPE": "x86_64", "GROUP": "mlgrp",
        "PWD": str(home), "TMPDIR": str(tmp),
        "PBS_JOBID": PBS_JOB, "PBS_JOBNAME": "STDIN", "PBS_QUEUE": "gpu_short",
        "PBS_ENVIRONMENT": "PBS_INTERACTIVE", "PBS_O_HOST": "login02.hpc.example.edu",
        "PBS_O_WORKDIR": str(home), "PBS_NODEFILE": f"/var/spool/pbs/aux/{PBS_JOB}",
        "PBS_TASKNUM": "1", "NCPUS": "8", "PBS_O_SHELL": "/bin/tcsh",
        "MODULESHOME": "/usr/share/Modules", "MODULEPATH": "/apps/modulefiles:/etc/modulefiles",
        "LOADEDMODULES": "gcc/12.2.0:cuda/12.4:nccl/2.21.5",
        "_LMFILES_": "/apps/modulefiles/gcc/12.2.0:/apps/modulefiles/cuda/12.4:"
                     "/apps/modulefiles/nccl/2.21.5",
        "CUDA_HOME": "/apps/cuda/12.4", "LD_LIBRARY_PATH": "/apps/cuda/12.4/lib64",
        "NCCL_SOCKET_IFNAME": "ib0", "NCCL_IB_HCA": "mlx5_0", "NCCL_NET_GDR_LEVEL": "PHB",
        "OMPI_MCA_btl": "^openib", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "TORCH_EXTENSIONS_DIR": "/scratch/jkowal/torch_extensions",
        "HF_HOME": "/scratch/jkowal/hf", "HF_HUB_OFFLINE": "1",
        "WANDB_DIR": "/scratch/jkowal/wandb", "WANDB_API_KEY": "3c9f1d0a7b2e4f6081d5a9c3e7b1f2d4a6c8e0b1",
    }
    if venv:
        env["VIRTUAL_ENV"] = venv
        env["VIRTUAL_ENV_PROMPT"] = Path(venv).name
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "tcsh", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the cluster's tcsh login (``bad_in="tcsh"``) or from the RunPod pod (``"runpod"``)."""
    pod = runpod_or_tcsh_shell(0, d / "home" / "root")
    tcsh = runpod_or_tcsh_shell(1, d / "home" / "jkowal", venv)
    first, second = (pod, tcsh) if bad_in == "tcsh" else (tcsh, pod)
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


def _set_json(path: Path, **fields: object) -> None:
    cfg = json.loads(path.read_text())
    cfg.update(fields)
    path.write_text(json.dumps(cfg, indent=2) + "\n")


# --------------------------------------------------------------------------- torchrun jobs


SENSOR_DDP = """
    \"\"\"Train the sensor-fault classifier with DDP over gloo. Each rank cuts its shard of the
    vibration windows and stages it in node-local scratch ($TMPDIR, /tmp when unset) before
    training, as the real job does with the parquet shards; settings from configs/train.yaml.
    Rank 0 prints each epoch's loss and the validation accuracy, all-reduced over the ranks;
    --gate-acc makes it refuse a model below that accuracy.\"\"\"
    import argparse
    import datetime
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP

    CLASSES, FEATURES = 4, 24


    def windows(seed=5, n=4000):
        g = torch.Generator().manual_seed(seed)
        y = torch.randint(0, CLASSES, (n,), generator=g)
        centers = torch.randn(CLASSES, FEATURES, generator=g)
        x = centers[y] + 1.4 * torch.randn(n, FEATURES, generator=g)
        return x, y


    def stage(rank, x, y):
        scratch = os.environ.get("TMPDIR", "/tmp")
        path = os.path.join(scratch, f"sensor-shard-{os.getpid()}-{rank}.pt")
        torch.save({"x": x, "y": y}, path)
        shard = torch.load(path)
        os.remove(path)
        return shard["x"], shard["y"]


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--gate-acc", type=float, default=None)
        a = p.parse_args()
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
        rank, world = dist.get_rank(), dist.get_world_size()
        with open("configs/train.yaml") as f:
            cfg = yaml.safe_load(f)
        x, y = windows()
        tx, ty = stage(rank, x[:3200][rank::world], y[:3200][rank::world])
        torch.manual_seed(0)
        model = DDP(torch.nn.Sequential(torch.nn.Linear(FEATURES, cfg["hidden"]), torch.nn.ReLU(),
                                        torch.nn.Linear(cfg["hidden"], CLASSES)))
        opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9)
        bs = cfg["batch_size"]
        for epoch in range(cfg["epochs"]):
            total, steps = 0.0, 0
            for s in range(0, len(tx), bs):
                loss = F.cross_entropy(model(tx[s:s + bs]), ty[s:s + bs],
                                       label_smoothing=cfg.get("label_smoothing", 0.0))
                opt.zero_grad()
                loss.backward()
                opt.step()
                total, steps = total + loss.item(), steps + 1
            t = torch.tensor([total / steps])
            dist.all_reduce(t)
            if rank == 0:
                print(f"epoch={epoch} loss={t.item() / world:.5f}")
        vx, vy = x[3200:][rank::world], y[3200:][rank::world]
        with torch.no_grad():
            right = (model(vx).argmax(1) == vy).sum().float()
        counts = torch.stack([right, torch.tensor(float(len(vy)))])
        dist.all_reduce(counts)
        acc = counts[0].item() / counts[1].item()
        if rank == 0:
            print(f"val_acc={acc:.4f}")
            if a.gate_acc is not None and acc < a.gate_acc:
                raise RuntimeError(f"quality gate: val_acc={acc:.4f} is below --gate-acc "
                                   f"{a.gate_acc}, not publishing the model")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

SENSOR_YAML = "# sensor-fault classifier\nlr: 0.05\nbatch_size: 100\nhidden: 32\nepochs: 3\n"


def _sensor_job(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    repo = _repo(d / "sensor-ddp", {"train.py": SENSOR_DDP, "configs/train.yaml": SENSOR_YAML})
    return py, repo


def scratch_tmpdir_without_volume_job(d: Path) -> Incident:
    """Job against job. The RunPod template exports ``TMPDIR=/workspace/tmp`` for scratch on its
    network volume; this pod was started without the volume, so there is no /workspace/tmp and
    every rank's staging ``torch.save`` stops (FileNotFoundError naming the shard's path). On
    the cluster node the PBS job's own TMPDIR exists and the job trains. Kind: fail."""
    py, repo = _sensor_job(d)
    missing = d / "workspace" / "tmp"
    good, bad = _shells(d, bad={"TMPDIR": str(missing)}, bad_in="runpod", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(scratch_tmpdir_without_volume_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "TMPDIR"))


def label_smoothing_uncommitted_metric_job(d: Path) -> Incident:
    """Job against job. Between the jobs configs/train.yaml (in git) got ``label_smoothing:
    0.1``, not committed, left over from trying it on the noisy labels. Both jobs train; every
    epoch's loss moves (and the accuracy with it). Kind: metric."""
    py, repo = _sensor_job(d)

    def edited() -> None:
        cfg = repo / "configs" / "train.yaml"
        cfg.write_text(cfg.read_text() + "label_smoothing: 0.1\n")

    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(label_smoothing_uncommitted_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "sensor-ddp: configs/train.yaml"),
                     between=edited)


def gloo_transport_uv_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--gate-acc 0.99``, which this model never
    reaches: the pod's job trains and rank 0 refuses to publish. The cluster's ``~/.cshrc`` got
    ``setenv GLOO_DEVICE_TRANSPORT uv`` from the notes for a Windows laptop (where gloo only
    has libuv); this Linux build has no such device and every rank stops in
    init_process_group ("unsupported gloo device"). Kind: both-fail."""
    py, repo = _sensor_job(d)
    good, bad = _shells(d, bad={"GLOO_DEVICE_TRANSPORT": "uv"}, venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--gate-acc", "0.99")
    return _incident(gloo_transport_uv_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "GLOO_DEVICE_TRANSPORT"))


def sensor_ddp_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the RunPod pod and from the tcsh login
    on the cluster node: each job its own rendezvous and rank processes, the shells their own
    RunPod, PBS, tcsh, modules, NCCL_*, TORCH_*, CUDA_* and HF_* variables (and the cluster's
    TMPDIR, where the ranks stage their shards). Nothing planted. Kind: noise."""
    py, repo = _sensor_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(sensor_ddp_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- c10d


FEATURE_STORE = """
    \"\"\"Serve item features through a c10d TCPStore: this process hosts the store (port
    --port, all interfaces) and its loader client connects to it at MASTER_ADDR (the node the
    job's store runs on, 127.0.0.1 when run alone), writes the features and reads them back.\"\"\"
    import argparse
    import datetime
    import os

    import torch
    import torch.distributed as dist


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--port", type=int, default=29641)
        p.add_argument("--items", type=int, default=150)
        a = p.parse_args()
        wait = datetime.timedelta(seconds=5)
        server = dist.TCPStore("0.0.0.0", a.port, world_size=2, is_master=True, timeout=wait,
                               wait_for_workers=False)
        host = os.environ.get("MASTER_ADDR", "127.0.0.1")
        client = dist.TCPStore(host, a.port, world_size=2, is_master=False, timeout=wait)
        g = torch.Generator().manual_seed(8)
        prices = torch.rand(a.items, generator=g) * 100
        for i, price in enumerate(prices.tolist()):
            client.set(f"item/{i}/price", f"{price:.2f}")
        total = sum(float(server.get(f"item/{i}/price")) for i in range(a.items))
        print(f"items={server.num_keys()} price_sum={total:.2f}")


    if __name__ == "__main__":
        main()
    """


def store_master_addr_public_ip(d: Path) -> Incident:
    """The feature store's loader connects to ``MASTER_ADDR``. The RunPod template exports
    ``MASTER_ADDR`` as the pod's public address (for multi-pod jobs), where no store answers:
    the client gives up after its 5 seconds (DistNetworkError). On the cluster node nothing sets
    it and the loader connects to 127.0.0.1. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "feature-store", {"serve.py": FEATURE_STORE})
    port = str(29000 + int.from_bytes(os.urandom(2), "big") % 3000)
    good, bad = _shells(d, bad={"MASTER_ADDR": "203.0.113.41", "MASTER_PORT": "29500"},
                        bad_in="runpod", venv=_venv_of(py))
    argv = (py, "serve.py", "--port", port)
    return _incident(store_master_addr_public_ip, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "MASTER_ADDR"))


# --------------------------------------------------------------------------- model folders


MAKE_DISTILBERT = """
import sys, torch
from transformers import DistilBertConfig, DistilBertForSequenceClassification
torch.manual_seed(0)
cfg = DistilBertConfig(vocab_size=256, max_position_embeddings=128, dim=32, n_layers=2,
                       n_heads=4, hidden_dim=64, initializer_range=0.2,
                       id2label={0: "negative", 1: "positive"},
                       label2id={"negative": 0, "positive": 1})
DistilBertForSequenceClassification(cfg).save_pretrained(sys.argv[1])
"""

SENTIMENT_EVAL = """
    \"\"\"Evaluate the review-sentiment classifier (a DistilBERT folder, --model-path) on the
    labelled reviews, byte-level, inputs cut at EVAL_MAX_LENGTH (the eval harness's setting,
    64 by default); --dtype runs it in another precision.\"\"\"
    import argparse
    import os

    import torch
    from transformers import AutoModelForSequenceClassification


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
        a = p.parse_args()
        limit = int(os.environ.get("EVAL_MAX_LENGTH", "64"))
        model = AutoModelForSequenceClassification.from_pretrained(
            a.model_path, dtype=getattr(torch, a.dtype)).eval()
        rows = [line.rstrip("\\n").split("\\t") for line in open("data/reviews.tsv")]
        labels = torch.tensor([model.config.label2id[label] for label, _ in rows])
        ids = torch.zeros(len(rows), limit, dtype=torch.long)
        mask = torch.zeros(len(rows), limit, dtype=torch.long)
        for i, (_, text) in enumerate(rows):
            b = list(text.encode())[:limit]
            ids[i, :len(b)], mask[i, :len(b)] = torch.tensor(b), 1
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=mask).logits.float()
        probs = logits.softmax(-1)
        acc = (probs.argmax(-1) == labels).float().mean()
        print(f"reviews={len(rows)} accuracy={acc:.4f} "
              f"mean_pos_prob={probs[:, 1].mean():.6f}")


    if __name__ == "__main__":
        main()
    """

REVIEWS = "".join(f"{label}\t{text}\n" for label, text in [
    ("positive", "arrived early and works exactly as described, would buy again"),
    ("negative", "stopped charging after two days and support never answered my emails"),
    ("positive", "great value for the price, the battery easily lasts a full weekend trip"),
    ("negative", "the zipper broke the first time i used it, cheap plastic everywhere"),
    ("positive", "my kids love it and it survived being dropped down the stairs twice"),
    ("negative", "smells of chemicals even after washing it three times, sent it back"),
    ("positive", "simple setup, quiet motor and the app is surprisingly well designed"),
    ("negative", "size chart is wrong, ordered my usual size and it is far too small"),
    ("positive", "the colour is even nicer than in the photos, fits perfectly"),
    ("negative", "screen scratches if you look at it, returned within the week"),
    ("positive", "best kitchen knife i have owned, still sharp after months"),
    ("negative", "missing two screws and the instructions were in the wrong language"),
])


def _sentiment(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers", "safetensors")
    repo = _repo(d / "review-sentiment", {"evaluate.py": SENTIMENT_EVAL,
                                          "data/reviews.tsv": REVIEWS})
    model = d / "models" / "review-distilbert-tiny"
    if not (model / "config.json").exists():
        _build(py, MAKE_DISTILBERT, str(model))
    return py, repo, model


def id2label_neutral_added(d: Path) -> Incident:
    """Between the runs someone added ``"2": "neutral"`` to the classifier folder's
    ``id2label`` (and ``label2id``) in config.json (outside git), ahead of the three-class
    retrain. The config now asks for a three-way head and the checkpoint has two rows: loading
    stops on the size mismatch of the classifier's weights. Kind: fail."""
    py, repo, model = _sentiment(d)

    def edited() -> None:
        _set_json(model / "config.json",
                  id2label={"0": "negative", "1": "positive", "2": "neutral"},
                  label2id={"negative": 0, "positive": 1, "neutral": 2})

    good, bad = _shells(d, bad_in="runpod", venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(id2label_neutral_added, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("models", "--model-path: id2label"),
                     ("models", "--model-path: label2id"), between=edited)


def dtype_bfloat16_option_metric(d: Path) -> Incident:
    """The cluster run was started from a command line copied out of the GPU evaluation recipe,
    ``--dtype bfloat16`` still on it; the pod's run takes float32. Both finish on the CPU; the
    positive probabilities (and so the summary) move with the rounding. Kind: metric."""
    py, repo, model = _sentiment(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(dtype_bfloat16_option_metric, Launch(argv, good, repo),
                     Launch((*argv, "--dtype", "bfloat16"), bad, repo), ("command", "--dtype"))


def eval_max_length_from_cshrc_metric(d: Path) -> Incident:
    """The cluster's ``~/.cshrc`` still has ``setenv EVAL_MAX_LENGTH 16`` from last month's
    latency benchmark; the evaluation cuts every review at 16 bytes there, at 64 on the pod.
    Both finish; the accuracy and the mean probability move. Kind: metric."""
    py, repo, model = _sentiment(d)
    good, bad = _shells(d, bad={"EVAL_MAX_LENGTH": "16"}, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(eval_max_length_from_cshrc_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "EVAL_MAX_LENGTH"))


def sentiment_eval_noise(d: Path) -> Incident:
    """The sentiment evaluation, the same folder and data, from the tcsh login on the cluster
    and from the RunPod pod. Nothing planted. Kind: noise."""
    py, repo, model = _sentiment(d)
    good, bad = _shells(d, bad_in="runpod", venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(sentiment_eval_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


MAKE_NEOX = """
import sys, torch
from transformers import GPTNeoXConfig, GPTNeoXForCausalLM
torch.manual_seed(0)
cfg = GPTNeoXConfig(vocab_size=256, hidden_size=32, num_hidden_layers=3,
                    num_attention_heads=4, intermediate_size=64, max_position_embeddings=128,
                    initializer_range=0.3, use_parallel_residual=True)
GPTNeoXForCausalLM(cfg).save_pretrained(sys.argv[1])
"""

NEOX_EVAL = """
    \"\"\"Perplexity of the product-title LM (a GPT-NeoX folder, --model-path) on the held-out
    titles, byte-level.\"\"\"
    import argparse
    import math

    import torch
    from transformers import AutoModelForCausalLM


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        model = AutoModelForCausalLM.from_pretrained(a.model_path).eval()
        text = open("data/titles.txt", "rb").read()
        ids = torch.tensor(list(text[: 48 * 8])).view(8, 48)
        with torch.no_grad():
            loss = model(ids, labels=ids).loss.item()
        print(f"tokens={ids.numel()} loss={loss:.5f} ppl={math.exp(loss):.4f}")


    if __name__ == "__main__":
        main()
    """

TITLES = "".join(f"{t}\n" for t in [
    "Stainless steel water bottle 750ml, leak proof", "Wireless ergonomic mouse, silent clicks",
    "Merino wool hiking socks, pack of three", "Cast iron skillet 28cm, pre-seasoned",
    "USB-C hub with HDMI and SD reader", "Bamboo cutting board set with juice groove",
    "Kids bike helmet with rear light", "Ceramic pour-over coffee dripper",
    "Foldable laptop stand, aluminium", "Organic cotton bath towels, grey",
    "Resistance bands set with door anchor", "LED desk lamp with wireless charger",
] * 3)


def parallel_residual_off_metric(d: Path) -> Incident:
    """Between the evaluations the GPT-NeoX folder's config.json (outside git) got
    ``"use_parallel_residual": false`` from the Pythia-style config someone diffed against. The
    weights load the same; every layer now runs attention and MLP one after the other and the
    perplexity moves. Kind: metric."""
    py = python_with("torch", "transformers", "safetensors")
    repo = _repo(d / "title-lm", {"ppl.py": NEOX_EVAL, "data/titles.txt": TITLES})
    model = d / "models" / "title-neox-tiny"
    if not (model / "config.json").exists():
        _build(py, MAKE_NEOX, str(model))

    def edited() -> None:
        _set_json(model / "config.json", use_parallel_residual=False)

    good, bad = _shells(d, bad_in="runpod", venv=_venv_of(py))
    argv = (py, "ppl.py", "--model-path", str(model))
    return _incident(parallel_residual_off_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: use_parallel_residual"),
                     between=edited)


# --------------------------------------------------------------------------- packages, configs


STORECAL = {
    "2.1.0": '''
        """The team's retail calendar (2.x: fiscal weeks start on the first Monday of February)."""
        import datetime

        def fiscal_week(day):
            start = datetime.date(day.year, 2, 1)
            start += datetime.timedelta(days=(7 - start.weekday()) % 7)
            if day < start:
                return fiscal_week(datetime.date(day.year - 1, 12, 31))
            return (day - start).days // 7 + 1
        ''',
    "1.4.2": '''
        """The team's retail calendar (1.x)."""
        import datetime

        def week_of(day):
            return day.isocalendar()[1]
        ''',
}

WEEKLY = """
    \"\"\"Weekly sales report: sum the daily sales by the retail calendar's fiscal week.\"\"\"
    import csv
    import datetime

    from storecal import fiscal_week


    def main():
        weeks = {}
        for row in csv.DictReader(open("data/daily_sales.csv")):
            day = datetime.date.fromisoformat(row["date"])
            weeks[fiscal_week(day)] = weeks.get(fiscal_week(day), 0.0) + float(row["sales"])
        top = max(weeks, key=weeks.get)
        print(f"weeks={len(weeks)} best_week={top} best_sales={weeks[top]:.2f}")


    if __name__ == "__main__":
        main()
    """


def _daily_sales() -> str:
    day, rows = datetime.date(2026, 3, 2), ["date,sales"]
    for i in range(120):
        rows.append(f"{day.isoformat()},{1000 + (i * 37) % 400 + (i % 7) * 55:.2f}")
        day = day.fromordinal(day.toordinal() + 1)
    return "\n".join(rows) + "\n"


def storecal_old_in_cluster_venv(d: Path) -> Incident:
    """The weekly report imports ``fiscal_week`` from the team's ``storecal``. The pod's venv has
    storecal 2.1.0; the cluster venv (made months ago, ``activate.csh``) still has 1.4.2, which
    only has ``week_of``: ImportError naming ``fiscal_week``. Kind: fail."""
    repo = _repo(d / "weekly-report", {"report.py": WEEKLY, "data/daily_sales.csv": _daily_sales()})
    pod_py = _venv(d / "venvs" / "workspace-venv", {"storecal": ("2.1.0", STORECAL["2.1.0"])})
    hpc_py = _venv(d / "venvs" / "retail-env", {"storecal": ("1.4.2", STORECAL["1.4.2"])})
    pod_env, hpc_env = _shells(d, venv=str(hpc_py.parent.parent))
    pod_env = {**pod_env, "VIRTUAL_ENV": str(pod_py.parent.parent),
               "PATH": f"{pod_py.parent}:{pod_env['PATH']}"}
    return _incident(storecal_old_in_cluster_venv, Launch(("python", "report.py"), pod_env, repo),
                     Launch(("python", "report.py"), hpc_env, repo), ("packages", "storecal"))


DEMAND = """
    \"\"\"Train the store-demand model: gradient boosting on the features of features.py, scored
    by mean absolute error on the last four weeks.\"\"\"
    import pandas as pd
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.metrics import mean_absolute_error

    from features import FEATURES, add_features


    def main():
        df = add_features(pd.read_csv("data/demand.csv", parse_dates=["date"]))
        train, test = df[df["date"] < "2026-05-01"], df[df["date"] >= "2026-05-01"]
        model = HistGradientBoostingRegressor(max_iter=80, random_state=0)
        model.fit(train[FEATURES], train["units"])
        mae = mean_absolute_error(test["units"], model.predict(test[FEATURES]))
        print(f"rows={len(df)} features={len(FEATURES)} mae={mae:.4f}")


    if __name__ == "__main__":
        main()
    """

FEATURES_PY = """
    \"\"\"The demand model's features.\"\"\"
    FEATURES = ["store", "dow", "month", "price", "lag_7"]


    def add_features(df):
        df = df.sort_values(["store", "date"]).copy()
        df["dow"] = df["date"].dt.dayofweek
        df["month"] = df["date"].dt.month
        df["lag_7"] = df.groupby("store")["units"].shift(7).fillna(0)
        return df
    """


def _demand_csv() -> str:
    rows, day = ["date,store,price,units"], datetime.date(2026, 1, 5)
    for i in range(150):
        for store in range(3):
            price = 4.0 + ((i * 7 + store * 3) % 10) / 10
            units = 40 + 12 * store + (i % 7) * 4 - 6 * price + (i * 13 + store) % 9
            rows.append(f"{day.isoformat()},{store},{price:.2f},{units:.1f}")
        day = day.fromordinal(day.toordinal() + 1)
    return "\n".join(rows) + "\n"


def _demand(d: Path) -> tuple[str, Path]:
    py = python_with("pandas", "sklearn")
    repo = _repo(d / "store-demand", {"train.py": DEMAND, "features.py": FEATURES_PY,
                                      "data/demand.csv": _demand_csv()})
    return py, repo


def promo_feature_uncommitted(d: Path) -> Incident:
    """Between the runs features.py (in git) got ``"on_promo"`` in its FEATURES, not committed:
    the promotions join it reads lives on another branch. The training frame has no such
    column (a KeyError quoting ``on_promo``). Kind: fail."""
    py, repo = _demand(d)

    def edited() -> None:
        f = repo / "features.py"
        f.write_text(f.read_text().replace('"price", "lag_7"]', '"price", "lag_7", "on_promo"]'))

    good, bad = _shells(d, bad_in="runpod", venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(promo_feature_uncommitted, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("git", "store-demand: features.py"), between=edited)


def demand_train_noise(d: Path) -> Incident:
    """The demand model's training, the same code and data, from the RunPod pod and from the
    tcsh login on the cluster. Nothing planted. Kind: noise."""
    py, repo = _demand(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(demand_train_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


CHURN_DOTENV = """
    \"\"\"Churn baseline: logistic regression on the account table; the label column and the
    table come from the project's .env (python-dotenv), as the team's notebooks do.\"\"\"
    import os

    import pandas as pd
    from dotenv import load_dotenv
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    load_dotenv(".env")


    def main():
        df = pd.read_csv(os.environ["ACCOUNTS_CSV"])
        y = df[os.environ["LABEL_COLUMN"]]
        x = df[["tenure_months", "monthly_fee", "tickets_90d"]]
        model = LogisticRegression(max_iter=500).fit(x[:300], y[:300])
        auc = roc_auc_score(y[300:], model.predict_proba(x[300:])[:, 1])
        print(f"accounts={len(df)} auc={auc:.4f}")


    if __name__ == "__main__":
        main()
    """


def _accounts_csv() -> str:
    rows = ["account_id,tenure_months,monthly_fee,tickets_90d,churned_90d"]
    for i in range(400):
        tenure, fee, tickets = (i * 7) % 60 + 1, 20 + (i * 11) % 50, (i * 5) % 7
        churn = int(tickets * 3 + fee / 10 - tenure / 6 + (i * 17) % 5 > 6)
        rows.append(f"{1000 + i},{tenure},{fee},{tickets},{churn}")
    return "\n".join(rows) + "\n"


def dotenv_old_label_column(d: Path) -> Incident:
    """The project's ``.env`` is git-ignored, each machine keeps its own. Between the runs the
    pod's was replaced by the copy from last year's project, ``LABEL_COLUMN=churned`` where the
    table now calls it ``churned_90d``: a KeyError quoting ``churned``. Kind: fail."""
    py = python_with("pandas", "sklearn", "dotenv")
    repo = _repo(d / "churn-baseline", {"baseline.py": CHURN_DOTENV,
                                        "data/accounts.csv": _accounts_csv()},
                 "__pycache__/\n.env\n")
    env_file = repo / ".env"
    env_file.write_text("ACCOUNTS_CSV=data/accounts.csv\nLABEL_COLUMN=churned_90d\n")

    def replaced() -> None:
        env_file.write_text("# churn project 2025\nACCOUNTS_CSV=data/accounts.csv\n"
                            "LABEL_COLUMN=churned\n")

    good, bad = _shells(d, bad_in="runpod", venv=_venv_of(py))
    argv = (py, "baseline.py")
    return _incident(dotenv_old_label_column, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("runtime", f"file {env_file.resolve()}"), ("env", "LABEL_COLUMN"),
                     between=replaced)


XGB_TRAIN = """
    \"\"\"Train the payment-default model with XGBoost (--tree-method) and refuse to register a
    model below --min-auc on the holdout.\"\"\"
    import argparse

    import numpy as np
    import xgboost as xgb
    from sklearn.metrics import roc_auc_score


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--tree-method", default="hist")
        p.add_argument("--min-auc", type=float, default=0.7)
        a = p.parse_args()
        rng = np.random.default_rng(3)
        x = rng.normal(size=(3000, 8))
        y = (x[:, 0] - 0.7 * x[:, 3] + rng.normal(scale=1.5, size=3000) > 0).astype(int)
        model = xgb.XGBClassifier(n_estimators=60, max_depth=4, tree_method=a.tree_method,
                                  n_jobs=2, random_state=0)
        model.fit(x[:2400], y[:2400])
        auc = roc_auc_score(y[2400:], model.predict_proba(x[2400:])[:, 1])
        print(f"holdout_auc={auc:.4f}")
        if auc < a.min_auc:
            raise SystemExit(f"holdout_auc={auc:.4f} is below --min-auc {a.min_auc}; "
                             "not registering the model")


    if __name__ == "__main__":
        main()
    """


def tree_method_gpu_hist_both_fail(d: Path) -> Incident:
    """Both fail. Both runs ask for ``--min-auc 0.95``, which this noisy label never reaches:
    the pod's run trains and refuses to register. The cluster run's command line came from the
    GPU recipe with ``--tree-method gpu_hist``, a value this XGBoost refuses outright
    (XGBoostError listing the valid tree methods). Kind: both-fail."""
    py = python_with("xgboost", "sklearn", "numpy")
    repo = _repo(d / "default-risk", {"train.py": XGB_TRAIN})
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "train.py", "--min-auc", "0.95")
    return _incident(tree_method_gpu_hist_both_fail, Launch(argv, good, repo),
                     Launch((*argv, "--tree-method", "gpu_hist"), bad, repo),
                     ("command", "--tree-method"))


#: The thirteenth fresh batch, in the order it was written. Never tuned on.
FRESH13 = [
    scratch_tmpdir_without_volume_job, label_smoothing_uncommitted_metric_job,
    gloo_transport_uv_both_fail_job, sensor_ddp_job_noise, store_master_addr_public_ip,
    id2label_neutral_added, dtype_bfloat16_option_metric, eval_max_length_from_cshrc_metric,
    sentiment_eval_noise, parallel_residual_off_metric, storecal_old_in_cluster_venv,
    promo_feature_uncommitted, demand_train_noise, dotenv_old_label_column,
    tree_method_gpu_hist_both_fail,
]

if __name__ == "__main__":  # build one incident and print its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH13 if b.__name__ in sys.argv[1:]] or FRESH13
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh13-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
