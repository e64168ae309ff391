"""A thirtieth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py and benchmarks/fresh28.py, for their format), how they are run and
scored (benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot reference
(docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job captures
one snapshot per rank. They form the corpus's ``fresh30`` half; report it, never change the
ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents from a sleep lab, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a sleep-stage classifier (a 1-D
  convolution over EEG epochs, with an artefact head) trained with DDP: an uncommitted
  ``find_unused_parameters=False`` while the artefact head sits idle (fail), a git-ignored
  train.local.yaml's ``lr`` (metric), ``--resume`` naming a checkpoint that was never written on
  top of a quality gate the good job already misses (both fail), and the same job from both
  shells (noise);
- the c10d store and torch settings on the CPU: a scoring service's ``TCPStore`` whose timeout
  comes from ``STORE_TIMEOUT=90s`` in the Compose file (fail), an artefact detector that turns on
  ``torch.use_deterministic_algorithms`` from ``REPRODUCIBLE=1`` over a ``put_`` (fail) and that
  is given ``--prefetch-factor 4`` without workers (fail);
- a team package ``hypnokit`` a major version apart in the two venvs (fail);
- a tiny BERT model folder under transformers: ``pad_token_id`` edited past the vocabulary
  (fail), ``MAX_SEQ_LEN`` from the Compose service truncating the notes (metric) and the
  evaluation from both shells (noise);
- a LightGBM stager over hand-made features: ``objective: multi_logloss`` in the git-ignored
  params.local.yaml (fail), ``--min-child-samples 60`` (metric), an uncommitted
  ``class_weight="balanced"`` (metric), ``DATA_VERSION=v3`` from the Compose service on top of a
  missed gate (both fail) and the same fit from both shells (noise).

The shells are :func:`compose_or_multipass_shell`: shell 0 ``docker compose run trainer`` (the
image's ``PATH``/``NVIDIA_*``/``CUDA_VERSION``, a container id as host name, ``HOME=/root``-like
home, the compose file's ``environment:`` and ``env_file:`` with ``NCCL_*``, ``OMP_*``,
``TORCH_*``, ``HF_*``), shell 1 a login shell on an Ubuntu Multipass VM (``multipass shell
sleeplab``: ``SSH_*`` from Multipass's own SSH, ``XDG_*``, ``ubuntu`` user, ~/.profile's launch
exports, an empty ``CUDA_VISIBLE_DEVICES``). The thread counts that change float reductions are
pinned alike. The planted side is either: some incidents work in the container and fail in the
VM, others the reverse.

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

CONTAINER = "3f9c2a71b8d4"
VM_HOST = "sleeplab"


def compose_or_multipass_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 ``docker
    compose run trainer`` on the lab's GPU box, 1 a login shell on an Ubuntu Multipass VM
    (``venv`` the interpreter's virtual environment, first on ``PATH``); each with its own
    tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    if n % 2 == 0:  # services.trainer in compose.yaml: image, environment: and env_file: .env
        env = {
            **common, "PATH": f"/usr/local/nvidia/bin:/usr/local/cuda/bin:{path}",
            "HOSTNAME": CONTAINER, "TERM": "xterm", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "DEBIAN_FRONTEND": "noninteractive", "PIP_NO_CACHE_DIR": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1", "NVIDIA_VISIBLE_DEVICES": "all",
            "NVIDIA_DRIVER_CAPABILITIES": "compute,utility", "NVIDIA_REQUIRE_CUDA": "cuda>=12.4",
            "NV_CUDA_LIB_VERSION": "12.4.1-1", "CUDA_VERSION": "12.4.1",
            "NV_LIBNCCL_PACKAGE_VERSION": "2.21.5-1", "NCCL_VERSION": "2.21.5-1",
            "LD_LIBRARY_PATH": "/usr/local/nvidia/lib:/usr/local/nvidia/lib64",
            "CUDA_VISIBLE_DEVICES": "0,1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
            # environment: and env_file: .env of the trainer service
            "NCCL_DEBUG": "INFO", "NCCL_P2P_DISABLE": "0", "NCCL_SHM_DISABLE": "0",
            "NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_DISABLE": "1",
            "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "TORCH_CUDNN_V8_API_ENABLED": "1",
            "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "OMP_PROC_BIND": "close",
            "HF_HOME": "/cache/huggingface", "HF_HUB_DISABLE_TELEMETRY": "1",
            "HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline", "SLEEPLAB_DATA": "/data/psg",
        }
    else:  # `multipass shell sleeplab`: a login bash over Multipass's SSH, ~/.profile sourced
        env = {
            **common, "PATH": f"{home}/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:{path}",
            "USER": "ubuntu", "LOGNAME": "ubuntu", "SHELL": "/bin/bash", "LANG": "C.UTF-8",
            "TERM": "xterm-256color", "HOSTNAME": VM_HOST, "SHLVL": "1", "MOTD_SHOWN": "pam",
            "XDG_SESSION_ID": "7", "XDG_SESSION_TYPE": "tty", "XDG_SESSION_CLASS": "user",
            "XDG_RUNTIME_DIR": "/run/user/1000", "XDG_DATA_DIRS": "/usr/local/share:/usr/share",
            "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus",
            "SSH_CLIENT": "10.91.176.1 52814 22", "SSH_CONNECTION": "10.91.176.1 52814 10.91.176.23 22",
            "SSH_TTY": "/dev/pts/1", "LESSOPEN": "| /usr/bin/lesspipe %s",
            "LESSCLOSE": "/usr/bin/lesspipe %s %s", "LS_COLORS": "rs=0:di=01;34:ln=01;36",
            "OLDPWD": str(home),
            # ~/.profile: what the lab's VM setup notes export
            "CUDA_VISIBLE_DEVICES": "", "NCCL_DEBUG": "WARN", "NCCL_P2P_LEVEL": "LOC",
            "TORCH_SHOW_CPP_STACKTRACES": "1", "TORCH_CPP_LOG_LEVEL": "WARNING",
            "OMP_WAIT_POLICY": "PASSIVE", "HF_HOME": f"{home}/.cache/huggingface",
            "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
            "MPLBACKEND": "Agg", "EDITOR": "nano",
        }
    if venv:  # the image's `ENV VIRTUAL_ENV`, or `source ~/venvs/sleep/bin/activate` in ~/.profile
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "vm", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the Multipass VM (``bad_in="vm"``) or from the Compose service (``"compose"``)."""
    compose = compose_or_multipass_shell(0, d / "home" / "root", venv)
    vm = compose_or_multipass_shell(1, d / "home" / "ubuntu", venv)
    first, second = (compose, vm) if bad_in == "vm" else (vm, compose)
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


STAGER_DDP = """
    \"\"\"Train the sleep-stage classifier with DDP over gloo: each 30 s epoch is 96 samples of
    one EEG channel, five stages (W, N1, N2, N3, REM). A 1-D convolution feeds a stage head and
    an artefact head (switched on by configs/stager.yaml's artefact_weight, 0 while the artefact
    labels are redone). Settings: configs/stager.yaml, then train.local.yaml if there is one.
    Rank 0 prints each epoch's loss and the validation accuracy and, with --min-acc, refuses a
    model below it; --resume starts from a saved checkpoint.\"\"\"
    import argparse
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


    class Stager(torch.nn.Module):
        def __init__(self, channels, kernel):
            super().__init__()
            self.conv = torch.nn.Conv1d(1, channels, kernel, padding=kernel // 2)
            self.stage = torch.nn.Linear(channels, 5)
            self.artefact = torch.nn.Linear(channels, 1)

        def forward(self, x, with_artefact=False):
            h = torch.relu(self.conv(x)).mean(2)
            if with_artefact:
                return self.stage(h), self.artefact(h).squeeze(1)
            return self.stage(h)


    def recordings(n=1200, seed=31):
        g = torch.Generator().manual_seed(seed)
        y = torch.randint(0, 5, (n,), generator=g)
        t = torch.linspace(0, 1, 96)
        freq = torch.tensor([10.0, 6.0, 13.0, 1.5, 7.0])[y]
        amp = torch.tensor([0.6, 0.8, 1.0, 2.2, 0.7])[y]
        x = amp[:, None] * torch.sin(2 * 3.14159 * freq[:, None] * t[None, :])
        x = x + 0.9 * torch.randn(n, 96, generator=g)
        return x.unsqueeze(1), y


    def settings():
        cfg = yaml.safe_load(open("configs/stager.yaml"))
        if os.path.exists("train.local.yaml"):
            cfg.update(yaml.safe_load(open("train.local.yaml")) or {})
        return cfg


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--min-acc", type=float, default=None)
        p.add_argument("--resume", default=None)
        a = p.parse_args()
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        cfg = settings()
        x, y = recordings()
        train = TensorDataset(x[:900], y[:900])
        sampler = DistributedSampler(train, num_replicas=world, rank=rank, seed=cfg["seed"])
        loader = DataLoader(train, batch_size=cfg["batch_size"] // world, sampler=sampler)
        torch.manual_seed(cfg["seed"])
        net = Stager(cfg["channels"], cfg["kernel"])
        if a.resume:
            net.load_state_dict(torch.load(a.resume))
        model = DDP(net, find_unused_parameters=True)
        opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
        use_artefact = cfg["artefact_weight"] > 0
        for epoch in range(cfg["epochs"]):
            sampler.set_epoch(epoch)
            total, steps = 0.0, 0
            for xb, yb in loader:
                if use_artefact:
                    logits, art = model(xb, with_artefact=True)
                    loss = F.cross_entropy(logits, yb) + cfg["artefact_weight"] * art.pow(2).mean()
                else:
                    loss = F.cross_entropy(model(xb), yb)
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
            acc = (net(x[900:]).argmax(1) == y[900:]).float().mean().item()
        if rank == 0:
            print(f"val_acc={acc:.4f} epochs_scored={len(y) - 900}")
            os.makedirs("checkpoints", exist_ok=True)
            torch.save(net.state_dict(), "checkpoints/stager.pt")
            if a.min_acc is not None and acc < a.min_acc:
                raise RuntimeError(f"val_acc={acc:.4f} is below --min-acc {a.min_acc}: "
                                   "the scoring service keeps the current stager")
        dist.barrier()
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

STAGER_YAML = "# sleep stager, single-channel C4-M1, 30 s epochs resampled to 96 points\n" \
              "channels: 12\nkernel: 9\nlr: 0.01\nbatch_size: 60\nepochs: 3\nseed: 5\n" \
              "artefact_weight: 0.0\n"

LOCAL_YAML = "# my overrides, not in git\nlr: 0.01\n"


def _stager_job(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    repo = _repo(d / "sleep-stager", {"train.py": STAGER_DDP, "configs/stager.yaml": STAGER_YAML},
                 "__pycache__/\ncheckpoints/\ntrain.local.yaml\n")
    _write(repo / "train.local.yaml", LOCAL_YAML)
    return py, repo


def find_unused_false_uncommitted_job(d: Path) -> Incident:
    """Job against job. Between the jobs train.py (in git) had ``find_unused_parameters=True``
    edited, not committed, to ``False`` (DDP's own warning says it costs a traversal); the
    artefact head gets no gradient while artefact_weight is 0 and the second step of every rank
    refuses (RuntimeError: Expected to have finished reduction in the prior iteration before
    starting a new one). The Compose service ran the committed code. Kind: fail."""
    py, repo = _stager_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(find_unused_false_uncommitted_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "sleep-stager: train.py"),
                     between=lambda: _edit(repo / "train.py", "find_unused_parameters=True",
                                           "find_unused_parameters=False"))


def local_lr_override_metric_job(d: Path) -> Incident:
    """Job against job. Between the jobs the git-ignored train.local.yaml had ``lr: 0.01``
    rewritten as ``lr: 0.002`` (trying a gentler schedule in the VM); both jobs train, the
    losses and the validation accuracy move. Kind: metric."""
    py, repo = _stager_job(d)
    local = repo / "train.local.yaml"
    good, bad = _shells(d, bad_in="compose", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(local_lr_override_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {local.resolve()}"),
                     between=lambda: _edit(local, "lr: 0.01", "lr: 0.002"))


def resume_missing_ckpt_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--min-acc 0.97``, which this stager never
    reaches: the good job trains, saves and rank 0 keeps the current model. The VM's job also
    passes ``--resume checkpoints/stager-best.pt`` (from the lab's runbook; the job only ever
    writes checkpoints/stager.pt) and every rank stops before training (FileNotFoundError: ...
    'checkpoints/stager-best.pt'). Kind: both-fail."""
    py, repo = _stager_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    return _incident(resume_missing_ckpt_both_fail_job,
                     Launch(_torchrun(py, "train.py", "--min-acc", "0.97"), good, repo),
                     Launch(_torchrun(py, "train.py", "--min-acc", "0.97", "--resume",
                                      "checkpoints/stager-best.pt"), bad, repo),
                     ("command", "--resume"))


def stager_ddp_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the Multipass VM and from the Compose
    service: each job its own rendezvous and rank processes, the shells their own NVIDIA_*,
    CUDA_*, NCCL_*, TORCH_*, HF_*, SSH_* and XDG_* variables. Nothing planted. Kind: noise."""
    py, repo = _stager_job(d)
    good, bad = _shells(d, bad_in="compose", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(stager_ddp_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- c10d and torch settings


SCORING_STORE = """
    \"\"\"Start of the overnight scoring service: open the c10d TCPStore the scorer workers join
    (timeout STORE_TIMEOUT seconds, default 60), publish tonight's batch of recordings and read
    the plan back as a worker would.\"\"\"
    import json
    import os
    from datetime import timedelta

    import torch
    import torch.distributed as dist


    def main():
        timeout = timedelta(seconds=int(os.environ.get("STORE_TIMEOUT", "60")))
        store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                              timeout=timeout)
        worker = dist.TCPStore("127.0.0.1", store.port, is_master=False, timeout=timeout)
        store.set("batch", json.dumps({"recordings": 36, "workers": 3, "seed": 8}))
        plan = json.loads(worker.get("batch"))
        g = torch.Generator().manual_seed(plan["seed"])
        hours = (6 + 3 * torch.rand(plan["recordings"], generator=g)).sum().item()
        print(f"store_keys={store.num_keys()} recordings={plan['recordings']} hours={hours:.3f}")


    if __name__ == "__main__":
        main()
    """


def store_timeout_with_unit_in_compose(d: Path) -> Incident:
    """The Compose service's ``environment:`` has ``STORE_TIMEOUT=90s`` (written like the
    healthcheck's ``interval: 90s`` beside it); the scoring service reads whole seconds (ValueError:
    invalid literal for int() with base 10: '90s'). The VM exports nothing and takes 60. Kind:
    fail."""
    py = python_with("torch")
    repo = _repo(d / "scoring-service", {"start_store.py": SCORING_STORE})
    good, bad = _shells(d, bad={"STORE_TIMEOUT": "90s"}, bad_in="compose", venv=_venv_of(py))
    argv = (py, "start_store.py")
    return _incident(store_timeout_with_unit_in_compose, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "STORE_TIMEOUT"))


ARTEFACTS = """
    \"\"\"Train the artefact detector: which 30 s epochs of the night are movement or electrode
    pops. The epochs the technician flagged are written into a flat mask with put_; a small MLP
    learns them from band powers. REPRODUCIBLE=1 asks torch for deterministic algorithms.
    --workers and --prefetch-factor go to the DataLoader.\"\"\"
    import argparse
    import os

    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--workers", type=int, default=0)
        p.add_argument("--prefetch-factor", type=int, default=None)
        a = p.parse_args()
        torch.set_num_threads(2)
        if os.environ.get("REPRODUCIBLE") == "1":
            torch.use_deterministic_algorithms(True)
        g = torch.Generator().manual_seed(17)
        feats = torch.randn(960, 6, generator=g)
        flagged = torch.nonzero(feats[:, 0] + 0.5 * feats[:, 4] > 1.1).squeeze(1)
        flagged = torch.cat([flagged, flagged[:10]])  # the second scorer's flags overlap
        mask = torch.zeros(960)
        mask.put_(flagged, torch.ones(len(flagged)))
        loader = DataLoader(TensorDataset(feats[:720], mask[:720]), batch_size=80, shuffle=True,
                            generator=torch.Generator().manual_seed(3), num_workers=a.workers,
                            prefetch_factor=a.prefetch_factor)
        torch.manual_seed(4)
        net = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
        opt = torch.optim.Adam(net.parameters(), lr=0.02)
        for epoch in range(4):
            for xb, yb in loader:
                loss = F.binary_cross_entropy_with_logits(net(xb).squeeze(1), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
        with torch.no_grad():
            pred = net(feats[720:]).squeeze(1) > 0
            recall = (pred & (mask[720:] > 0)).sum().item() / max(1, int(mask[720:].sum()))
        print(f"loss={loss.item():.5f} flagged={int(mask.sum())} recall={recall:.4f}")


    if __name__ == "__main__":
        main()
    """


def _artefacts(d: Path) -> tuple[str, Path]:
    py = python_with("torch")
    return py, _repo(d / "artefact-detector", {"artefacts.py": ARTEFACTS})


def reproducible_flag_over_put(d: Path) -> Incident:
    """The VM's ~/.profile exports ``REPRODUCIBLE=1`` (from the lab's reproducibility checklist);
    the detector turns on ``torch.use_deterministic_algorithms`` and the mask's ``put_`` has no
    deterministic CPU kernel (RuntimeError: put_ does not have a deterministic implementation,
    but you set 'torch.use_deterministic_algorithms(True)'). The container trains. Kind: fail."""
    py, repo = _artefacts(d)
    good, bad = _shells(d, bad={"REPRODUCIBLE": "1"}, venv=_venv_of(py))
    argv = (py, "artefacts.py")
    return _incident(reproducible_flag_over_put, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "REPRODUCIBLE"))


def prefetch_factor_without_workers(d: Path) -> Incident:
    """The Compose service's ``command:`` passes ``--prefetch-factor 4`` (left from when it also
    passed ``--workers 4``; the workers were dropped for the container's small /dev/shm); the
    DataLoader refuses a prefetch factor with no worker processes (ValueError: prefetch_factor
    option could only be specified in multiprocessing). The VM's command has neither. Kind:
    fail."""
    py, repo = _artefacts(d)
    good, bad = _shells(d, bad_in="compose", venv=_venv_of(py))
    argv = (py, "artefacts.py")
    return _incident(prefetch_factor_without_workers, Launch(argv, good, repo),
                     Launch((*argv, "--prefetch-factor", "4"), bad, repo),
                     ("command", "--prefetch-factor"))


# --------------------------------------------------------------------------- a team package


HYPNOKIT = {
    "1.6.2": '''
        """The lab's hypnogram helpers (1.x)."""
        STAGES = ("W", "N1", "N2", "N3", "REM")


        def epoch_features(stages):
            """Minutes in each stage (30 s epochs) and the number of awakenings."""
            minutes = {s: 0.5 * stages.count(s) for s in STAGES}
            wakes = sum(1 for a, b in zip(stages, stages[1:]) if a != "W" and b == "W")
            return minutes, wakes
        ''',
    "2.0.0": '''
        """The lab's hypnogram helpers (2.0): features are now extract_features(hypnogram)."""
        STAGES = ("W", "N1", "N2", "N3", "REM")


        def extract_features(hypnogram, epoch_sec=30):
            minutes = {s: epoch_sec / 60 * hypnogram.count(s) for s in STAGES}
            wakes = sum(1 for a, b in zip(hypnogram, hypnogram[1:]) if a != "W" and b == "W")
            return {"minutes": minutes, "awakenings": wakes}
        ''',
}

NIGHT_REPORT = """
    \"\"\"The morning report of last night's recordings: total sleep time, sleep efficiency and
    awakenings per patient from data/hypnograms.csv (patient, epoch, stage).\"\"\"
    import csv
    from collections import defaultdict

    from hypnokit import epoch_features


    def main():
        nights = defaultdict(list)
        for row in csv.DictReader(open("data/hypnograms.csv")):
            nights[row["patient"]].append(row["stage"])
        tst, eff, wakes = 0.0, 0.0, 0
        for stages in nights.values():
            minutes, w = epoch_features(stages)
            asleep = sum(v for k, v in minutes.items() if k != "W")
            tst, eff, wakes = tst + asleep, eff + asleep / (0.5 * len(stages)), wakes + w
        n = len(nights)
        print(f"patients={n} mean_tst_min={tst / n:.1f} efficiency={eff / n:.4f} awakenings={wakes}")


    if __name__ == "__main__":
        main()
    """


def _hypnograms() -> str:
    pick = random.Random(30)
    rows = []
    for p in range(8):
        stage = "W"
        for e in range(600):
            if pick.random() < 0.12:
                stage = pick.choice(["W", "N1", "N2", "N2", "N3", "REM"])
            rows.append(f"P{p:03d},{e},{stage}")
    return "\n".join(["patient,epoch,stage", *rows]) + "\n"


def hypnokit_major_in_vm_venv(d: Path) -> Incident:
    """The morning report imports ``hypnokit.epoch_features``. The venv made in the Multipass VM
    from the unpinned requirements got hypnokit 2.0.0, which renamed it (ImportError: cannot
    import name 'epoch_features' from 'hypnokit'); the image's venv has 1.6.2. Kind: fail."""
    repo = _repo(d / "night-report", {"report.py": NIGHT_REPORT,
                                      "data/hypnograms.csv": _hypnograms()})
    envs = {}
    for side, version in (("compose", "1.6.2"), ("vm", "2.0.0")):
        py = _venv(d / "venvs" / side, {"hypnokit": (version, HYPNOKIT[version]),
                                        "python-dateutil": ("2.9.0.post0", None)})
        envs[side] = str(py.parent.parent)
    good, bad = _shells(d)
    good = {**good, "VIRTUAL_ENV": envs["compose"], "PATH": f"{envs['compose']}/bin:{good['PATH']}"}
    bad = {**bad, "VIRTUAL_ENV": envs["vm"], "PATH": f"{envs['vm']}/bin:{bad['PATH']}"}
    argv = ("python", "report.py")
    return _incident(hypnokit_major_in_vm_venv, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "hypnokit"))


# --------------------------------------------------------------------------- a BERT folder


MAKE_BERT = """
import sys
import torch
from transformers import BertConfig, BertForSequenceClassification
cfg = BertConfig(vocab_size=260, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=64, max_position_embeddings=160, pad_token_id=0,
                 initializer_range=0.2, num_labels=3,
                 id2label={0: "normal", 1: "apnea", 2: "insomnia"},
                 label2id={"normal": 0, "apnea": 1, "insomnia": 2})
torch.manual_seed(30)
BertForSequenceClassification(cfg).save_pretrained(sys.argv[1])
"""

NOTES_EVAL = """
    \"\"\"Score the technicians' note classifier (--model-path) on data/notes.tsv (label, note):
    byte-level ids (byte + 4, [CLS] = 2), at most MAX_SEQ_LEN of them (default 128). Prints the
    mean loss and the accuracy.\"\"\"
    import argparse
    import os

    import torch
    from transformers import BertForSequenceClassification


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        torch.set_num_threads(2)
        limit = int(os.environ.get("MAX_SEQ_LEN", "128"))
        model = BertForSequenceClassification.from_pretrained(a.model_path).eval()
        losses, right = [], 0
        with torch.no_grad():
            for line in open("data/notes.tsv", encoding="utf-8"):
                label, note = line.rstrip("\\n").split("\\t")
                ids = torch.tensor([[2] + [b + 4 for b in note.encode()][:limit - 1]])
                out = model(input_ids=ids, labels=torch.tensor([model.config.label2id[label]]))
                losses.append(out.loss.item())
                right += int(model.config.id2label[int(out.logits.argmax())] == label)
        print(f"notes={len(losses)} loss={sum(losses) / len(losses):.5f} "
              f"accuracy={right / len(losses):.4f}")


    if __name__ == "__main__":
        main()
    """


def _notes() -> str:
    parts = {"normal": ["uneventful night, good sleep continuity",
                        "normal architecture, REM latency within range"],
             "apnea": ["repeated desaturations below 88 percent with snoring arousals",
                       "obstructive events clustered in supine REM, AHI estimate high"],
             "insomnia": ["long sleep onset latency, patient read for an hour",
                          "early morning awakening at 04:10, could not return to sleep"]}
    lines = []
    for i in range(36):
        label = ["normal", "apnea", "insomnia"][i % 3]
        text = parts[label][i % 2]
        lines.append(f"{label}\t{text}; bed {i % 6 + 1}, tech {['AK', 'JM', 'RS'][i % 3]}, "
                     f"lights out {21 + i % 3}:{(i * 7) % 60:02d}, montage AASM standard")
    return "\n".join(lines) + "\n"


def _bert(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers")
    repo = _repo(d / "notes-classifier", {"evaluate.py": NOTES_EVAL, "data/notes.tsv": _notes()})
    model = d / "models" / "notes-bert"
    _build(py, MAKE_BERT, str(model))
    return py, repo, model


def _set_field(model: Path, field: str, value: object) -> None:
    cfg = json.loads((model / "config.json").read_text())
    cfg[field] = value
    (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def pad_token_id_past_vocab(d: Path) -> Incident:
    """Between the runs the model folder's config.json (outside git) got ``"pad_token_id":
    50256`` (pasted from a GPT-2 tokenizer's settings); the byte-level vocabulary has 260 ids and
    the embedding refuses it (AssertionError: Padding_idx must be within num_embeddings). Kind:
    fail."""
    py, repo, model = _bert(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(pad_token_id_past_vocab, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: pad_token_id"),
                     between=lambda: _set_field(model, "pad_token_id", 50256))


def max_seq_len_from_compose_metric(d: Path) -> Incident:
    """The Compose service's env_file sets ``MAX_SEQ_LEN=48`` (the serving container's limit);
    the evaluation cuts each note to 48 ids. Both runs finish; the loss and the accuracy move.
    Kind: metric."""
    py, repo, model = _bert(d)
    good, bad = _shells(d, bad={"MAX_SEQ_LEN": "48"}, bad_in="compose", venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(max_seq_len_from_compose_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "MAX_SEQ_LEN"))


def notes_bert_noise(d: Path) -> Incident:
    """The note classifier's evaluation, the same model folder, code and data, from the Compose
    service and from the Multipass VM. Nothing planted. Kind: noise."""
    py, repo, model = _bert(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(notes_bert_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- LightGBM


LGB_STAGER = """
    \"\"\"Stage 30 s epochs with LightGBM from hand-made features (band powers, EMG, EOG) in
    data/DATA_VERSION/features.csv (default v2): the settings in params.yaml, overridden by the
    git-ignored params.local.yaml. --min-f1 refuses to ship a weaker model.\"\"\"
    import argparse
    import os

    import lightgbm as lgb
    import pandas as pd
    import yaml
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.model_selection import train_test_split
    from sklearn.utils.class_weight import compute_sample_weight


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--min-child-samples", type=int, default=20)
        p.add_argument("--min-f1", type=float, default=None)
        a = p.parse_args()
        params = yaml.safe_load(open("params.yaml"))
        if os.path.exists("params.local.yaml"):
            params.update(yaml.safe_load(open("params.local.yaml")) or {})
        params.update(min_child_samples=a.min_child_samples, num_threads=2, verbose=-1,
                      deterministic=True, force_col_wise=True)
        version = os.environ.get("DATA_VERSION", "v2")
        frame = pd.read_csv(f"data/{version}/features.csv")
        y = frame.pop("stage")
        xtr, xte, ytr, yte = train_test_split(frame, y, test_size=0.25, random_state=params["seed"],
                                              stratify=y)
        rounds = params.pop("rounds")
        train = lgb.Dataset(xtr, ytr)
        booster = lgb.train(params, train, num_boost_round=rounds)
        pred = booster.predict(xte).argmax(1)
        f1 = f1_score(yte, pred, average="macro")
        print(f"macro_f1={f1:.4f} accuracy={accuracy_score(yte, pred):.4f} trees={booster.num_trees()}")
        if a.min_f1 is not None and f1 < a.min_f1:
            raise SystemExit(f"macro_f1={f1:.4f} is below --min-f1 {a.min_f1}: not shipping")


    if __name__ == "__main__":
        main()
    """

LGB_PARAMS = """
    objective: multiclass
    num_class: 5
    learning_rate: 0.08
    num_leaves: 15
    seed: 13
    rounds: 60
    """

LGB_LOCAL = """
    # this machine's overrides, not in git
    objective: multiclass
    num_leaves: 15
    """


def _features() -> str:
    pick = random.Random(300)
    centre = {0: (1.0, 2.0, 3.0, 0.5, 3.5, 2.5, 1.5), 1: (2.0, 2.5, 1.5, 0.8, 1.5, 1.2, 1.2),
              2: (3.0, 2.0, 1.0, 2.5, 1.0, 0.8, 0.4), 3: (5.0, 1.5, 0.6, 0.8, 0.5, 0.6, 0.2),
              4: (2.0, 3.0, 1.0, 0.5, 1.5, 0.3, 3.0)}
    rows = []
    for i in range(1000):
        stage = [0, 1, 2, 2, 2, 3, 4, 4][i % 8]
        vals = [c + pick.gauss(0, 0.9) for c in centre[stage]]
        rows.append(",".join(f"{v:.4f}" for v in vals) + f",{stage}")
    head = "delta,theta,alpha,sigma,beta,emg,eog,stage"
    return "\n".join([head, *rows]) + "\n"


def _lgb(d: Path) -> tuple[str, Path, Path]:
    py = python_with("lightgbm", "sklearn", "pandas", "yaml")
    repo = _repo(d / "lgb-stager", {"stage_lgb.py": LGB_STAGER, "params.yaml": LGB_PARAMS,
                                    "data/v2/features.csv": _features()},
                 "__pycache__/\nparams.local.yaml\n")
    return py, repo, _write(repo / "params.local.yaml", LGB_LOCAL)


def objective_metric_name_in_local_params(d: Path) -> Incident:
    """Between the runs the git-ignored params.local.yaml had ``objective: multiclass``
    rewritten as ``objective: multi_logloss`` (the metric's name, pasted from the tuning
    notebook); LightGBM no longer trains a multiclass model and refuses the five classes
    (LightGBMError: Number of classes must be 1 for non-multiclass training). Kind: fail."""
    py, repo, local = _lgb(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "stage_lgb.py")
    return _incident(objective_metric_name_in_local_params, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {local.resolve()}"),
                     between=lambda: _edit(local, "objective: multiclass",
                                           "objective: multi_logloss"))


def min_child_samples_option_metric(d: Path) -> Incident:
    """The VM's launch line passes ``--min-child-samples 60`` (from a tuning note for the big
    cohort); the trees get coarser leaves. Both runs fit; the macro F1 and the accuracy move.
    Kind: metric."""
    py, repo, _ = _lgb(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "stage_lgb.py")
    return _incident(min_child_samples_option_metric, Launch(argv, good, repo),
                     Launch((*argv, "--min-child-samples", "60"), bad, repo),
                     ("command", "--min-child-samples"))


def balanced_weights_uncommitted_metric(d: Path) -> Incident:
    """Between the runs stage_lgb.py (in git) had its training set weighted with
    ``compute_sample_weight("balanced", ytr)``, not committed (N1 is rare); both runs fit, the
    macro F1 and the accuracy move. Kind: metric."""
    py, repo, _ = _lgb(d)
    good, bad = _shells(d, bad_in="compose", venv=_venv_of(py))
    argv = (py, "stage_lgb.py")
    return _incident(balanced_weights_uncommitted_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "lgb-stager: stage_lgb.py"),
                     between=lambda: _edit(repo / "stage_lgb.py", "lgb.Dataset(xtr, ytr)",
                                           "lgb.Dataset(xtr, ytr, weight=compute_sample_weight("
                                           "\"balanced\", ytr))"))


def data_version_v3_both_fail(d: Path) -> Incident:
    """Both fail. Both runs ask for ``--min-f1 0.95``, which the stager never reaches: the good
    run fits and does not ship. The Compose service's env_file sets ``DATA_VERSION=v3`` (the
    next export, only on the lab's data volume) and the run stops at the read
    (FileNotFoundError: ... 'data/v3/features.csv'). Kind: both-fail."""
    py, repo, _ = _lgb(d)
    good, bad = _shells(d, bad={"DATA_VERSION": "v3"}, bad_in="compose", venv=_venv_of(py))
    argv = (py, "stage_lgb.py", "--min-f1", "0.95")
    return _incident(data_version_v3_both_fail, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "DATA_VERSION"))


def lgb_stager_noise(d: Path) -> Incident:
    """The LightGBM stager, the same code, params and data, from the Multipass VM and from the
    Compose service. Nothing planted. Kind: noise."""
    py, repo, _ = _lgb(d)
    good, bad = _shells(d, bad_in="compose", venv=_venv_of(py))
    argv = (py, "stage_lgb.py")
    return _incident(lgb_stager_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


#: The thirtieth fresh batch, in the order it was written. Never tuned on.
FRESH30 = [
    find_unused_false_uncommitted_job, local_lr_override_metric_job,
    resume_missing_ckpt_both_fail_job, stager_ddp_job_noise, store_timeout_with_unit_in_compose,
    reproducible_flag_over_put, prefetch_factor_without_workers, hypnokit_major_in_vm_venv,
    pad_token_id_past_vocab, max_seq_len_from_compose_metric, notes_bert_noise,
    objective_metric_name_in_local_params, min_child_samples_option_metric,
    balanced_weights_uncommitted_metric, data_version_v3_both_fail, lgb_stager_noise,
]

if __name__ == "__main__":  # build one incident and run its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH30 if b.__name__ in sys.argv[1:]] or FRESH30
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh30-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
