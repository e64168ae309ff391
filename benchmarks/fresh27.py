"""A twenty-seventh fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh26.py, for their format), how they are run and scored
(benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot reference
(docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job captures
one snapshot per rank. They form the corpus's ``fresh27`` half; report it, never change the
ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a keyword-spotting network (1-D
  convolutions over filterbank frames) trained with DDP: the dev container's
  ``GLOO_SOCKET_IFNAME=en0`` copied from the Mac (fail), ``--label-smoothing 0.2`` in the dev
  container's launch.json (metric), an uncommitted auxiliary head DDP never sees a gradient for,
  on top of a quality gate the good job already misses (both fail), and the same job from both
  shells (noise);
- c10d and an engine on the CPU: ``TORCH_DISTRIBUTED_DEBUG=VERBOSE`` in the PyTorchJob's pod
  template, refused when the process group starts (fail), and a decoding engine's
  ``KV_CACHE_DTYPE=float8_e4m3fn`` from the GPU serving template, whose attention softmax the
  CPU has no kernel for, the error quoting the dtype (fail);
- a BERT intent classifier folder under transformers: ``max_position_embeddings`` edited to 64
  (fail), ``hidden_act`` edited to ``relu`` (metric), and its evaluation from both shells
  (noise);
- the rest: a team package ``sensorcal`` 2.0 (``calibrate`` lost its ``gain`` keyword) in the
  pod's image (fail), ``--dropout 1.5`` in the pod's args (fail), LightGBM downtime
  classifiers: an uncommitted ``objective: multiclass`` without ``num_class`` in the git-tracked
  configs/params.yaml (fail), ``num_leaves: 4`` in the git-ignored configs/local.yaml (metric),
  an uncommitted feature dropped in fit.py (metric), an uncommitted ``boosting: goss`` beside
  bagging on top of a missed gate (both fail) and the same fit from both shells (noise).

The shells are :func:`kueue_or_devcontainer_shell`: shell 0 a Kubeflow training-operator
PyTorchJob's master pod admitted by Kueue (``KUBERNETES_*``, the namespace's service variables,
the operator's ``MASTER_ADDR``/``MASTER_PORT``/``WORLD_SIZE``/``RANK``/``PET_*``, the pod
template's ``NCCL_*``/``OMP_*``/``TORCH_*``/``HF_*`` and the image's ``CUDA_*``/``NVIDIA_*``,
root in /workspace), shell 1 bash in a VS Code Dev Container on Docker Desktop for Mac (a Linux
container: ``REMOTE_CONTAINERS*``, ``VSCODE_*``, ``TERM_PROGRAM``, the forwarded SSH agent,
user ``vscode``, devcontainer.json's ``containerEnv``). The thread counts that change float
reductions are pinned alike. The planted side is either: some incidents work in the pod and fail
in the dev container, others the reverse.

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

POD = "kws-train-h7q2m-master-0"
VSCODE_COMMIT = "fabdb6a30b49f79a7aba0f2ad9df9b399473380f"


def kueue_or_devcontainer_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 the master pod
    of a Kubeflow PyTorchJob admitted by Kueue, 1 bash in a VS Code Dev Container on Docker
    Desktop for Mac (``venv`` the interpreter's virtual environment, first on ``PATH``); each
    with its own tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    if n % 2 == 0:  # the PyTorchJob's master pod: the container's entrypoint shell, as root
        env = {
            **common, "PATH": f"/usr/local/nvidia/bin:/usr/local/cuda/bin:{path}",
            "HOSTNAME": POD, "LANG": "C.UTF-8", "PWD": "/workspace", "PYTHONUNBUFFERED": "1",
            "KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
            "KUBERNETES_SERVICE_PORT_HTTPS": "443", "KUBERNETES_PORT": "tcp://10.96.0.1:443",
            "KUBERNETES_PORT_443_TCP": "tcp://10.96.0.1:443",
            "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1", "KUBERNETES_PORT_443_TCP_PORT": "443",
            "KUBERNETES_PORT_443_TCP_PROTO": "tcp",
            "KWS_TRAIN_H7Q2M_MASTER_0_PORT": "tcp://10.104.33.9:23456",
            "KWS_TRAIN_H7Q2M_MASTER_0_SERVICE_HOST": "10.104.33.9",
            "KWS_TRAIN_H7Q2M_MASTER_0_SERVICE_PORT": "23456",
            # the training operator's variables for a one-replica master
            "MASTER_ADDR": POD, "MASTER_PORT": "23456", "WORLD_SIZE": "1", "RANK": "0",
            "PET_NNODES": "1", "PET_NODE_RANK": "0", "PET_NPROC_PER_NODE": "2",
            "PET_MASTER_ADDR": POD, "PET_MASTER_PORT": "23456",
            # the image (nvcr.io/nvidia/pytorch) and the node's device plugin
            "CUDA_VERSION": "12.6.3.004", "CUDA_DRIVER_VERSION": "560.35.05",
            "NVIDIA_VISIBLE_DEVICES": "GPU-7c3a9e51-0d4b-1f26", "NCCL_VERSION": "2.23.4",
            "NVIDIA_DRIVER_CAPABILITIES": "compute,utility,video", "NVIDIA_PRODUCT_NAME": "PyTorch",
            "PYTORCH_BUILD_VERSION": "2.6.0a0+df5bbc09d1", "CUDNN_VERSION": "9.6.0.74",
            # the pod template's env (kubeflow/kws/pytorchjob.yaml)
            "NCCL_DEBUG": "WARN", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_DISABLE": "0",
            "NCCL_IB_GID_INDEX": "3", "NCCL_CROSS_NIC": "1", "NCCL_ASYNC_ERROR_HANDLING": "1",
            "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "600", "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000",
            "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "HF_HOME": "/mnt/hf-cache",
            "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
            "TORCH_HOME": "/mnt/torch-cache", "OMP_WAIT_POLICY": "PASSIVE",
        }
        if venv:  # the image's venv, first on PATH through the Dockerfile's ENV
            env["VIRTUAL_ENV"] = venv
            env["PATH"] = f"{venv}/bin:{env['PATH']}"
        return env
    server = f"/home/vscode/.vscode-server/bin/{VSCODE_COMMIT}"
    env = {  # bash in the VS Code integrated terminal of a dev container on Docker Desktop (Mac)
        **common, "PATH": f"{server}/bin/remote-cli:/usr/local/bin:/usr/bin:{path}",
        "USER": "vscode", "SHELL": "/bin/bash", "HOSTNAME": "3f9c2a7d81be", "LANG": "en_US.UTF-8",
        "TERM": "xterm-256color", "COLORTERM": "truecolor", "TERM_PROGRAM": "vscode",
        "TERM_PROGRAM_VERSION": "1.96.4", "SHLVL": "2", "PWD": "/workspaces/kws",
        "REMOTE_CONTAINERS": "true",
        "REMOTE_CONTAINERS_IPC": "/tmp/vscode-remote-containers-ipc-8d1f0c2e.sock",
        "REMOTE_CONTAINERS_SOCKETS": '["/tmp/vscode-ssh-auth-8d1f0c2e.sock",'
                                     '"/tmp/.X11-unix/X0"]',
        "REMOTE_CONTAINERS_DISPLAY_SOCK": "/tmp/.X11-unix/X0", "DISPLAY": ":0",
        "SSH_AUTH_SOCK": "/tmp/vscode-ssh-auth-8d1f0c2e.sock",
        "VSCODE_IPC_HOOK_CLI": "/tmp/vscode-ipc-5b7e2c11-4a0d.sock",
        "VSCODE_GIT_IPC_HANDLE": "/tmp/vscode-git-91c4d0a2e7.sock",
        "VSCODE_GIT_ASKPASS_NODE": f"{server}/node",
        "VSCODE_GIT_ASKPASS_MAIN": f"{server}/extensions/git/dist/askpass-main.js",
        "GIT_ASKPASS": f"{server}/extensions/git/dist/askpass.sh",
        "BROWSER": f"{server}/bin/helpers/browser.sh",
        "VSCODE_GIT_ASKPASS_EXTRA_ARGS": "", "VSCODE_INJECTION": "1",
        "PROMPT_COMMAND": "__vsc_prompt_cmd_original", "HISTFILE": "/commandhistory/.bash_history",
        # devcontainer.json's containerEnv, carried over from the Mac workflow
        "PYTORCH_ENABLE_MPS_FALLBACK": "1", "TOKENIZERS_PARALLELISM": "false",
        "HF_HOME": "/workspaces/.hf", "HF_HUB_ENABLE_HF_TRANSFER": "0",
        "NCCL_DEBUG": "INFO", "NCCL_P2P_DISABLE": "1", "TORCH_SHOW_CPP_STACKTRACES": "1",
        "CUDA_LAUNCH_BLOCKING": "1", "OMP_PROC_BIND": "false", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    if venv:  # python.defaultInterpreterPath's venv, activated by the Python extension
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "devc", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the dev container (``bad_in="devc"``) or from the Kubeflow pod (``"pod"``)."""
    pod = kueue_or_devcontainer_shell(0, d / "home" / "root-pod", venv)
    devc = kueue_or_devcontainer_shell(1, d / "home" / "vscode", venv)
    first, second = (pod, devc) if bad_in == "devc" else (devc, pod)
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


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    if old not in text:
        raise Unavailable(f"{path.name} has no {old!r} to edit")
    path.write_text(text.replace(old, new))


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


KWS_DDP = """
    \"\"\"Train the keyword spotter with DDP over gloo: each clip is 40 frames of 16 filterbank
    channels, two 1-D convolutions and a linear layer over 4 keywords. Sizes come from
    configs/train.yaml. Rank 0 prints each epoch's loss and the validation accuracy; --min-acc
    refuses a model below it.\"\"\"
    import argparse

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


    class Spotter(torch.nn.Module):
        def __init__(self, channels, words):
            super().__init__()
            self.conv1 = torch.nn.Conv1d(16, channels, 5, padding=2)
            self.conv2 = torch.nn.Conv1d(channels, channels, 3, padding=1)
            self.out = torch.nn.Linear(channels, words)

        def forward(self, x):
            h = torch.relu(self.conv1(x.transpose(1, 2)))
            h = torch.relu(self.conv2(h))
            return self.out(h.mean(2))


    def clips(n=800, seed=3):
        g = torch.Generator().manual_seed(seed)
        y = torch.randint(0, 4, (n,), generator=g)
        x = 0.8 * torch.randn(n, 40, 16, generator=g)
        for w in range(4):
            x[y == w, 10 + 5 * w:18 + 5 * w, 3 * w:3 * w + 4] += 1.1
        return x, y


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--label-smoothing", type=float, default=0.0)
        p.add_argument("--min-acc", type=float, default=None)
        a = p.parse_args()
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        cfg = yaml.safe_load(open("configs/train.yaml"))
        x, y = clips()
        train = TensorDataset(x[:600], y[:600])
        sampler = DistributedSampler(train, num_replicas=world, rank=rank, seed=cfg["seed"])
        loader = DataLoader(train, batch_size=cfg["batch_size"] // world, sampler=sampler)
        torch.manual_seed(cfg["seed"])
        net = Spotter(cfg["channels"], 4)
        model = DDP(net)
        opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9)
        for epoch in range(cfg["epochs"]):
            sampler.set_epoch(epoch)
            total, steps = 0.0, 0
            for xb, yb in loader:
                loss = F.cross_entropy(model(xb), yb, label_smoothing=a.label_smoothing)
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
            acc = (net(x[600:]).argmax(1) == y[600:]).float().mean().item()
        if rank == 0:
            print(f"val_acc={acc:.4f}")
            if a.min_acc is not None and acc < a.min_acc:
                raise RuntimeError(f"val_acc={acc:.4f} is below --min-acc {a.min_acc}: "
                                   "the device firmware keeps the current model")
        dist.barrier()
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

KWS_YAML = "# wake words: hey-kiln, stop, next, repeat\nchannels: 24\nlr: 0.05\n" \
           "batch_size: 32\nepochs: 3\nseed: 9\n"


def _kws_job(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    return py, _repo(d / "kws-ddp", {"train.py": KWS_DDP, "configs/train.yaml": KWS_YAML})


def gloo_ifname_en0_from_mac_job(d: Path) -> Incident:
    """Job against job. The dev container's devcontainer.json carries ``GLOO_SOCKET_IFNAME=en0``
    over from the Mac, where en0 is the Wi-Fi; a Linux container has no en0 and every rank's
    gloo group refuses it (RuntimeError: ... Unable to find address for: en0). The pod has no
    such setting. Kind: fail."""
    py, repo = _kws_job(d)
    good, bad = _shells(d, bad={"GLOO_SOCKET_IFNAME": "en0"}, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(gloo_ifname_en0_from_mac_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "GLOO_SOCKET_IFNAME"))


def label_smoothing_launch_json_metric_job(d: Path) -> Incident:
    """Job against job. The dev container's run comes from .vscode/launch.json's ``args``, which
    still pass ``--label-smoothing 0.2`` from an experiment; both jobs train, the losses and
    the accuracy move. Kind: metric."""
    py, repo = _kws_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(label_smoothing_launch_json_metric_job, Launch(argv, good, repo),
                     Launch((*argv, "--label-smoothing", "0.2"), bad, repo),
                     ("command", "--label-smoothing"))


def unused_aux_head_uncommitted_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--min-acc 0.999``, which this model never
    reaches: the good job trains and rank 0 keeps the current model. Between the jobs train.py
    (in git) got an auxiliary speaker head in ``Spotter.__init__``, not committed, that forward
    never uses; DDP waits for its gradients and the second step refuses (RuntimeError: Expected
    to have finished reduction in the prior iteration before starting a new one). Kind:
    both-fail."""
    py, repo = _kws_job(d)
    good, bad = _shells(d, bad_in="pod", venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--min-acc", "0.999")
    return _incident(unused_aux_head_uncommitted_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "kws-ddp: train.py"),
                     between=lambda: _edit(
                         repo / "train.py", "self.out = torch.nn.Linear(channels, words)",
                         "self.out = torch.nn.Linear(channels, words)\n"
                         "        self.speaker = torch.nn.Linear(channels, 8)"))


def kws_ddp_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the dev container and from the
    Kubeflow pod: each job its own rendezvous and rank processes, the shells their own
    KUBERNETES_*, PET_*, REMOTE_CONTAINERS*, VSCODE_*, NCCL_*, CUDA_* and HF_* variables.
    Nothing planted. Kind: noise."""
    py, repo = _kws_job(d)
    good, bad = _shells(d, bad_in="pod", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(kws_ddp_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- c10d and engines


GRAD_CHECK = """
    \"\"\"Check the bucketed gradient all-reduce on one process: a gloo group over tcp://, the
    model's gradients flattened into buckets of BUCKET_MB and averaged, their norm printed.\"\"\"
    import socket

    import torch
    import torch.distributed as dist


    def main():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0,
                                world_size=1)
        torch.manual_seed(6)
        net = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.Tanh(),
                                  torch.nn.Linear(128, 10))
        net(torch.randn(32, 64)).pow(2).mean().backward()
        flat = torch.cat([p.grad.flatten() for p in net.parameters()])
        dist.all_reduce(flat)
        flat /= dist.get_world_size()
        print(f"grad_numel={flat.numel()} grad_norm={flat.norm().item():.5f}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """


def distributed_debug_verbose_in_pod_template(d: Path) -> Incident:
    """The PyTorchJob's pod template sets ``TORCH_DISTRIBUTED_DEBUG=VERBOSE`` (someone meant
    DETAIL); c10d reads it when the process group starts and refuses (ValueError: The value of
    TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL.). The dev container leaves it unset.
    Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "grad-bucket-check", {"grad_check.py": GRAD_CHECK})
    good, bad = _shells(d, bad={"TORCH_DISTRIBUTED_DEBUG": "VERBOSE"}, bad_in="pod",
                        venv=_venv_of(py))
    argv = (py, "grad_check.py")
    return _incident(distributed_debug_verbose_in_pod_template, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "TORCH_DISTRIBUTED_DEBUG"))


ENGINE = """
    \"\"\"Smoke test of the command-decoding engine: a tiny attention decoder that keeps its keys
    and values in a cache of KV_CACHE_DTYPE (default float32) and decodes 32 steps.\"\"\"
    import os

    import torch


    def main():
        torch.set_num_threads(2)
        dtype = getattr(torch, os.environ.get("KV_CACHE_DTYPE", "float32"))
        torch.manual_seed(12)
        emb, qkv = torch.nn.Embedding(64, 32), torch.nn.Linear(32, 96)
        out = torch.nn.Linear(32, 64)
        keys = torch.zeros(32, 32, dtype=dtype)
        values = torch.zeros(32, 32, dtype=dtype)
        tok, text = torch.tensor([1]), []
        with torch.no_grad():
            for step in range(32):
                q, k, v = qkv(emb(tok)).split(32, dim=1)
                keys[step], values[step] = k[0].to(dtype), v[0].to(dtype)
                scores = q.to(dtype) @ keys[:step + 1].T
                weights = torch.softmax(scores, dim=-1)
                ctx = (weights.float() @ values[:step + 1].float())
                tok = out(ctx).argmax(1)
                text.append(int(tok))
        print(f"cache_dtype={str(dtype).split('.')[-1]} tokens={len(text)} checksum={sum(text)}")


    if __name__ == "__main__":
        main()
    """


def kv_cache_fp8_from_serving_template(d: Path) -> Incident:
    """The pod template, copied from the team's H100 serving deployment, exports
    ``KV_CACHE_DTYPE=float8_e4m3fn``; the engine's smoke test keeps its cache in that dtype and
    the CPU has no softmax for it (NotImplementedError: "softmax_lastdim_kernel_impl" not
    implemented for 'Float8_e4m3fn'). The dev container uses the default float32. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "cmd-decoder", {"engine_smoke.py": ENGINE})
    good, bad = _shells(d, bad={"KV_CACHE_DTYPE": "float8_e4m3fn"}, bad_in="pod",
                        venv=_venv_of(py))
    argv = (py, "engine_smoke.py")
    return _incident(kv_cache_fp8_from_serving_template, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "KV_CACHE_DTYPE"))


# --------------------------------------------------------------------------- a BERT folder


MAKE_BERT = """
import sys
import torch
from transformers import BertConfig, BertForSequenceClassification
cfg = BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=64, max_position_embeddings=128, num_labels=3,
                 initializer_range=0.3)
torch.manual_seed(21)
BertForSequenceClassification(cfg).save_pretrained(sys.argv[1])
"""

INTENT_EVAL = """
    \"\"\"Score the shop-floor intent classifier (--model-path) on data/commands.tsv: ASCII
    bytes as ids, padded to 96, three intents. Prints the mean loss and the accuracy.\"\"\"
    import argparse

    import torch
    from transformers import BertForSequenceClassification


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        torch.set_num_threads(2)
        model = BertForSequenceClassification.from_pretrained(a.model_path).eval()
        rows = [line.rstrip("\\n").split("\\t") for line in open("data/commands.tsv")]
        ids = torch.zeros(len(rows), 96, dtype=torch.long)
        mask = torch.zeros(len(rows), 96, dtype=torch.long)
        for i, (text, _) in enumerate(rows):
            raw = [min(b, 127) for b in text.encode()[:96]]
            ids[i, :len(raw)] = torch.tensor(raw)
            mask[i, :len(raw)] = 1
        labels = torch.tensor([int(label) for _, label in rows])
        with torch.no_grad():
            res = model(input_ids=ids, attention_mask=mask, labels=labels)
        acc = (res.logits.argmax(1) == labels).float().mean().item()
        print(f"commands={len(rows)} loss={res.loss.item():.5f} accuracy={acc:.4f}")


    if __name__ == "__main__":
        main()
    """


def _commands() -> str:
    verbs = [("start the kiln on line", 0), ("stop conveyor belt number", 1),
             ("report the temperature of zone", 2)]
    pick = random.Random(27)
    rows = []
    for i in range(60):
        text, label = verbs[i % 3]
        rows.append(f"{text} {pick.randint(1, 40)} please, shift {'ABC'[i % 3]}\t{label}")
    return "\n".join(rows) + "\n"


def _bert(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers")
    repo = _repo(d / "intent-eval", {"evaluate.py": INTENT_EVAL, "data/commands.tsv": _commands()})
    model = d / "models" / "intent-bert"
    _build(py, MAKE_BERT, str(model))
    return py, repo, model


def _set_field(model: Path, field: str, value: object) -> None:
    cfg = json.loads((model / "config.json").read_text())
    cfg[field] = value
    (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def max_positions_edited_in_model_folder(d: Path) -> Incident:
    """Between the runs the model folder's config.json (outside git) got
    ``"max_position_embeddings": 64`` (copied from the distilled student's folder); the saved
    position embeddings hold 128 rows; transformers' load report marks
    bert.embeddings.position_embeddings.weight MISMATCH (ckpt torch.Size([128, 32])) and refuses
    (RuntimeError: You set `ignore_mismatched_sizes` to `False`, thus raising an error). Kind:
    fail."""
    py, repo, model = _bert(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(max_positions_edited_in_model_folder, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: max_position_embeddings"),
                     between=lambda: _set_field(model, "max_position_embeddings", 64))


def hidden_act_relu_metric(d: Path) -> Incident:
    """Between the runs the model folder's config.json got ``"hidden_act": "relu"`` (tried
    for a faster export); every weight still loads, the feed-forward layers compute another
    function and the loss moves. Kind: metric."""
    py, repo, model = _bert(d)
    good, bad = _shells(d, bad_in="pod", venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(hidden_act_relu_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: hidden_act"),
                     between=lambda: _set_field(model, "hidden_act", "relu"))


def intent_bert_noise(d: Path) -> Incident:
    """The intent classifier's evaluation, the same model folder, code and data, from the
    Kubeflow pod and from the dev container. Nothing planted. Kind: noise."""
    py, repo, model = _bert(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(intent_bert_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- a team package


SENSORCAL = {
    "1.4.2": '''
        """Microphone calibration (1.4): scale raw levels by a gain and an offset in dB."""


        def calibrate(levels, gain=1.0, offset_db=0.0):
            return [gain * v + offset_db for v in levels]
        ''',
    "2.0.0": '''
        """Microphone calibration (2.0): a Calibration profile replaces gain/offset keywords."""
        from dataclasses import dataclass


        @dataclass(frozen=True)
        class Calibration:
            gain: float = 1.0
            offset_db: float = 0.0


        def calibrate(levels, profile=Calibration()):
            return [profile.gain * v + profile.offset_db for v in levels]
        ''',
}

LEVELS = """
    \"\"\"Calibrated noise floor per microphone from data/levels.csv (mic, gain, raw dB).\"\"\"
    import csv
    from collections import defaultdict

    from sensorcal import calibrate


    def main():
        raw, gains = defaultdict(list), {}
        for row in csv.DictReader(open("data/levels.csv")):
            raw[row["mic"]].append(float(row["raw_db"]))
            gains[row["mic"]] = float(row["gain"])
        for mic in sorted(raw):
            cal = calibrate(raw[mic], gain=gains[mic], offset_db=-3.0)
            print(f"floor_{mic}={min(cal):.3f}")


    if __name__ == "__main__":
        main()
    """


def _levels() -> str:
    pick = random.Random(7)
    rows = [f"m{i % 4},{1 + (i % 4) / 10:.1f},{pick.uniform(28, 61):.2f}" for i in range(80)]
    return "\n".join(["mic,gain,raw_db", *rows]) + "\n"


def sensorcal_major_in_pod_image(d: Path) -> Incident:
    """The noise-floor report calls ``calibrate(levels, gain=..., offset_db=...)``. The pod's
    image, rebuilt from the unpinned requirements, got sensorcal 2.0.0, whose ``calibrate`` takes
    a profile (TypeError: calibrate() got an unexpected keyword argument 'gain'); the dev
    container's venv has 1.4.2. Kind: fail."""
    repo = _repo(d / "mic-floor", {"floor_report.py": LEVELS, "data/levels.csv": _levels()})
    envs = {}
    for side, version in (("devc", "1.4.2"), ("pod", "2.0.0")):
        py = _venv(d / "venvs" / side, {"sensorcal": (version, SENSORCAL[version]),
                                        "soundfile": ("0.12.1", None)})
        envs[side] = str(py.parent.parent)
    good, bad = _shells(d, bad_in="pod")
    good = {**good, "VIRTUAL_ENV": envs["devc"], "PATH": f"{envs['devc']}/bin:{good['PATH']}"}
    bad = {**bad, "VIRTUAL_ENV": envs["pod"], "PATH": f"{envs['pod']}/bin:{bad['PATH']}"}
    argv = ("python", "floor_report.py")
    return _incident(sensorcal_major_in_pod_image, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "sensorcal"))


# --------------------------------------------------------------------------- a torch trainer


AUTOENCODER = """
    \"\"\"Train the vibration autoencoder on healthy spindle spectra and report the
    reconstruction error on healthy and worn spindles (--dropout in the bottleneck).\"\"\"
    import argparse

    import torch


    def spectra(n, worn, seed):
        g = torch.Generator().manual_seed(seed)
        base = torch.linspace(0, 3, 48).sin().abs()
        x = base + 0.1 * torch.randn(n, 48, generator=g)
        if worn:
            x[:, 30:36] += 0.6
        return x


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--dropout", type=float, default=0.1)
        p.add_argument("--epochs", type=int, default=40)
        a = p.parse_args()
        torch.set_num_threads(2)
        torch.manual_seed(4)
        net = torch.nn.Sequential(torch.nn.Linear(48, 12), torch.nn.ReLU(),
                                  torch.nn.Dropout(a.dropout), torch.nn.Linear(12, 48))
        opt = torch.optim.Adam(net.parameters(), lr=0.01)
        healthy = spectra(256, False, 1)
        for _ in range(a.epochs):
            loss = (net(healthy) - healthy).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            ok = (net(spectra(64, False, 2)) - spectra(64, False, 2)).pow(2).mean().item()
            worn = (net(spectra(64, True, 3)) - spectra(64, True, 3)).pow(2).mean().item()
        print(f"train_loss={loss.item():.5f} healthy_mse={ok:.5f} worn_mse={worn:.5f}")


    if __name__ == "__main__":
        main()
    """


def dropout_typo_in_pytorchjob_args(d: Path) -> Incident:
    """The PyTorchJob's container args pass ``--dropout 1.5`` (0.15 meant); torch refuses the
    layer (ValueError: dropout probability has to be between 0 and 1, but got 1.5). The dev
    container's run uses the default. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "spindle-ae", {"train_ae.py": AUTOENCODER})
    good, bad = _shells(d, bad_in="pod", venv=_venv_of(py))
    argv = (py, "train_ae.py")
    return _incident(dropout_typo_in_pytorchjob_args, Launch(argv, good, repo),
                     Launch((*argv, "--dropout", "1.5"), bad, repo), ("command", "--dropout"))


# --------------------------------------------------------------------------- LightGBM


DOWNTIME = """
    \"\"\"Predict unplanned downtime in the next shift from machine telemetry: LightGBM with the
    git-tracked configs/params.yaml, overridden by the git-ignored configs/local.yaml when
    present. --min-auc refuses to publish a weaker model.\"\"\"
    import argparse
    import csv
    import os

    import lightgbm as lgb
    import numpy as np
    import yaml
    from sklearn.metrics import roc_auc_score

    FEATURES = ["temp_max", "vib_rms", "current_std", "hours_since_service", "cycles"]


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--min-auc", type=float, default=None)
        a = p.parse_args()
        params = yaml.safe_load(open("configs/params.yaml"))
        if os.path.exists("configs/local.yaml"):
            params.update(yaml.safe_load(open("configs/local.yaml")) or {})
        rounds = params.pop("rounds")
        rows = list(csv.DictReader(open("data/telemetry.csv")))
        x = np.array([[float(r[f]) for f in FEATURES] for r in rows])
        y = np.array([int(r["down"]) for r in rows])
        train = lgb.Dataset(x[:500], y[:500])
        booster = lgb.train({**params, "verbose": -1, "num_threads": 2, "seed": 1}, train,
                            num_boost_round=rounds)
        auc = roc_auc_score(y[500:], booster.predict(x[500:]))
        print(f"auc={auc:.4f} trees={booster.num_trees()}")
        if a.min_auc is not None and auc < a.min_auc:
            raise SystemExit(f"auc={auc:.4f} is below --min-auc {a.min_auc}: not publishing")


    if __name__ == "__main__":
        main()
    """

PARAMS_YAML = """
    # downtime model, press shop 2
    objective: binary
    boosting: gbdt
    learning_rate: 0.08
    num_leaves: 31
    min_data_in_leaf: 10
    bagging_fraction: 0.8
    bagging_freq: 1
    rounds: 60
    """


def _telemetry() -> str:
    pick = random.Random(41)
    rows = []
    for _ in range(700):
        temp, vib = pick.gauss(70, 8), pick.gauss(2.0, 0.6)
        cur, hours, cycles = pick.gauss(1.5, 0.4), pick.uniform(0, 900), pick.randint(100, 5000)
        risk = 0.05 * (temp - 70) + 1.2 * (vib - 2.0) + 0.002 * (hours - 450) + pick.gauss(0, 0.6)
        rows.append(f"{temp:.2f},{vib:.3f},{cur:.3f},{hours:.0f},{cycles},{int(risk > 0.4)}")
    return "\n".join(["temp_max,vib_rms,current_std,hours_since_service,cycles,down",
                      *rows]) + "\n"


def _downtime(d: Path) -> tuple[str, Path]:
    py = python_with("lightgbm", "sklearn", "yaml", "numpy")
    return py, _repo(d / "press-downtime", {"fit.py": DOWNTIME, "configs/params.yaml": PARAMS_YAML,
                                            "data/telemetry.csv": _telemetry()},
                     "__pycache__/\nconfigs/local.yaml\n")


def multiclass_objective_uncommitted_config(d: Path) -> Incident:
    """Between the runs configs/params.yaml (in git) had ``objective: binary`` edited, not
    committed, to ``multiclass`` (for the planned three-level severity label) without a
    ``num_class``; LightGBM refuses (LightGBMError: Number of classes should be specified and
    greater than 1 for multiclass training). Kind: fail."""
    py, repo = _downtime(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(multiclass_objective_uncommitted_config, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "press-downtime: configs/params.yaml"),
                     between=lambda: _edit(repo / "configs" / "params.yaml",
                                           "objective: binary", "objective: multiclass"))


def num_leaves_in_ignored_local_metric(d: Path) -> Incident:
    """Between the runs the git-ignored configs/local.yaml got ``num_leaves: 4`` (left from a
    quick run on a laptop); every tree is a stump-like four leaves. Both runs fit; the AUC moves.
    Kind: metric."""
    py, repo = _downtime(d)
    local = _write(repo / "configs" / "local.yaml", "# my overrides, not in git\nrounds: 60\n")
    good, bad = _shells(d, bad_in="pod", venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(num_leaves_in_ignored_local_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {local.resolve()}"),
                     between=lambda: _edit(local, "rounds: 60\n", "rounds: 60\nnum_leaves: 4\n"))


def feature_dropped_uncommitted_metric(d: Path) -> Incident:
    """Between the runs fit.py (in git) lost ``"vib_rms"`` from its FEATURES, not committed
    (the vibration sensor was being replaced); both runs fit, the AUC moves. Kind: metric."""
    py, repo = _downtime(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(feature_dropped_uncommitted_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "press-downtime: fit.py"),
                     between=lambda: _edit(repo / "fit.py", '"temp_max", "vib_rms", ',
                                           '"temp_max", '))


def goss_with_bagging_uncommitted_both_fail(d: Path) -> Incident:
    """Both fail. Both runs ask for ``--min-auc 0.999``, which the model never reaches: the good
    run fits and does not publish. Between the runs configs/params.yaml (in git) had ``boosting:
    gbdt`` edited, not committed, to ``goss`` while the bagging settings stayed; LightGBM refuses
    (LightGBMError: Cannot use bagging in GOSS). Kind: both-fail."""
    py, repo = _downtime(d)
    good, bad = _shells(d, bad_in="pod", venv=_venv_of(py))
    argv = (py, "fit.py", "--min-auc", "0.999")
    return _incident(goss_with_bagging_uncommitted_both_fail, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "press-downtime: configs/params.yaml"),
                     between=lambda: _edit(repo / "configs" / "params.yaml",
                                           "boosting: gbdt", "boosting: goss"))


def downtime_fit_noise(d: Path) -> Incident:
    """The downtime model's fit, the same code, config and data, from the Kubeflow pod and from
    the dev container. Nothing planted. Kind: noise."""
    py, repo = _downtime(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(downtime_fit_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


#: The twenty-seventh fresh batch, in the order it was written. Never tuned on.
FRESH27 = [
    gloo_ifname_en0_from_mac_job, label_smoothing_launch_json_metric_job,
    unused_aux_head_uncommitted_both_fail_job, kws_ddp_job_noise,
    distributed_debug_verbose_in_pod_template, kv_cache_fp8_from_serving_template,
    max_positions_edited_in_model_folder, hidden_act_relu_metric, intent_bert_noise,
    sensorcal_major_in_pod_image, dropout_typo_in_pytorchjob_args,
    multiclass_objective_uncommitted_config, num_leaves_in_ignored_local_metric,
    feature_dropped_uncommitted_metric, goss_with_bagging_uncommitted_both_fail,
    downtime_fit_noise,
]

if __name__ == "__main__":  # build one incident and run its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH27 if b.__name__ in sys.argv[1:]] or FRESH27
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh27-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
