"""A twenty-fourth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh22.py, for their format), how they are run and scored
(benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot reference
(docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job captures
one snapshot per rank. They form the corpus's ``fresh24`` half; report it, never change the
ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a gearbox-fault classifier trained
  with DDP and AdamW: an uncommitted ``eps: 1e-8`` in the git-tracked configs/ddp.yaml (PyYAML
  reads it as a string), ``DATA_FRACTION=0.4`` exported by the Argo step (metric), ``--classes 3``
  on top of a quality gate the good job already misses (both fail), ``EVAL_RANKS`` naming four
  ranks in a two-rank job (``dist.new_group``), and the same job from both shells (noise);
- torch's DataLoader and autocast on the CPU: an uncommitted ``num_workers=0`` left beside
  ``prefetch_factor=4``, ``MP_START_METHOD=spawn`` from the cron job's env file with a dataset
  holding a lambda, and ``CPU_AMP=bf16`` exported by the Argo step (metric);
- model folders under transformers: a tiny DistilBERT whose config.json got ``hidden_dim`` 128
  (trained with 64: fail), ``activation`` ``relu`` for ``gelu`` (metric), and its evaluation from
  both shells (noise);
- the rest: the team package ``vibfeat`` 0.4 (no ``spectral_kurtosis`` yet) in the cron job's
  venv, a git-ignored params.yaml whose IsolationForest ``contamination`` became 0.6,
  scikit-learn gradient boosting ``--subsample 0.5`` (metric), ``N_JOBS=0`` from the Argo
  step's CPU limit on top of a missed gate (both fail), and the tool-wear regressor from both
  shells (noise).

The shells are :func:`argo_or_cron_shell`: shell 0 the main container of an Argo Workflows step
pod (``ARGO_*``, the Kubernetes service variables, the image's ``/opt/venv``, the template's
``NCCL_*``/``OMP_*``/``HF_*``/``TORCH_*``/``CUDA_*`` settings), shell 1 a cron job's minimal
environment (crontab's ``SHELL=/bin/sh``, ``MAILTO``, a short ``PATH``, no ``LANG``, the launch
script run under ``nohup`` after sourcing its own env file of tuning variables). The thread
counts that change float reductions are pinned alike. The planted side is either: some incidents
work in the Argo step and fail from cron, others the reverse.

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

POD = "gearbox-train-q8v4m-3187254069"


def argo_or_cron_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 the main
    container of an Argo Workflows step pod, 1 a cron job's minimal environment (``venv`` the
    interpreter's virtual environment, first on ``PATH``); each with its own tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    if n % 2 == 0:  # Argo Workflows step: the pod's main container, started by argoexec
        template = json.dumps({"name": "train", "inputs": {"parameters": [
            {"name": "dataset", "value": "gearbox-2026-12"}]}, "container": {
                "image": "registry.internal/ml/gearbox-train:2026.12.1",
                "command": ["/workdir/launch.sh"]}}, separators=(",", ":"))
        env = {
            **common, "PATH": f"/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:{path}",
            "HOSTNAME": POD, "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
            "PIP_NO_CACHE_DIR": "1", "ARGO_POD_NAME": POD, "ARGO_POD_UID":
                "7c1e0b9a-4d2f-4e8b-9a51-62f0d3c8e417", "ARGO_CONTAINER_NAME": "main",
            "ARGO_TEMPLATE": template, "ARGO_NODE_ID": POD, "ARGO_INCLUDE_SCRIPT_OUTPUT": "false",
            "ARGO_DEADLINE": "0001-01-01T00:00:00Z", "ARGO_PROGRESS_FILE":
                "/var/run/argo/progress", "ARGO_PROGRESS_PATCH_TICK_DURATION": "1m0s",
            "ARGO_PROGRESS_FILE_TICK_DURATION": "3s",
            "KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
            "KUBERNETES_SERVICE_PORT_HTTPS": "443", "KUBERNETES_PORT": "tcp://10.96.0.1:443",
            "KUBERNETES_PORT_443_TCP": "tcp://10.96.0.1:443",
            "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1", "KUBERNETES_PORT_443_TCP_PORT": "443",
            "KUBERNETES_PORT_443_TCP_PROTO": "tcp", "NCCL_SOCKET_IFNAME": "eth0",
            "NCCL_DEBUG": "INFO", "NCCL_ASYNC_ERROR_HANDLING": "1", "NCCL_IB_HCA": "mlx5",
            "TORCH_CPP_LOG_LEVEL": "ERROR", "TORCH_DISTRIBUTED_DEBUG": "OFF",
            "TORCHELASTIC_ERROR_FILE": "/workdir/out/error.json", "HF_HOME": "/mnt/cache/hf",
            "HF_HUB_OFFLINE": "1", "HF_HUB_ENABLE_HF_TRANSFER": "0",
            "CUDA_MODULE_LOADING": "LAZY", "CUDA_CACHE_DISABLE": "1",
            "NVIDIA_VISIBLE_DEVICES": "void", "MALLOC_ARENA_MAX": "2",
        }
        if venv:  # the image's Dockerfile puts the project venv first
            env["VIRTUAL_ENV"] = venv
            env["PATH"] = f"{venv}/bin:{env['PATH']}"
        return env
    env = {  # cron: `*/30 * * * * cd ~/gearbox && nohup ./nightly.sh >> cron.log 2>&1`
        **common, "PATH": f"/usr/bin:/bin:{path}", "SHELL": "/bin/sh", "LOGNAME": "mlops",
        "MAILTO": "mlops-alerts@plant.example", "PWD": str(home / "gearbox"),
        "_": "/usr/bin/nohup", "NCCL_IB_DISABLE": "1", "NCCL_P2P_DISABLE": "1",
        "NCCL_SOCKET_NTHREADS": "2", "TORCH_NCCL_BLOCKING_WAIT": "1",
        "TORCH_SHOW_CPP_STACKTRACES": "0", "HF_HOME": str(home / ".cache" / "huggingface"),
        "HF_DATASETS_CACHE": str(home / ".cache" / "huggingface" / "datasets"),
        "TOKENIZERS_PARALLELISM": "false", "CUDA_VISIBLE_DEVICES": "0",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "KMP_AFFINITY": "granularity=fine,compact,1,0",
    }
    if venv:  # nightly.sh: `. ./env.sh; . .venv/bin/activate`
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "cron", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the cron job (``bad_in="cron"``) or from the Argo step (``"argo"``)."""
    argo = argo_or_cron_shell(0, d / "home" / "root", venv)
    cron = argo_or_cron_shell(1, d / "home" / "mlops", venv)
    first, second = (argo, cron) if bad_in == "cron" else (cron, argo)
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


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    if old not in text:
        raise Unavailable(f"{path.name} does not hold {old!r}")
    path.write_text(text.replace(old, new))


# --------------------------------------------------------------------------- torchrun jobs


GEARBOX_DDP = """
    \"\"\"Train the gearbox fault classifier on vibration spectra with DDP over gloo; settings
    from configs/ddp.yaml. DATA_FRACTION (default 1) keeps that share of the training windows;
    EVAL_RANKS (default every rank) names the ranks that score the validation windows. Rank 0
    prints each epoch's loss and the validation scores; --min-f1 refuses a model below it.\"\"\"
    import argparse
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP


    def spectra(n=1800, bins=24, seed=5):
        g = torch.Generator().manual_seed(seed)
        fault = torch.randint(0, 4, (n,), generator=g)
        x = torch.randn(n, bins, generator=g)
        for k in range(4):
            x[fault == k, 3 + 5 * k] += 1.2
        x[:, 1] += 0.3 * fault
        flip = torch.rand(n, generator=g) < 0.08
        label = torch.where(flip, torch.randint(0, 4, (n,), generator=g), fault)
        return x, label


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--classes", type=int, default=4)
        p.add_argument("--min-f1", type=float, default=None)
        a = p.parse_args()
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        ranks = [int(r) for r in os.environ.get("EVAL_RANKS", "").split(",") if r] \\
            or list(range(world))
        scorers = dist.new_group(ranks=ranks)
        cfg = yaml.safe_load(open("configs/ddp.yaml"))
        x, y = spectra()
        n_train = int(1500 * float(os.environ.get("DATA_FRACTION", "1")))
        tx, ty = x[:n_train][rank::world], y[:n_train][rank::world]
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], cfg["hidden"]), torch.nn.ReLU(),
                                  torch.nn.Linear(cfg["hidden"], a.classes))
        model = DDP(net)
        opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], eps=cfg["eps"],
                                weight_decay=cfg["weight_decay"])
        bs = cfg["batch_size"] // world
        order = torch.Generator().manual_seed(1)
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
        vx, vy = x[1500:][ranks.index(rank)::len(ranks)], y[1500:][ranks.index(rank)::len(ranks)]
        with torch.no_grad():
            pred = net(vx).argmax(1)
        counts = torch.zeros(3, a.classes)
        for k in range(a.classes):
            counts[0, k] = ((pred == k) & (vy == k)).sum()
            counts[1, k] = ((pred == k) & (vy != k)).sum()
            counts[2, k] = ((pred != k) & (vy == k)).sum()
        dist.all_reduce(counts, group=scorers)
        f1 = (2 * counts[0] / (2 * counts[0] + counts[1] + counts[2]).clamp(min=1)).mean().item()
        if rank == 0:
            acc = counts[0].sum().item() / len(y[1500:])
            print(f"val_macro_f1={f1:.4f} val_acc={acc:.4f}")
            if a.min_f1 is not None and f1 < a.min_f1:
                raise RuntimeError(f"val_macro_f1={f1:.4f} is below --min-f1 {a.min_f1}: "
                                   "keeping the deployed model")
        dist.barrier()
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

GEARBOX_YAML = ("# gearbox vibration, line 3\nlr: 0.01\neps: 1.0e-8\nweight_decay: 0.01\n"
                "hidden: 40\nbatch_size: 64\nepochs: 5\n")


def _gearbox_job(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    return py, _repo(d / "gearbox-ddp", {"train.py": GEARBOX_DDP, "configs/ddp.yaml": GEARBOX_YAML})


def yaml_eps_string_uncommitted_config_job(d: Path) -> Incident:
    """Job against job. Between the jobs configs/ddp.yaml (in git) had ``eps: 1.0e-8``
    "tidied", not committed, to ``eps: 1e-8``; PyYAML reads a float without a dot as a string
    and every rank's AdamW refuses it (TypeError: '<=' not supported between instances of
    'float' and 'str'). Kind: fail."""
    py, repo = _gearbox_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(yaml_eps_string_uncommitted_config_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "gearbox-ddp: configs/ddp.yaml"),
                     between=lambda: _edit(repo / "configs" / "ddp.yaml", "eps: 1.0e-8",
                                           "eps: 1e-8"))


def data_fraction_in_argo_template_metric_job(d: Path) -> Incident:
    """Job against job. The Argo step's template exports ``DATA_FRACTION=0.4``, left from the
    workflow's smoke-test variant; the job trains on 40% of the windows. Both jobs train; the
    losses, the F1 and the accuracy move. Kind: metric."""
    py, repo = _gearbox_job(d)
    good, bad = _shells(d, bad={"DATA_FRACTION": "0.4"}, bad_in="argo", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(data_fraction_in_argo_template_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "DATA_FRACTION"))


def classes_option_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--min-f1 0.999``, which this model never
    reaches (8% of the labels are noisy): the good job trains and rank 0 keeps the deployed
    model. The crontab line also passes ``--classes 3`` (the plant had three fault classes
    last year); the head is too narrow for label 3 and every rank stops at the first step
    (IndexError: Target 3 is out of bounds). Kind: both-fail."""
    py, repo = _gearbox_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--min-f1", "0.999")
    return _incident(classes_option_both_fail_job, Launch(argv, good, repo),
                     Launch((*argv, "--classes", "3"), bad, repo), ("command", "--classes"))


def eval_ranks_of_four_pod_run_job(d: Path) -> Incident:
    """Job against job. The Argo step's template exports ``EVAL_RANKS=0,1,2,3`` (written for
    the four-pod variant of the workflow); in a two-rank job ``dist.new_group`` refuses it
    (ValueError: the new group's world size should be less or equal to the world size set by
    init_process_group). From cron the job trains. Kind: fail."""
    py, repo = _gearbox_job(d)
    good, bad = _shells(d, bad={"EVAL_RANKS": "0,1,2,3"}, bad_in="argo", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(eval_ranks_of_four_pod_run_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "EVAL_RANKS"))


def gearbox_ddp_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the Argo step and from cron: each job
    its own rendezvous and rank processes, the shells their own ARGO_*, KUBERNETES_*, NCCL_*,
    TORCH_*, CUDA_* and HF_* variables. Nothing planted. Kind: noise."""
    py, repo = _gearbox_job(d)
    good, bad = _shells(d, bad_in="argo", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(gearbox_ddp_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- DataLoader, autocast


LOAD_FORECAST = """
    \"\"\"Fit the substation load forecaster: hourly features through a DataLoader of two
    workers (MP_START_METHOD picks their start method; fork when unset), a small MLP trained
    under CPU autocast when CPU_AMP=bf16. Prints the training and the validation MSE.\"\"\"
    import os

    import torch


    class Hours(torch.utils.data.Dataset):
        def __init__(self, x, y, scale):
            self.x, self.y = x, y
            self.transform = lambda row: row / scale

        def __len__(self):
            return len(self.x)

        def __getitem__(self, i):
            return self.transform(self.x[i]), self.y[i]


    def main():
        torch.set_num_threads(2)
        g = torch.Generator().manual_seed(17)
        hour = torch.arange(2000) % 24
        temp = 12 + 9 * torch.randn(2000, generator=g)
        x = torch.stack([torch.sin(hour / 24 * 6.283), torch.cos(hour / 24 * 6.283), temp,
                         (hour >= 17).float() * (hour <= 21).float()], 1)
        y = (40 + 8 * x[:, 0] - 0.6 * temp + 12 * x[:, 3]).unsqueeze(1)
        y = y + torch.randn(2000, 1, generator=g)
        train = Hours(x[:1600], y[:1600], torch.tensor([1.0, 1.0, 20.0, 1.0]))
        loader = torch.utils.data.DataLoader(
            train, batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(2),
            num_workers=2, prefetch_factor=4,
            multiprocessing_context=os.environ.get("MP_START_METHOD") or None)
        amp = os.environ.get("CPU_AMP") == "bf16"
        torch.manual_seed(4)
        net = torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
        opt = torch.optim.Adam(net.parameters(), lr=0.03)
        for _ in range(6):
            for xb, yb in loader:
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                    loss = torch.nn.functional.mse_loss(net(xb).float(), yb / 40)
                opt.zero_grad()
                loss.backward()
                opt.step()
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            vx = x[1600:] / torch.tensor([1.0, 1.0, 20.0, 1.0])
            val = torch.nn.functional.mse_loss(net(vx).float(), y[1600:] / 40).item()
        print(f"train_mse={loss.item():.6f} val_mse={val:.6f}")


    if __name__ == "__main__":
        main()
    """


def _forecast(d: Path) -> tuple[str, Path]:
    py = python_with("torch")
    return py, _repo(d / "substation-load", {"forecast.py": LOAD_FORECAST})


def workers_zero_uncommitted_prefetch(d: Path) -> Incident:
    """Between the runs forecast.py (in git) had ``num_workers=2`` set to ``num_workers=0``, not
    committed, while debugging a worker crash, leaving ``prefetch_factor=4`` beside it; the
    DataLoader refuses (ValueError: prefetch_factor option could only be specified in
    multiprocessing.let num_workers > 0 to enable multiprocessing). Kind: fail."""
    py, repo = _forecast(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "forecast.py")
    return _incident(workers_zero_uncommitted_prefetch, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "substation-load: forecast.py"),
                     between=lambda: _edit(repo / "forecast.py", "num_workers=2",
                                           "num_workers=0"))


def spawn_start_method_from_cron_env(d: Path) -> Incident:
    """The cron job's env file exports ``MP_START_METHOD=spawn`` (copied from a laptop setup
    where fork was unsafe); the dataset holds a lambda and the spawned workers cannot receive
    it (AttributeError: Can't pickle local object 'Hours.__init__.<locals>.<lambda>'). The Argo
    step's workers fork. Kind: fail."""
    py, repo = _forecast(d)
    good, bad = _shells(d, bad={"MP_START_METHOD": "spawn"}, venv=_venv_of(py))
    argv = (py, "forecast.py")
    return _incident(spawn_start_method_from_cron_env, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "MP_START_METHOD"))


def cpu_amp_in_argo_template_metric(d: Path) -> Incident:
    """The Argo step's template exports ``CPU_AMP=bf16`` (the cluster's default for the big
    CPU nodes); the forecaster trains and evaluates under bfloat16 autocast. Both runs fit;
    the training and validation MSE move. Kind: metric."""
    py, repo = _forecast(d)
    good, bad = _shells(d, bad={"CPU_AMP": "bf16"}, bad_in="argo", venv=_venv_of(py))
    argv = (py, "forecast.py")
    return _incident(cpu_amp_in_argo_template_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "CPU_AMP"))


# --------------------------------------------------------------------------- model folders


MAKE_DISTILBERT = """
import sys
import torch
from transformers import DistilBertConfig, DistilBertForSequenceClassification
cfg = DistilBertConfig(vocab_size=256, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                       max_position_embeddings=128, activation="gelu", num_labels=3,
                       initializer_range=0.3, id2label={0: "normal", 1: "wear", 2: "crack"},
                       label2id={"normal": 0, "wear": 1, "crack": 2})
torch.manual_seed(29)
DistilBertForSequenceClassification(cfg).save_pretrained(sys.argv[1])
"""

NOTES_EVAL = """
    \"\"\"Score the maintenance-note classifier (--model-path) on data/notes.jsonl; the text is
    byte-level ids, as in training. Prints the accuracy and the mean top probability.\"\"\"
    import argparse
    import json

    import torch
    from transformers import DistilBertForSequenceClassification


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        torch.set_num_threads(2)
        model = DistilBertForSequenceClassification.from_pretrained(a.model_path).eval()
        notes = [json.loads(line) for line in open("data/notes.jsonl")]
        right, top = 0, 0.0
        with torch.no_grad():
            for n in notes:
                ids = torch.tensor([list(n["note"].encode()[:120])])
                probs = model(input_ids=ids).logits.softmax(-1)[0]
                right += int(probs.argmax()) == n["label"]
                top += probs.max().item()
        print(f"accuracy={right / len(notes):.4f} mean_top_prob={top / len(notes):.5f}")


    if __name__ == "__main__":
        main()
    """


def _notes() -> str:
    parts = ["bearing hum at 1x", "pitting on tooth flank", "oil sample clean",
             "hairline crack near keyway", "backlash within spec", "scuffing on pinion"]
    return "".join(json.dumps({"note": f"{parts[i % 6]}; gearbox G{i % 9}, tech t{(i * 7) % 23}",
                               "label": (i * 2) % 3}) + "\n" for i in range(54))


def _distilbert(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers")
    repo = _repo(d / "note-triage", {"evaluate.py": NOTES_EVAL, "data/notes.jsonl": _notes()})
    model = d / "models" / "note-distilbert"
    _build(py, MAKE_DISTILBERT, str(model))
    return py, repo, model


def _set_config(model: Path, field: str, value: object) -> None:
    cfg = json.loads((model / "config.json").read_text())
    cfg[field] = value
    (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def hidden_dim_edited_in_model_folder(d: Path) -> Incident:
    """Between the runs the model folder's config.json (outside git) got ``"hidden_dim": 128``
    (the value of the next model size up); the saved feed-forward weights are 64 wide and
    transformers refuses the mismatch (size mismatch for ...ffn.lin1.weight). Kind: fail."""
    py, repo, model = _distilbert(d)
    good, bad = _shells(d, bad_in="argo", venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(hidden_dim_edited_in_model_folder, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: hidden_dim"),
                     between=lambda: _set_config(model, "hidden_dim", 128))


def activation_relu_metric(d: Path) -> Incident:
    """Between the runs the model folder's config.json got ``"activation": "relu"`` (it was
    trained with gelu); every weight still loads, the feed-forward layers compute otherwise and
    the scores move. Kind: metric."""
    py, repo, model = _distilbert(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(activation_relu_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: activation"),
                     between=lambda: _set_config(model, "activation", "relu"))


def note_distilbert_noise(d: Path) -> Incident:
    """The maintenance-note evaluation, the same model folder, code and data, from the Argo
    step and from cron. Nothing planted. Kind: noise."""
    py, repo, model = _distilbert(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(note_distilbert_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- team package


VIBFEAT = {
    "0.4.0": '''
        """Vibration features (0.4)."""


        def crest_factor(xs):
            rms = (sum(v * v for v in xs) / len(xs)) ** 0.5
            return max(abs(v) for v in xs) / rms
        ''',
    "0.5.1": '''
        """Vibration features (0.5): adds spectral_kurtosis."""


        def crest_factor(xs):
            rms = (sum(v * v for v in xs) / len(xs)) ** 0.5
            return max(abs(v) for v in xs) / rms


        def spectral_kurtosis(xs):
            m = sum(xs) / len(xs)
            var = sum((v - m) ** 2 for v in xs) / len(xs)
            return sum((v - m) ** 4 for v in xs) / len(xs) / var ** 2 - 3
        ''',
}

SCREEN = """
    \"\"\"Screen the night's accelerometer windows: crest factor and spectral kurtosis
    (vibfeat) against fixed limits; prints how many windows need a technician.\"\"\"
    import csv

    from vibfeat import crest_factor, spectral_kurtosis


    def main():
        windows = {}
        for r in csv.DictReader(open("data/accel.csv")):
            windows.setdefault(r["window"], []).append(float(r["g"]))
        flagged = [w for w, xs in windows.items()
                   if crest_factor(xs) > 3.2 or spectral_kurtosis(xs) > 1.5]
        print(f"windows={len(windows)} flagged={len(flagged)}")


    if __name__ == "__main__":
        main()
    """


def _accel() -> str:
    pick = random.Random(13)
    rows = []
    for w in range(30):
        for i in range(64):
            g = pick.gauss(0, 0.4) + (2.5 if w % 7 == 3 and i % 16 == 0 else 0.0)
            rows.append(f"w{w},{i},{g:.4f}")
    return "\n".join(["window,i,g", *rows]) + "\n"


def vibfeat_behind_in_cron_venv(d: Path) -> Incident:
    """The screening script imports ``spectral_kurtosis`` from the team package vibfeat. The
    venv the cron job activates was made last spring and has vibfeat 0.4.0, which does not
    have it yet (ImportError: cannot import name 'spectral_kurtosis' from 'vibfeat'); the Argo
    step's image has 0.5.1. Kind: fail."""
    repo = _repo(d / "night-screen", {"screen.py": SCREEN, "data/accel.csv": _accel()})
    envs = {}
    for side, version in (("argo", "0.5.1"), ("cron", "0.4.0")):
        py = _venv(d / "venvs" / side, {"vibfeat": (version, VIBFEAT[version])})
        envs[side] = str(py.parent.parent)
    good, bad = _shells(d)
    good = {**good, "VIRTUAL_ENV": envs["argo"], "PATH": f"{envs['argo']}/bin:{good['PATH']}"}
    bad = {**bad, "VIRTUAL_ENV": envs["cron"], "PATH": f"{envs['cron']}/bin:{bad['PATH']}"}
    argv = ("python", "screen.py")
    return _incident(vibfeat_behind_in_cron_venv, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "vibfeat"))


# --------------------------------------------------------------------------- scikit-learn


ALERTS = """
    \"\"\"Bearing alerts: an IsolationForest over the temperature and vibration readings, its
    contamination from the git-ignored params.yaml (per site). Prints the alert count.\"\"\"
    import csv

    import yaml
    from sklearn.ensemble import IsolationForest


    def main():
        params = yaml.safe_load(open("params.yaml"))
        rows = list(csv.DictReader(open("data/bearings.csv")))
        x = [[float(r["temp_c"]), float(r["rms_g"]), float(r["rpm"])] for r in rows]
        forest = IsolationForest(n_estimators=60, contamination=params["contamination"],
                                 random_state=0, n_jobs=1).fit(x)
        alerts = int((forest.predict(x) == -1).sum())
        print(f"readings={len(x)} alerts={alerts}")


    if __name__ == "__main__":
        main()
    """


def _bearings() -> str:
    pick = random.Random(8)
    rows = [f"{pick.gauss(55, 4):.1f},{abs(pick.gauss(0.6, 0.15)):.3f},{pick.choice([900, 1200, 1800])}"
            for _ in range(300)]
    return "\n".join(["temp_c,rms_g,rpm", *rows]) + "\n"


def contamination_percent_in_ignored_params(d: Path) -> Incident:
    """Between the runs the git-ignored params.yaml had ``contamination: 0.06`` rewritten as
    ``0.6`` (read "6%" off the site's sheet); scikit-learn refuses it (InvalidParameterError: The
    'contamination' parameter of IsolationForest must be ... a float in the range (0.0, 0.5].
    Got 0.6 instead). Kind: fail."""
    py = python_with("sklearn", "yaml")
    repo = _repo(d / "bearing-alerts", {"alerts.py": ALERTS, "data/bearings.csv": _bearings()},
                 "__pycache__/\nparams.yaml\n")
    params = _write(repo / "params.yaml", "# site 4, not in git\ncontamination: 0.06\n")
    good, bad = _shells(d, bad_in="argo", venv=_venv_of(py))
    argv = (py, "alerts.py")
    return _incident(contamination_percent_in_ignored_params, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {params.resolve()}"),
                     between=lambda: _edit(params, "0.06", "0.6"))


WEAR = """
    \"\"\"Fit the tool-wear regressor: gradient boosting on cutting parameters, scored by 3-fold
    cross-validation (N_JOBS folds in parallel, default 1) and on a held-out split.\"\"\"
    import argparse
    import csv
    import os

    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.metrics import r2_score
    from sklearn.model_selection import cross_val_score, train_test_split


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--subsample", type=float, default=1.0)
        p.add_argument("--min-r2", type=float, default=None)
        a = p.parse_args()
        rows = list(csv.DictReader(open("data/cuts.csv")))
        x = [[float(r[k]) for k in ("speed", "feed", "depth", "minutes")] for r in rows]
        y = [float(r["wear_um"]) for r in rows]
        xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.25, random_state=3)
        model = GradientBoostingRegressor(n_estimators=80, max_depth=3, subsample=a.subsample,
                                          random_state=0)
        cv = cross_val_score(model, xtr, ytr, cv=3, n_jobs=int(os.environ.get("N_JOBS", "1")))
        r2 = r2_score(yte, model.fit(xtr, ytr).predict(xte))
        print(f"cv_r2={cv.mean():.4f} r2={r2:.4f}")
        if a.min_r2 is not None and r2 < a.min_r2:
            raise SystemExit(f"r2={r2:.4f} is below --min-r2 {a.min_r2}: not publishing")


    if __name__ == "__main__":
        main()
    """


def _cuts() -> str:
    pick = random.Random(31)
    rows = []
    for _ in range(320):
        speed, feed = pick.uniform(80, 240), pick.uniform(0.05, 0.3)
        depth, minutes = pick.uniform(0.5, 3.0), pick.uniform(1, 45)
        wear = 0.02 * speed * minutes ** 0.6 + 140 * feed * depth + pick.gauss(0, 6)
        rows.append(f"{speed:.1f},{feed:.3f},{depth:.2f},{minutes:.1f},{wear:.1f}")
    return "\n".join(["speed,feed,depth,minutes,wear_um", *rows]) + "\n"


def _wear(d: Path) -> tuple[str, Path]:
    py = python_with("sklearn")
    return py, _repo(d / "tool-wear", {"fit.py": WEAR, "data/cuts.csv": _cuts()})


def subsample_in_crontab_metric(d: Path) -> Incident:
    """The crontab line passes ``--subsample 0.5`` (copied from a tuning sweep); gradient
    boosting fits each tree on half the rows. Both runs fit; the R2 scores move.
    Kind: metric."""
    py, repo = _wear(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(subsample_in_crontab_metric, Launch(argv, good, repo),
                     Launch((*argv, "--subsample", "0.5"), bad, repo),
                     ("command", "--subsample"))


def n_jobs_zero_from_cpu_limit_both_fail(d: Path) -> Incident:
    """Both fail. Both runs ask for ``--min-r2 0.999``, which the regressor never reaches: the
    good run fits and does not publish. The Argo step's template exports ``N_JOBS=0`` (the
    pod's CPU limit of 500m rounded down); joblib refuses it during the cross-validation
    (ValueError: n_jobs == 0 in Parallel has no meaning). Kind: both-fail."""
    py, repo = _wear(d)
    good, bad = _shells(d, bad={"N_JOBS": "0"}, bad_in="argo", venv=_venv_of(py))
    argv = (py, "fit.py", "--min-r2", "0.999")
    return _incident(n_jobs_zero_from_cpu_limit_both_fail, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "N_JOBS"))


def tool_wear_noise(d: Path) -> Incident:
    """The tool-wear regressor, the same code and data, from cron and from the Argo step.
    Nothing planted. Kind: noise."""
    py, repo = _wear(d)
    good, bad = _shells(d, bad_in="argo", venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(tool_wear_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


#: The twenty-fourth fresh batch, in the order it was written. Never tuned on.
FRESH24 = [
    yaml_eps_string_uncommitted_config_job, data_fraction_in_argo_template_metric_job,
    classes_option_both_fail_job, eval_ranks_of_four_pod_run_job, gearbox_ddp_job_noise,
    workers_zero_uncommitted_prefetch, spawn_start_method_from_cron_env,
    cpu_amp_in_argo_template_metric, hidden_dim_edited_in_model_folder, activation_relu_metric,
    note_distilbert_noise, vibfeat_behind_in_cron_venv, contamination_percent_in_ignored_params,
    subsample_in_crontab_metric, n_jobs_zero_from_cpu_limit_both_fail, tool_wear_noise,
]

if __name__ == "__main__":  # build one incident and run its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH24 if b.__name__ in sys.argv[1:]] or FRESH24
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh24-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
