"""A fourteenth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh.py ... fresh13.py, for their format), how they are
run and scored (benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot
reference (docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job
captures one snapshot per rank. They form the corpus's ``fresh14`` half; report it, never change
the ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a click-through model trained with
  DDP: an uncommitted ``aux_head: true`` in the git-tracked train config (a head no loss uses,
  DDP's unfinished-reduction error), ``--global-batch 64`` copied from the single-GPU notebook
  (loss moves), ``DIST_TIMEOUT_S=30m`` in the Jenkins job's environment on top of a quality gate
  the good job already misses (both fail), and the same job from both shells (noise);
- c10d: a scoring cache hosted on a TCPStore whose port comes from ``MASTER_PORT``, which the
  Jenkins launch script builds as ``${EXECUTOR_NUMBER}29437`` (executor 1: a port past 65535);
- model folders (transformers, a tiny GPT-2 made at build time): ``n_positions`` cut to 64 by
  the registry sync (the weights' position table no longer fits), ``activation_function`` switched to
  ``relu`` (perplexity moves), and the evaluation from both shells (noise);
- the rest: the team's ``clicklog`` package a minor version behind in the Jenkins agent's venv,
  ``TZ`` set on the agent (daily counts move), ``--resume`` of a checkpoint from an older
  architecture, ``--threshold`` from the fraud runbook (precision and recall move), a
  git-ignored OmegaConf ``local.yaml`` with a misspelt key, an uncommitted ``reshape`` turned
  into ``view`` on a permuted tensor, ``EVAL_BATCH_SIZE=0`` on top of a missed gate (both fail),
  and the fraud evaluation from both shells (noise).

The shells are :func:`azureml_or_jenkins_shell`: shell 0 an Azure Machine Learning compute
instance's browser terminal (``CI_*``, ``AZUREML_*``, the managed identity's ``MSI_*``, the
``azureml_py310_sdkv2`` conda env, the ND-series image's ``NCCL_*``/``UCX_*`` tuning), shell 1 a
Jenkins pipeline's ``sh`` step on a bare-metal GPU agent (``BUILD_*``, ``JOB_*``,
``EXECUTOR_NUMBER``, ``WORKSPACE``, ``NODE_*``, a credentials-bound ``HF_TOKEN``, the agent's own
``NCCL_*``/``TORCH_*``/``CUDA_*`` settings, the job's venv). The thread counts that change float
reductions are pinned alike. The planted side is either: some incidents work on the compute
instance and fail on the agent, others the reverse.

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

CI_NAME = "ci-mlops-e4ds"


def azureml_or_jenkins_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 an Azure ML
    compute instance's terminal, 1 a Jenkins ``sh`` step on a GPU agent (``venv`` the job's
    virtual environment, first on ``PATH``); each with its own tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    if n % 2 == 0:  # Azure ML compute instance, browser terminal as azureuser
        conda = "/anaconda/envs/azureml_py310_sdkv2"
        mount = f"/mnt/batch/tasks/shared/LS_root/mounts/clusters/{CI_NAME}"
        return {
            **common, "PATH": f"{conda}/bin:/anaconda/condabin:/usr/local/cuda/bin:{path}",
            "USER": "azureuser", "LOGNAME": "azureuser", "SHELL": "/bin/bash",
            "TERM": "xterm-256color", "LANG": "C.UTF-8", "HOSTNAME": CI_NAME, "SHLVL": "1",
            "CONDA_DEFAULT_ENV": "azureml_py310_sdkv2", "CONDA_PREFIX": conda,
            "CONDA_SHLVL": "2", "CONDA_EXE": "/anaconda/bin/conda",
            "CI_NAME": CI_NAME, "CI_RESOURCE_GROUP": "rg-mlops-westeu",
            "CI_WORKSPACE": "mlw-recsys-prod", "CI_LOCAL_UBUNTU_USER": "azureuser",
            "AZUREML_ARM_SUBSCRIPTION": "5d1c0a9e-7f3b-4c2e-9a81-2b6f0e4d3c17",
            "AZUREML_ARM_RESOURCEGROUP": "rg-mlops-westeu",
            "AZUREML_ARM_WORKSPACE_NAME": "mlw-recsys-prod",
            "AZUREML_CODE_DIR": f"{mount}/code/Users/azureuser",
            "MSI_ENDPOINT": "http://127.0.0.1:46808/MSI/auth",
            "MSI_SECRET": "Q2hvY29sYXRlQ2hpcENvb2tpZTk4NzY1NDMyMTBhYmNk",
            "DEFAULT_IDENTITY_CLIENT_ID": "clientid", "JUPYTER_SERVER_ROOT": str(home),
            "NCCL_IB_PCI_RELAXED_ORDERING": "1", "NCCL_SOCKET_IFNAME": "eth0",
            "NCCL_TOPO_FILE": "/opt/microsoft/ndv4-topo.xml", "NCCL_DEBUG": "WARN",
            "UCX_TLS": "tcp", "UCX_NET_DEVICES": "eth0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
            "CUDA_VISIBLE_DEVICES": "0", "MKL_THREADING_LAYER": "GNU",
            "HF_HOME": f"{mount}/code/Users/azureuser/.cache/huggingface",
            "TORCH_HOME": str(home / ".cache" / "torch"),
        }
    workspace = home / "workspace" / "recsys-ctr"
    workspace.mkdir(parents=True, exist_ok=True)
    env = {  # Jenkins declarative pipeline, `sh` step on agent gpu-agent-03, executor 1
        **common, "PATH": f"/usr/local/cuda-12.4/bin:{path}",
        "USER": "jenkins", "LOGNAME": "jenkins", "SHELL": "/bin/sh", "LANG": "en_US.UTF-8",
        "LC_ALL": "en_US.UTF-8", "CI": "true", "HUDSON_HOME": "/var/lib/jenkins",
        "JENKINS_URL": "https://jenkins.example.internal/",
        "HUDSON_URL": "https://jenkins.example.internal/",
        "JENKINS_NODE_COOKIE": "7d2f4c1e-9b3a-4e55-a0c6-1f8e2d9b7a34",
        "HUDSON_SERVER_COOKIE": "4f0e1c9d2a7b6e35", "BUILD_NUMBER": "812", "BUILD_ID": "812",
        "BUILD_TAG": "jenkins-recsys-ctr-nightly-812", "JOB_NAME": "recsys/ctr-nightly",
        "JOB_BASE_NAME": "ctr-nightly",
        "BUILD_URL": "https://jenkins.example.internal/job/recsys/job/ctr-nightly/812/",
        "RUN_DISPLAY_URL": "https://jenkins.example.internal/job/recsys/job/ctr-nightly/812/"
                           "display/redirect",
        "EXECUTOR_NUMBER": "1", "NODE_NAME": "gpu-agent-03", "NODE_LABELS": "gpu linux a100",
        "WORKSPACE": str(workspace), "WORKSPACE_TMP": str(workspace) + "@tmp",
        "GIT_BRANCH": "origin/main", "GIT_COMMIT": "9f3c2b71d04e8a6f5c1b2d3e4f5a6b7c8d9e0f12",
        "HF_TOKEN": "hf_xKq3ZrLm8VtY2NwPb5JcHd7GsAe4FuQo9R", "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HOME": "/data/jenkins/hf-cache", "NCCL_DEBUG": "INFO", "NCCL_P2P_DISABLE": "0",
        "NCCL_SOCKET_IFNAME": "enp65s0f0", "NCCL_ASYNC_ERROR_HANDLING": "1",
        "TORCH_SHOW_CPP_STACKTRACES": "1", "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000",
        "CUDA_VISIBLE_DEVICES": "0,1", "CUDA_CACHE_PATH": "/data/jenkins/.nv/ComputeCache",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONDONTWRITEBYTECODE": "1",
    }
    if venv:
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "jenkins", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the Jenkins agent (``bad_in="jenkins"``) or from the Azure ML compute instance
    (``"azureml"``)."""
    aml = azureml_or_jenkins_shell(0, d / "home" / "azureuser")
    jenkins = azureml_or_jenkins_shell(1, d / "home" / "jenkins", venv)
    first, second = (aml, jenkins) if bad_in == "jenkins" else (jenkins, aml)
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
    \"\"\"Train the click-through model with DDP over gloo; settings from configs/train.yaml,
    the global batch from --global-batch (split over the ranks), the process group's timeout
    from DIST_TIMEOUT_S (seconds). Rank 0 prints each epoch's loss and the validation accuracy,
    all-reduced over the ranks; --gate-acc refuses a model below that accuracy.\"\"\"
    import argparse
    import datetime
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP

    FEATURES = 20


    def impressions(n=4800, seed=11):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, FEATURES, generator=g)
        w = torch.randn(FEATURES, generator=g)
        y = ((x @ w + 0.8 * torch.randn(n, generator=g)) > 0.3).float()
        return x, y


    class CTR(torch.nn.Module):
        def __init__(self, hidden, aux_head):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Linear(FEATURES, hidden), torch.nn.ReLU())
            self.click = torch.nn.Linear(hidden, 1)
            # the dwell-time head; its loss is wired in on the multitask branch
            self.dwell = torch.nn.Linear(hidden, 1) if aux_head else None

        def forward(self, x):
            return self.click(self.body(x)).squeeze(1)


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--global-batch", type=int, default=256)
        p.add_argument("--gate-acc", type=float, default=None)
        a = p.parse_args()
        timeout = datetime.timedelta(seconds=int(os.environ.get("DIST_TIMEOUT_S", "60")))
        dist.init_process_group("gloo", timeout=timeout)
        rank, world = dist.get_rank(), dist.get_world_size()
        with open("configs/train.yaml") as f:
            cfg = yaml.safe_load(f)
        x, y = impressions()
        tx, ty = x[:4000][rank::world], y[:4000][rank::world]
        torch.manual_seed(0)
        model = DDP(CTR(cfg["hidden"], cfg.get("aux_head", False)))
        opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
        bs = a.global_batch // world
        for epoch in range(cfg["epochs"]):
            total, steps = 0.0, 0
            for s in range(0, len(tx), bs):
                loss = F.binary_cross_entropy_with_logits(model(tx[s:s + bs]), ty[s:s + bs])
                opt.zero_grad()
                loss.backward()
                opt.step()
                total, steps = total + loss.item(), steps + 1
            t = torch.tensor([total / steps])
            dist.all_reduce(t)
            if rank == 0:
                print(f"epoch={epoch} loss={t.item() / world:.5f}")
        vx, vy = x[4000:][rank::world], y[4000:][rank::world]
        with torch.no_grad():
            right = ((model(vx) > 0).float() == vy).sum().float()
        counts = torch.stack([right, torch.tensor(float(len(vy)))])
        dist.all_reduce(counts)
        acc = counts[0].item() / counts[1].item()
        if rank == 0:
            print(f"val_acc={acc:.4f}")
            if a.gate_acc is not None and acc < a.gate_acc:
                raise RuntimeError(f"quality gate: val_acc={acc:.4f} is below --gate-acc "
                                   f"{a.gate_acc}, not promoting the model")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

CTR_YAML = "# click-through model\nlr: 0.01\nhidden: 48\nepochs: 3\n"


def _ctr_job(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    repo = _repo(d / "recsys-ctr", {"train.py": CTR_DDP, "configs/train.yaml": CTR_YAML})
    return py, repo


def aux_head_uncommitted_job(d: Path) -> Incident:
    """Job against job. Between the jobs configs/train.yaml (in git) got ``aux_head: true``,
    not committed, from trying the multitask branch; on main nothing computes a loss from the
    dwell head, so DDP never gets its gradients and every rank stops on the second step
    (RuntimeError: expected to have finished reduction in the prior iteration). Kind: fail."""
    py, repo = _ctr_job(d)

    def edited() -> None:
        cfg = repo / "configs" / "train.yaml"
        cfg.write_text(cfg.read_text() + "aux_head: true\n")

    good, bad = _shells(d, bad_in="azureml", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(aux_head_uncommitted_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "recsys-ctr: configs/train.yaml"),
                     between=edited)


def global_batch_from_notebook_metric_job(d: Path) -> Incident:
    """Job against job. The Jenkins job's command line got ``--global-batch 64``, copied from
    the single-GPU notebook's cell; split over the two ranks each step sees 32 impressions
    instead of 128. Both jobs train; every epoch's loss moves. Kind: metric."""
    py, repo = _ctr_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(global_batch_from_notebook_metric_job, Launch(argv, good, repo),
                     Launch((*argv, "--global-batch", "64"), bad, repo),
                     ("command", "--global-batch"))


def dist_timeout_minutes_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--gate-acc 0.99``, which this model never
    reaches: the compute instance's job trains and rank 0 refuses to promote. The Jenkins job's
    environment block has ``DIST_TIMEOUT_S=30m`` (meant as thirty minutes): every rank stops
    before the process group (ValueError quoting ``30m``). Kind: both-fail."""
    py, repo = _ctr_job(d)
    good, bad = _shells(d, bad={"DIST_TIMEOUT_S": "30m"}, venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--gate-acc", "0.99")
    return _incident(dist_timeout_minutes_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "DIST_TIMEOUT_S"))


def ctr_ddp_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the Azure ML compute instance and from
    the Jenkins agent: each job its own rendezvous and rank processes, the shells their own
    Azure ML, conda, Jenkins, NCCL_*, UCX_*, TORCH_*, CUDA_* and HF_* variables. Nothing
    planted. Kind: noise."""
    py, repo = _ctr_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(ctr_ddp_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- c10d


SCORE_CACHE = """
    \"\"\"Warm the scoring cache: host a c10d TCPStore on MASTER_PORT (any free port when
    unset), as the scoring workers expect, write each ad's calibrated score through a client and
    read the sum back.\"\"\"
    import datetime
    import os

    import torch
    import torch.distributed as dist


    def main():
        port = int(os.environ.get("MASTER_PORT", "0"))
        wait = datetime.timedelta(seconds=10)
        server = dist.TCPStore("127.0.0.1", port, world_size=2, is_master=True, timeout=wait,
                               wait_for_workers=False)
        client = dist.TCPStore("127.0.0.1", server.port, world_size=2, is_master=False,
                               timeout=wait)
        g = torch.Generator().manual_seed(21)
        scores = torch.sigmoid(torch.randn(120, generator=g))
        for i, s in enumerate(scores.tolist()):
            client.set(f"ad/{i}/score", f"{s:.5f}")
        total = sum(float(server.get(f"ad/{i}/score")) for i in range(120))
        print(f"ads={server.num_keys()} score_sum={total:.4f}")


    if __name__ == "__main__":
        main()
    """


def master_port_executor_prefix(d: Path) -> Incident:
    """The scoring cache's store listens on ``MASTER_PORT``. The Jenkins launch script exports
    ``MASTER_PORT=${EXECUTOR_NUMBER}29437`` so that two executors on one agent never share a
    port; on executor 1 that is 129437, past the last port, and the TCPStore constructor refuses
    it (TypeError quoting 129437). The compute instance sets no MASTER_PORT. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "score-cache", {"warm.py": SCORE_CACHE})
    good, bad = _shells(d, bad={"MASTER_PORT": "129437"}, venv=_venv_of(py))
    argv = (py, "warm.py")
    return _incident(master_port_executor_prefix, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "MASTER_PORT"))


# --------------------------------------------------------------------------- model folders


MAKE_GPT2 = """
import sys, torch
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(0)
cfg = GPT2Config(vocab_size=256, n_positions=128, n_embd=48, n_layer=2, n_head=4,
                 initializer_range=0.2, bos_token_id=0, eos_token_id=0)
GPT2LMHeadModel(cfg).save_pretrained(sys.argv[1])
"""

QUERY_PPL = """
    \"\"\"Perplexity of the query-completion model (a GPT-2 folder, --model-path) on the held-out
    search queries, byte-level, in windows of 96 bytes.\"\"\"
    import argparse
    import math

    import torch
    from transformers import AutoModelForCausalLM


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        model = AutoModelForCausalLM.from_pretrained(a.model_path).eval()
        data = list(open("data/queries.txt").read().encode())
        ids = torch.tensor(data[: len(data) // 96 * 96]).view(-1, 96)
        with torch.no_grad():
            loss = model(input_ids=ids, labels=ids).loss.item()
        print(f"windows={len(ids)} loss={loss:.5f} ppl={math.exp(loss):.4f}")


    if __name__ == "__main__":
        main()
    """


def _queries() -> str:
    words = ["cheap", "flights", "to", "lisbon", "running", "shoes", "size", "44", "near", "me",
             "best", "pizza", "open", "now", "weather", "tomorrow", "berlin", "used", "bikes"]
    return "\n".join(" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(2 + i % 4))
                     for i in range(400)) + "\n"


def _gpt2(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers")
    repo = _repo(d / "query-complete", {"eval_ppl.py": QUERY_PPL, "data/queries.txt": _queries()})
    model = d / "registry" / "query-gpt2"
    _build(py, MAKE_GPT2, str(model))
    return py, repo, model


def _edit_config(model: Path, **fields: object) -> None:
    cfg = json.loads((model / "config.json").read_text())
    cfg.update(fields)
    (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def n_positions_cut_by_sync(d: Path) -> Incident:
    """Between the runs the registry sync rewrote the model folder's config.json (outside git)
    with ``"n_positions": 64`` from the on-device variant's card; the folder's weights hold a
    128-row position table and loading stops on the size mismatch of ``wpe.weight``
    (RuntimeError). Kind: fail."""
    py, repo, model = _gpt2(d)

    def synced() -> None:
        _edit_config(model, n_positions=64)

    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "eval_ppl.py", "--model-path", str(model))
    return _incident(n_positions_cut_by_sync, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("models", "--model-path: n_positions"), between=synced)


def activation_relu_metric(d: Path) -> Incident:
    """Between the runs someone set the model folder's ``"activation_function": "relu"`` (outside
    git) to try the quantization-friendly export. Both runs finish; the loss and the perplexity
    move. Kind: metric."""
    py, repo, model = _gpt2(d)

    def edited() -> None:
        _edit_config(model, activation_function="relu")

    good, bad = _shells(d, bad_in="azureml", venv=_venv_of(py))
    argv = (py, "eval_ppl.py", "--model-path", str(model))
    return _incident(activation_relu_metric, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("models", "--model-path: activation_function"), between=edited)


def query_ppl_noise(d: Path) -> Incident:
    """The query model's perplexity, the same folder and data, from the compute instance and
    from the Jenkins agent. Nothing planted. Kind: noise."""
    py, repo, model = _gpt2(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "eval_ppl.py", "--model-path", str(model))
    return _incident(query_ppl_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- packages, env


CLICKLOG = {
    "3.2.0": '''
        """The team's click-log parser (3.2: ``strict`` rejects rows without a campaign)."""

        def parse(line, strict=False):
            ts, user, ad, campaign, clicked = line.rstrip("\\n").split(",")
            if strict and not campaign:
                return None
            return {"ts": int(ts), "user": user, "ad": ad, "campaign": campaign,
                    "clicked": clicked == "1"}
        ''',
    "3.1.4": '''
        """The team's click-log parser (3.1)."""

        def parse(line):
            ts, user, ad, campaign, clicked = line.rstrip("\\n").split(",")
            return {"ts": int(ts), "user": user, "ad": ad, "campaign": campaign,
                    "clicked": clicked == "1"}
        ''',
}

CLICK_REPORT = """
    \"\"\"Daily click report: parse the click log with the team's clicklog (strict rows only)
    and count clicks per local calendar day.\"\"\"
    import datetime

    from clicklog import parse


    def main():
        days, rows = {}, 0
        for line in open("data/clicks.csv"):
            row = parse(line, strict=True)
            if row is None:
                continue
            rows += 1
            day = datetime.datetime.fromtimestamp(row["ts"]).date()
            days[day] = days.get(day, 0) + row["clicked"]
        top = max(days, key=days.get)
        print(f"rows={rows} days={len(days)} top_day_clicks={days[top]} "
              f"mean_daily_clicks={sum(days.values()) / len(days):.3f}")


    if __name__ == "__main__":
        main()
    """


def _clicks() -> str:
    start = int(datetime.datetime(2026, 11, 2, tzinfo=datetime.timezone.utc).timestamp())
    rows = []
    for i in range(900):
        ts = start + i * 1337 + (i * 7919) % 600
        campaign = "" if i % 17 == 0 else f"c{i % 5}"
        rows.append(f"{ts},u{i % 97},ad{i % 23},{campaign},{1 if (i * 31) % 7 < 2 else 0}")
    return "\n".join(rows) + "\n"


def clicklog_behind_in_agent_venv(d: Path) -> Incident:
    """The daily click report calls ``parse(line, strict=True)`` from the team's ``clicklog``.
    The compute instance's venv has clicklog 3.2.0; the Jenkins agent's venv (built from an old
    lock file) has 3.1.4, whose ``parse`` takes no ``strict`` (TypeError). Kind: fail."""
    repo = _repo(d / "click-report", {"report.py": CLICK_REPORT, "data/clicks.csv": _clicks()})
    aml_py = _venv(d / "venvs" / "ci-venv", {"clicklog": ("3.2.0", CLICKLOG["3.2.0"])})
    agent_py = _venv(d / "venvs" / "jenkins-venv", {"clicklog": ("3.1.4", CLICKLOG["3.1.4"])})
    aml_env, agent_env = _shells(d, venv=str(agent_py.parent.parent))
    aml_env = {**aml_env, "VIRTUAL_ENV": str(aml_py.parent.parent),
               "PATH": f"{aml_py.parent}:{aml_env['PATH']}"}
    argv = ("python", "report.py")
    return _incident(clicklog_behind_in_agent_venv, Launch(argv, aml_env, repo),
                     Launch(argv, agent_env, repo), ("packages", "clicklog"))


def agent_timezone_daily_metric(d: Path) -> Incident:
    """The daily click report buckets clicks by local calendar day. The Jenkins agent's global
    properties set ``TZ=America/Chicago`` (the team that owns the agent); the compute instance
    runs in UTC. Both exit 0; the day count and the daily figures move. Kind: metric."""
    repo = _repo(d / "click-report", {"report.py": CLICK_REPORT, "data/clicks.csv": _clicks()})
    py = _venv(d / "venvs" / "ci-venv", {"clicklog": ("3.2.0", CLICKLOG["3.2.0"])})
    good, bad = _shells(d, bad={"TZ": "America/Chicago"}, venv=str(py.parent.parent))
    good = {**good, "VIRTUAL_ENV": str(py.parent.parent), "PATH": f"{py.parent}:{good['PATH']}"}
    argv = ("python", "report.py")
    return _incident(agent_timezone_daily_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "TZ"))


# --------------------------------------------------------------------------- training scripts


DWELL_TRAIN = """
    \"\"\"Train the dwell-time regressor (an MLP); --resume continues from a checkpoint.\"\"\"
    import argparse

    import torch


    def model():
        return torch.nn.Sequential(torch.nn.Linear(12, 64), torch.nn.ReLU(),
                                   torch.nn.Linear(64, 1))


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--resume", default=None)
        p.add_argument("--epochs", type=int, default=5)
        a = p.parse_args()
        g = torch.Generator().manual_seed(4)
        x = torch.randn(1200, 12, generator=g)
        y = (x[:, :4].sum(1, keepdim=True) + 0.3 * torch.randn(1200, 1, generator=g)).abs()
        torch.manual_seed(0)
        net = model()
        if a.resume:
            net.load_state_dict(torch.load(a.resume)["model"])
        opt = torch.optim.Adam(net.parameters(), lr=0.01)
        for epoch in range(a.epochs):
            loss = torch.nn.functional.mse_loss(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epochs={a.epochs} mse={loss.item():.5f}")


    if __name__ == "__main__":
        main()
    """

MAKE_OLD_CKPT = """
import sys, torch
torch.manual_seed(1)
net = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
torch.save({"model": net.state_dict(), "epoch": 40}, sys.argv[1])
"""


def resume_old_architecture(d: Path) -> Incident:
    """The compute instance's run was started from the shell history with ``--resume
    checkpoints/last.pt``, a checkpoint (git-ignored) of last month's 32-unit model; the model is
    64 units wide now and load_state_dict stops (size mismatch). Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "dwell-time", {"train.py": DWELL_TRAIN}, "__pycache__/\ncheckpoints/\n")
    (repo / "checkpoints").mkdir(exist_ok=True)
    _build(py, MAKE_OLD_CKPT, str(repo / "checkpoints" / "last.pt"))
    good, bad = _shells(d, bad_in="azureml", venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(resume_old_architecture, Launch(argv, good, repo),
                     Launch((*argv, "--resume", "checkpoints/last.pt"), bad, repo),
                     ("command", "--resume"))


FRAUD_EVAL = """
    \"\"\"Evaluate the card-fraud scorer: fit a logistic model on the first 3000 transactions,
    score the rest in batches of EVAL_BATCH_SIZE (a DataLoader), flag at --threshold;
    --min-precision refuses to publish below it.\"\"\"
    import argparse
    import os

    import torch
    from torch.utils.data import DataLoader, TensorDataset


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--threshold", type=float, default=0.5)
        p.add_argument("--min-precision", type=float, default=None)
        a = p.parse_args()
        g = torch.Generator().manual_seed(9)
        x = torch.randn(4000, 10, generator=g)
        y = ((x[:, 0] * 1.5 + x[:, 1] - x[:, 2] + torch.randn(4000, generator=g)) > 1.2).float()
        torch.manual_seed(0)
        lin = torch.nn.Linear(10, 1)
        opt = torch.optim.LBFGS(lin.parameters(), max_iter=50)

        def closure():
            opt.zero_grad()
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                lin(x[:3000]).squeeze(1), y[:3000])
            loss.backward()
            return loss

        opt.step(closure)
        batch = int(os.environ.get("EVAL_BATCH_SIZE", "256"))
        loader = DataLoader(TensorDataset(x[3000:], y[3000:]), batch_size=batch)
        tp = fp = fn = 0
        with torch.no_grad():
            for bx, by in loader:
                flag = torch.sigmoid(lin(bx).squeeze(1)) >= a.threshold
                tp += int((flag & (by == 1)).sum())
                fp += int((flag & (by == 0)).sum())
                fn += int((~flag & (by == 1)).sum())
        precision, recall = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
        print(f"flagged={tp + fp} precision={precision:.4f} recall={recall:.4f}")
        if a.min_precision is not None and precision < a.min_precision:
            raise SystemExit(f"precision {precision:.4f} is below --min-precision "
                             f"{a.min_precision}: not publishing the scorer")


    if __name__ == "__main__":
        main()
    """


def _fraud(d: Path) -> tuple[str, Path]:
    py = python_with("torch")
    return py, _repo(d / "fraud-eval", {"evaluate.py": FRAUD_EVAL})


def threshold_from_runbook_metric(d: Path) -> Incident:
    """The Jenkins job's evaluation step got ``--threshold 0.7`` from the fraud team's runbook
    (their alerting threshold, not the scorer's). Both exit 0; the flagged count, precision and
    recall move. Kind: metric."""
    py, repo = _fraud(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py")
    return _incident(threshold_from_runbook_metric, Launch(argv, good, repo),
                     Launch((*argv, "--threshold", "0.7"), bad, repo), ("command", "--threshold"))


def eval_batch_size_zero_both_fail(d: Path) -> Incident:
    """Both fail. Both runs ask for ``--min-precision 0.99``, which this scorer never reaches:
    the compute instance's run scores and refuses to publish. The Jenkins job's string parameter
    EVAL_BATCH_SIZE was saved empty and its pipeline defaults it to 0: the DataLoader refuses
    ``batch_size=0`` (ValueError quoting it). Kind: both-fail."""
    py, repo = _fraud(d)
    good, bad = _shells(d, bad={"EVAL_BATCH_SIZE": "0"}, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--min-precision", "0.99")
    return _incident(eval_batch_size_zero_both_fail, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "EVAL_BATCH_SIZE"))


def fraud_eval_noise(d: Path) -> Incident:
    """The fraud scorer's evaluation, the same code, from the compute instance and from the
    Jenkins agent. Nothing planted. Kind: noise."""
    py, repo = _fraud(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py")
    return _incident(fraud_eval_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- configs and source


OMEGA_TRAIN = """
    \"\"\"Train the ranking model's settings check: conf/base.yaml (in git) merged with the
    optional, git-ignored conf/local.yaml over a structured schema (OmegaConf).\"\"\"
    import os
    from dataclasses import dataclass

    import torch
    from omegaconf import OmegaConf


    @dataclass
    class TrainConfig:
        lr: float = 0.001
        warmup_steps: int = 100
        steps: int = 300
        hidden: int = 32


    def main():
        cfg = OmegaConf.merge(OmegaConf.structured(TrainConfig), OmegaConf.load("conf/base.yaml"))
        if os.path.exists("conf/local.yaml"):
            cfg = OmegaConf.merge(cfg, OmegaConf.load("conf/local.yaml"))
        g = torch.Generator().manual_seed(2)
        x = torch.randn(600, 8, generator=g)
        y = x @ torch.randn(8, 1, generator=g)
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(8, cfg.hidden), torch.nn.Tanh(),
                                  torch.nn.Linear(cfg.hidden, 1))
        opt = torch.optim.SGD(net.parameters(), lr=cfg.lr)
        for step in range(cfg.steps):
            for group in opt.param_groups:
                group["lr"] = cfg.lr * min(1.0, (step + 1) / cfg.warmup_steps)
            loss = torch.nn.functional.mse_loss(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"steps={cfg.steps} mse={loss.item():.5f}")


    if __name__ == "__main__":
        main()
    """


def omegaconf_local_misspelt_key(d: Path) -> Incident:
    """conf/local.yaml is git-ignored: each machine keeps its own overrides. Between the runs
    the agent's was replaced by a colleague's, which says ``warmup_step: 50``; the structured
    schema has no such key and the merge stops (ConfigKeyError quoting ``warmup_step``).
    Kind: fail."""
    py = python_with("torch", "omegaconf")
    repo = _repo(d / "ranker-train", {"train.py": OMEGA_TRAIN,
                                      "conf/base.yaml": "lr: 0.05\nsteps: 300\n"},
                 "__pycache__/\nconf/local.yaml\n")
    local = repo / "conf" / "local.yaml"
    local.write_text("# this machine\nhidden: 32\nwarmup_steps: 50\n")

    def replaced() -> None:
        local.write_text("# from Priya's machine\nhidden: 32\nwarmup_step: 50\n")

    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(omegaconf_local_misspelt_key, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {local.resolve()}"),
                     between=replaced)


THUMB_TRAIN = """
    \"\"\"Train the thumbnail-quality classifier on 8x8 RGB thumbnails (data.py prepares the
    batches channel-last, then flattens them).\"\"\"
    import torch

    from data import flatten, thumbnails


    def main():
        x, y = thumbnails()
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(192, 32), torch.nn.ReLU(),
                                  torch.nn.Linear(32, 2))
        opt = torch.optim.Adam(net.parameters(), lr=0.01)
        for step in range(60):
            loss = torch.nn.functional.cross_entropy(net(flatten(x)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        acc = (net(flatten(x)).argmax(1) == y).float().mean()
        print(f"loss={loss.item():.5f} train_acc={acc:.4f}")


    if __name__ == "__main__":
        main()
    """

THUMB_DATA = """
    \"\"\"The thumbnails, channel-first as stored, and how the model sees them.\"\"\"
    import torch


    def thumbnails(n=512):
        g = torch.Generator().manual_seed(6)
        x = torch.rand(n, 3, 8, 8, generator=g)
        y = (x[:, 0].mean((1, 2)) > x[:, 2].mean((1, 2))).long()
        return x, y


    def flatten(x):
        # channel-last, as the exported model expects
        return x.permute(0, 2, 3, 1).reshape(len(x), -1)
    """


def view_instead_of_reshape_uncommitted(d: Path) -> Incident:
    """Between the runs data.py (in git) had its ``.reshape`` turned into ``.view``, not
    committed, after a profiler said reshape copies; the permuted tensor is not contiguous and
    view refuses (RuntimeError: view size is not compatible). Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "thumb-quality", {"train.py": THUMB_TRAIN, "data.py": THUMB_DATA})

    def edited() -> None:
        f = repo / "data.py"
        f.write_text(f.read_text().replace(".reshape(len(x), -1)", ".view(len(x), -1)"))

    good, bad = _shells(d, bad_in="azureml", venv=_venv_of(py))
    argv = (py, "train.py")
    return _incident(view_instead_of_reshape_uncommitted, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "thumb-quality: data.py"), between=edited)


#: The fourteenth fresh batch, in the order it was written. Never tuned on.
FRESH14 = [
    aux_head_uncommitted_job, global_batch_from_notebook_metric_job,
    dist_timeout_minutes_both_fail_job, ctr_ddp_job_noise, master_port_executor_prefix,
    n_positions_cut_by_sync, activation_relu_metric, query_ppl_noise,
    clicklog_behind_in_agent_venv, agent_timezone_daily_metric, resume_old_architecture,
    threshold_from_runbook_metric, eval_batch_size_zero_both_fail, fraud_eval_noise,
    omegaconf_local_misspelt_key, view_instead_of_reshape_uncommitted,
]

if __name__ == "__main__":  # build one incident and print its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH14 if b.__name__ in sys.argv[1:]] or FRESH14
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh14-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
