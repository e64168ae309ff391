"""A twenty-fifth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh22.py, for their format), how they are run and scored
(benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot reference
(docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job captures
one snapshot per rank. They form the corpus's ``fresh25`` half; report it, never change the
ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a wafer-defect classifier trained
  with DDP: ``--warmup-epochs 4`` from the Prefect deployment's parameters leaving the cosine
  schedule no epochs (``ZeroDivisionError: integer modulo by zero``), an uncommitted
  ``mixup_alpha: 0.4`` in the git-tracked configs/ddp.yaml (metric), a ``CKPT_DIR=~/runs/wafer``
  that the systemd EnvironmentFile never expands, on top of a quality gate the good job already
  misses (both fail), and the same job from both shells (noise);
- a single-process ``env://`` rendezvous from an Emacs shell that still exports ``RANK=1`` (the
  client times out waiting for a rank 0), and ``--device cuda`` on the CPU build, copied from the
  GPU work pool's parameters;
- a tiny Llama under transformers: the model folder's ``bos_token_id`` pasted from Llama 3
  (128000, past the 256-row embedding), linear RoPE scaling (``rope_parameters``, factor 4:
  metric), ``--stride 0`` for the sliding-window perplexity on top of a missed gate (both fail),
  and the evaluation from both shells (noise);
- team package ``qckit`` in two venvs: 2.0 renamed ``cpk`` (fail), 1.3 excludes reworked lots by
  default (metric);
- a pandas/scikit-learn lot-risk model: a git-ignored ``risk.local.toml`` with ``max_depth = -1``
  (LightGBM's "no limit", refused by the random forest), an uncommitted
  ``df.groupby("tool").mean()`` over a text column, ``DEBUG_SUBSAMPLE`` left exported in the
  Emacs shell (metric), and the model from both shells (noise).

The shells are :func:`prefect_or_vterm_shell`: shell 0 a Prefect process worker run as a
``systemd --user`` service (``INVOCATION_ID``, ``JOURNAL_STREAM``, ``PREFECT_*``, no terminal,
the unit's EnvironmentFile exporting ``NCCL_*``/``OMP_*``/``HF_*``/``TORCH_*``), shell 1 bash in
Emacs ``vterm`` on a Linux workstation with pyenv (``INSIDE_EMACS``, ``PYENV_*``, a Wayland
desktop session, ``CUDA_*``/``PYTORCH_*`` from ~/.bashrc). The thread counts that change float
reductions are pinned alike. The planted side is either: some incidents work from the worker
and fail in Emacs, others the reverse.

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

RUN_ID = "8e41c0d2-57fa-4b1e-9c33-a06d2f7e915b"


def prefect_or_vterm_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 a Prefect
    process worker's flow run under ``systemd --user``, 1 bash in Emacs vterm with pyenv
    (``venv`` the interpreter's virtual environment, first on ``PATH``); each its own tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2",
              "PYTHONUNBUFFERED": "1"}
    if n % 2 == 0:  # systemd --user unit prefect-worker.service, EnvironmentFile=worker.env
        env = {
            **common, "PATH": f"{home}/.local/bin:/usr/local/bin:/usr/bin:/bin:{path}",
            "USER": "mlops", "LOGNAME": "mlops", "LANG": "en_US.UTF-8",
            "SHELL": "/bin/bash", "XDG_RUNTIME_DIR": "/run/user/1001",
            "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1001/bus",
            "INVOCATION_ID": "4f0d9c2ab7e14c6e9d1f53a8be02c771",
            "JOURNAL_STREAM": "8:52731", "MANAGERPID": "1893", "SYSTEMD_EXEC_PID": "2204",
            "PREFECT_API_URL": "http://127.0.0.1:4200/api", "PREFECT_HOME": f"{home}/.prefect",
            "PREFECT_LOGGING_LEVEL": "INFO", "PREFECT__FLOW_RUN_ID": RUN_ID,
            "PREFECT_WORKER_PREFETCH_SECONDS": "10", "PREFECT_API_ENABLE_HTTP2": "false",
            "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "true",
            "NCCL_DEBUG": "INFO", "NCCL_SOCKET_IFNAME": "enp5s0", "NCCL_IB_DISABLE": "1",
            "TORCH_NCCL_ENABLE_MONITORING": "0", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
            "HF_HOME": "/srv/prefect/hf", "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_VERBOSITY": "error", "TORCHINDUCTOR_CACHE_DIR": "/srv/prefect/inductor",
            "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_MODULE_LOADING": "LAZY",
            "MALLOC_ARENA_MAX": "2",
        }
        if venv:  # ExecStart=/srv/prefect/venv/bin/prefect worker start --pool cpu-pool
            env["VIRTUAL_ENV"] = venv
            env["PATH"] = f"{venv}/bin:{env['PATH']}"
        return env
    pyenv = f"{home}/.pyenv"
    env = {  # bash started by M-x vterm in Emacs 29 on a GNOME Wayland desktop, pyenv in ~/.bashrc
        **common, "PATH": f"{pyenv}/shims:{pyenv}/bin:{home}/.local/bin:/usr/local/bin:{path}",
        "USER": "dana", "LOGNAME": "dana", "SHELL": "/bin/bash", "LANG": "en_GB.UTF-8",
        "TERM": "xterm-256color", "COLORTERM": "truecolor", "SHLVL": "2",
        "INSIDE_EMACS": "29.4,vterm",
        "EMACS_VTERM_PATH": f"{home}/.emacs.d/elpa/vterm-20241218.331/",
        "EDITOR": "emacsclient", "VISUAL": "emacsclient", "PAGER": "cat",
        "DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "wayland",
        "XDG_CURRENT_DESKTOP": "GNOME", "DESKTOP_SESSION": "gnome",
        "XDG_RUNTIME_DIR": "/run/user/1000", "SSH_AUTH_SOCK": "/run/user/1000/keyring/ssh",
        "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus",
        "PYENV_ROOT": pyenv, "PYENV_SHELL": "bash", "PYENV_VERSION": "3.11.9/envs/fab",
        "PYENV_VIRTUALENV_INIT": "1", "OLDPWD": f"{home}/notes",
        "CUDA_VISIBLE_DEVICES": "0", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "NCCL_P2P_DISABLE": "1", "TOKENIZERS_PARALLELISM": "false",
        "HF_HOME": f"{home}/.cache/huggingface", "TORCH_HOME": f"{home}/.cache/torch",
        "WANDB_MODE": "offline", "PIP_REQUIRE_VIRTUALENV": "true",
    }
    if venv:  # `pyenv activate fab`
        env["VIRTUAL_ENV"] = venv
        env["PYENV_VIRTUAL_ENV"] = venv
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "vterm", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the Emacs vterm (``bad_in="vterm"``) or from the Prefect worker (``"prefect"``)."""
    prefect = prefect_or_vterm_shell(0, d / "home" / "mlops", venv)
    vterm = prefect_or_vterm_shell(1, d / "home" / "dana", venv)
    first, second = (prefect, vterm) if bad_in == "vterm" else (vterm, prefect)
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


WAFER_DDP = """
    \"\"\"Train the wafer-map defect classifier (none / edge-ring / scratch) with DDP over gloo;
    sizes from configs/ddp.yaml. A cosine schedule runs over the epochs after --warmup-epochs;
    rank 0 saves the weights into CKPT_DIR when it is set, prints the macro F1 and refuses a
    model below --min-f1.\"\"\"
    import argparse
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP


    def wafers(n=1800, width=24, seed=7):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, width, generator=g)
        ring = x[:, :6].abs().mean(1) - 0.8 + 0.3 * torch.randn(n, generator=g)
        scratch = x[:, 10] * x[:, 11] + 0.5 * x[:, 12] + 0.3 * torch.randn(n, generator=g)
        y = torch.zeros(n, dtype=torch.long)
        y[ring > 0.15] = 1
        y[scratch > 0.9] = 2
        return x, y


    def macro_f1(pred, y, classes=3):
        f1s = []
        for c in range(classes):
            tp = ((pred == c) & (y == c)).sum().item()
            fp = ((pred == c) & (y != c)).sum().item()
            fn = ((pred != c) & (y == c)).sum().item()
            f1s.append(2 * tp / max(2 * tp + fp + fn, 1))
        return sum(f1s) / classes


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--warmup-epochs", type=int, default=0)
        p.add_argument("--min-f1", type=float, default=None)
        a = p.parse_args()
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        with open("configs/ddp.yaml") as f:
            cfg = yaml.safe_load(f)
        torch.set_num_threads(1)
        x, y = wafers()
        tx, ty = x[:1500][rank::world], y[:1500][rank::world]
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], cfg["hidden"]), torch.nn.GELU(),
                                  torch.nn.Linear(cfg["hidden"], 3))
        model = DDP(net)
        opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=0.01)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(
            opt, T_max=cfg["epochs"] - a.warmup_epochs)
        mix = torch.distributions.Beta(cfg["mixup_alpha"], cfg["mixup_alpha"]) \\
            if cfg["mixup_alpha"] > 0 else None
        torch.manual_seed(100 + rank)
        bs = cfg["batch_size"] // world
        for epoch in range(cfg["epochs"]):
            if epoch < a.warmup_epochs:
                for group in opt.param_groups:
                    group["lr"] = cfg["lr"] * (epoch + 1) / (a.warmup_epochs + 1)
            perm = torch.randperm(len(tx))
            total, steps = 0.0, 0
            for s in range(0, len(tx), bs):
                idx = perm[s:s + bs]
                xb, yb = tx[idx], ty[idx]
                if mix is not None:
                    lam = mix.sample().item()
                    other = torch.randperm(len(idx))
                    out = model(lam * xb + (1 - lam) * xb[other])
                    loss = lam * F.cross_entropy(out, yb) + (1 - lam) * F.cross_entropy(out, yb[other])
                else:
                    loss = F.cross_entropy(model(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total, steps = total + loss.item(), steps + 1
            sched.step()
            t = torch.tensor([total / steps])
            dist.all_reduce(t)
            if rank == 0:
                print(f"epoch={epoch} loss={t.item() / world:.5f}")
        net.eval()
        with torch.no_grad():
            pred = net(x[1500:]).argmax(1)
        f1 = macro_f1(pred, y[1500:])
        if rank == 0:
            print(f"val_f1={f1:.4f} val_acc={(pred == y[1500:]).float().mean().item():.4f}")
            if os.environ.get("CKPT_DIR"):
                torch.save(net.state_dict(), os.path.join(os.environ["CKPT_DIR"], "wafer.pt"))
            if a.min_f1 is not None and f1 < a.min_f1:
                raise RuntimeError(f"val_f1={f1:.4f} is below --min-f1 {a.min_f1}: "
                                   "not promoting the model")
        dist.barrier()
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

WAFER_YAML = ("# wafer-map defects, fab 2\nlr: 0.01\nhidden: 64\nbatch_size: 64\nepochs: 4\n"
              "mixup_alpha: 0.0\n")


def _wafer_job(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    return py, _repo(d / "wafer-ddp", {"train.py": WAFER_DDP, "configs/ddp.yaml": WAFER_YAML})


def warmup_epochs_from_deployment_job(d: Path) -> Incident:
    """Job against job. The Prefect deployment's parameters pass ``--warmup-epochs 4`` (set for
    the 40-epoch production schedule); this config trains 4 epochs, so the cosine schedule gets
    ``T_max=0`` and every rank stops at its first ``sched.step()`` (ZeroDivisionError: integer
    modulo by zero). From the Emacs shell it trains. Kind: fail."""
    py, repo = _wafer_job(d)
    good, bad = _shells(d, bad_in="prefect", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(warmup_epochs_from_deployment_job, Launch(argv, good, repo),
                     Launch((*argv, "--warmup-epochs", "4"), bad, repo),
                     ("command", "--warmup-epochs"))


def mixup_uncommitted_config_metric_job(d: Path) -> Incident:
    """Job against job. Between the jobs configs/ddp.yaml (in git) got ``mixup_alpha: 0.4``,
    not committed, while trying augmentation; both jobs train, the losses and the F1 move.
    Kind: metric."""
    py, repo = _wafer_job(d)

    def edited() -> None:
        f = repo / "configs" / "ddp.yaml"
        f.write_text(f.read_text().replace("mixup_alpha: 0.0", "mixup_alpha: 0.4"))

    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(mixup_uncommitted_config_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "wafer-ddp: configs/ddp.yaml"),
                     between=edited)


def ckpt_dir_tilde_unexpanded_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--min-f1 0.999``, which this model never
    reaches: the Emacs job trains, saves into ``CKPT_DIR`` (bash expanded ``~/runs/wafer``) and
    rank 0 refuses to promote the model. The Prefect worker's EnvironmentFile holds
    ``CKPT_DIR=~/runs/wafer`` too, but systemd does not expand ``~``; rank 0's ``torch.save``
    stops (RuntimeError: Parent directory ~/runs/wafer does not exist). Kind: both-fail."""
    py, repo = _wafer_job(d)
    runs = d / "home" / "dana" / "runs" / "wafer"
    runs.mkdir(parents=True, exist_ok=True)
    good, bad = _shells(d, good={"CKPT_DIR": str(runs)}, bad={"CKPT_DIR": "~/runs/wafer"},
                        bad_in="prefect", venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--min-f1", "0.999")
    return _incident(ckpt_dir_tilde_unexpanded_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "CKPT_DIR"))


def wafer_defects_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the Prefect worker and from Emacs
    vterm: each job its own rendezvous and rank processes, the shells their own PREFECT_*,
    INVOCATION_ID, INSIDE_EMACS, PYENV_*, NCCL_*, CUDA_* and HF_* variables. Nothing planted.
    Kind: noise."""
    py, repo = _wafer_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(wafer_defects_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- rendezvous, device


SHARD_SCORE = """
    \"\"\"Score the etch-endpoint model on the lot shards with the team's distributed helpers, as
    a single process: an env:// rendezvous (MASTER_ADDR and MASTER_PORT default to a free local
    port, RANK to 0), the model on --device, then an all_reduce of the per-shard error sums.\"\"\"
    import argparse
    import datetime
    import os
    import socket

    import torch
    import torch.distributed as dist


    def free_port():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--device", default="cpu")
        a = p.parse_args()
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(free_port()))
        dist.init_process_group("gloo", init_method="env://",
                                rank=int(os.environ.get("RANK", "0")), world_size=1,
                                timeout=datetime.timedelta(seconds=15))
        torch.manual_seed(4)
        model = torch.nn.Sequential(torch.nn.Linear(12, 8), torch.nn.Tanh(),
                                    torch.nn.Linear(8, 1)).to(a.device)
        g = torch.Generator().manual_seed(9)
        shards = [torch.randn(200, 12, generator=g) for _ in range(4)]
        errs = torch.zeros(2, dtype=torch.float64)
        with torch.no_grad():
            for s in shards:
                target = s[:, :3].sum(1, keepdim=True)
                err = (model(s.to(a.device)).cpu() - target).abs()
                errs += torch.tensor([err.sum().item(), float(len(s))], dtype=torch.float64)
        dist.all_reduce(errs)
        print(f"shards={len(shards)} mae={errs[0].item() / errs[1].item():.5f}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """


def _shard_score(d: Path) -> tuple[str, Path]:
    py = python_with("torch")
    return py, _repo(d / "etch-score", {"score_shards.py": SHARD_SCORE})


def rank_left_exported_in_vterm(d: Path) -> Incident:
    """The Emacs shell still exports ``RANK=1`` from starting the second rank of a two-process
    debug run by hand; the single-process scorer rendezvous as rank 1, waits for a rank 0 that
    never listens, and times out (DistNetworkError: The client socket has timed out after
    15000ms while trying to connect to (127.0.0.1, PORT)). From the Prefect worker it scores.
    Kind: fail."""
    py, repo = _shard_score(d)
    good, bad = _shells(d, bad={"RANK": "1"}, venv=_venv_of(py))
    argv = (py, "score_shards.py")
    return _incident(rank_left_exported_in_vterm, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "RANK"))


def device_cuda_from_gpu_pool(d: Path) -> Incident:
    """The deployment was copied from the GPU work pool's and passes ``--device cuda``; the
    worker's venv has the CPU build of torch (AssertionError: Torch not compiled with CUDA
    enabled). From Emacs, with the default device, it scores. Kind: fail."""
    py, repo = _shard_score(d)
    good, bad = _shells(d, bad_in="prefect", venv=_venv_of(py))
    argv = (py, "score_shards.py")
    return _incident(device_cuda_from_gpu_pool, Launch(argv, good, repo),
                     Launch((*argv, "--device", "cuda"), bad, repo), ("command", "--device"))


# --------------------------------------------------------------------------- model folder


MAKE_LLAMA = """
import sys
import torch
from transformers import LlamaConfig, LlamaForCausalLM
cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                  initializer_range=0.4, tie_word_embeddings=False, bos_token_id=1,
                  eos_token_id=2, pad_token_id=0)
torch.manual_seed(3)
LlamaForCausalLM(cfg).save_pretrained(sys.argv[1])
"""

PPL = """
    \"\"\"Sliding-window perplexity of the maintenance-log language model (--model-path) on
    data/maintlog.txt: byte-level ids after the model's BOS token, windows of --window tokens
    every --stride tokens, only the new tokens scored. --max-ppl refuses a worse model.\"\"\"
    import argparse
    import math

    import torch
    from transformers import AutoModelForCausalLM


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--window", type=int, default=64)
        p.add_argument("--stride", type=int, default=32)
        p.add_argument("--max-ppl", type=float, default=None)
        a = p.parse_args()
        torch.set_num_threads(2)
        model = AutoModelForCausalLM.from_pretrained(a.model_path).eval()
        text = open("data/maintlog.txt", encoding="utf-8").read()
        ids = torch.tensor([[model.config.bos_token_id, *text.encode()[:600]]])
        nll, count, prev = 0.0, 0, 0
        with torch.no_grad():
            for begin in range(0, ids.shape[1], a.stride):
                end = min(begin + a.window, ids.shape[1])
                new = end - prev
                window = ids[:, begin:end]
                labels = window.clone()
                labels[:, :-new] = -100
                loss = model(input_ids=window, labels=labels).loss
                nll += loss.item() * new
                count += new
                prev = end
                if end == ids.shape[1]:
                    break
        ppl = math.exp(nll / count)
        print(f"tokens={count} ppl={ppl:.4f}")
        if a.max_ppl is not None and ppl > a.max_ppl:
            raise SystemExit(f"ppl={ppl:.4f} is above --max-ppl {a.max_ppl}: not publishing")


    if __name__ == "__main__":
        main()
    """


def _maintlog() -> str:
    tools = ["etcher 3", "CMP 1", "litho 7", "implanter 2", "furnace 5"]
    what = ["chamber pressure drift", "slurry flow alarm", "reticle stage error",
            "beam current low", "thermocouple replaced"]
    return "".join(f"{tools[i % 5]}: {what[(i * 3) % 5]} on lot {1000 + 17 * i}, "
                   f"requalified by shift {'ABC'[i % 3]}.\n" for i in range(24))


def _llama(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers")
    repo = _repo(d / "maintlog-lm", {"ppl.py": PPL, "data/maintlog.txt": _maintlog()})
    model = d / "models" / "maintlog-llama"
    _build(py, MAKE_LLAMA, str(model))
    return py, repo, model


def _edit_config(model: Path, field: str, value: object) -> None:
    cfg = json.loads((model / "config.json").read_text())
    cfg[field] = value
    (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def bos_token_id_from_llama3(d: Path) -> Incident:
    """Between the runs the model folder's config.json (outside git) got ``"bos_token_id":
    128000`` pasted from a Llama 3 config; the evaluation starts every sequence with it and the
    256-row embedding refuses it (IndexError: index out of range in self). Kind: fail."""
    py, repo, model = _llama(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "ppl.py", "--model-path", str(model))
    return _incident(bos_token_id_from_llama3, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: bos_token_id"),
                     between=lambda: _edit_config(model, "bos_token_id", 128000))


def linear_rope_scaling_metric(d: Path) -> Incident:
    """Between the runs the model folder's config.json got linear RoPE scaling
    (``"rope_parameters": {"rope_type": "linear", "factor": 4.0, ...}``) from the long-context
    experiment; every weight still loads, the positions are squeezed and the perplexity moves.
    Kind: metric."""
    py, repo, model = _llama(d)
    good, bad = _shells(d, bad_in="prefect", venv=_venv_of(py))
    argv = (py, "ppl.py", "--model-path", str(model))
    rope = {"rope_theta": 10000.0, "rope_type": "linear", "factor": 4.0}
    return _incident(linear_rope_scaling_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: rope_parameters"),
                     between=lambda: _edit_config(model, "rope_parameters", rope))


def stride_zero_both_fail(d: Path) -> Incident:
    """Both fail. Both runs pass ``--max-ppl 20``, which this small model never reaches: the
    good run scores and does not publish. The Emacs run also passes ``--stride 0`` (meant as
    "no overlap"); the window loop refuses it (ValueError: range() arg 3 must not be zero).
    Kind: both-fail."""
    py, repo, model = _llama(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "ppl.py", "--model-path", str(model), "--max-ppl", "20")
    return _incident(stride_zero_both_fail, Launch(argv, good, repo),
                     Launch((*argv, "--stride", "0"), bad, repo), ("command", "--stride"))


def maintlog_ppl_noise(d: Path) -> Incident:
    """The maintenance-log perplexity, the same model folder, code and data, from the Prefect
    worker and from Emacs vterm. Nothing planted. Kind: noise."""
    py, repo, model = _llama(d)
    good, bad = _shells(d, bad_in="prefect", venv=_venv_of(py))
    argv = (py, "ppl.py", "--model-path", str(model))
    return _incident(maintlog_ppl_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- team package


QCKIT = {
    "1.2.0": '''
        """The quality team's lot statistics (1.2)."""


        def yield_rate(lots, exclude_rework=False):
            kept = [lot for lot in lots if not (exclude_rework and lot["rework"])]
            return sum(lot["good"] for lot in kept) / sum(lot["dies"] for lot in kept)


        def cpk(values, lsl, usl):
            mean = sum(values) / len(values)
            sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
            return min(usl - mean, mean - lsl) / (3 * sd)
        ''',
    "1.3.0": '''
        """The quality team's lot statistics (1.3: reworked lots are left out by default)."""


        def yield_rate(lots, exclude_rework=True):
            kept = [lot for lot in lots if not (exclude_rework and lot["rework"])]
            return sum(lot["good"] for lot in kept) / sum(lot["dies"] for lot in kept)


        def cpk(values, lsl, usl):
            mean = sum(values) / len(values)
            sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
            return min(usl - mean, mean - lsl) / (3 * sd)
        ''',
    "2.0.0": '''
        """The quality team's lot statistics (2.0: capability indices renamed)."""


        def yield_rate(lots, exclude_rework=False):
            kept = [lot for lot in lots if not (exclude_rework and lot["rework"])]
            return sum(lot["good"] for lot in kept) / sum(lot["dies"] for lot in kept)


        def process_capability(values, lsl, usl, *, index="cpk"):
            mean = sum(values) / len(values)
            sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
            if index == "cp":
                return (usl - lsl) / (6 * sd)
            return min(usl - mean, mean - lsl) / (3 * sd)
        ''',
}

YIELD_REPORT = """
    \"\"\"The weekly yield report: die yield over the lots and the oxide thickness's Cpk, from
    data/lots.csv, with the quality team's qckit.\"\"\"
    import csv

    from qckit import cpk, yield_rate


    def main():
        with open("data/lots.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        lots = [{"dies": int(r["dies"]), "good": int(r["good"]), "rework": r["rework"] == "1"}
                for r in rows]
        oxide = [float(r["oxide_nm"]) for r in rows]
        print(f"lots={len(lots)} yield={yield_rate(lots):.4f} "
              f"cpk_oxide={cpk(oxide, 95.0, 105.0):.3f}")


    if __name__ == "__main__":
        main()
    """


def _lots(n: int = 240) -> str:
    pick = random.Random(25)
    tools, recipes = ["ETCH-A", "ETCH-B", "ETCH-C", "ETCH-D"], ["std", "fast", "lowk"]
    rows = []
    for i in range(n):
        tool, recipe = tools[i % 4], recipes[(i * 5) % 3]
        rework = int(pick.random() < 0.15)
        oxide = pick.gauss(100.4 + (0.6 if tool == "ETCH-C" else 0.0), 1.1)
        thickness = pick.gauss(310 + 4 * (i % 4), 6)
        risk = 0.8 * abs(oxide - 100) + (1.2 if rework else 0) + (0.7 if recipe == "lowk" else 0)
        fail = int(risk + pick.gauss(0, 0.6) > 2.0)
        dies = 420
        good = int(dies * max(0.5, 0.97 - 0.04 * risk - 0.08 * rework - pick.random() * 0.03))
        rows.append(f"L{7000 + i},{tool},{recipe},{rework},{oxide:.2f},{thickness:.1f},"
                    f"{dies},{good},{fail}")
    return "\n".join(["lot,tool,recipe,rework,oxide_nm,thickness_nm,dies,good,fail",
                      *rows]) + "\n"


def _qckit_venvs(d: Path, prefect_version: str, vterm_version: str,
                 bad_in: str) -> tuple[Path, dict[str, str], dict[str, str]]:
    repo = _repo(d / "yield-report", {"report.py": YIELD_REPORT, "data/lots.csv": _lots()})
    envs = {}
    for side, version in (("prefect", prefect_version), ("vterm", vterm_version)):
        py = _venv(d / "venvs" / side, {"qckit": (version, QCKIT[version])})
        envs[side] = str(py.parent.parent)
    good, bad = _shells(d, bad_in=bad_in)
    good_side, bad_side = ("prefect", "vterm") if bad_in == "vterm" else ("vterm", "prefect")
    good = {**good, "VIRTUAL_ENV": envs[good_side],
            "PATH": f"{envs[good_side]}/bin:{good['PATH']}"}
    bad = {**bad, "VIRTUAL_ENV": envs[bad_side], "PATH": f"{envs[bad_side]}/bin:{bad['PATH']}"}
    return repo, good, bad


def qckit_major_in_pyenv_virtualenv(d: Path) -> Incident:
    """The report imports ``cpk`` from qckit. The pyenv virtualenv the Emacs shell activates
    was rebuilt from an unpinned requirements file and got qckit 2.0.0, which renamed it
    ``process_capability`` (ImportError: cannot import name 'cpk' from 'qckit'); the Prefect
    worker's venv has 1.2.0. Kind: fail."""
    repo, good, bad = _qckit_venvs(d, "1.2.0", "2.0.0", "vterm")
    argv = ("python", "report.py")
    return _incident(qckit_major_in_pyenv_virtualenv, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "qckit"))


def qckit_rework_default_metric(d: Path) -> Incident:
    """The Prefect worker's venv was upgraded to qckit 1.3.0, whose ``yield_rate`` leaves
    reworked lots out by default; the pyenv virtualenv keeps 1.2.0. Both reports run; the
    yield moves. Kind: metric."""
    repo, good, bad = _qckit_venvs(d, "1.3.0", "1.2.0", "prefect")
    argv = ("python", "report.py")
    return _incident(qckit_rework_default_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "qckit"))


# --------------------------------------------------------------------------- pandas, scikit-learn


RISK = """
    \"\"\"Fit the lot-failure risk model: pandas features (features.py), a random forest whose
    settings come from risk.toml overlaid by the git-ignored risk.local.toml, validated with
    pydantic. DEBUG_SUBSAMPLE, when set, trains on that many lots only (for quick checks).\"\"\"
    import os
    import tomllib

    import pandas as pd
    from pydantic import BaseModel
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.metrics import precision_score, roc_auc_score
    from sklearn.model_selection import train_test_split

    from features import build


    class Settings(BaseModel):
        n_estimators: int = 60
        max_depth: int | None = None
        min_samples_leaf: int = 2
        test_size: float = 0.25


    def settings():
        merged = {}
        for name in ("risk.toml", "risk.local.toml"):
            if os.path.exists(name):
                with open(name, "rb") as f:
                    merged.update(tomllib.load(f)["forest"])
        return Settings(**merged)


    def main():
        s = settings()
        df = pd.read_csv("data/lots.csv")
        x, y = build(df), df["fail"]
        xtr, xte, ytr, yte = train_test_split(x, y, test_size=s.test_size, random_state=3,
                                              stratify=y)
        if os.environ.get("DEBUG_SUBSAMPLE"):
            xtr = xtr.sample(n=int(os.environ["DEBUG_SUBSAMPLE"]), random_state=0)
            ytr = ytr.loc[xtr.index]
        forest = RandomForestClassifier(n_estimators=s.n_estimators, max_depth=s.max_depth,
                                        min_samples_leaf=s.min_samples_leaf, random_state=0,
                                        n_jobs=1)
        forest.fit(xtr, ytr)
        prob = forest.predict_proba(xte)[:, 1]
        print(f"train_lots={len(xtr)} auc={roc_auc_score(yte, prob):.4f} "
              f"precision={precision_score(yte, prob > 0.5, zero_division=0):.4f}")


    if __name__ == "__main__":
        main()
    """

FEATURES = """
    \"\"\"Lot features: oxide deviation, each tool's mean thickness, recipe one-hot.\"\"\"
    import pandas as pd


    def build(df):
        out = pd.DataFrame(index=df.index)
        out["oxide_dev"] = (df["oxide_nm"] - 100.0).abs()
        out["rework"] = df["rework"]
        tool_mean = df.groupby("tool")["thickness_nm"].mean()
        out["tool_thickness"] = df["tool"].map(tool_mean)
        out["thickness_delta"] = df["thickness_nm"] - out["tool_thickness"]
        return out.join(pd.get_dummies(df["recipe"], prefix="recipe", dtype=float))
    """

RISK_TOML = ("# shared defaults; risk.local.toml (git-ignored) overrides\n[forest]\n"
             "n_estimators = 60\nmin_samples_leaf = 2\n")


def _risk(d: Path) -> tuple[str, Path]:
    py = python_with("pandas", "sklearn", "pydantic")
    repo = _repo(d / "lot-risk", {"risk.py": RISK, "features.py": FEATURES,
                                  "risk.toml": RISK_TOML, "data/lots.csv": _lots(480)},
                 "__pycache__/\nrisk.local.toml\n")
    _write(repo / "risk.local.toml", "# my overrides\n[forest]\nn_estimators = 80\n")
    return py, repo


def max_depth_minus_one_local_toml(d: Path) -> Incident:
    """Between the runs the git-ignored risk.local.toml got ``max_depth = -1`` (LightGBM's "no
    limit", copied from the booster's settings); pydantic takes the int and scikit-learn
    refuses it (InvalidParameterError: The 'max_depth' parameter of RandomForestClassifier must
    be an int in the range [1, inf) or None. Got -1 instead). Kind: fail."""
    py, repo = _risk(d)
    local = repo / "risk.local.toml"

    def edited() -> None:
        local.write_text(local.read_text() + "max_depth = -1\n")

    good, bad = _shells(d, bad_in="prefect", venv=_venv_of(py))
    argv = (py, "risk.py")
    return _incident(max_depth_minus_one_local_toml, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {local.resolve()}"),
                     between=edited)


def groupby_mean_uncommitted(d: Path) -> Incident:
    """Between the runs features.py (in git) was "simplified", not committed, to
    ``df.groupby("tool").mean()["thickness_nm"]``; pandas 3 refuses to average the text
    columns (TypeError: dtype 'str' does not support operation 'mean'). Kind: fail."""
    py, repo = _risk(d)

    def edited() -> None:
        f = repo / "features.py"
        f.write_text(f.read_text().replace('df.groupby("tool")["thickness_nm"].mean()',
                                           'df.groupby("tool").mean()["thickness_nm"]'))

    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "risk.py")
    return _incident(groupby_mean_uncommitted, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "lot-risk: features.py"), between=edited)


def debug_subsample_left_in_vterm_metric(d: Path) -> Incident:
    """The Emacs shell still exports ``DEBUG_SUBSAMPLE=120`` from a quick check earlier in the
    day; the model trains on 120 lots instead of 360. Both runs fit; the AUC and the precision
    move. Kind: metric."""
    py, repo = _risk(d)
    good, bad = _shells(d, bad={"DEBUG_SUBSAMPLE": "120"}, venv=_venv_of(py))
    argv = (py, "risk.py")
    return _incident(debug_subsample_left_in_vterm_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "DEBUG_SUBSAMPLE"))


def lot_risk_noise(d: Path) -> Incident:
    """The lot-risk model, the same code, data and settings files, from the Prefect worker and
    from Emacs vterm. Nothing planted. Kind: noise."""
    py, repo = _risk(d)
    good, bad = _shells(d, bad_in="prefect", venv=_venv_of(py))
    argv = (py, "risk.py")
    return _incident(lot_risk_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


#: The twenty-fifth fresh batch, in the order it was written. Never tuned on.
FRESH25 = [
    warmup_epochs_from_deployment_job, mixup_uncommitted_config_metric_job,
    ckpt_dir_tilde_unexpanded_both_fail_job, wafer_defects_job_noise,
    rank_left_exported_in_vterm, device_cuda_from_gpu_pool, bos_token_id_from_llama3,
    linear_rope_scaling_metric, stride_zero_both_fail, maintlog_ppl_noise,
    qckit_major_in_pyenv_virtualenv, qckit_rework_default_metric, max_depth_minus_one_local_toml,
    groupby_mean_uncommitted, debug_subsample_left_in_vterm_metric, lot_risk_noise,
]

if __name__ == "__main__":  # build one incident and run its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH25 if b.__name__ in sys.argv[1:]] or FRESH25
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh25-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
