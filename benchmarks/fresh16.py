"""A sixteenth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh.py ... fresh14.py, for their format), how they are
run and scored (benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot
reference (docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job
captures one snapshot per rank. They form the corpus's ``fresh16`` half; report it, never change
the ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a customer-lifetime-value
  regressor trained with DDP: an uncommitted switch of the validation all-reduce to
  ``ReduceOp.AVG`` on an integer count (gloo cannot cast the average back to int64),
  ``LR_WARMUP_STEPS`` exported by the runner's workflow (loss moves), ``CKPT_EVERY=0`` passed
  by the SageMaker estimator on top of a quality gate the good job already misses (both fail),
  and the same job from both shells (noise);
- c10d: the feature cache's TCPStore on ``FEATURE_STORE_PORT``, which a dotenv step on the
  runner exported as the literal ``${{ vars.FEATURE_STORE_PORT }}``;
- the support-ticket topic classifier: ``OMP_NUM_THREADS`` expanded empty from a workflow
  matrix that has no ``threads`` key (the script sizes torch's pool from it), ``--num-classes
  10`` from the old taxonomy's README (a target out of bounds), ``--weight-decay 0.1`` from an
  LLM recipe (accuracy moves), and the same evaluation from both shells (noise);
- the rest: ``--num-workers 0`` with ``persistent_workers=True`` in an embedding precompute, a
  model folder whose config.json was re-exported with ``"dtype": "bfloat16"`` (transformers
  loads it in bfloat16; the perplexity moves) and that model's evaluation from both shells
  (noise), the team's ``cohortkit`` a minor version ahead in the runner's venv (a changed
  default moves the retention figures), a git-ignored ``hyperparameters.json`` regenerated with
  every value a string (as SageMaker writes them), an uncommitted ``heads: 6`` in a git-tracked
  model config on top of a missed gate (both fail), and a scikit-learn export that writes into
  ``SM_MODEL_DIR``, which only the SageMaker container sets.

The shells are :func:`sagemaker_or_actions_shell`: shell 0 an AWS SageMaker training job's
container (``SM_*``, ``TRAINING_JOB_*``, ``AWS_*`` with the container-credentials URI, the DLC
image's ``FI_*``/``NCCL_*``/EFA settings, ``/opt/ml`` paths, running as root), shell 1 a GitHub
Actions job on a self-hosted GPU runner (``GITHUB_*``, ``RUNNER_*``, ``ACTIONS_*`` with the
runtime token, ``setup-python``'s variables, the runner's own ``NCCL_*``/``TORCH_*``/``CUDA_*``/
``HF_*`` tuning). The thread counts that change float reductions are pinned alike. The planted
side is either: some incidents work in the SageMaker container and fail on the runner, others
the reverse.

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

JOB_NAME = "ltv-regressor-2026-12-05-18-02-41-337"


def sagemaker_or_actions_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 an AWS
    SageMaker training job's container, 1 a GitHub Actions job on a self-hosted GPU runner
    (``venv`` the job's virtual environment, first on ``PATH``); each with its own tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    if n % 2 == 0:  # SageMaker training job container (a PyTorch DLC), the entry point as root
        ml = home.parent / "opt" / "ml"
        for sub in ("model", "output/data", "input/data/train", "code"):
            (ml / sub).mkdir(parents=True, exist_ok=True)
        region = "eu-west-1"
        arn = f"arn:aws:sagemaker:{region}:418273645091:training-job/{JOB_NAME}"
        env = {
            **common, "PATH": f"/opt/conda/bin:/opt/amazon/openmpi/bin:/opt/amazon/efa/bin:{path}",
            "USER": "root", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOSTNAME": "algo-1",
            "PYTHONUNBUFFERED": "TRUE", "PYTHONIOENCODING": "UTF-8",
            "LD_LIBRARY_PATH": "/opt/amazon/efa/lib:/opt/amazon/openmpi/lib:/usr/local/lib",
            "TRAINING_JOB_NAME": JOB_NAME, "TRAINING_JOB_ARN": arn,
            "AWS_REGION": region, "AWS_DEFAULT_REGION": region,
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/7f3e91c2-5b0d-4a86-9e1f-"
                                                      "c2d84b6a0e35",
            "AWS_EXECUTION_ENV": "AWS_SageMaker_Training", "SAGEMAKER_REGION": region,
            "SAGEMAKER_PROGRAM": "train.py", "SAGEMAKER_SUBMIT_DIRECTORY":
                f"s3://sagemaker-{region}-418273645091/{JOB_NAME}/source/sourcedir.tar.gz",
            "SAGEMAKER_TRAINING_MODULE": "sagemaker_pytorch_container.training:main",
            "SM_CURRENT_HOST": "algo-1", "SM_HOSTS": '["algo-1"]', "SM_NUM_CPUS": "8",
            "SM_NUM_GPUS": "1", "SM_NUM_NEURONS": "0", "SM_LOG_LEVEL": "20",
            "SM_NETWORK_INTERFACE_NAME": "eth0", "SM_CURRENT_INSTANCE_TYPE": "ml.g5.2xlarge",
            "SM_MODEL_DIR": str(ml / "model"), "SM_OUTPUT_DATA_DIR": str(ml / "output" / "data"),
            "SM_OUTPUT_DIR": str(ml / "output"), "SM_INPUT_DIR": str(ml / "input"),
            "SM_INPUT_CONFIG_DIR": str(ml / "input" / "config"),
            "SM_CHANNELS": '["train"]', "SM_CHANNEL_TRAIN": str(ml / "input" / "data" / "train"),
            "SM_MODULE_DIR": f"s3://sagemaker-{region}-418273645091/{JOB_NAME}/source/"
                             "sourcedir.tar.gz",
            "SM_USER_ENTRY_POINT": "train.py", "SM_FRAMEWORK_MODULE":
                "sagemaker_pytorch_container.training:main",
            "SM_HPS": '{"epochs":3}', "SM_USER_ARGS": "[]",
            "DMLC_INTERFACE": "eth0", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "WARN",
            "NCCL_PROTO": "simple", "FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1",
            "RDMAV_FORK_SAFE": "1", "NCCL_IB_DISABLE": "1", "CUDA_VISIBLE_DEVICES": "0",
            "TORCH_CUDA_ARCH_LIST": "7.0;7.5;8.0;8.6;8.9;9.0+PTX",
            "HF_HOME": str(ml / "cache" / "huggingface"), "TORCH_HOME": str(ml / "cache" / "torch"),
        }
        if venv:  # the DLC's interpreter is the job's own
            env["PATH"] = f"{venv}/bin:{env['PATH']}"
        return env
    workspace = home / "actions-runner" / "_work" / "growth-ml" / "growth-ml"
    temp = home / "actions-runner" / "_work" / "_temp"
    for folder in (workspace, temp):
        folder.mkdir(parents=True, exist_ok=True)
    env = {  # GitHub Actions, a `run:` step on the self-hosted runner gpu-runner-2
        **common, "PATH": f"/usr/local/cuda-12.6/bin:{path}",
        "USER": "runner", "LOGNAME": "runner", "SHELL": "/bin/bash", "LANG": "en_US.UTF-8",
        "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_ACTOR": "mlops-bot",
        "GITHUB_REPOSITORY": "acme-growth/growth-ml", "GITHUB_REPOSITORY_OWNER": "acme-growth",
        "GITHUB_WORKFLOW": "nightly-train", "GITHUB_JOB": "train", "GITHUB_EVENT_NAME":
            "schedule", "GITHUB_RUN_ID": "12044187733", "GITHUB_RUN_NUMBER": "418",
        "GITHUB_RUN_ATTEMPT": "1", "GITHUB_SHA": "3be0c71f9a2d48e65c1f0b7a9d3e2c41f8a60b15",
        "GITHUB_REF": "refs/heads/main", "GITHUB_REF_NAME": "main", "GITHUB_WORKSPACE":
            str(workspace), "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_API_URL": "https://api.github.com", "GITHUB_ACTION": "__run_3",
        "GITHUB_ENV": str(temp / "_runner_file_commands" / "set_env_5c1e"),
        "GITHUB_PATH": str(temp / "_runner_file_commands" / "add_path_5c1e"),
        "GITHUB_OUTPUT": str(temp / "_runner_file_commands" / "set_output_5c1e"),
        "GITHUB_STEP_SUMMARY": str(temp / "_runner_file_commands" / "step_summary_5c1e"),
        "GITHUB_EVENT_PATH": str(temp / "_github_workflow" / "event.json"),
        "RUNNER_NAME": "gpu-runner-2", "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64",
        "RUNNER_ENVIRONMENT": "self-hosted", "RUNNER_TEMP": str(temp),
        "RUNNER_TOOL_CACHE": str(home / "actions-runner" / "_work" / "_tool"),
        "RUNNER_WORKSPACE": str(workspace.parent),
        "RUNNER_TRACKING_ID": "github_2f6c8e04-91ab-4d3f-b7e5-0c9a1d24e8f6",
        "ACTIONS_RUNTIME_URL": "https://pipelinesghubeus2.actions.githubusercontent.com/"
                               "Kx3vQ9/",
        "ACTIONS_RUNTIME_TOKEN": "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.eyJzY3AiOiJBY3Rpb25zLlJ1"
                                 "bnRpbWUifQ.c2lnbmF0dXJlLW5vdC1yZWFsLTRmOWEwYjJj",
        "ACTIONS_CACHE_URL": "https://artifactcache.actions.githubusercontent.com/Kx3vQ9/",
        "ACTIONS_ID_TOKEN_REQUEST_URL": "https://pipelinesghubeus2.actions.githubusercontent.com"
                                        "/Kx3vQ9/idtoken",
        "CUDA_HOME": "/usr/local/cuda-12.6", "CUDA_VISIBLE_DEVICES": "0,1,2,3",
        "CUDA_MODULE_LOADING": "LAZY", "NCCL_P2P_LEVEL": "NVL", "NCCL_DEBUG": "INFO",
        "NCCL_SOCKET_IFNAME": "eno1", "TORCH_CUDA_ARCH_LIST": "8.9",
        "TORCHINDUCTOR_CACHE_DIR": str(home / ".cache" / "inductor"),
        "TORCH_DISTRIBUTED_DEBUG": "OFF", "HF_HOME": "/mnt/runner-cache/huggingface",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TOKENIZERS_PARALLELISM": "false",
        "PIP_CACHE_DIR": "/mnt/runner-cache/pip", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    if venv:  # actions/setup-python, then `python -m venv .venv` in an earlier step
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
        env["pythonLocation"] = f"{env['RUNNER_TOOL_CACHE']}/Python/3.11.14/x64"
        env["Python3_ROOT_DIR"] = env["pythonLocation"]
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "actions", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the GitHub Actions runner (``bad_in="actions"``) or from the SageMaker container
    (``"sagemaker"``)."""
    sm = sagemaker_or_actions_shell(0, d / "home" / "root", venv)
    gha = sagemaker_or_actions_shell(1, d / "home" / "runner", venv)
    first, second = (sm, gha) if bad_in == "actions" else (gha, sm)
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


LTV_DDP = """
    \"\"\"Train the customer-lifetime-value regressor with DDP over gloo; settings from
    configs/train.yaml, a linear warm-up of LR_WARMUP_STEPS steps, a checkpoint on rank 0 every
    CKPT_EVERY steps. Rank 0 prints each epoch's loss, the validation MAE and the share of
    customers predicted within 25%; --max-mae refuses a model above that error.\"\"\"
    import argparse
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP

    FEATURES = 16


    def customers(n=4000, seed=5):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, FEATURES, generator=g)
        w = torch.rand(FEATURES, generator=g)
        y = torch.nn.functional.softplus(x @ w + 0.3 * torch.randn(n, generator=g)) + 0.5
        return x, y


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--max-mae", type=float, default=None)
        a = p.parse_args()
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        with open("configs/train.yaml") as f:
            cfg = yaml.safe_load(f)
        warmup = int(os.environ.get("LR_WARMUP_STEPS", "0"))
        ckpt_every = int(os.environ.get("CKPT_EVERY", "40"))
        x, y = customers()
        tx, ty = x[:3200][rank::world], y[:3200][rank::world]
        torch.manual_seed(0)
        model = DDP(torch.nn.Sequential(torch.nn.Linear(FEATURES, cfg["hidden"]),
                                        torch.nn.ReLU(), torch.nn.Linear(cfg["hidden"], 1)))
        opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
        bs, step = cfg["batch"] // world, 0
        os.makedirs("checkpoints", exist_ok=True)
        for epoch in range(cfg["epochs"]):
            total, steps = 0.0, 0
            for s in range(0, len(tx), bs):
                for group in opt.param_groups:
                    group["lr"] = cfg["lr"] * (min(1.0, (step + 1) / warmup) if warmup else 1.0)
                loss = F.l1_loss(model(tx[s:s + bs]).squeeze(1), ty[s:s + bs])
                opt.zero_grad()
                loss.backward()
                opt.step()
                step += 1
                if step % ckpt_every == 0 and rank == 0:
                    torch.save(model.module.state_dict(), "checkpoints/last.pt")
                total, steps = total + loss.item(), steps + 1
            t = torch.tensor([total / steps])
            dist.all_reduce(t)
            if rank == 0:
                print(f"epoch={epoch} loss={t.item() / world:.5f}")
        vx, vy = x[3200:][rank::world], y[3200:][rank::world]
        with torch.no_grad():
            pred = model(vx).squeeze(1)
        err = torch.tensor([(pred - vy).abs().sum().item()])
        hits = ((pred - vy).abs() / vy < 0.25).sum()
        n = torch.tensor(len(vy))
        dist.all_reduce(err)
        dist.all_reduce(hits)
        dist.all_reduce(n)
        mae, within = err.item() / n.item(), hits.item() / n.item()
        if rank == 0:
            print(f"val_mae={mae:.4f} within_25pct={within:.4f}")
            if a.max_mae is not None and mae > a.max_mae:
                raise RuntimeError(f"quality gate: val_mae={mae:.4f} is above --max-mae "
                                   f"{a.max_mae}, not registering the model")
        dist.barrier()
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

LTV_YAML = "# customer lifetime value, 90 days\nlr: 0.01\nhidden: 32\nbatch: 128\nepochs: 3\n"


def _ltv_job(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    repo = _repo(d / "ltv-forecast", {"train.py": LTV_DDP, "configs/train.yaml": LTV_YAML},
                 "__pycache__/\ncheckpoints/\n")
    return py, repo


def avg_reduce_on_counts_uncommitted_job(d: Path) -> Incident:
    """Job against job. Between the jobs train.py (in git) had its validation all-reduces
    rewritten, not committed, to ``dist.all_reduce(hits, op=dist.ReduceOp.AVG)`` "as on the
    NCCL branch"; ``hits`` is an int64 count and gloo cannot write the average back into it
    (RuntimeError: result type Float can't be cast to the desired output type Long) on every
    rank. Kind: fail."""
    py, repo = _ltv_job(d)

    def edited() -> None:
        f = repo / "train.py"
        f.write_text(f.read_text().replace(
            "dist.all_reduce(hits)\n", "dist.all_reduce(hits, op=dist.ReduceOp.AVG)\n"))

    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(avg_reduce_on_counts_uncommitted_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "ltv-forecast: train.py"), between=edited)


def warmup_steps_from_workflow_metric_job(d: Path) -> Incident:
    """Job against job. The runner's workflow file has a job-level ``env:`` with
    ``LR_WARMUP_STEPS: 500``, copied from the workflow that fine-tunes the large model; this
    job only takes 75 steps, so it never leaves warm-up. Both jobs train; every epoch's loss
    and the validation figures move. Kind: metric."""
    py, repo = _ltv_job(d)
    good, bad = _shells(d, bad={"LR_WARMUP_STEPS": "500"}, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(warmup_steps_from_workflow_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "LR_WARMUP_STEPS"))


def ckpt_every_zero_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--max-mae 0.05``, which this model never
    reaches: the runner's job trains and rank 0 refuses to register it. The SageMaker
    estimator's ``environment`` has ``CKPT_EVERY=0`` (meant as "no checkpoints"): every rank
    stops on its first step (ZeroDivisionError: integer modulo by zero). Kind: both-fail."""
    py, repo = _ltv_job(d)
    good, bad = _shells(d, bad={"CKPT_EVERY": "0"}, bad_in="sagemaker", venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--max-mae", "0.05")
    return _incident(ckpt_every_zero_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "CKPT_EVERY"))


def ltv_ddp_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the SageMaker container and from the
    GitHub Actions runner: each job its own rendezvous and rank processes, the shells their own
    SM_*, AWS_*, GITHUB_*, RUNNER_*, ACTIONS_*, NCCL_*, FI_*, TORCH_*, CUDA_* and HF_*
    variables. Nothing planted. Kind: noise."""
    py, repo = _ltv_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(ltv_ddp_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- c10d


FEATURE_CACHE = """
    \"\"\"Warm the online feature cache: host a c10d TCPStore on FEATURE_STORE_PORT (any free port
    when unset), write each customer's recency/frequency features through a client, read the
    totals back.\"\"\"
    import datetime
    import os

    import torch
    import torch.distributed as dist


    def main():
        port = int(os.environ.get("FEATURE_STORE_PORT", "0"))
        wait = datetime.timedelta(seconds=10)
        server = dist.TCPStore("127.0.0.1", port, world_size=1, is_master=True, timeout=wait,
                               wait_for_workers=False)
        client = dist.TCPStore("127.0.0.1", server.port, is_master=False, timeout=wait)
        g = torch.Generator().manual_seed(8)
        recency = torch.randint(0, 90, (200,), generator=g)
        orders = torch.poisson(torch.full((200,), 3.0), generator=g)
        for i in range(200):
            client.set(f"cust/{i}/recency", str(int(recency[i])))
            client.set(f"cust/{i}/orders", str(int(orders[i])))
        total = sum(int(server.get(f"cust/{i}/orders")) for i in range(200))
        print(f"keys={server.num_keys()} orders_total={total}")


    if __name__ == "__main__":
        main()
    """


def store_port_unexpanded_expression(d: Path) -> Incident:
    """The feature cache's store listens on ``FEATURE_STORE_PORT``. On the runner a dotenv
    action loads deploy/ci.env, where someone wrote ``FEATURE_STORE_PORT=${{
    vars.FEATURE_STORE_PORT }}``; the action does not evaluate expressions, the variable holds
    the text itself and the port parse stops (ValueError quoting it). The SageMaker container
    sets no such variable. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "feature-cache", {"warm.py": FEATURE_CACHE})
    good, bad = _shells(d, bad={"FEATURE_STORE_PORT": "${{ vars.FEATURE_STORE_PORT }}"},
                        venv=_venv_of(py))
    argv = (py, "warm.py")
    return _incident(store_port_unexpanded_expression, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "FEATURE_STORE_PORT"))


# --------------------------------------------------------------------------- topic classifier


TOPICS = """
    \"\"\"Train and evaluate the support-ticket topic classifier (12 topics) on hashed
    bag-of-words features; torch's thread pool is sized from OMP_NUM_THREADS as on the
    training hosts.\"\"\"
    import argparse
    import os

    import torch


    def tickets(n=2400, vocab=300, topics=12, seed=13):
        g = torch.Generator().manual_seed(seed)
        y = torch.randint(0, topics, (n,), generator=g)
        centers = torch.rand(topics, vocab, generator=g)
        x = torch.poisson(centers[y] * 0.2 + 0.05, generator=g)
        return torch.log1p(x), y


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--num-classes", type=int, default=12)
        p.add_argument("--weight-decay", type=float, default=0.0)
        p.add_argument("--epochs", type=int, default=30)
        a = p.parse_args()
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
        x, y = tickets()
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 64), torch.nn.ReLU(),
                                  torch.nn.Linear(64, a.num_classes))
        opt = torch.optim.AdamW(net.parameters(), lr=0.01, weight_decay=a.weight_decay)
        for epoch in range(a.epochs):
            loss = torch.nn.functional.cross_entropy(net(x[:2000]), y[:2000])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            logits = net(x[2000:])
            val = torch.nn.functional.cross_entropy(logits, y[2000:]).item()
            acc = (logits.argmax(1) == y[2000:]).float().mean().item()
        print(f"train_loss={loss.item():.5f} val_loss={val:.5f} val_acc={acc:.4f}")


    if __name__ == "__main__":
        main()
    """


def _topics(d: Path) -> tuple[str, Path]:
    py = python_with("torch")
    return py, _repo(d / "ticket-topics", {"train.py": TOPICS})


def omp_threads_empty_from_matrix(d: Path) -> Incident:
    """The runner's workflow sets ``OMP_NUM_THREADS: ${{ matrix.threads }}``, but this job's
    matrix has no ``threads`` key and the expression expands to the empty string; the script
    sizes torch's pool from it and stops (ValueError: invalid literal for int() with base 10:
    ''). Kind: fail."""
    py, repo = _topics(d)
    good, bad = _shells(d, bad={"OMP_NUM_THREADS": ""}, venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(omp_threads_empty_from_matrix, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "OMP_NUM_THREADS"))


def num_classes_from_old_readme(d: Path) -> Incident:
    """The SageMaker estimator's hyperparameters got ``--num-classes 10`` from the README of
    the old taxonomy (two topics were added since); the labels go up to 11 and cross-entropy
    stops on the first label past the head (IndexError: Target 10 is out of bounds).
    Kind: fail."""
    py, repo = _topics(d)
    good, bad = _shells(d, bad_in="sagemaker", venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(num_classes_from_old_readme, Launch(argv, good, repo),
                     Launch((*argv, "--num-classes", "10"), bad, repo),
                     ("command", "--num-classes"))


def weight_decay_from_llm_recipe_metric(d: Path) -> Incident:
    """The runner's job passes ``--weight-decay 0.1``, copied from the team's LLM fine-tuning
    recipe. Both runs finish; the losses and the validation accuracy move. Kind: metric."""
    py, repo = _topics(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(weight_decay_from_llm_recipe_metric, Launch(argv, good, repo),
                     Launch((*argv, "--weight-decay", "0.1"), bad, repo),
                     ("command", "--weight-decay"))


def ticket_topics_noise(d: Path) -> Incident:
    """The topic classifier, the same code and options, from the SageMaker container and from
    the GitHub Actions runner. Nothing planted. Kind: noise."""
    py, repo = _topics(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(ticket_topics_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- data loading


EMBED = """
    \"\"\"Precompute the product-image embeddings for the retrieval index: a frozen encoder over
    the catalogue's 16x16 thumbnails, read through a DataLoader whose workers stay up between
    the catalogue's two passes.\"\"\"
    import argparse

    import torch
    from torch.utils.data import DataLoader, TensorDataset


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--num-workers", type=int, default=1)
        a = p.parse_args()
        g = torch.Generator().manual_seed(17)
        images = torch.rand(512, 3, 16, 16, generator=g)
        torch.manual_seed(0)
        encoder = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2), torch.nn.ReLU(),
                                      torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten()).eval()
        loader = DataLoader(TensorDataset(images), batch_size=128, num_workers=a.num_workers,
                            persistent_workers=True)
        norms = []
        with torch.no_grad():
            for _ in range(2):
                norms = [encoder(batch).norm(dim=1) for (batch,) in loader]
        norms = torch.cat(norms)
        print(f"embedded={len(norms)} mean_norm={norms.mean().item():.5f}")


    if __name__ == "__main__":
        main()
    """


def persistent_workers_without_workers(d: Path) -> Incident:
    """The SageMaker run was started with ``--num-workers 0``, from the debugging how-to (to get
    readable tracebacks); the loader keeps ``persistent_workers=True`` and refuses (ValueError:
    persistent_workers option needs num_workers > 0). Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "image-embed", {"embed.py": EMBED})
    good, bad = _shells(d, bad_in="sagemaker", venv=_venv_of(py))
    argv = (py, "embed.py")
    return _incident(persistent_workers_without_workers, Launch(argv, good, repo),
                     Launch((*argv, "--num-workers", "0"), bad, repo),
                     ("command", "--num-workers"))


# --------------------------------------------------------------------------- model folders


MAKE_LLAMA = """
import sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                  initializer_range=0.2, bos_token_id=0, eos_token_id=0, pad_token_id=0)
LlamaForCausalLM(cfg).save_pretrained(sys.argv[1])
"""

REPLY_PPL = """
    \"\"\"Perplexity of the reply-suggestion model (a Llama folder, --model-path) on held-out
    support replies, byte-level, in windows of 64 bytes.\"\"\"
    import argparse
    import math

    import torch
    from transformers import AutoModelForCausalLM


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        model = AutoModelForCausalLM.from_pretrained(a.model_path).eval()
        data = list(open("data/replies.txt").read().encode())
        ids = torch.tensor(data[: len(data) // 64 * 64]).view(-1, 64)
        with torch.no_grad():
            loss = model(input_ids=ids, labels=ids).loss.item()
        print(f"windows={len(ids)} loss={loss:.5f} ppl={math.exp(loss):.4f}")


    if __name__ == "__main__":
        main()
    """


def _replies() -> str:
    parts = ["thanks for reaching out", "your refund", "has been issued", "please allow",
             "3-5 business days", "we are sorry", "for the delay", "your order", "has shipped",
             "tracking number", "let us know", "if you need anything else"]
    return "\n".join(" ".join(parts[(i * 5 + j) % len(parts)] for j in range(3 + i % 3))
                     for i in range(300)) + "\n"


def _llama(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers")
    repo = _repo(d / "reply-suggest", {"eval_ppl.py": REPLY_PPL, "data/replies.txt": _replies()})
    model = d / "artifacts" / "reply-llama"
    _build(py, MAKE_LLAMA, str(model))
    return py, repo, model


def dtype_bfloat16_reexport_metric(d: Path) -> Incident:
    """Between the runs the export step rewrote the model folder's config.json (outside git)
    from a bfloat16 copy of the model: ``"dtype": "bfloat16"``. The weights are unchanged, but
    transformers now loads them in bfloat16; both runs finish and the loss and perplexity move.
    Kind: metric."""
    py, repo, model = _llama(d)

    def reexported() -> None:
        cfg = json.loads((model / "config.json").read_text())
        cfg["dtype"] = "bfloat16"
        (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")

    good, bad = _shells(d, bad_in="sagemaker", venv=_venv_of(py))
    argv = (py, "eval_ppl.py", "--model-path", str(model))
    return _incident(dtype_bfloat16_reexport_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: dtype"),
                     between=reexported)


def reply_ppl_noise(d: Path) -> Incident:
    """The reply model's perplexity, the same folder and data, from the SageMaker container and
    from the GitHub Actions runner. Nothing planted. Kind: noise."""
    py, repo, model = _llama(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "eval_ppl.py", "--model-path", str(model))
    return _incident(reply_ppl_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- packages


COHORTKIT = {
    "1.4.2": '''
        """The growth team's cohort helpers (1.4)."""

        def retained(first, last, window_days=30):
            return last - first >= window_days
        ''',
    "1.5.0": '''
        """The growth team's cohort helpers (1.5: windows are whole weeks by default)."""

        def retained(first, last, window_days=28):
            return last - first >= window_days
        ''',
}

COHORT_REPORT = """
    \"\"\"Monthly retention report: a customer is retained when their last order is at least
    the default window after their first (cohortkit.retained).\"\"\"
    import csv

    from cohortkit import retained


    def main():
        cohorts = {}
        for row in csv.DictReader(open("data/orders.csv")):
            c = cohorts.setdefault(row["cohort"], [0, 0])
            c[0] += 1
            c[1] += retained(int(row["first_day"]), int(row["last_day"]))
        total = sum(c[0] for c in cohorts.values())
        kept = sum(c[1] for c in cohorts.values())
        worst = min(cohorts, key=lambda k: cohorts[k][1] / cohorts[k][0])
        print(f"customers={total} retention={kept / total:.4f} "
              f"worst_cohort_retention={cohorts[worst][1] / cohorts[worst][0]:.4f}")


    if __name__ == "__main__":
        main()
    """


def _orders() -> str:
    rows = ["customer,cohort,first_day,last_day"]
    for i in range(600):
        first = (i * 37) % 120
        rows.append(f"c{i},2026-{1 + first // 30:02d},{first},{first + (i * 53) % 61}")
    return "\n".join(rows) + "\n"


def cohortkit_ahead_in_runner_venv(d: Path) -> Incident:
    """The retention report calls ``cohortkit.retained`` with its default window. The runner's
    venv is rebuilt nightly from an unpinned ``cohortkit>=1.4`` and got 1.5.0, whose default
    window is 28 days instead of 30; the SageMaker image has 1.4.2. Both exit 0; the retention
    figures move. Kind: metric."""
    repo = _repo(d / "retention-report", {"report.py": COHORT_REPORT,
                                          "data/orders.csv": _orders()})
    sm_py = _venv(d / "venvs" / "image-venv", {"cohortkit": ("1.4.2", COHORTKIT["1.4.2"])})
    gha_py = _venv(d / "venvs" / "runner-venv", {"cohortkit": ("1.5.0", COHORTKIT["1.5.0"])})
    good, bad = _shells(d)
    good = {**good, "PATH": f"{sm_py.parent}:{good['PATH']}"}
    bad = {**bad, "VIRTUAL_ENV": str(gha_py.parent.parent),
           "PATH": f"{gha_py.parent}:{bad['PATH']}"}
    argv = ("python", "report.py")
    return _incident(cohortkit_ahead_in_runner_venv, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "cohortkit"))


# --------------------------------------------------------------------------- configs


DEMAND = """
    \"\"\"Train the weekly demand forecaster; its hyperparameters come from the git-ignored
    hyperparameters.json that the launch tooling writes beside the code.\"\"\"
    import json

    import torch


    def main():
        hp = json.load(open("hyperparameters.json"))
        g = torch.Generator().manual_seed(3)
        x = torch.randn(800, 6, generator=g)
        y = x @ torch.tensor([0.5, -1.0, 2.0, 0.0, 0.3, 1.1]) + 0.1 * torch.randn(800, generator=g)
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(6, hp["hidden"]), torch.nn.Tanh(),
                                  torch.nn.Linear(hp["hidden"], 1))
        opt = torch.optim.Adam(net.parameters(), lr=hp["lr"])
        for epoch in range(hp["epochs"]):
            loss = torch.nn.functional.mse_loss(net(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epochs={hp['epochs']} mse={loss.item():.5f}")


    if __name__ == "__main__":
        main()
    """


def hyperparameters_all_strings(d: Path) -> Incident:
    """hyperparameters.json is git-ignored: the launch tooling writes it. Between the runs it
    was regenerated by the SageMaker local-mode tooling, which writes every value as a string
    (``"hidden": "16"``); the forecaster passes them on as they are and the first layer stops
    (TypeError: empty(): argument 'size' ... must be tuple of ints, but found element of type
    str). Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "demand-forecast", {"train.py": DEMAND},
                 "__pycache__/\nhyperparameters.json\n")
    hp = repo / "hyperparameters.json"
    hp.write_text(json.dumps({"epochs": 40, "lr": 0.02, "hidden": 16}) + "\n")

    def regenerated() -> None:
        hp.write_text(json.dumps({"epochs": "40", "lr": "0.02", "hidden": "16"}) + "\n")

    good, bad = _shells(d, bad_in="sagemaker", venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(hyperparameters_all_strings, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {hp.resolve()}"),
                     between=regenerated)


SESSION = """
    \"\"\"Train the next-category model over browsing sessions (a small Transformer encoder);
    sizes from configs/model.yaml; --max-val-loss refuses a model above that loss.\"\"\"
    import argparse

    import torch
    import yaml


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--max-val-loss", type=float, default=None)
        a = p.parse_args()
        cfg = yaml.safe_load(open("configs/model.yaml"))
        g = torch.Generator().manual_seed(10)
        seq = torch.randint(0, 20, (600, 12), generator=g)
        target = (seq[:, -3:].sum(1) % 20)
        torch.manual_seed(0)
        emb = torch.nn.Embedding(20, cfg["d_model"])
        layer = torch.nn.TransformerEncoderLayer(cfg["d_model"], cfg["heads"], 128,
                                                 dropout=0.0, batch_first=True)
        enc = torch.nn.TransformerEncoder(layer, cfg["layers"], enable_nested_tensor=False)
        head = torch.nn.Linear(cfg["d_model"], 20)
        params = [*emb.parameters(), *enc.parameters(), *head.parameters()]
        opt = torch.optim.Adam(params, lr=0.003)
        for step in range(15):
            loss = torch.nn.functional.cross_entropy(head(enc(emb(seq[:500]))[:, -1]),
                                                     target[:500])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            val = torch.nn.functional.cross_entropy(head(enc(emb(seq[500:]))[:, -1]),
                                                    target[500:]).item()
        print(f"train_loss={loss.item():.5f} val_loss={val:.5f}")
        if a.max_val_loss is not None and val > a.max_val_loss:
            raise SystemExit(f"val_loss {val:.5f} is above --max-val-loss {a.max_val_loss}: "
                             "not shipping the model")


    if __name__ == "__main__":
        main()
    """


def heads_six_uncommitted_both_fail(d: Path) -> Incident:
    """Both fail. Both runs ask for ``--max-val-loss 0.5``, which this model never reaches:
    the runner's run trains and refuses to ship. Between the runs configs/model.yaml (in git)
    got ``heads: 6``, not committed, from a sweep; 64 is not divisible by 6 and the encoder
    layer refuses (AssertionError: embed_dim must be divisible by num_heads). Kind: both-fail."""
    py = python_with("torch", "yaml")
    repo = _repo(d / "session-model", {"train.py": SESSION,
                                       "configs/model.yaml": "d_model: 64\nheads: 4\nlayers: 2\n"})

    def edited() -> None:
        cfg = repo / "configs" / "model.yaml"
        cfg.write_text(cfg.read_text().replace("heads: 4", "heads: 6"))

    good, bad = _shells(d, bad_in="sagemaker", venv=_venv_of(py))
    argv = (py, "train.py", "--max-val-loss", "0.5")
    return _incident(heads_six_uncommitted_both_fail, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "session-model: configs/model.yaml"),
                     between=edited)


CHURN_EXPORT = """
    \"\"\"Fit the churn model (scikit-learn) and write it, with its metrics, into the model
    folder the training platform collects (SM_MODEL_DIR).\"\"\"
    import json
    import os
    import pickle

    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score


    def main():
        rng = np.random.default_rng(12)
        x = rng.normal(size=(1500, 8))
        y = (x[:, 0] - 0.7 * x[:, 3] + rng.normal(scale=0.8, size=1500) > 0).astype(int)
        model = LogisticRegression(C=0.5, max_iter=200).fit(x[:1200], y[:1200])
        auc = roc_auc_score(y[1200:], model.predict_proba(x[1200:])[:, 1])
        out = os.environ["SM_MODEL_DIR"]
        with open(os.path.join(out, "model.pkl"), "wb") as f:
            pickle.dump(model, f)
        with open(os.path.join(out, "metrics.json"), "w") as f:
            json.dump({"auc": auc}, f)
        print(f"val_auc={auc:.4f}")


    if __name__ == "__main__":
        main()
    """


def model_dir_only_in_sagemaker(d: Path) -> Incident:
    """The churn export writes into ``os.environ["SM_MODEL_DIR"]``, which the SageMaker
    container sets; the new GitHub Actions smoke job runs the same entry point on the runner,
    where nothing sets it (KeyError: 'SM_MODEL_DIR'). Kind: fail."""
    py = python_with("sklearn", "numpy")
    repo = _repo(d / "churn-export", {"export.py": CHURN_EXPORT})
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "export.py")
    return _incident(model_dir_only_in_sagemaker, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "SM_MODEL_DIR"))


#: The sixteenth fresh batch, in the order it was written. Never tuned on.
FRESH16 = [
    avg_reduce_on_counts_uncommitted_job, warmup_steps_from_workflow_metric_job,
    ckpt_every_zero_both_fail_job, ltv_ddp_job_noise, store_port_unexpanded_expression,
    omp_threads_empty_from_matrix, num_classes_from_old_readme,
    weight_decay_from_llm_recipe_metric, ticket_topics_noise, persistent_workers_without_workers,
    dtype_bfloat16_reexport_metric, reply_ppl_noise, cohortkit_ahead_in_runner_venv,
    hyperparameters_all_strings, heads_six_uncommitted_both_fail, model_dir_only_in_sagemaker,
]

if __name__ == "__main__":  # build one incident and print its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH16 if b.__name__ in sys.argv[1:]] or FRESH16
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh16-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
