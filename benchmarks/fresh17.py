"""A seventeenth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh.py ... fresh16.py, for their format), how they are
run and scored (benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot
reference (docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job
captures one snapshot per rank. They form the corpus's ``fresh17`` half; report it, never change
the ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a delivery-ETA regressor trained
  with DDP: an uncommitted switch of the early-stop vote's all-reduce to ``ReduceOp.BAND`` on a
  float flag (gloo refuses a bitwise AND on floats), ``GRAD_ACCUM_STEPS`` exported by the DGX
  box's launch script (loss moves), ``--val-fraction 0`` on top of a quality gate the good job
  already misses (both fail), and the same job from both shells (noise);
- c10d and torch settings: a single-rank gloo group over ``env://`` in a Kubeflow step whose
  namespace holds a Service named ``master`` (Kubernetes injects ``MASTER_PORT=tcp://IP:PORT``),
  and ``FP32_PRECISION=high`` (the old ``set_float32_matmul_precision`` word) handed to
  ``torch.backends.fp32_precision``, which refuses it;
- model folders under transformers: a classifier's config.json re-exported with
  ``"problem_type": "multi_label_classification"`` (the loss wants one-hot targets), a Qwen2
  folder whose ``rope_parameters`` got the long-context ``rope_theta`` (perplexity moves) and that
  model's evaluation from both shells (noise);
- scikit-learn: the warranty-claim classifier with ``--folds 1`` (KFold refuses), ``CLASS_WEIGHT``
  exported by the pipeline component (figures move), ``--C`` copied from another dataset (figures
  move) and the same cross-validation from both shells (noise);
- the rest: the team's ``etafeat`` a minor version behind in the DGX user's venv (an import
  name it lacks), an uncommitted ``date_format`` in a git-tracked pandas report config, and a
  git-ignored ``eval.local.yaml`` with ``batch_size: 0`` on top of a missed gate (both fail).

The shells are :func:`kubeflow_or_screen_shell`: shell 0 a Kubeflow Pipelines (Tekton) PipelineRun
step's container (``KFP_*``, ``ML_PIPELINE_*``, Kubernetes service links, a ``/tekton`` home, the
pipeline's MinIO credentials, its ``NCCL_*``/``OMP_*``/``TORCH_*``/``HF_*``/``CUDA_*`` settings,
running as root), shell 1 zsh inside GNU screen on a bare-metal DGX-style box reached through a
bastion (``STY``, ``WINDOW``, ``SSH_*`` from the bastion, oh-my-zsh, the box's InfiniBand
``NCCL_IB_*``/``UCX_*`` tuning, eight GPUs, ``/raid`` caches). The thread counts that change float
reductions are pinned alike. The planted side is either: some incidents work in the Kubeflow step
and fail on the DGX box, others the reverse.

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

RUN = "eta-nightly-run-7f2kq"


def kubeflow_or_screen_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 a Kubeflow
    Pipelines (Tekton) PipelineRun step's container, 1 zsh in GNU screen on a DGX-style box
    reached through a bastion (``venv`` the job's virtual environment, first on ``PATH``)."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    if n % 2 == 0:  # a Tekton step of a Kubeflow PipelineRun, the component's image, as root
        pod = f"{RUN}-train-eta-pod"
        env = {
            **common, "PATH": f"/opt/conda/bin:/usr/local/nvidia/bin:{path}",
            "USER": "root", "LANG": "C.UTF-8", "HOSTNAME": pod, "PYTHONUNBUFFERED": "1",
            "KFP_POD_NAME": pod, "KFP_POD_UID": "4c2a9e71-0d5b-4f38-a6e2-91b7c3d05f8e",
            "KFP_NAMESPACE": "team-logistics", "PIPELINE_RUN_NAME": RUN,
            "ML_PIPELINE_SERVICE_HOST": "10.96.118.40", "ML_PIPELINE_SERVICE_PORT": "8888",
            "METADATA_GRPC_SERVICE_HOST": "10.96.201.9", "METADATA_GRPC_SERVICE_PORT": "8080",
            "MINIO_SERVICE_SERVICE_HOST": "10.96.77.3", "MINIO_SERVICE_SERVICE_PORT": "9000",
            "AWS_ACCESS_KEY_ID": "minio", "AWS_SECRET_ACCESS_KEY": "minio123-kfp-3e9b1f",
            "KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
            "KUBERNETES_SERVICE_PORT_HTTPS": "443", "KUBERNETES_PORT": "tcp://10.96.0.1:443",
            "KUBERNETES_PORT_443_TCP": "tcp://10.96.0.1:443",
            "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1", "KUBERNETES_PORT_443_TCP_PORT": "443",
            "KUBERNETES_PORT_443_TCP_PROTO": "tcp",
            "NVIDIA_VISIBLE_DEVICES": "GPU-6b1f0c2e-93d4-7a58-e1c0-5f2b8d4a9e17",
            "NVIDIA_DRIVER_CAPABILITIES": "compute,utility", "CUDA_VISIBLE_DEVICES": "0",
            "CUDA_VERSION": "12.4.1", "NCCL_DEBUG": "WARN", "NCCL_SOCKET_IFNAME": "eth0",
            "NCCL_IB_DISABLE": "1", "NCCL_P2P_DISABLE": "1",
            "TORCH_HOME": "/mnt/cache/torch", "HF_HOME": "/mnt/cache/huggingface",
            "HF_HUB_OFFLINE": "1", "TORCHINDUCTOR_CACHE_DIR": "/mnt/cache/inductor",
            "PIP_NO_CACHE_DIR": "1",
        }
        if venv:
            env["PATH"] = f"{venv}/bin:{env['PATH']}"
        return env
    env = {  # zsh in GNU screen on dgx-07, reached through the bastion
        **common, "PATH": f"{home}/.local/bin:/usr/local/cuda/bin:{path}",
        "USER": "priya", "LOGNAME": "priya", "SHELL": "/usr/bin/zsh", "LANG": "en_US.UTF-8",
        "TERM": "screen.xterm-256color", "TERMCAP": "SC|screen.xterm-256color|VT 100/ANSI",
        "STY": "41877.eta-sweep", "WINDOW": "3", "SHLVL": "2", "HOSTNAME": "dgx-07",
        "SSH_CONNECTION": "10.20.0.5 50122 10.20.1.37 22", "SSH_CLIENT": "10.20.0.5 50122 22",
        "SSH_TTY": "/dev/pts/7", "ZSH": f"{home}/.oh-my-zsh", "EDITOR": "vim",
        "PAGER": "less", "LESS": "-R", "OLDPWD": f"{home}/src",
        "CUDA_HOME": "/usr/local/cuda", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "NCCL_IB_HCA": "mlx5_0,mlx5_1,mlx5_2,mlx5_3",
        "NCCL_SOCKET_IFNAME": "enp226s0", "NCCL_TOPO_FILE": "/etc/nccl/dgx-topo.xml",
        "NCCL_DEBUG": "INFO", "UCX_TLS": "rc,sm,self", "UCX_NET_DEVICES": "mlx5_0:1",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "HF_HOME": "/raid/priya/huggingface", "HF_HUB_ENABLE_HF_TRANSFER": "1",
        "TORCH_HOME": "/raid/priya/torch",
    }
    if venv:
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "screen", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the DGX box's screen session (``bad_in="screen"``) or from the Kubeflow step
    (``"kubeflow"``)."""
    kfp = kubeflow_or_screen_shell(0, d / "tekton" / "home", venv)
    dgx = kubeflow_or_screen_shell(1, d / "home" / "priya", venv)
    first, second = (kfp, dgx) if bad_in == "screen" else (dgx, kfp)
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


ETA_DDP = """
    \"\"\"Train the delivery-ETA regressor with DDP over gloo; settings from configs/train.yaml,
    GRAD_ACCUM_STEPS micro-batches per optimizer step. After each epoch the ranks vote on early
    stopping (every rank's flag all-reduced). Rank 0 prints each epoch's loss and the validation
    MAE in minutes; --max-val-mae refuses a model above that error.\"\"\"
    import argparse
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP

    FEATURES = 12


    def deliveries(n=3000, seed=21):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, FEATURES, generator=g)
        w = torch.linspace(-1.0, 2.0, FEATURES)
        y = 30 + 6 * torch.tanh(x @ w / 4) + 2 * torch.randn(n, generator=g)
        return x, y


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--val-fraction", type=float, default=0.2)
        p.add_argument("--max-val-mae", type=float, default=None)
        a = p.parse_args()
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        with open("configs/train.yaml") as f:
            cfg = yaml.safe_load(f)
        accum = int(os.environ.get("GRAD_ACCUM_STEPS", "1"))
        x, y = deliveries()
        cut = int(len(x) * (1 - a.val_fraction))
        tx, ty = x[:cut][rank::world], y[:cut][rank::world]
        torch.manual_seed(0)
        model = DDP(torch.nn.Sequential(torch.nn.Linear(FEATURES, cfg["hidden"]),
                                        torch.nn.ReLU(), torch.nn.Linear(cfg["hidden"], 1)))
        opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9)
        bs = cfg["batch"] // world
        best = float("inf")
        for epoch in range(cfg["epochs"]):
            total, steps = 0.0, 0
            for i, s in enumerate(range(0, len(tx), bs)):
                loss = F.smooth_l1_loss(model(tx[s:s + bs]).squeeze(1), ty[s:s + bs])
                (loss / accum).backward()
                if (i + 1) % accum == 0:
                    opt.step()
                    opt.zero_grad()
                total, steps = total + loss.item(), steps + 1
            t = torch.tensor([total / steps])
            dist.all_reduce(t)
            epoch_loss = t.item() / world
            stop = torch.tensor([1.0 if epoch_loss > best - 1e-3 else 0.0])
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
            best = min(best, epoch_loss)
            if rank == 0:
                print(f"epoch={epoch} loss={epoch_loss:.5f}")
            if stop.item() > 0:
                break
        vx, vy = x[cut:][rank::world], y[cut:][rank::world]
        with torch.no_grad():
            err = torch.tensor([(model(vx).squeeze(1) - vy).abs().sum().item(), float(len(vy))])
        dist.all_reduce(err)
        mae = err[0].item() / err[1].item()
        if rank == 0:
            print(f"val_mae_min={mae:.4f}")
            if a.max_val_mae is not None and mae > a.max_val_mae:
                raise RuntimeError(f"quality gate: val_mae_min={mae:.4f} is above "
                                   f"--max-val-mae {a.max_val_mae}, not promoting the model")
        dist.barrier()
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

ETA_YAML = "# delivery ETA, minutes\nlr: 0.01\nhidden: 32\nbatch: 96\nepochs: 4\n"


def _eta_job(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    repo = _repo(d / "eta-model", {"train.py": ETA_DDP, "configs/train.yaml": ETA_YAML})
    return py, repo


def early_stop_vote_band_uncommitted_job(d: Path) -> Incident:
    """Job against job. Between the jobs train.py (in git) had its early-stop vote rewritten,
    not committed, to ``dist.all_reduce(stop, op=dist.ReduceOp.BAND)`` ("stop only when every
    rank agrees"); the flag is a float tensor and gloo refuses on every rank (RuntimeError:
    Cannot use ReduceOp.BAND with non-integral dtype). Kind: fail."""
    py, repo = _eta_job(d)

    def edited() -> None:
        f = repo / "train.py"
        f.write_text(f.read_text().replace("op=dist.ReduceOp.MAX", "op=dist.ReduceOp.BAND"))

    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(early_stop_vote_band_uncommitted_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "eta-model: train.py"), between=edited)


def grad_accum_from_dgx_script_metric_job(d: Path) -> Incident:
    """Job against job. The DGX box's launch script, sourced in the screen session, exports
    ``GRAD_ACCUM_STEPS=8`` for the large model's sweep; this job reads it and takes an optimizer
    step every eight micro-batches. Both jobs finish; the losses and the validation MAE move.
    Kind: metric."""
    py, repo = _eta_job(d)
    good, bad = _shells(d, bad={"GRAD_ACCUM_STEPS": "8"}, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(grad_accum_from_dgx_script_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "GRAD_ACCUM_STEPS"))


def val_fraction_zero_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--max-val-mae 0.5``, which this model never
    reaches: the DGX job trains and rank 0 refuses to promote it. The pipeline component adds
    ``--val-fraction 0`` ("train on everything, the holdout is scored elsewhere"): the validation
    shards are empty and every rank stops on the MAE (ZeroDivisionError: float division by
    zero). Kind: both-fail."""
    py, repo = _eta_job(d)
    good, bad = _shells(d, bad_in="kubeflow", venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--max-val-mae", "0.5")
    return _incident(val_fraction_zero_both_fail_job, Launch(argv, good, repo),
                     Launch((*argv, "--val-fraction", "0"), bad, repo),
                     ("command", "--val-fraction"))


def eta_ddp_noise_job(d: Path) -> Incident:
    """Job against job, the same code and settings, from the Kubeflow step and from the screen
    session on the DGX box: each job its own rendezvous and rank processes, the shells their own
    KFP_*, KUBERNETES_*, SSH_*, STY, NCCL_*, UCX_*, TORCH_*, CUDA_* and HF_* variables. Nothing
    planted. Kind: noise."""
    py, repo = _eta_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(eta_ddp_noise_job, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- c10d and torch


SCORE = """
    \"\"\"Score the route-ranking model over the day's routes as one rank of a gloo group (the
    same entry point runs multi-rank on the big days); MASTER_ADDR/MASTER_PORT default to this
    host. Matmul precision from FP32_PRECISION.\"\"\"
    import os

    import torch
    import torch.distributed as dist


    def main():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29533")
        torch.backends.fp32_precision = os.environ.get("FP32_PRECISION", "ieee")
        dist.init_process_group("gloo", rank=0, world_size=1)
        g = torch.Generator().manual_seed(4)
        routes = torch.randn(500, 10, generator=g)
        torch.manual_seed(0)
        ranker = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.Tanh(),
                                     torch.nn.Linear(16, 1)).eval()
        with torch.no_grad():
            scores = ranker(routes).squeeze(1)
        top = torch.tensor([scores.topk(50).values.mean().item()])
        dist.all_reduce(top)
        print(f"routes={len(routes)} top50_mean={top.item():.5f}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """


def _score(d: Path) -> tuple[str, Path]:
    py = python_with("torch")
    return py, _repo(d / "route-ranker", {"score.py": SCORE})


def master_port_from_service_link(d: Path) -> Incident:
    """The scorer's gloo group rendezvous over ``env://`` and defaults MASTER_PORT only when it
    is unset. The pipeline's namespace holds a Kubernetes Service named ``master`` (the old
    PyTorchJob's), so every pod there gets its service links, among them
    ``MASTER_PORT=tcp://10.96.142.7:29500``; the port parse stops on it (ValueError: invalid
    literal for int() ... 'tcp://10.96.142.7:29500'). Kind: fail."""
    py, repo = _score(d)
    links = {"MASTER_PORT": "tcp://10.96.142.7:29500", "MASTER_SERVICE_HOST": "10.96.142.7",
             "MASTER_SERVICE_PORT": "29500", "MASTER_PORT_29500_TCP": "tcp://10.96.142.7:29500",
             "MASTER_PORT_29500_TCP_ADDR": "10.96.142.7",
             "MASTER_PORT_29500_TCP_PORT": "29500", "MASTER_PORT_29500_TCP_PROTO": "tcp"}
    good, bad = _shells(d, bad=links, bad_in="kubeflow", venv=_venv_of(py))
    argv = (py, "score.py")
    return _incident(master_port_from_service_link, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "MASTER_PORT"))


def fp32_precision_old_word(d: Path) -> Incident:
    """The DGX box's launch script exports ``FP32_PRECISION=high``, the word of the old
    ``torch.set_float32_matmul_precision``; the scorer hands it to the new
    ``torch.backends.fp32_precision``, which knows ``ieee``, ``tf32`` and ``none`` and refuses
    (RuntimeError: Unknown precision: high). Kind: fail."""
    py, repo = _score(d)
    good, bad = _shells(d, bad={"FP32_PRECISION": "high"}, venv=_venv_of(py))
    argv = (py, "score.py")
    return _incident(fp32_precision_old_word, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("env", "FP32_PRECISION"))


# --------------------------------------------------------------------------- model folders


MAKE_CLASSIFIER = """
import sys, torch
from transformers import BertConfig, BertForSequenceClassification
torch.manual_seed(0)
cfg = BertConfig(vocab_size=200, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=64, max_position_embeddings=64, num_labels=4)
BertForSequenceClassification(cfg).save_pretrained(sys.argv[1])
"""

INTENT_EVAL = """
    \"\"\"Evaluate the courier-message intent classifier (a BERT folder, --model-path) on the
    labelled sample: loss and accuracy.\"\"\"
    import argparse

    import torch
    from transformers import AutoModelForSequenceClassification


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        model = AutoModelForSequenceClassification.from_pretrained(a.model_path).eval()
        g = torch.Generator().manual_seed(6)
        ids = torch.randint(1, 200, (128, 24), generator=g)
        labels = ids[:, 0] % 4
        with torch.no_grad():
            out = model(input_ids=ids, labels=labels)
        acc = (out.logits.argmax(1) == labels).float().mean().item()
        print(f"messages={len(ids)} loss={out.loss.item():.5f} accuracy={acc:.4f}")


    if __name__ == "__main__":
        main()
    """


def problem_type_multilabel_reexport(d: Path) -> Incident:
    """Between the runs the intent model's folder (outside git) was re-exported from the
    multi-label experiment's checkpoint, and its config.json now says ``"problem_type":
    "multi_label_classification"``; transformers computes a BCE loss that wants one-hot
    targets and refuses the class ids (ValueError: Target size ... must be the same as input
    size). Kind: fail."""
    py = python_with("torch", "transformers")
    repo = _repo(d / "courier-intents", {"eval.py": INTENT_EVAL})
    model = d / "artifacts" / "intent-bert"
    _build(py, MAKE_CLASSIFIER, str(model))

    def reexported() -> None:
        cfg = json.loads((model / "config.json").read_text())
        cfg["problem_type"] = "multi_label_classification"
        (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")

    good, bad = _shells(d, bad_in="kubeflow", venv=_venv_of(py))
    argv = (py, "eval.py", "--model-path", str(model))
    return _incident(problem_type_multilabel_reexport, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: problem_type"),
                     between=reexported)


MAKE_QWEN = """
import sys, torch
from transformers import Qwen2Config, Qwen2ForCausalLM
torch.manual_seed(0)
cfg = Qwen2Config(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                  initializer_range=0.2)
Qwen2ForCausalLM(cfg).save_pretrained(sys.argv[1])
"""

NOTES_PPL = """
    \"\"\"Perplexity of the dispatch-notes model (a Qwen2 folder, --model-path) on held-out
    dispatcher notes, byte-level, in windows of 96 bytes.\"\"\"
    import argparse
    import math

    import torch
    from transformers import AutoModelForCausalLM


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        model = AutoModelForCausalLM.from_pretrained(a.model_path).eval()
        data = list(open("data/notes.txt").read().encode())
        ids = torch.tensor(data[: len(data) // 96 * 96]).view(-1, 96)
        with torch.no_grad():
            loss = model(input_ids=ids, labels=ids).loss.item()
        print(f"windows={len(ids)} loss={loss:.5f} ppl={math.exp(loss):.4f}")


    if __name__ == "__main__":
        main()
    """


def _notes() -> str:
    parts = ["driver at depot", "parcel left with neighbour", "gate code 4417", "customer not home",
             "reattempt tomorrow", "road closed on elm st", "signed by reception", "late by 20 min",
             "van 12 swapped", "fragile, upright"]
    return "\n".join("; ".join(parts[(i * 3 + j) % len(parts)] for j in range(2 + i % 3))
                     for i in range(240)) + "\n"


def _qwen(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers")
    repo = _repo(d / "dispatch-notes", {"eval_ppl.py": NOTES_PPL, "data/notes.txt": _notes()})
    model = d / "artifacts" / "notes-qwen2"
    _build(py, MAKE_QWEN, str(model))
    return py, repo, model


def rope_theta_long_context_metric(d: Path) -> Incident:
    """Between the runs someone "aligned" the model folder's config.json (outside git) with the
    long-context variant: ``rope_parameters.rope_theta`` 10000 -> 1000000. The weights are the
    same; the rotary positions are not, and both runs finish with another loss and perplexity.
    Kind: metric."""
    py, repo, model = _qwen(d)

    def aligned() -> None:
        cfg = json.loads((model / "config.json").read_text())
        cfg["rope_parameters"] = {**cfg.get("rope_parameters", {}), "rope_theta": 1000000.0}
        (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")

    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "eval_ppl.py", "--model-path", str(model))
    return _incident(rope_theta_long_context_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: rope_parameters"),
                     ("models", "--model-path: rope_theta"), between=aligned)


def notes_ppl_noise(d: Path) -> Incident:
    """The dispatch-notes model's perplexity, the same folder and data, from the Kubeflow step
    and from the screen session on the DGX box. Nothing planted. Kind: noise."""
    py, repo, model = _qwen(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "eval_ppl.py", "--model-path", str(model))
    return _incident(notes_ppl_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- scikit-learn


CLAIMS = """
    \"\"\"Cross-validate the warranty-claim approval classifier (logistic regression on the
    claim features); the class weighting comes from CLASS_WEIGHT when the pipeline sets it.\"\"\"
    import argparse
    import os

    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score, roc_auc_score
    from sklearn.model_selection import StratifiedKFold


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--folds", type=int, default=5)
        p.add_argument("--C", type=float, default=1.0)
        a = p.parse_args()
        rng = np.random.default_rng(31)
        x = rng.normal(size=(1200, 9))
        y = (x[:, 1] + 0.6 * x[:, 4] - 0.4 * x[:, 7] + rng.normal(scale=1.0, size=1200) > 1.3)
        y = y.astype(int)
        weight = os.environ.get("CLASS_WEIGHT") or None
        aucs, f1s = [], []
        for tr, te in StratifiedKFold(n_splits=a.folds, shuffle=True,
                                      random_state=0).split(x, y):
            m = LogisticRegression(C=a.C, class_weight=weight, max_iter=500).fit(x[tr], y[tr])
            aucs.append(roc_auc_score(y[te], m.predict_proba(x[te])[:, 1]))
            f1s.append(f1_score(y[te], m.predict(x[te])))
        print(f"folds={a.folds} approved_share={y.mean():.4f} cv_auc={np.mean(aucs):.4f} "
              f"cv_f1={np.mean(f1s):.4f}")


    if __name__ == "__main__":
        main()
    """


def _claims(d: Path) -> tuple[str, Path]:
    py = python_with("sklearn", "numpy")
    return py, _repo(d / "warranty-claims", {"cv.py": CLAIMS})


def folds_one_quick_run(d: Path) -> Incident:
    """In the screen session the engineer re-ran the cross-validation with ``--folds 1`` "to
    get a quick number"; StratifiedKFold refuses (ValueError: k-fold cross-validation requires
    at least one train/test split by setting n_splits=2 or more, got n_splits=1).
    Kind: fail."""
    py, repo = _claims(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "cv.py")
    return _incident(folds_one_quick_run, Launch(argv, good, repo),
                     Launch((*argv, "--folds", "1"), bad, repo), ("command", "--folds"))


def class_weight_from_component_metric(d: Path) -> Incident:
    """The pipeline component's spec sets ``CLASS_WEIGHT=balanced`` for its container (added
    for the fraud model that shares the component); the claim classifier reads it. Both runs
    finish; the cross-validated F1 moves. Kind: metric."""
    py, repo = _claims(d)
    good, bad = _shells(d, bad={"CLASS_WEIGHT": "balanced"}, bad_in="kubeflow",
                        venv=_venv_of(py))
    argv = (py, "cv.py")
    return _incident(class_weight_from_component_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "CLASS_WEIGHT"))


def c_from_other_dataset_metric(d: Path) -> Incident:
    """The DGX run passes ``--C 0.002``, the regularisation tuned for the (much larger) parts
    dataset, pasted from that project's README. Both runs finish; the cross-validated AUC and
    F1 move. Kind: metric."""
    py, repo = _claims(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "cv.py")
    return _incident(c_from_other_dataset_metric, Launch(argv, good, repo),
                     Launch((*argv, "--C", "0.002"), bad, repo), ("command", "--C"))


def claims_cv_noise(d: Path) -> Incident:
    """The warranty-claim cross-validation, the same code and options, from the Kubeflow step
    and from the screen session. Nothing planted. Kind: noise."""
    py, repo = _claims(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "cv.py")
    return _incident(claims_cv_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- packages


ETAFEAT = {
    "1.3.1": '''
        """The logistics team's geo features (1.3)."""
        import math

        def haversine_km(a, b):
            (la1, lo1), (la2, lo2) = [(math.radians(p[0]), math.radians(p[1])) for p in (a, b)]
            h = (math.sin((la2 - la1) / 2) ** 2
                 + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2)
            return 2 * 6371.0 * math.asin(math.sqrt(h))
        ''',
    "1.4.0": '''
        """The logistics team's geo features (1.4: bearings)."""
        import math

        def haversine_km(a, b):
            (la1, lo1), (la2, lo2) = [(math.radians(p[0]), math.radians(p[1])) for p in (a, b)]
            h = (math.sin((la2 - la1) / 2) ** 2
                 + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2)
            return 2 * 6371.0 * math.asin(math.sqrt(h))

        def bearing_deg(a, b):
            (la1, lo1), (la2, lo2) = [(math.radians(p[0]), math.radians(p[1])) for p in (a, b)]
            x = math.sin(lo2 - lo1) * math.cos(la2)
            y = math.cos(la1) * math.sin(la2) - math.sin(la1) * math.cos(la2) * math.cos(lo2 - lo1)
            return (math.degrees(math.atan2(x, y)) + 360) % 360
        ''',
}

LEGS = """
    \"\"\"Build the route-leg features (distance and bearing) for the ETA model from the day's
    stops.\"\"\"
    import csv

    from etafeat import bearing_deg, haversine_km


    def main():
        rows = list(csv.DictReader(open("data/stops.csv")))
        km, north = 0.0, 0
        for a, b in zip(rows, rows[1:]):
            pa, pb = (float(a["lat"]), float(a["lon"])), (float(b["lat"]), float(b["lon"]))
            km += haversine_km(pa, pb)
            north += bearing_deg(pa, pb) < 90 or bearing_deg(pa, pb) > 270
        print(f"legs={len(rows) - 1} route_km={km:.3f} northbound={north}")


    if __name__ == "__main__":
        main()
    """


def _stops() -> str:
    rows = [f"s{i},{52.30 + ((i * 17) % 40) / 400:.5f},{4.80 + ((i * 29) % 50) / 500:.5f}"
            for i in range(120)]
    return "\n".join(["stop,lat,lon", *rows]) + "\n"


def etafeat_behind_in_dgx_venv(d: Path) -> Incident:
    """The leg features import ``bearing_deg`` from the team's ``etafeat``, added in 1.4.0; the
    pipeline image pins 1.4.0, but the DGX user's project venv was built months ago and still
    has 1.3.1 (ImportError: cannot import name 'bearing_deg' from 'etafeat'). Kind: fail."""
    repo = _repo(d / "route-legs", {"legs.py": LEGS, "data/stops.csv": _stops()})
    kfp_py = _venv(d / "venvs" / "image-venv", {"etafeat": ("1.4.0", ETAFEAT["1.4.0"])})
    dgx_py = _venv(d / "venvs" / "priya-venv", {"etafeat": ("1.3.1", ETAFEAT["1.3.1"])})
    good, bad = _shells(d)
    good = {**good, "PATH": f"{kfp_py.parent}:{good['PATH']}"}
    bad = {**bad, "VIRTUAL_ENV": str(dgx_py.parent.parent),
           "PATH": f"{dgx_py.parent}:{bad['PATH']}"}
    argv = ("python", "legs.py")
    return _incident(etafeat_behind_in_dgx_venv, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "etafeat"))


# --------------------------------------------------------------------------- configs


SLA_REPORT = """
    \"\"\"The weekly delivery-SLA report: parse the delivery log's dates with the format in
    configs/report.yaml, then the share of parcels delivered within the promised days.\"\"\"
    import pandas as pd
    import yaml


    def main():
        cfg = yaml.safe_load(open("configs/report.yaml"))
        log = pd.read_csv("data/deliveries.csv")
        for col in ("promised", "delivered"):
            log[col] = pd.to_datetime(log[col], format=cfg["date_format"])
        late = (log["delivered"] - log["promised"]).dt.days > cfg["grace_days"]
        print(f"parcels={len(log)} on_time={1 - late.mean():.4f}")


    if __name__ == "__main__":
        main()
    """


def _deliveries() -> str:
    rows = ["parcel,promised,delivered"]
    for i in range(300):
        day = 1 + i % 27
        rows.append(f"p{i},2026-11-{day:02d},2026-11-{min(30, day + (i * 7) % 4):02d}")
    return "\n".join(rows) + "\n"


def date_format_uncommitted(d: Path) -> Incident:
    """Between the runs configs/report.yaml (in git) got ``date_format: "%d/%m/%Y"``, not
    committed, for the carrier's European export; the delivery log still has ISO dates and
    pandas refuses (ValueError: time data "2026-11-01" doesn't match format "%d/%m/%Y").
    Kind: fail."""
    py = python_with("pandas", "yaml")
    repo = _repo(d / "sla-report", {"report.py": SLA_REPORT, "data/deliveries.csv": _deliveries(),
                                    "configs/report.yaml":
                                        'date_format: "%Y-%m-%d"\ngrace_days: 1\n'})

    def edited() -> None:
        cfg = repo / "configs" / "report.yaml"
        cfg.write_text(cfg.read_text().replace("%Y-%m-%d", "%d/%m/%Y"))

    good, bad = _shells(d, bad_in="kubeflow", venv=_venv_of(py))
    argv = (py, "report.py")
    return _incident(date_format_uncommitted, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("git", "sla-report: configs/report.yaml"), between=edited)


PARCEL_EVAL = """
    \"\"\"Evaluate the parcel-damage classifier on the inspection sample; settings are
    configs/eval.yaml merged with the git-ignored eval.local.yaml (OmegaConf), --min-accuracy
    refuses a model below that accuracy.\"\"\"
    import argparse
    import os

    import torch
    from omegaconf import OmegaConf
    from torch.utils.data import DataLoader, TensorDataset


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--min-accuracy", type=float, default=None)
        a = p.parse_args()
        cfg = OmegaConf.load("configs/eval.yaml")
        if os.path.exists("eval.local.yaml"):
            cfg = OmegaConf.merge(cfg, OmegaConf.load("eval.local.yaml"))
        g = torch.Generator().manual_seed(9)
        x = torch.randn(640, 20, generator=g)
        y = (x[:, :3].sum(1) > 0).long()
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.ReLU(),
                                  torch.nn.Linear(16, 2)).eval()
        loader = DataLoader(TensorDataset(x, y), batch_size=cfg.batch_size,
                            num_workers=cfg.num_workers)
        right = 0
        with torch.no_grad():
            for bx, by in loader:
                right += (net(bx).argmax(1) == by).sum().item()
        acc = right / len(x)
        print(f"inspected={len(x)} accuracy={acc:.4f}")
        if a.min_accuracy is not None and acc < a.min_accuracy:
            raise SystemExit(f"accuracy {acc:.4f} is below --min-accuracy {a.min_accuracy}: "
                             "not releasing the model")


    if __name__ == "__main__":
        main()
    """


def local_batch_size_zero_both_fail(d: Path) -> Incident:
    """Both fail. Both runs ask for ``--min-accuracy 0.9``, which this untrained model never
    reaches: the Kubeflow run evaluates and refuses to release. Between the runs the
    git-ignored eval.local.yaml on the DGX box got ``batch_size: 0`` (meant as "the whole set
    at once"); the DataLoader refuses (ValueError: batch_size should be a positive integer
    value, but got batch_size=0). Kind: both-fail."""
    py = python_with("torch", "omegaconf")
    repo = _repo(d / "parcel-damage", {"eval.py": PARCEL_EVAL,
                                       "configs/eval.yaml": "batch_size: 64\nnum_workers: 0\n"},
                 "__pycache__/\neval.local.yaml\n")
    local = repo / "eval.local.yaml"
    local.write_text("num_workers: 0\n")

    def edited() -> None:
        local.write_text("num_workers: 0\nbatch_size: 0\n")

    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "eval.py", "--min-accuracy", "0.9")
    return _incident(local_batch_size_zero_both_fail, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {local.resolve()}"),
                     between=edited)


#: The seventeenth fresh batch, in the order it was written. Never tuned on.
FRESH17 = [
    early_stop_vote_band_uncommitted_job, grad_accum_from_dgx_script_metric_job,
    val_fraction_zero_both_fail_job, eta_ddp_noise_job, master_port_from_service_link,
    fp32_precision_old_word, problem_type_multilabel_reexport, rope_theta_long_context_metric,
    notes_ppl_noise, folds_one_quick_run, class_weight_from_component_metric,
    c_from_other_dataset_metric, claims_cv_noise, etafeat_behind_in_dgx_venv,
    date_format_uncommitted, local_batch_size_zero_both_fail,
]

if __name__ == "__main__":  # build one incident and print its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH17 if b.__name__ in sys.argv[1:]] or FRESH17
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh17-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
