"""A twenty-first fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh20.py, for their format), how they are run and scored
(benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot reference
(docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job captures
one snapshot per rank. They form the corpus's ``fresh21`` half; report it, never change the
ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a PM2.5 nowcast regressor with a
  station embedding trained with DDP: an uncommitted edit that sizes the station vocabulary from
  the rank's own shard (the ranks' models differ and DDP refuses them), ``LR_SCHEDULE=cosine``
  exported by the Flyte task (metric), an uncommitted ``dropout: 1.5`` in the git-tracked config
  on top of a quality gate the good job already misses (both fail), and the same job from both
  shells (noise);
- a bike-share demand regressor under ``OneCycleLR``: ``--epochs 12`` while the scheduler is
  sized from the config's epochs, an uncommitted ``pct_start: 1.5`` on top of a missed gate (both
  fail), ``PYTHONIOENCODING=ascii`` against a report line with a unit sign, an uncommitted
  ``@torch.no_grad()`` on the shared forward helper, a personal overrides file in the home folder
  (outside git, metric), and ``INFER_DEVICE=cuda`` given to ``torch.load``'s ``map_location``;
- a BERT intent classifier under transformers whose config.json got a smaller ``vocab_size``
  (fail) and its evaluation from both shells (noise);
- scikit-learn: a random forest with ``--max-depth 4`` from a quickstart (metric) and the same
  forest from both shells (noise); a team package ``wxfeat`` a minor version ahead in the
  Codespace's venv whose dew point formula changed (metric).

The shells are :func:`flyte_pod_or_codespace_shell`: shell 0 a Flyte task pod on Kubernetes
(``FLYTE_INTERNAL_*``, ``KUBERNETES_*``, ``POD_*``, root in ``/root``, the task's resource
tuning of ``OMP_*``/``NCCL_*``/``HF_*``), shell 1 bash in a GitHub Codespaces devcontainer
terminal (``CODESPACES``, ``CODESPACE_NAME``, ``GITHUB_*``, ``VSCODE_*``, ``REMOTE_CONTAINERS*``,
user ``codespace`` in ``/workspaces``, the devcontainer's own ``TORCH_*``/``CUDA_*`` settings).
The thread counts that change float reductions are pinned alike. The planted side is either: some
incidents work in the pod and fail in the Codespace, others the reverse.

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

FLYTE_EXEC = "f8a2c4e1b9d7"


def flyte_pod_or_codespace_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 a Flyte task
    pod on Kubernetes, 1 bash in a GitHub Codespaces devcontainer terminal (``venv`` the
    interpreter's virtual environment, first on ``PATH``); each with its own tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    if n % 2 == 0:  # a Flyte task's pod: the task image's entrypoint, as root
        pod = f"{FLYTE_EXEC}-n2-0"
        env = {
            **common, "PATH": f"/opt/venv/bin:/usr/local/bin:{path}",
            "USER": "root", "LANG": "C.UTF-8", "HOSTNAME": pod,
            "FLYTE_INTERNAL_EXECUTION_ID": FLYTE_EXEC,
            "FLYTE_INTERNAL_EXECUTION_PROJECT": "airquality",
            "FLYTE_INTERNAL_EXECUTION_DOMAIN": "development",
            "FLYTE_INTERNAL_EXECUTION_WORKFLOW": "airquality.workflows.nowcast.train_wf",
            "FLYTE_INTERNAL_TASK_PROJECT": "airquality", "FLYTE_INTERNAL_TASK_DOMAIN": "development",
            "FLYTE_INTERNAL_TASK_NAME": "airquality.tasks.train", "FLYTE_INTERNAL_TASK_VERSION":
            "v3-1c9e77a", "FLYTE_INTERNAL_NAME": "airquality.tasks.train",
            "FLYTE_INTERNAL_VERSION": "v3-1c9e77a", "FLYTE_ATTEMPT_NUMBER": "0",
            "FLYTE_INTERNAL_IMAGE": "ghcr.io/acme/airquality-train:1c9e77a",
            "FLYTE_AWS_ENDPOINT": "http://minio.flyte.svc.cluster.local:9000",
            "FLYTE_AWS_ACCESS_KEY_ID": "minio", "FLYTE_STATSD_HOST": "statsd.flyte.svc",
            "KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
            "KUBERNETES_SERVICE_PORT_HTTPS": "443", "KUBERNETES_PORT": "tcp://10.96.0.1:443",
            "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1", "POD_NAME": pod,
            "POD_NAMESPACE": "airquality-development",
            "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1",
            "NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_DISABLE": "1", "NCCL_DEBUG": "WARN",
            "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "OMP_PROC_BIND": "false",
            "HF_HOME": "/tmp/hf", "HF_HUB_DISABLE_TELEMETRY": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
        if venv:  # the task image's venv: its interpreter first
            env["PATH"] = f"{venv}/bin:{env['PATH']}"
        return env
    work = home / "workspaces" / "airquality"
    work.mkdir(parents=True, exist_ok=True)
    env = {  # bash in the VS Code terminal of a Codespace, devcontainer.json's remoteEnv applied
        **common, "PATH": f"/home/codespace/.local/bin:/usr/local/python/current/bin:"
                          f"/vscode/bin/linux-x64/3fd1b9e2/bin/remote-cli:{path}",
        "USER": "codespace", "SHELL": "/bin/bash", "LANG": "en_US.UTF-8",
        "TERM": "xterm-256color", "COLORTERM": "truecolor", "TERM_PROGRAM": "vscode",
        "TERM_PROGRAM_VERSION": "1.97.2", "PWD": str(work), "OLDPWD": str(home),
        "SHLVL": "1", "HOSTNAME": "codespaces-7d41ae", "CODESPACES": "true",
        "CODESPACE_NAME": "fuzzy-space-potato-5gq7wv9x6jh4w9",
        "CODESPACE_VSCODE_FOLDER": "/workspaces/airquality",
        "GITHUB_CODESPACES_PORT_FORWARDING_DOMAIN": "app.github.dev",
        "GITHUB_SERVER_URL": "https://github.com", "GITHUB_API_URL": "https://api.github.com",
        "GITHUB_GRAPHQL_URL": "https://api.github.com/graphql", "GITHUB_USER": "priya-ml",
        "GITHUB_REPOSITORY": "acme/airquality", "GIT_EDITOR": "code --wait",
        "VSCODE_IPC_HOOK_CLI": "/tmp/vscode-ipc-4b1f2a.sock",
        "VSCODE_GIT_IPC_HANDLE": "/tmp/vscode-git-91c2d7.sock",
        "VSCODE_GIT_ASKPASS_MAIN": "/vscode/bin/linux-x64/3fd1b9e2/extensions/git/dist/askpass.js",
        "REMOTE_CONTAINERS_IPC": "/tmp/vscode-remote-containers-ipc-7a3e.sock",
        "CONTAINER_ID": "d1c0f5b8e2a4", "NVM_DIR": "/usr/local/share/nvm",
        "PYTHON_PATH": "/usr/local/python/current", "PIPX_HOME": "/usr/local/py-utils",
        "CUDA_VISIBLE_DEVICES": "", "TORCH_CUDA_ARCH_LIST": "8.0;8.6",
        "TORCH_HOME": f"{home}/.cache/torch", "TORCHINDUCTOR_CACHE_DIR": f"{home}/.cache/inductor",
        "HF_HOME": f"{home}/.cache/huggingface", "NCCL_DEBUG": "INFO", "NCCL_P2P_DISABLE": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1", "EDITOR": "code --wait",
    }
    if venv:  # postCreateCommand's venv, activated by the terminal profile
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "codespace", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the Codespace (``bad_in="codespace"``) or from the Flyte pod (``"flyte"``)."""
    pod = flyte_pod_or_codespace_shell(0, d / "home" / "root", venv)
    space = flyte_pod_or_codespace_shell(1, d / "home" / "codespace", venv)
    first, second = (pod, space) if bad_in == "codespace" else (space, pod)
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
        raise Unavailable(f"{path.name} has no {old!r} to edit")
    path.write_text(text.replace(old, new))


# --------------------------------------------------------------------------- torchrun jobs


NOWCAST_DDP = """
    \"\"\"Train the PM2.5 nowcast regressor with DDP over gloo; sizes from configs/train.yaml.
    The readings come sorted by station and each rank takes a contiguous shard; stations are
    embedded (one row per station id). LR_SCHEDULE (unset: constant) picks the learning-rate
    schedule. Rank 0 prints each epoch's loss and the validation R^2; --min-r2 refuses a model
    below it.\"\"\"
    import argparse
    import math
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP


    def readings(n=2400, stations=40, seed=23):
        g = torch.Generator().manual_seed(seed)
        station = torch.randint(0, stations, (n,), generator=g).sort().values
        x = torch.randn(n, 6, generator=g)
        bias = torch.linspace(-1.0, 1.0, stations)
        y = (1.5 * x[:, 0] - x[:, 1] + 0.5 * x[:, 2] * x[:, 3] + bias[station]
             + 0.3 * torch.randn(n, generator=g))
        return station, x, y


    class Nowcast(torch.nn.Module):
        def __init__(self, stations, hidden, dropout):
            super().__init__()
            self.station = torch.nn.Embedding(stations, 4)
            self.body = torch.nn.Sequential(torch.nn.Linear(10, hidden), torch.nn.ReLU(),
                                            torch.nn.Dropout(dropout), torch.nn.Linear(hidden, 1))

        def forward(self, s, x):
            return self.body(torch.cat([self.station(s), x], 1)).squeeze(1)


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--min-r2", type=float, default=None)
        a = p.parse_args()
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        torch.set_num_threads(1)
        cfg = yaml.safe_load(open("configs/train.yaml"))
        s, x, y = readings()
        held = torch.arange(len(s)) % 6 == 5
        vs, vx, vy = s[held], x[held], y[held]
        s, x, y = s[~held], x[~held], y[~held]
        chunk = len(s) // world
        mine = slice(rank * chunk, (rank + 1) * chunk)
        ts, tx, ty = s[mine], x[mine], y[mine]
        stations = int(s.max()) + 1  # the station table: every station id
        torch.manual_seed(0)
        net = Nowcast(stations, cfg["hidden"], cfg["dropout"])
        model = DDP(net)
        opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
        bs = cfg["batch_size"]
        steps = math.ceil(len(ts) / bs) * cfg["epochs"]
        schedule = os.environ.get("LR_SCHEDULE", "constant")
        if schedule == "cosine":
            sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
        elif schedule == "constant":
            sched = torch.optim.lr_scheduler.ConstantLR(opt, factor=1.0)
        else:
            raise ValueError(f"unknown LR_SCHEDULE {schedule!r}")
        g = torch.Generator().manual_seed(rank)
        for epoch in range(cfg["epochs"]):
            order = torch.randperm(len(ts), generator=g)
            total, n = 0.0, 0
            for i in range(0, len(ts), bs):
                idx = order[i:i + bs]
                loss = F.mse_loss(model(ts[idx], tx[idx]), ty[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                total, n = total + loss.item(), n + 1
            t = torch.tensor([total / n])
            dist.all_reduce(t)
            if rank == 0:
                print(f"epoch={epoch} loss={t.item() / world:.5f}")
        net.eval()
        with torch.no_grad():
            pred = net(vs, vx)
        r2 = 1 - ((pred - vy) ** 2).sum().item() / ((vy - vy.mean()) ** 2).sum().item()
        if rank == 0:
            print(f"val_r2={r2:.4f}")
            if a.min_r2 is not None and r2 < a.min_r2:
                raise RuntimeError(f"val_r2={r2:.4f} is below --min-r2 {a.min_r2}: "
                                   "not promoting the model")
        dist.barrier()
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

NOWCAST_YAML = ("# PM2.5 nowcast, city sensor network\nlr: 0.01\nhidden: 32\ndropout: 0.1\n"
                "batch_size: 50\nepochs: 4\n")


def _nowcast_job(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    return py, _repo(d / "pm25-nowcast", {"train.py": NOWCAST_DDP,
                                          "configs/train.yaml": NOWCAST_YAML})


def station_vocab_from_shard_uncommitted_job(d: Path) -> Incident:
    """Job against job. Between the jobs train.py (in git) was edited, not committed, to size
    the station embedding from the rank's own shard ("no need to hold the whole table"); the
    readings are sorted by station, so rank 0 sees stations 0-19 and rank 1 stations 20-39, the
    two ranks build embeddings of different sizes and DDP refuses them at construction.
    Kind: fail."""
    py, repo = _nowcast_job(d)

    def edited() -> None:
        _edit(repo / "train.py", "stations = int(s.max()) + 1  # the station table: every "
              "station id", "stations = int(ts.max()) + 1  # only the stations this rank sees")

    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(station_vocab_from_shard_uncommitted_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "pm25-nowcast: train.py"), between=edited)


def lr_schedule_cosine_from_task_metric_job(d: Path) -> Incident:
    """Job against job. The Flyte task's ``environment={...}`` sets ``LR_SCHEDULE=cosine`` (for
    the long production run); in the pod the short job's learning rate decays to zero over its
    four epochs. Both jobs train; the losses and the validation R^2 move. Kind: metric."""
    py, repo = _nowcast_job(d)
    good, bad = _shells(d, bad={"LR_SCHEDULE": "cosine"}, bad_in="flyte", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(lr_schedule_cosine_from_task_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "LR_SCHEDULE"))


def dropout_typo_uncommitted_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--min-r2 0.999``, which the nowcast never
    reaches: the good job trains and rank 0 refuses to promote it. Between the jobs
    configs/train.yaml (in git) got ``dropout: 1.5`` (meant 0.15), not committed; every rank
    stops building the model (ValueError: dropout probability has to be between 0 and 1, but
    got 1.5). Kind: both-fail."""
    py, repo = _nowcast_job(d)

    def edited() -> None:
        _edit(repo / "configs" / "train.yaml", "dropout: 0.1\n", "dropout: 1.5\n")

    good, bad = _shells(d, bad_in="flyte", venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--min-r2", "0.999")
    return _incident(dropout_typo_uncommitted_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "pm25-nowcast: configs/train.yaml"),
                     between=edited)


def pm25_ddp_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the Codespace and from the Flyte pod:
    each job its own rendezvous and rank processes, the shells their own FLYTE_*, KUBERNETES_*,
    POD_*, CODESPACE*, GITHUB_*, VSCODE_*, NCCL_*, TORCH_* and HF_* variables. Nothing planted.
    Kind: noise."""
    py, repo = _nowcast_job(d)
    good, bad = _shells(d, bad_in="flyte", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(pm25_ddp_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- one-cycle regressor


DEMAND_FIT = """
    \"\"\"Fit the hourly bike-share demand regressor under a one-cycle learning rate. Settings
    from configs/fit.yaml, then the personal overrides in ~/.config/bikeshare/overrides.yaml
    when there are any; --epochs overrides the number of epochs. Saves checkpoints/demand.pt,
    prints the validation MAE (rides per hour); --max-val-mae refuses a model above it.\"\"\"
    import argparse
    import math
    from pathlib import Path

    import torch
    import yaml


    def hours(n=3000, seed=31):
        g = torch.Generator().manual_seed(seed)
        hour = torch.randint(0, 24, (n,), generator=g).float()
        temp = torch.rand(n, generator=g) * 30
        rain = (torch.rand(n, generator=g) < 0.2).float()
        rides = (40 + 30 * torch.sin((hour - 7) / 24 * 6.283).clamp(min=0) + 2 * temp
                 - 25 * rain + 5 * torch.randn(n, generator=g))
        angle = hour / 24 * 6.283
        return torch.stack([torch.sin(angle), torch.cos(angle), temp / 30, rain], 1), rides / 100


    def make_net():
        return torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))


    def forward(net, xb):
        return net(xb).squeeze(1)


    def settings():
        cfg = yaml.safe_load(open("configs/fit.yaml"))
        personal = Path.home() / ".config" / "bikeshare" / "overrides.yaml"
        if personal.exists():
            cfg.update(yaml.safe_load(personal.read_text()) or {})
        return cfg


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--epochs", type=int, default=None)
        p.add_argument("--max-val-mae", type=float, default=None)
        a = p.parse_args()
        torch.set_num_threads(2)
        cfg = settings()
        epochs = a.epochs or cfg["epochs"]
        x, y = hours()
        torch.manual_seed(0)
        net = make_net()
        opt = torch.optim.AdamW(net.parameters(), lr=cfg["max_lr"],
                                weight_decay=cfg["weight_decay"])
        bs = cfg["batch_size"]
        sched = torch.optim.lr_scheduler.OneCycleLR(
            opt, max_lr=cfg["max_lr"], epochs=cfg["epochs"],
            steps_per_epoch=math.ceil(2400 / bs), pct_start=cfg["pct_start"])
        for epoch in range(epochs):
            for i in range(0, 2400, bs):
                loss = torch.nn.functional.mse_loss(forward(net, x[i:i + bs]), y[i:i + bs])
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
        with torch.no_grad():
            mae = (forward(net, x[2400:]) - y[2400:]).abs().mean().item() * 100
        Path("checkpoints").mkdir(exist_ok=True)
        torch.save(net.state_dict(), "checkpoints/demand.pt")
        print(f"train_loss={loss.item():.5f} val_mae={mae:.3f}")
        print(f"saved checkpoints/demand.pt: typical error \\u00b1{mae:.1f} rides/h")
        if a.max_val_mae is not None and mae > a.max_val_mae:
            raise SystemExit(f"val_mae={mae:.3f} is above --max-val-mae {a.max_val_mae}: "
                             "keeping the deployed model")


    if __name__ == "__main__":
        main()
    """

DEMAND_EVAL = """
    \"\"\"Evaluate the saved demand checkpoint on the last 600 hours; INFER_DEVICE (unset: cpu)
    is where the weights are loaded.\"\"\"
    import os

    import torch

    from fit import forward, hours, make_net


    def main():
        torch.set_num_threads(2)
        net = make_net()
        state = torch.load("checkpoints/demand.pt", weights_only=True,
                           map_location=os.environ.get("INFER_DEVICE", "cpu"))
        net.load_state_dict(state)
        x, y = hours()
        with torch.no_grad():
            mae = (forward(net, x[2400:]) - y[2400:]).abs().mean().item() * 100
        print(f"hours=600 val_mae={mae:.3f}")


    if __name__ == "__main__":
        main()
    """

DEMAND_YAML = ("# hourly demand, downtown docks\nmax_lr: 0.01\nweight_decay: 0.0001\n"
               "pct_start: 0.3\nbatch_size: 100\nepochs: 10\n")


def _demand(d: Path, checkpoint: bool = False) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    repo = _repo(d / "bike-demand", {"fit.py": DEMAND_FIT, "evaluate.py": DEMAND_EVAL,
                                     "configs/fit.yaml": DEMAND_YAML},
                 "__pycache__/\ncheckpoints/\n")
    if checkpoint:
        res = subprocess.run([py, "fit.py"], cwd=repo, capture_output=True, text=True,
                             check=False, env={**os.environ, "HOME": str(d / "home" / "build"),
                                               "PYTHONIOENCODING": "utf-8"})
        if res.returncode:
            raise Unavailable("could not fit the demand checkpoint: " + res.stderr[-300:])
    return py, repo


def epochs_option_past_one_cycle(d: Path) -> Incident:
    """The Codespace's launch passes ``--epochs 12`` ("two more epochs"); the one-cycle
    scheduler is still sized from the config's 10 epochs and refuses the first step past them
    (ValueError: Tried to step 241 times. The specified number of total steps is 240).
    Kind: fail."""
    py, repo = _demand(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(epochs_option_past_one_cycle, Launch(argv, good, repo),
                     Launch((*argv, "--epochs", "12"), bad, repo), ("command", "--epochs"))


def pct_start_typo_uncommitted_both_fail(d: Path) -> Incident:
    """Both fail. Both runs pass ``--max-val-mae 1.0``, which the regressor never reaches: the
    good run fits and keeps the deployed model. Between the runs configs/fit.yaml (in git) got
    ``pct_start: 1.5`` (meant 0.15), not committed; the scheduler refuses it before the first
    step (ValueError: Expected float between 0 and 1 pct_start, but got 1.5).
    Kind: both-fail."""
    py, repo = _demand(d)

    def edited() -> None:
        _edit(repo / "configs" / "fit.yaml", "pct_start: 0.3\n", "pct_start: 1.5\n")

    good, bad = _shells(d, bad_in="flyte", venv=_venv_of(py))
    argv = (py, "fit.py", "--max-val-mae", "1.0")
    return _incident(pct_start_typo_uncommitted_both_fail, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "bike-demand: configs/fit.yaml"),
                     between=edited)


def pythonioencoding_ascii_in_task_image(d: Path) -> Incident:
    """The Flyte task image's Dockerfile, inherited from an old base image, sets
    ``ENV PYTHONIOENCODING=ascii``; the fit finishes and saves the checkpoint, then the report
    line with its plus-minus sign cannot be written (UnicodeEncodeError: 'ascii' codec can't
    encode character '\\xb1'). Kind: fail."""
    py, repo = _demand(d)
    good, bad = _shells(d, bad={"PYTHONIOENCODING": "ascii"}, bad_in="flyte",
                        venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(pythonioencoding_ascii_in_task_image, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "PYTHONIOENCODING"))


def no_grad_on_forward_helper_uncommitted(d: Path) -> Incident:
    """Between the runs fit.py (in git) had ``@torch.no_grad()`` put on the ``forward`` helper,
    not committed ("it is only used for evaluation" - the training loop uses it too); the first
    backward finds no graph (RuntimeError: element 0 of tensors does not require grad and does
    not have a grad_fn). Kind: fail."""
    py, repo = _demand(d)

    def edited() -> None:
        _edit(repo / "fit.py", "\ndef forward(net, xb):", "\n@torch.no_grad()\ndef forward(net, xb):")

    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(no_grad_on_forward_helper_uncommitted, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "bike-demand: fit.py"), between=edited)


def personal_overrides_in_codespace_home_metric(d: Path) -> Incident:
    """The Codespace's dotfiles repository installs ``~/.config/bikeshare/overrides.yaml`` with
    ``max_lr: 0.05`` (for quick experiments), outside the project's git; the pod's home has
    none. Both runs fit; the training loss and the MAE move. Kind: metric."""
    py, repo = _demand(d)
    good, bad = _shells(d, venv=_venv_of(py))
    personal = Path(bad["HOME"]) / ".config" / "bikeshare" / "overrides.yaml"
    _write(personal, "# quick experiments (dotfiles)\nmax_lr: 0.05\n")
    argv = (py, "fit.py")
    return _incident(personal_overrides_in_codespace_home_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {personal.resolve()}"))


def infer_device_cuda_in_map_location(d: Path) -> Incident:
    """The Codespace's devcontainer.json ``remoteEnv`` carries ``INFER_DEVICE=cuda`` from the
    GPU machine type it was first made on; this Codespace has no GPU and the evaluation's
    ``torch.load(map_location=...)`` refuses (RuntimeError: Attempting to deserialize object on
    a CUDA device but torch.cuda.is_available() is False). Kind: fail."""
    py, repo = _demand(d, checkpoint=True)
    good, bad = _shells(d, bad={"INFER_DEVICE": "cuda"}, venv=_venv_of(py))
    argv = (py, "evaluate.py")
    return _incident(infer_device_cuda_in_map_location, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "INFER_DEVICE"))


# --------------------------------------------------------------------------- model folder


MAKE_BERT = """
import sys, torch
from transformers import BertConfig, BertForSequenceClassification
torch.manual_seed(0)
cfg = BertConfig(vocab_size=300, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=64, max_position_embeddings=64, pad_token_id=0, num_labels=4)
BertForSequenceClassification(cfg).save_pretrained(sys.argv[1])
"""

INTENT_EVAL = """
    \"\"\"Evaluate the sensor-ops intent classifier (a BERT folder, --model-path) on held-out
    operator messages; byte-level ids (byte + 4, [CLS]=1, [SEP]=2, pad 0), 48 positions.\"\"\"
    import argparse
    import json

    import torch
    from transformers import AutoModelForSequenceClassification


    def encode(text, length=48):
        ids = [1] + [b + 4 for b in text.encode()][: length - 2] + [2]
        return ids + [0] * (length - len(ids))


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        torch.set_num_threads(2)
        model = AutoModelForSequenceClassification.from_pretrained(a.model_path).eval()
        rows = [json.loads(line) for line in open("data/messages.jsonl")]
        ids = torch.tensor([encode(r["text"]) for r in rows])
        labels = torch.tensor([r["intent"] for r in rows])
        with torch.no_grad():
            out = model(input_ids=ids, attention_mask=(ids != 0).long(), labels=labels)
        acc = (out.logits.argmax(1) == labels).float().mean().item()
        print(f"messages={len(rows)} loss={out.loss.item():.5f} accuracy={acc:.4f}")


    if __name__ == "__main__":
        main()
    """


def _messages() -> str:
    acts = ["recalibrate", "silence alarm on", "swap filter in", "show readings of"]
    sensors = ["PM-17 Harbour Rd", "NO2-04 Ring Av", "O3-22 Park Lane", "PM-09 Mill St"]
    return "".join(json.dumps({"text": f"please {acts[i % 4]} {sensors[(i * 3) % 4]} "
                                       f"before {6 + i % 12}:00, ticket #{1000 + i * 7}",
                               "intent": i % 4}) + "\n" for i in range(80))


def _intent(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers")
    repo = _repo(d / "ops-intent", {"evaluate.py": INTENT_EVAL, "data/messages.jsonl": _messages()})
    model = d / "models" / "ops-intent-bert"
    _build(py, MAKE_BERT, str(model))
    return py, repo, model


def vocab_size_from_pruned_tokenizer(d: Path) -> Incident:
    """Between the runs the model folder's config.json (outside git) got ``"vocab_size": 120``
    from a colleague's pruned-tokenizer experiment, copied over the folder; the saved word
    embedding has 300 rows and loading it into the smaller model fails (or the byte ids past
    119 index past the table). Kind: fail."""
    py, repo, model = _intent(d)

    def rewritten() -> None:
        cfg = json.loads((model / "config.json").read_text())
        cfg["vocab_size"] = 120
        (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")

    good, bad = _shells(d, bad_in="flyte", venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(vocab_size_from_pruned_tokenizer, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: vocab_size"),
                     between=rewritten)


def ops_intent_eval_noise(d: Path) -> Incident:
    """The intent classifier's evaluation, the same folder and messages, from the Flyte pod and
    from the Codespace. Nothing planted. Kind: noise."""
    py, repo, model = _intent(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(ops_intent_eval_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- scikit-learn forest


FOREST = """
    \"\"\"Classify compressor failures within 48 h from the last day's sensor summary with a
    random forest (--n-estimators, --max-depth); prints the validation balanced accuracy.\"\"\"
    import argparse
    import csv

    from sklearn.ensemble import RandomForestClassifier
    from sklearn.metrics import balanced_accuracy_score


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--n-estimators", type=int, default=120)
        p.add_argument("--max-depth", type=int, default=None)
        a = p.parse_args()
        rows = list(csv.DictReader(open("data/compressors.csv")))
        cols = ["vib_rms", "temp_max", "pressure_drop", "runtime_h", "starts"]
        x = [[float(r[c]) for c in cols] for r in rows]
        y = [int(r["failed"]) for r in rows]
        clf = RandomForestClassifier(n_estimators=a.n_estimators, max_depth=a.max_depth,
                                     random_state=0, n_jobs=1).fit(x[:500], y[:500])
        score = balanced_accuracy_score(y[500:], clf.predict(x[500:]))
        print(f"trees={a.n_estimators} val_balanced_accuracy={score:.4f}")


    if __name__ == "__main__":
        main()
    """


def _compressors() -> str:
    rng, rows = random.Random(19), []
    for i in range(700):
        vib, temp = rng.gauss(2.0, 0.6), rng.gauss(70, 8)
        drop, hours, starts = rng.gauss(0.4, 0.15), rng.uniform(0, 9000), rng.randrange(0, 40)
        risk = (vib > 2.6) + (temp > 80) * (drop > 0.5) + (hours > 7000) * (starts > 25)
        failed = int(risk + (rng.random() < 0.12) >= 1 and rng.random() < 0.85)
        rows.append(f"c{i},{vib:.3f},{temp:.2f},{drop:.3f},{hours:.0f},{starts},{failed}")
    return "\n".join(["id,vib_rms,temp_max,pressure_drop,runtime_h,starts,failed", *rows]) + "\n"


def _forest(d: Path) -> tuple[str, Path]:
    py = python_with("sklearn")
    return py, _repo(d / "compressor-failure", {"train.py": FOREST,
                                                "data/compressors.csv": _compressors()})


def max_depth_from_quickstart_metric(d: Path) -> Incident:
    """The Flyte launch plan's inputs carry ``--max-depth 3``, from the library's quickstart
    the task was first written from; the shallow trees miss the interactions. Both runs train;
    the balanced accuracy moves. Kind: metric."""
    py, repo = _forest(d)
    good, bad = _shells(d, bad_in="flyte", venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(max_depth_from_quickstart_metric, Launch(argv, good, repo),
                     Launch((*argv, "--max-depth", "3"), bad, repo), ("command", "--max-depth"))


def compressor_forest_noise(d: Path) -> Incident:
    """The compressor forest, the same code, data and options, from the Codespace and from the
    Flyte pod. Nothing planted. Kind: noise."""
    py, repo = _forest(d)
    good, bad = _shells(d, bad_in="flyte", venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(compressor_forest_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- team package


WXFEAT = {
    "1.4.2": '''
        """The forecasting team's weather features (1.4): relative humidity in percent."""
        import math


        def dew_point(temp_c, rh):
            g = math.log(rh / 100) + 17.62 * temp_c / (243.12 + temp_c)
            return 243.12 * g / (17.62 - g)
        ''',
    "1.5.0": '''
        """The forecasting team's weather features (1.5: relative humidity as a fraction, like
        the rest of the API; values above 1 are clipped)."""
        import math


        def dew_point(temp_c, rh):
            rh = min(max(rh, 1e-3), 1.0)
            g = math.log(rh) + 17.62 * temp_c / (243.12 + temp_c)
            return 243.12 * g / (17.62 - g)
        ''',
}

FOG = """
    \"\"\"Flag dawn fog at the airport from the 03:00 observation: fog when the dew point
    depression (wxfeat.dew_point) is under --spread degrees; prints the hit rate.\"\"\"
    import csv

    from wxfeat import dew_point


    def main():
        rows = list(csv.DictReader(open("data/dawn_obs.csv")))
        hits = 0
        for r in rows:
            temp = float(r["temp_c"])
            spread = temp - dew_point(temp, float(r["rh_pct"]))
            hits += (spread < 2.0) == (r["fog"] == "1")
        print(f"nights={len(rows)} accuracy={hits / len(rows):.4f}")


    if __name__ == "__main__":
        main()
    """


def _dawn_obs() -> str:
    rng, rows = random.Random(7), []
    for i in range(300):
        temp, rh = rng.uniform(-2, 16), rng.uniform(55, 100)
        fog = int(rh > 91 and rng.random() < 0.9 or rng.random() < 0.04)
        rows.append(f"2026-{1 + i % 12:02d}-{1 + i % 28:02d},{temp:.1f},{rh:.1f},{fog}")
    return "\n".join(["date,temp_c,rh_pct,fog", *rows]) + "\n"


def wxfeat_minor_in_codespace_venv(d: Path) -> Incident:
    """The fog flag calls ``wxfeat.dew_point(temp, rh)``. The Codespace's postCreateCommand ran
    ``pip install -U -r requirements.txt`` (unpinned) and got wxfeat 1.5.0, which takes the
    humidity as a fraction and clips the percent the script passes to 1; the task image has
    1.4.2. Both runs flag; the accuracy moves. Kind: metric."""
    repo = _repo(d / "fog-flag", {"flag.py": FOG, "data/dawn_obs.csv": _dawn_obs()})
    pod_py = _venv(d / "venvs" / "task-image", {"wxfeat": ("1.4.2", WXFEAT["1.4.2"])})
    space_py = _venv(d / "venvs" / "codespace", {"wxfeat": ("1.5.0", WXFEAT["1.5.0"])})
    good, bad = _shells(d)
    good = {**good, "PATH": f"{pod_py.parent}:{good['PATH']}"}
    bad = {**bad, "VIRTUAL_ENV": str(space_py.parent.parent),
           "PATH": f"{space_py.parent}:{bad['PATH']}"}
    argv = ("python", "flag.py")
    return _incident(wxfeat_minor_in_codespace_venv, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "wxfeat"))


# --------------------------------------------------------------------------- determinism


DENOISER = """
    \"\"\"Train the vibration-signal denoiser (a SegNet-style 1-D conv net: max-pool with
    indices, max-unpool back). DETERMINISTIC=1 turns on torch's deterministic algorithms (the
    reproducibility audit); prints the validation MSE.\"\"\"
    import os

    import torch


    class Denoiser(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = torch.nn.Conv1d(1, 8, 5, padding=2)
            self.pool = torch.nn.MaxPool1d(2, return_indices=True)
            self.unpool = torch.nn.MaxUnpool1d(2)
            self.dec = torch.nn.Conv1d(8, 1, 5, padding=2)

        def forward(self, x):
            h, where = self.pool(torch.relu(self.enc(x)))
            return self.dec(self.unpool(h, where))


    def main():
        if os.environ.get("DETERMINISTIC", "0") == "1":
            torch.use_deterministic_algorithms(True)
        torch.set_num_threads(2)
        g = torch.Generator().manual_seed(4)
        t = torch.linspace(0, 12.566, 128)
        clean = torch.sin(t * torch.rand(300, 1, generator=g) * 4).unsqueeze(1)
        noisy = clean + 0.3 * torch.randn(clean.shape, generator=g)
        torch.manual_seed(0)
        net = Denoiser()
        opt = torch.optim.Adam(net.parameters(), lr=0.01)
        for _ in range(40):
            loss = torch.nn.functional.mse_loss(net(noisy[:240]), clean[:240])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            val = torch.nn.functional.mse_loss(net(noisy[240:]), clean[240:]).item()
        print(f"train_mse={loss.item():.5f} val_mse={val:.5f}")


    if __name__ == "__main__":
        main()
    """


def deterministic_audit_on_max_unpool(d: Path) -> Incident:
    """The Flyte task's environment sets ``DETERMINISTIC=1`` (the platform's reproducibility
    audit for registered tasks); torch has no deterministic CPU implementation of max-unpool
    and the first forward stops (RuntimeError: max_unpooling2d_forward_out does not have a
    deterministic implementation, but you set 'torch.use_deterministic_algorithms(True)').
    Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "signal-denoiser", {"train.py": DENOISER})
    good, bad = _shells(d, bad={"DETERMINISTIC": "1"}, bad_in="flyte", venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(deterministic_audit_on_max_unpool, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "DETERMINISTIC"))


#: The twenty-first fresh batch, in the order it was written. Never tuned on.
FRESH21 = [
    station_vocab_from_shard_uncommitted_job, lr_schedule_cosine_from_task_metric_job,
    dropout_typo_uncommitted_both_fail_job, pm25_ddp_job_noise, epochs_option_past_one_cycle,
    pct_start_typo_uncommitted_both_fail, pythonioencoding_ascii_in_task_image,
    no_grad_on_forward_helper_uncommitted, personal_overrides_in_codespace_home_metric,
    infer_device_cuda_in_map_location, vocab_size_from_pruned_tokenizer, ops_intent_eval_noise,
    max_depth_from_quickstart_metric, compressor_forest_noise, wxfeat_minor_in_codespace_venv,
    deterministic_audit_on_max_unpool,
]

if __name__ == "__main__":  # build one incident and run its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH21 if b.__name__ in sys.argv[1:]] or FRESH21
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh21-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
