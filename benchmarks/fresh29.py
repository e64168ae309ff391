"""A twenty-ninth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py and benchmarks/fresh28.py, for their format), how they are run and
scored (benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot reference
(docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job captures
one snapshot per rank. They form the corpus's ``fresh29`` half; report it, never change the
ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a pipeline leak detector (an MLP
  over acoustic band energies) trained with DDP: ``SUBGROUP_SIZE=4`` from the bare-metal
  runner's config.toml against a job of two ranks (fail), ``--optimizer adamw`` in the CI job's
  script line (metric), ``RUN_NAME`` set from a branch name with a slash on top of a quality gate
  the good job already misses (both fail), and the same job from both shells (noise);
- c10d and torch on the CPU: a single-process scoring run whose rendezvous
  ``SCORE_INIT_METHOD`` the notebook's settings point at another service's ``tcp://`` store
  (fail), a byte-level language model whose
  uncommitted edit ties its output layer to its embedding before ``safetensors`` saves it
  (fail), and the same model reading a git-ignored ``lm.local.yaml`` only in one checkout
  (metric);
- a small BERT classifier folder under transformers: ``add_cross_attention`` edited to true
  (fail), ``is_decoder`` edited to true (metric), and its evaluation from both shells (noise);
- a team package ``leakfeat`` a major version apart in the two venvs (fail);
- a scikit-learn random forest over pump telemetry: ``max_features: auto`` in the git-ignored
  params.json (fail), ``CLIP_QUANTILE`` exported by the notebook's start script (metric), an
  uncommitted edit dropping ``handle_unknown="ignore"`` (fail), ``--n-estimators 0`` on top of a
  missed gate (both fail) and the same fit from both shells (noise).

The shells are :func:`runner_or_saturn_shell`: shell 0 a GitLab Runner shell executor on a
bare-metal GPU box (non-interactive bash as ``gitlab-runner``: ``CI_*``, ``GITLAB_*``,
``FF_*``, the build folder under /home/gitlab-runner/builds, the runner's ``environment`` from
config.toml: ``NCCL_*``, ``CUDA_*``, ``TORCH_*``, ``OMP_*``, ``HF_*``), shell 1 a terminal in a
Saturn Cloud JupyterLab resource (``jovyan``, ``SATURN_*``, ``JUPYTER_*``/``JPY_*``, the image's
conda ``CONDA_*``, the start script's ``HF_*``/``TORCH_*``/``OMP_*``). The thread counts that
change float reductions are pinned alike. The planted side is either: some incidents work in
the CI job and fail in the notebook terminal, others the reverse.

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

CI_JOB = "8812734"
SATURN_HOST = "jupyter-mokafor-leak-detect-7c9d5b8f4-xq2lz"


def runner_or_saturn_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 a GitLab
    Runner shell executor on a bare-metal GPU box, 1 a terminal in a Saturn Cloud JupyterLab
    resource (``venv`` the interpreter's virtual environment, first on ``PATH``); each with its
    own tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    if n % 2 == 0:  # gitlab-runner run --working-directory /home/gitlab-runner, shell executor
        build = f"{home}/builds/Hx7kQ2pz/0/pipeline-ml/leak-detect"
        env = {
            **common, "PATH": f"/usr/local/cuda-12.4/bin:{path}",
            "USER": "gitlab-runner", "LOGNAME": "gitlab-runner", "SHELL": "/bin/bash",
            "LANG": "en_US.UTF-8", "PWD": build, "SHLVL": "1", "HOSTNAME": "gpu-metal-03",
            "CI": "true", "GITLAB_CI": "true", "CI_SERVER": "yes", "CI_JOB_ID": CI_JOB,
            "CI_JOB_NAME": "train:smoke", "CI_JOB_STAGE": "train", "CI_PIPELINE_ID": "1290457",
            "CI_PIPELINE_SOURCE": "push",
            "CI_COMMIT_SHA": "5f0d2c7e9b41a3d8c6e2f1a0b9d8c7e6f5a4b3c2",
            "CI_COMMIT_SHORT_SHA": "5f0d2c7e", "CI_COMMIT_REF_NAME": "main",
            "CI_COMMIT_BRANCH": "main", "CI_DEFAULT_BRANCH": "main",
            "CI_PROJECT_DIR": build, "CI_PROJECT_PATH": "pipeline-ml/leak-detect",
            "CI_PROJECT_NAME": "leak-detect", "CI_PROJECT_ID": "4417",
            "CI_BUILDS_DIR": f"{home}/builds", "CI_CONCURRENT_ID": "0",
            "CI_CONCURRENT_PROJECT_ID": "0", "CI_RUNNER_ID": "212",
            "CI_RUNNER_DESCRIPTION": "gpu-metal-03 (8x A100, shell)",
            "CI_RUNNER_TAGS": "[\"gpu\", \"metal\"]",
            "CI_RUNNER_EXECUTABLE_ARCH": "linux/amd64", "CI_RUNNER_VERSION": "17.6.0",
            "CI_SERVER_URL": "https://gitlab.example.com", "CI_SERVER_HOST": "gitlab.example.com",
            "CI_API_V4_URL": "https://gitlab.example.com/api/v4", "GITLAB_USER_LOGIN": "mokafor",
            "GITLAB_USER_ID": "311", "FF_USE_FASTZIP": "true", "FF_SCRIPT_SECTIONS": "true",
            "GIT_STRATEGY": "fetch", "GIT_DEPTH": "20",
            # [[runners]] environment = [...] in /etc/gitlab-runner/config.toml
            "CUDA_HOME": "/usr/local/cuda-12.4", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7",
            "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_MODULE_LOADING": "LAZY",
            "NCCL_SOCKET_IFNAME": "enp65s0f0", "NCCL_IB_DISABLE": "0", "NCCL_P2P_LEVEL": "NVL",
            "NCCL_DEBUG": "WARN", "NCCL_NVLS_ENABLE": "0", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
            "TORCH_NCCL_DUMP_ON_TIMEOUT": "1", "TORCH_CUDNN_V8_API_ENABLED": "1",
            "OMP_PROC_BIND": "close", "HF_HOME": "/data/cache/huggingface",
            "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "1",
            "PIP_CACHE_DIR": "/data/cache/pip",
        }
    else:  # a terminal tab in the Saturn Cloud JupyterLab resource "leak-detect"
        env = {
            **common, "PATH": f"/opt/saturncloud/envs/saturn/bin:/opt/saturncloud/bin:{path}",
            "USER": "jovyan", "LOGNAME": "jovyan", "SHELL": "/bin/bash", "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8", "TERM": "xterm-256color", "HOSTNAME": SATURN_HOST, "SHLVL": "1",
            "PWD": f"{home}/workspace/leak-detect", "JUPYTER_SERVER_ROOT": f"{home}/workspace",
            "JUPYTER_SERVER_URL": "http://localhost:8888/", "JPY_SESSION_NAME": "terminal-1",
            "JPY_PARENT_PID": "57", "JUPYTERHUB_SERVICE_PREFIX": "/user/mokafor/leak-detect/",
            "JUPYTERHUB_API_URL": "http://hub.saturn.svc:8081/hub/api",
            "JUPYTERHUB_USER": "mokafor",
            "CONDA_DEFAULT_ENV": "saturn", "CONDA_PREFIX": "/opt/saturncloud/envs/saturn",
            "CONDA_SHLVL": "1", "CONDA_EXE": "/opt/saturncloud/bin/conda",
            "SATURN_BASE_URL": "https://app.community.saturnenterprise.io",
            "SATURN_RESOURCE_ID": "1f3a9c0e7d2b44c8a6b5e4d3c2b1a090",
            "SATURN_RESOURCE_NAME": "leak-detect",
            "SATURN_RESOURCE_TYPE": "jupyter", "SATURN_ORG_ID": "8e7d6c5b4a3928170f6e5d4c3b2a1908",
            "SATURN_IMAGE": "saturncloud/saturn-python-pytorch:2025.06.01",
            "SATURN_JUPYTER_PORT": "8888",
            "KUBERNETES_SERVICE_HOST": "10.100.0.1", "KUBERNETES_SERVICE_PORT": "443",
            # the resource's start script and its "Environment Variables" tab
            "HF_HOME": "/home/jovyan/shared/mokafor/hf", "HF_HUB_ENABLE_HF_TRANSFER": "0",
            "TOKENIZERS_PARALLELISM": "false", "TORCH_HOME": "/home/jovyan/shared/mokafor/torch",
            "TORCH_SHOW_CPP_STACKTRACES": "1", "OMP_WAIT_POLICY": "PASSIVE",
            "CUDA_VISIBLE_DEVICES": "0", "NCCL_P2P_DISABLE": "1",
            "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        }
    if venv:  # `source venv/bin/activate` in the job's before_script or in ~/.bashrc
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "saturn", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the Saturn Cloud terminal (``bad_in="saturn"``) or from the GitLab CI job (``"ci"``)."""
    ci = runner_or_saturn_shell(0, d / "home" / "gitlab-runner", venv)
    saturn = runner_or_saturn_shell(1, d / "home" / "jovyan", venv)
    first, second = (ci, saturn) if bad_in == "saturn" else (saturn, ci)
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


LEAK_DDP = """
    \"\"\"Train the pipeline leak detector with DDP over gloo: each sample is the energy in 24
    acoustic bands from a hydrophone on the main; an MLP (configs/leak.yaml) says whether a
    leak is near. Ranks are split into groups of SUBGROUP_SIZE (default 2) that average their
    validation scores; rank 0 prints each epoch's loss and the validation F1, saves the weights
    under runs/RUN_NAME (default "local") and, with --min-f1, refuses a model below it.\"\"\"
    import argparse
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


    def bands(n=1600, seed=31):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, 24, generator=g).abs()
        y = (torch.rand(n, generator=g) < 0.3).long()
        hiss = torch.exp(-((torch.arange(24.0) - 15) ** 2) / 8)
        x = x + y.unsqueeze(1) * hiss * (0.6 + torch.rand(n, 1, generator=g))
        return torch.log1p(x), y


    def f1(pred, y):
        tp = ((pred == 1) & (y == 1)).sum().item()
        fp = ((pred == 1) & (y == 0)).sum().item()
        fn = ((pred == 0) & (y == 1)).sum().item()
        return 2 * tp / max(2 * tp + fp + fn, 1)


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--optimizer", choices=["sgd", "adamw"], default="sgd")
        p.add_argument("--min-f1", type=float, default=None)
        a = p.parse_args()
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        group, _ = dist.new_subgroups(group_size=int(os.environ.get("SUBGROUP_SIZE", "2")))
        cfg = yaml.safe_load(open("configs/leak.yaml"))
        x, y = bands()
        train = TensorDataset(x[:1200], y[:1200])
        sampler = DistributedSampler(train, num_replicas=world, rank=rank, seed=cfg["seed"])
        loader = DataLoader(train, batch_size=cfg["batch_size"] // world, sampler=sampler)
        torch.manual_seed(cfg["seed"])
        net = torch.nn.Sequential(torch.nn.Linear(24, cfg["hidden"]), torch.nn.ReLU(),
                                  torch.nn.Linear(cfg["hidden"], 2))
        model = DDP(net)
        if a.optimizer == "adamw":
            opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"] / 10, weight_decay=0.01)
        else:
            opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9)
        for epoch in range(cfg["epochs"]):
            sampler.set_epoch(epoch)
            total, steps = 0.0, 0
            for xb, yb in loader:
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
            score = torch.tensor([f1(net(x[1200:]).argmax(1), y[1200:])])
        dist.all_reduce(score, group=group)
        score = score.item() / dist.get_world_size(group)
        if rank == 0:
            print(f"val_f1={score:.4f} leaks={int(y[1200:].sum())}")
            folder = os.path.join("runs", os.environ.get("RUN_NAME", "local"))
            torch.save(net.state_dict(), f"{folder}/leak.pt")
            if a.min_f1 is not None and score < a.min_f1:
                raise RuntimeError(f"val_f1={score:.4f} is below --min-f1 {a.min_f1}: "
                                   "the field units keep the deployed detector")
        dist.barrier()
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

LEAK_YAML = "# leak detector, 24 hydrophone bands\nhidden: 32\nlr: 0.05\nbatch_size: 64\n" \
            "epochs: 3\nseed: 5\n"


def _leak_job(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    repo = _repo(d / "leak-detect", {"train.py": LEAK_DDP, "configs/leak.yaml": LEAK_YAML},
                 "__pycache__/\nruns/\n")
    (repo / "runs" / "local").mkdir(parents=True, exist_ok=True)
    return py, repo


def subgroup_size_from_runner_config_job(d: Path) -> Incident:
    """Job against job. The bare-metal runner's config.toml has ``SUBGROUP_SIZE=4`` in its
    ``environment`` (set for the nightly eight-rank job, whose validation averages in groups of
    four); the two-rank smoke job's ``new_subgroups`` refuses it on every rank (ValueError: The
    arg 'group_size' (4) must not exceed the world size (2)). The Saturn terminal has no such
    setting. Kind: fail."""
    py, repo = _leak_job(d)
    good, bad = _shells(d, bad={"SUBGROUP_SIZE": "4"}, bad_in="ci", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(subgroup_size_from_runner_config_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "SUBGROUP_SIZE"))


def optimizer_adamw_in_ci_script_metric_job(d: Path) -> Incident:
    """Job against job. The CI job's script line in .gitlab-ci.yml passes ``--optimizer adamw``
    (added for the nightly run); the notebook runs the default SGD. Both jobs train; the
    losses and the validation F1 move. Kind: metric."""
    py, repo = _leak_job(d)
    good, bad = _shells(d, bad_in="ci", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(optimizer_adamw_in_ci_script_metric_job, Launch(argv, good, repo),
                     Launch((*argv, "--optimizer", "adamw"), bad, repo), ("command", "--optimizer"))


def run_name_from_branch_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--min-f1 0.999``, which this detector never
    reaches: the good job (RUN_NAME unset in the notebook) trains, saves under runs/local and
    rank 0 keeps the deployed model. The CI job sets ``RUN_NAME=$CI_COMMIT_REF_NAME`` and the
    branch is ``feature/hiss-band``: torch.save finds no runs/feature/hiss-band folder
    (RuntimeError: Parent directory runs/feature/hiss-band does not exist). Kind: both-fail."""
    py, repo = _leak_job(d)
    good, bad = _shells(d, bad={"RUN_NAME": "feature/hiss-band",
                                "CI_COMMIT_REF_NAME": "feature/hiss-band",
                                "CI_COMMIT_BRANCH": "feature/hiss-band"},
                        bad_in="ci", venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--min-f1", "0.999")
    return _incident(run_name_from_branch_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "RUN_NAME"))


def leak_ddp_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the GitLab CI job and from the Saturn
    Cloud terminal: each job its own rendezvous and rank processes, the shells their own CI_*,
    SATURN_*, JUPYTER*, CONDA_*, NCCL_*, CUDA_* and HF_* variables. Nothing planted. Kind:
    noise."""
    py, repo = _leak_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(leak_ddp_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- c10d and a language model


SCORE_RDZV = """
    \"\"\"Score the leak detector's alarm log with the team's distributed scoring helpers, on one
    process: the process group rendezvous at SCORE_INIT_METHOD (default a file under /tmp), so
    that the notebook and the CI job share one code path with the multi-node scorer.\"\"\"
    import os
    from datetime import timedelta

    import torch
    import torch.distributed as dist


    def main():
        torch.set_num_threads(2)
        scratch = f"/tmp/leak-score-{os.getpid()}.rdzv"
        init = os.environ.get("SCORE_INIT_METHOD", f"file://{scratch}")
        dist.init_process_group("gloo", init_method=init, rank=0, world_size=1,
                                timeout=timedelta(seconds=10))
        g = torch.Generator().manual_seed(14)
        alarms = torch.rand(500, generator=g)
        confirmed = (alarms + 0.3 * torch.randn(500, generator=g)) > 0.7
        hits = torch.tensor([float(((alarms > 0.6) & confirmed).sum()), float(confirmed.sum())])
        dist.all_reduce(hits)
        print(f"alarms={int((alarms > 0.6).sum())} recall={hits[0].item() / hits[1].item():.4f}")
        dist.destroy_process_group()
        if os.path.exists(scratch):
            os.remove(scratch)


    if __name__ == "__main__":
        main()
    """


def score_init_method_from_saturn_env_tab(d: Path) -> Incident:
    """The Saturn resource's "Environment Variables" tab sets
    ``SCORE_INIT_METHOD=tcp://leak-scorer-0.saturn.svc:29400`` (the multi-node scorer's
    service, for the team's Dask deployment); the one-process scoring run dials it as its c10d
    store and gives up (DistNetworkError: The client socket has timed out after 10000ms while
    trying to connect to (leak-scorer-0.saturn.svc, 29400)). The CI job has no such variable and
    rendezvous through a file. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "alarm-score", {"score.py": SCORE_RDZV})
    good, bad = _shells(d, bad={"SCORE_INIT_METHOD": "tcp://leak-scorer-0.saturn.svc:29400"},
                        venv=_venv_of(py))
    argv = (py, "score.py")
    return _incident(score_init_method_from_saturn_env_tab, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "SCORE_INIT_METHOD"))


HISS_LM = """
    \"\"\"A byte-level language model of the field crews' leak reports: an embedding, a GRU and
    an output layer, trained for a few steps on data/reports.txt with the settings of lm.yaml
    (and lm.local.yaml over them, if the checkout has one); saves the weights with safetensors
    and prints the validation loss.\"\"\"
    import os

    import torch
    import torch.nn.functional as F
    import yaml
    from safetensors.torch import save_file


    class ReportLM(torch.nn.Module):
        def __init__(self, width):
            super().__init__()
            self.emb = torch.nn.Embedding(256, width)
            self.rnn = torch.nn.GRU(width, width, batch_first=True)
            self.out = torch.nn.Linear(width, 256, bias=False)

        def forward(self, ids):
            h, _ = self.rnn(self.emb(ids))
            return self.out(h)


    def batches(ids, context, start, stop):
        xs = [ids[i:i + context + 1] for i in range(start, stop - context - 1, context)]
        return torch.tensor(xs)


    def main():
        torch.set_num_threads(2)
        cfg = yaml.safe_load(open("lm.yaml"))
        if os.path.exists("lm.local.yaml"):
            cfg.update(yaml.safe_load(open("lm.local.yaml")))
        ids = list(open("data/reports.txt", "rb").read())
        cut = int(len(ids) * 0.8)
        train, val = batches(ids, cfg["context"], 0, cut), batches(ids, cfg["context"], cut, len(ids))
        torch.manual_seed(cfg["seed"])
        model = ReportLM(cfg["width"])
        opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
        for step in range(cfg["steps"]):
            b = train[(step * 8) % len(train):][:8]
            loss = F.cross_entropy(model(b[:, :-1]).reshape(-1, 256), b[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            val_loss = F.cross_entropy(model(val[:, :-1]).reshape(-1, 256), val[:, 1:].reshape(-1))
        os.makedirs("weights", exist_ok=True)
        save_file(model.state_dict(), "weights/report_lm.safetensors")
        print(f"train_loss={loss.item():.5f} val_loss={val_loss.item():.5f}")


    if __name__ == "__main__":
        main()
    """

LM_YAML = "# leak-report LM\nwidth: 32\ncontext: 48\nlr: 0.01\nsteps: 60\nseed: 8\n"


def _reports() -> str:
    pick = random.Random(29)
    what = ["hiss at valve", "wet soil over main", "pressure drop", "meter spinning",
            "sound of running water", "crew dispatched", "no leak found", "hydrant seep"]
    return "".join(f"WO-{pick.randint(1000, 9999)} zone {pick.randint(1, 12)}: "
                   f"{pick.choice(what)}, {pick.choice(what)}.\n" for _ in range(160))


def _report_lm(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml", "safetensors")
    return py, _repo(d / "report-lm", {"train_lm.py": HISS_LM, "lm.yaml": LM_YAML,
                                       "data/reports.txt": _reports()},
                     "__pycache__/\nweights/\nlm.local.yaml\n")


def tied_output_uncommitted_before_safetensors(d: Path) -> Incident:
    """Between the runs train_lm.py (in git) got ``self.out.weight = self.emb.weight`` in the
    model, not committed (weight tying, to halve the parameters); training runs, then
    safetensors refuses the shared tensors (RuntimeError: Some tensors share memory, this will
    lead to duplicate memory on disk ...). Kind: fail."""
    py, repo = _report_lm(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "train_lm.py")
    return _incident(tied_output_uncommitted_before_safetensors, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "report-lm: train_lm.py"),
                     between=lambda: _edit(repo / "train_lm.py",
                                           "self.out = torch.nn.Linear(width, 256, bias=False)\n",
                                           "self.out = torch.nn.Linear(width, 256, bias=False)\n"
                                           "        self.out.weight = self.emb.weight\n"))


def local_yaml_context_in_one_checkout_metric(d: Path) -> Incident:
    """Between the runs a git-ignored lm.local.yaml with ``context: 16`` (left from a quick
    experiment in the notebook's checkout) appeared beside lm.yaml; the model trains on shorter
    windows and both losses move. Kind: metric."""
    py, repo = _report_lm(d)
    good, bad = _shells(d, venv=_venv_of(py))
    local = repo / "lm.local.yaml"
    argv = (py, "train_lm.py")
    return _incident(local_yaml_context_in_one_checkout_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {local.resolve()}"),
                     between=lambda: _write(local, "# quick try in the notebook\ncontext: 16\n"))


# --------------------------------------------------------------------------- a BERT folder


MAKE_BERT = """
import sys
import torch
from transformers import BertConfig, BertForSequenceClassification
cfg = BertConfig(vocab_size=260, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                 num_attention_heads=4, max_position_embeddings=96, type_vocab_size=1,
                 pad_token_id=0, initializer_range=0.4, num_labels=2,
                 id2label={0: "routine", 1: "urgent"}, label2id={"routine": 0, "urgent": 1})
torch.manual_seed(41)
BertForSequenceClassification(cfg).save_pretrained(sys.argv[1])
"""

TRIAGE_EVAL = """
    \"\"\"Score the work-order triage classifier (--model-path) on data/orders.tsv (label, text):
    byte ids shifted by 4 (0 is padding), 64 at most; prints the loss and the accuracy.\"\"\"
    import argparse

    import torch
    import torch.nn.functional as F
    from transformers import BertForSequenceClassification


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        torch.set_num_threads(2)
        model = BertForSequenceClassification.from_pretrained(a.model_path).eval()
        rows = [line.rstrip("\\n").split("\\t") for line in open("data/orders.tsv")]
        labels = torch.tensor([model.config.label2id[r[0]] for r in rows])
        ids = torch.zeros(len(rows), 64, dtype=torch.long)
        for i, (_, text) in enumerate(rows):
            b = [c + 4 for c in text.encode()[:64]]
            ids[i, :len(b)] = torch.tensor(b)
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=(ids > 0).long()).logits
        loss = F.cross_entropy(logits, labels).item()
        acc = (logits.argmax(1) == labels).float().mean().item()
        print(f"orders={len(rows)} loss={loss:.5f} accuracy={acc:.4f}")


    if __name__ == "__main__":
        main()
    """


def _orders() -> str:
    pick = random.Random(92)
    urgent = ["main break flooding street", "gas smell near valve", "sinkhole over pipe"]
    routine = ["meter read request", "repaint hydrant", "replace lid on box"]
    rows = []
    for i in range(120):
        label = "urgent" if i % 3 == 0 else "routine"
        text = pick.choice(urgent if label == "urgent" else routine)
        street = pick.choice(["Elm", "Oak", "Pine"])
        rows.append(f"{label}\t{text} at {pick.randint(1, 999)} {street} St")
    return "\n".join(rows) + "\n"


def _bert(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers")
    repo = _repo(d / "order-triage", {"evaluate.py": TRIAGE_EVAL, "data/orders.tsv": _orders()})
    model = d / "models" / "triage-bert"
    _build(py, MAKE_BERT, str(model))
    return py, repo, model


def _set_field(model: Path, field: str, value: object) -> None:
    cfg = json.loads((model / "config.json").read_text())
    cfg[field] = value
    (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def add_cross_attention_edited_in_model_folder(d: Path) -> Incident:
    """Between the runs the model folder's config.json (outside git) got
    ``"add_cross_attention": true`` (copied from the encoder-decoder summariser's config);
    transformers refuses to build an encoder with cross-attention (ValueError: ... should be
    used as a decoder model if cross attention is added). Kind: fail."""
    py, repo, model = _bert(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(add_cross_attention_edited_in_model_folder, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: add_cross_attention"),
                     between=lambda: _set_field(model, "add_cross_attention", True))


def is_decoder_edited_metric(d: Path) -> Incident:
    """Between the runs the model folder's config.json got ``"is_decoder": true`` (by the same
    copy); every weight still loads, the attention becomes causal and the loss and the accuracy
    move. Kind: metric."""
    py, repo, model = _bert(d)
    good, bad = _shells(d, bad_in="ci", venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(is_decoder_edited_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: is_decoder"),
                     between=lambda: _set_field(model, "is_decoder", True))


def triage_bert_noise(d: Path) -> Incident:
    """The work-order triage evaluation, the same model folder, code and data, from the GitLab
    CI job and from the Saturn Cloud terminal. Nothing planted. Kind: noise."""
    py, repo, model = _bert(d)
    good, bad = _shells(d, bad_in="ci", venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(triage_bert_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- a team package


LEAKFEAT = {
    "1.6.2": '''
        """Acoustic features of hydrophone records (1.6)."""


        def band_ratio(bands, lo, hi):
            return sum(bands[lo:hi]) / max(sum(bands), 1e-9)
        ''',
    "2.0.0": '''
        """Acoustic features of hydrophone records (2.0): bands are named, not indexed."""
        NAMES = [f"b{i:02d}" for i in range(24)]


        def band_ratio(bands, *, band):
            i = NAMES.index(band)
            return bands[i] / max(sum(bands), 1e-9)
        ''',
}

HISS_REPORT = """
    \"\"\"The nightly hiss report: the share of energy in bands 12-18 of each hydrophone's record
    (data/records.csv: sensor, then 24 band energies), with leakfeat's band_ratio.\"\"\"
    import csv

    from leakfeat import band_ratio


    def main():
        ratios = {}
        for row in csv.reader(open("data/records.csv")):
            ratios[row[0]] = band_ratio([float(v) for v in row[1:]], 12, 18)
        flagged = sorted(s for s, r in ratios.items() if r > 0.3)
        mean = sum(ratios.values()) / len(ratios)
        print(f"sensors={len(ratios)} flagged={len(flagged)} mean_ratio={mean:.4f}")


    if __name__ == "__main__":
        main()
    """


def _records() -> str:
    pick = random.Random(61)
    lines = []
    for i in range(40):
        loud = 2.5 if i % 5 == 0 else 1.0
        values = [pick.uniform(0.1, 2.0) * (loud if 12 <= b < 18 else 1.0) for b in range(24)]
        lines.append(f"H{i:03d}," + ",".join(f"{v:.3f}" for v in values) + "\n")
    return "".join(lines)


def leakfeat_major_in_saturn_image_venv(d: Path) -> Incident:
    """The hiss report calls ``leakfeat.band_ratio(bands, lo, hi)``. The venv built on the
    Saturn resource from the unpinned requirements got leakfeat 2.0.0, whose band_ratio takes a
    keyword band name (TypeError: band_ratio() takes 1 positional argument but 3 were given);
    the runner's venv has 1.6.2. Kind: fail."""
    repo = _repo(d / "hiss-report", {"hiss_report.py": HISS_REPORT, "data/records.csv": _records()})
    envs = {}
    for side, version in (("ci", "1.6.2"), ("saturn", "2.0.0")):
        py = _venv(d / "venvs" / side, {"leakfeat": (version, LEAKFEAT[version]),
                                        "tzdata": ("2025.2", None)})
        envs[side] = str(py.parent.parent)
    good, bad = _shells(d)
    good = {**good, "VIRTUAL_ENV": envs["ci"], "PATH": f"{envs['ci']}/bin:{good['PATH']}"}
    bad = {**bad, "VIRTUAL_ENV": envs["saturn"], "PATH": f"{envs['saturn']}/bin:{bad['PATH']}"}
    argv = ("python", "hiss_report.py")
    return _incident(leakfeat_major_in_saturn_image_venv, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "leakfeat"))


# --------------------------------------------------------------------------- a random forest


PUMP_FIT = """
    \"\"\"Which booster pumps will fail within 30 days: pump telemetry (data/pumps.csv), the
    numeric columns clipped at their CLIP_QUANTILE (default 0.99) quantile, the station one-hot,
    then a random forest with the settings of the git-ignored params.json. --n-estimators
    overrides the forest's size; --min-recall refuses to publish a weaker model.\"\"\"
    import argparse
    import json
    import os

    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.metrics import recall_score, roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--n-estimators", type=int, default=None)
        p.add_argument("--min-recall", type=float, default=None)
        a = p.parse_args()
        params = json.load(open("params.json"))
        if a.n_estimators is not None:
            params["n_estimators"] = a.n_estimators
        frame = pd.read_csv("data/pumps.csv")
        y = frame.pop("failed")
        numeric = ["vibration", "temp_c", "amps", "hours"]
        q = float(os.environ.get("CLIP_QUANTILE", "0.99"))
        train, test = frame.iloc[:450].copy(), frame.iloc[450:].copy()
        caps = train[numeric].quantile(q)
        train[numeric] = train[numeric].clip(upper=caps, axis=1)
        test[numeric] = test[numeric].clip(upper=caps, axis=1)
        prep = ColumnTransformer([("station", OneHotEncoder(handle_unknown="ignore"), ["station"])],
                                 remainder="passthrough")
        model = make_pipeline(prep, RandomForestClassifier(n_jobs=1, **params))
        model.fit(train, y[:450])
        prob = model.predict_proba(test)[:, 1]
        recall = recall_score(y[450:], prob > 0.5)
        print(f"auc={roc_auc_score(y[450:], prob):.4f} recall={recall:.4f}")
        if a.min_recall is not None and recall < a.min_recall:
            raise SystemExit(f"recall={recall:.4f} is below --min-recall {a.min_recall}: not publishing")


    if __name__ == "__main__":
        main()
    """

PUMP_PARAMS = """{
  "n_estimators": 60,
  "max_depth": 6,
  "max_features": "sqrt",
  "random_state": 13
}
"""


def _pumps() -> str:
    pick = random.Random(47)
    rows = []
    for i in range(600):
        station = f"BS-{pick.randint(1, 9) if i < 450 else pick.randint(1, 11):02d}"
        vib, temp = pick.lognormvariate(0.3, 0.6), pick.gauss(48, 9)
        amps, hours = pick.gauss(31, 4), pick.uniform(100, 40000)
        risk = 0.9 * vib + 0.06 * (temp - 48) + 0.00004 * hours + pick.gauss(0, 0.7)
        rows.append(f"{station},{vib:.3f},{temp:.2f},{amps:.2f},{hours:.0f},{int(risk > 2.4)}")
    return "\n".join(["station,vibration,temp_c,amps,hours,failed", *rows]) + "\n"


def _pump(d: Path) -> tuple[str, Path, Path]:
    py = python_with("sklearn", "pandas")
    repo = _repo(d / "pump-failure", {"fit.py": PUMP_FIT, "data/pumps.csv": _pumps()},
                 "__pycache__/\nparams.json\n")
    return py, repo, _write(repo / "params.json", PUMP_PARAMS)


def max_features_auto_in_ignored_params(d: Path) -> Incident:
    """Between the runs the git-ignored params.json had ``"max_features": "sqrt"`` rewritten as
    ``"auto"`` (pasted from a 2021 notebook); scikit-learn no longer takes it
    (InvalidParameterError: The 'max_features' parameter of RandomForestClassifier must be ...
    Got 'auto' instead). Kind: fail."""
    py, repo, params = _pump(d)
    good, bad = _shells(d, bad_in="ci", venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(max_features_auto_in_ignored_params, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {params.resolve()}"),
                     between=lambda: _edit(params, '"max_features": "sqrt"', '"max_features": "auto"'))


def clip_quantile_from_saturn_start_script_metric(d: Path) -> Incident:
    """The Saturn resource's start script exports ``CLIP_QUANTILE=0.8`` (from the flow-meter
    project that shares the image); the pump model clips its telemetry much harder. Both runs
    fit; the AUC and the recall move. Kind: metric."""
    py, repo, _ = _pump(d)
    good, bad = _shells(d, bad={"CLIP_QUANTILE": "0.8"}, venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(clip_quantile_from_saturn_start_script_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "CLIP_QUANTILE"))


def handle_unknown_dropped_uncommitted(d: Path) -> Incident:
    """Between the runs fit.py (in git) lost ``handle_unknown="ignore"`` from its
    OneHotEncoder, not committed (a clean-up); the test months hold stations the training
    months never saw (ValueError: Found unknown categories ['BS-10', ...] in column 0 during
    transform). Kind: fail."""
    py, repo, _ = _pump(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(handle_unknown_dropped_uncommitted, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "pump-failure: fit.py"),
                     between=lambda: _edit(repo / "fit.py", 'OneHotEncoder(handle_unknown="ignore")',
                                           "OneHotEncoder()"))


def n_estimators_zero_both_fail(d: Path) -> Incident:
    """Both fail. Both runs ask for ``--min-recall 0.99``, which the model never reaches: the
    good run fits and does not publish. The CI job's script passes ``--n-estimators 0`` (its
    variable ``N_TREES`` was empty and the script's default is 0) (InvalidParameterError: The
    'n_estimators' parameter of RandomForestClassifier must be an int in the range [1, inf).
    Got 0 instead.). Kind: both-fail."""
    py, repo, _ = _pump(d)
    good, bad = _shells(d, bad_in="ci", venv=_venv_of(py))
    argv = (py, "fit.py", "--min-recall", "0.99")
    return _incident(n_estimators_zero_both_fail, Launch(argv, good, repo),
                     Launch((*argv, "--n-estimators", "0"), bad, repo), ("command", "--n-estimators"))


def pump_fit_noise(d: Path) -> Incident:
    """The pump model, the same code, params.json and data, from the Saturn Cloud terminal and
    from the GitLab CI job. Nothing planted. Kind: noise."""
    py, repo, _ = _pump(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(pump_fit_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


#: The twenty-ninth fresh batch, in the order it was written. Never tuned on.
FRESH29 = [
    subgroup_size_from_runner_config_job, optimizer_adamw_in_ci_script_metric_job,
    run_name_from_branch_both_fail_job, leak_ddp_job_noise, score_init_method_from_saturn_env_tab,
    tied_output_uncommitted_before_safetensors, local_yaml_context_in_one_checkout_metric,
    add_cross_attention_edited_in_model_folder, is_decoder_edited_metric, triage_bert_noise,
    leakfeat_major_in_saturn_image_venv, max_features_auto_in_ignored_params,
    clip_quantile_from_saturn_start_script_metric, handle_unknown_dropped_uncommitted,
    n_estimators_zero_both_fail, pump_fit_noise,
]

if __name__ == "__main__":  # build one incident and run its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH29 if b.__name__ in sys.argv[1:]] or FRESH29
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh29-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
