"""A twenty-third fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh22.py, for their format), how they are run and scored
(benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot reference
(docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job captures
one snapshot per rank. They form the corpus's ``fresh23`` half; report it, never change the
ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), an inverter-fault classifier
  trained with DDP: ``--dist-timeout 1`` from the IDE's run configuration while rank 0 alone
  scores the fleet before the last barrier (fail), ``DDP_COMM_HOOK=fp16`` exported by the Modal
  launch (gradients all-reduced in half precision: metric), an uncommitted
  ``all_gather_into_tensor`` into a buffer sized for the whole validation set on top of a
  quality gate the good job already misses (both fail), an uncommitted ``lr: 3e-3`` in the
  git-tracked configs/train.yaml (PyYAML reads it as a string: fail) and the same job from both
  shells (noise);
- torch settings on the CPU: ``COMPILE_MODE=max_autotune`` handed to ``torch.compile`` (fail)
  and ``CKPT_MMAP=1`` asking ``torch.load`` to mmap a checkpoint saved in the legacy format
  (fail);
- a ViT folder under transformers: ``image_size`` 64 for 32 (the saved position table has 17
  rows: fail), ``qkv_bias`` false (the saved biases are dropped: metric), and its evaluation
  from both shells (noise);
- the rest: the team package ``invparse`` 2.0 (``parse_line`` returns a record, no longer a
  dict: fail) in one of two venvs, a git-ignored logging.yaml whose file handler moved to the
  Modal volume's ``/vol/logs`` (fail), an uncommitted removal of ``stratify=y`` (metric),
  ``CALIBRATION_METHOD=isotonic`` (metric), ``--scoring roc-auc`` on top of a missed gate (both
  fail) and the outage-risk scorer from both shells (noise).

The shells are :func:`modal_or_gateway_shell`: shell 0 a Modal function's container (``modal
run``: ``MODAL_*``, root in ``/root``, the image's ``NCCL_*``/``TORCH_*``/``HF_*``/``CUDA_*``
settings and the volume paths its launch exports), shell 1 bash in the terminal of a JetBrains
Gateway (PyCharm remote-development) backend (``TERMINAL_EMULATOR=JetBrains-JediTerm``, the
backend's ``__INTELLIJ_COMMAND_HISTFILE__``, an SSH login, the project venv, the user's own
``NCCL_*``/``CUDA_*``/``HF_*``). The thread counts that change float reductions are pinned
alike. The planted side is either: some incidents work in Modal and fail in the Gateway
terminal, others the reverse.

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

TASK = "ta-01JEXM4Q7R9T2VB6N8KCW3HDZF"


def modal_or_gateway_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 a Modal
    function's container, 1 bash in a JetBrains Gateway backend's terminal (``venv`` the
    interpreter's virtual environment, first on ``PATH``); each with its own tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    if n % 2 == 0:  # `modal run train_app.py::fit`: the function's container, as root
        env = {
            **common, "PATH": f"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:{path}",
            "USER": "root", "LANG": "C.UTF-8", "HOSTNAME": "modal-" + TASK[3:15].lower(),
            "MODAL_TASK_ID": TASK, "MODAL_IS_REMOTE": "1", "MODAL_ENVIRONMENT": "main",
            "MODAL_IMAGE_ID": "im-7Xq2LwPzR4c9VbN1sK0aTe", "MODAL_REGION": "us-east-1",
            "MODAL_CLOUD_PROVIDER": "CLOUD_PROVIDER_AWS", "MODAL_SERVER_URL":
                "https://api.modal.com", "MODAL_FUNCTION_NAME": "fit",
            "MODAL_APP_NAME": "inverter-faults", "MODAL_CONTAINER_CPU": "4.0",
            "MODAL_CONTAINER_MEMORY": "16384", "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1", "NCCL_DEBUG": "INFO", "NCCL_SOCKET_IFNAME": "eth0",
            "NCCL_NVLS_ENABLE": "0", "NCCL_CUMEM_ENABLE": "0",
            "TORCH_NCCL_ENABLE_MONITORING": "0", "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
            "TORCHINDUCTOR_CACHE_DIR": "/vol/cache/inductor", "HF_HOME": "/vol/cache/hf",
            "HF_HUB_ENABLE_HF_TRANSFER": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
            "CUDA_MODULE_LOADING": "LAZY", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
            "NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        }
        if venv:  # the image's uv venv, first on PATH
            env["VIRTUAL_ENV"] = venv
            env["PATH"] = f"{venv}/bin:{env['PATH']}"
        return env
    user = "mkowalski"
    env = {  # bash in the terminal of the PyCharm remote-development backend, over SSH
        **common, "PATH": f"{home}/.local/bin:/usr/local/cuda-12.6/bin:{path}",
        "USER": user, "LOGNAME": user, "SHELL": "/bin/bash", "LANG": "en_US.UTF-8",
        "TERM": "xterm-256color", "TERMINAL_EMULATOR": "JetBrains-JediTerm",
        "TERM_SESSION_ID": "7a1e5c90-3b2d-4f86-9e0a-d4c8b1f62e37", "SHLVL": "2",
        "LOGIN_SHELL": "1", "HOSTNAME": "gpu-ws-03", "COLUMNS": "187", "LINES": "29",
        "__INTELLIJ_COMMAND_HISTFILE__":
            f"{home}/.cache/JetBrains/RemoteDev-PY/_home_{user}_inverter/terminal/history",
        "IDEA_INITIAL_DIRECTORY": f"{home}/inverter",
        "REMOTE_DEV_SERVER_JCEF_ENABLED": "false",
        "SSH_CLIENT": "10.8.0.6 58214 22", "SSH_CONNECTION": "10.8.0.6 58214 10.8.1.20 22",
        "XDG_SESSION_ID": "c27", "XDG_RUNTIME_DIR": "/run/user/1000",
        "NCCL_IB_DISABLE": "1", "NCCL_P2P_DISABLE": "1", "CUDA_VISIBLE_DEVICES": "0",
        "TORCH_CUDA_ARCH_LIST": "8.6", "HF_HOME": f"{home}/.cache/huggingface",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TOKENIZERS_PARALLELISM": "false",
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "PYTORCH_NVML_BASED_CUDA_CHECK": "1",
    }
    if venv:  # the project interpreter PyCharm activated in the terminal
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "gateway", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the Gateway terminal (``bad_in="gateway"``) or from the Modal container (``"modal"``)."""
    modal = modal_or_gateway_shell(0, d / "home" / "root-modal", venv)
    gateway = modal_or_gateway_shell(1, d / "home" / "mkowalski", venv)
    first, second = (modal, gateway) if bad_in == "gateway" else (gateway, modal)
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


INVERTER_DDP = """
    \"\"\"Train the inverter-fault classifier with DDP over gloo; sizes from configs/train.yaml.
    --dist-timeout (seconds) bounds every collective; DDP_COMM_HOOK=fp16 compresses gradients
    before the all-reduce. Rank 0 prints each epoch's loss, the validation F1 and the worst
    site's accuracy over the fleet's history; --min-f1 refuses a model below it.\"\"\"
    import argparse
    import datetime
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP


    def telemetry(n, seed):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, 12, generator=g)
        score = 1.1 * x[:, 0] - 0.8 * x[:, 2] + 0.5 * x[:, 4] * x[:, 7] \\
            + 0.5 * torch.randn(n, generator=g)
        return x, (score > 0.6).long()


    def fleet_worst(net, sites=500):
        \"\"\"Every site's history through the model, site by site: the worst accuracy.\"\"\"
        worst = 1.0
        with torch.no_grad():
            for site in range(sites):
                x, y = telemetry(20000, 1000 + site)
                worst = min(worst, (net(x).argmax(1) == y).float().mean().item())
        return worst


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--dist-timeout", type=float, default=600.0)
        p.add_argument("--min-f1", type=float, default=None)
        a = p.parse_args()
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=a.dist_timeout))
        rank, world = dist.get_rank(), dist.get_world_size()
        cfg = yaml.safe_load(open("configs/train.yaml"))
        x, y = telemetry(2401, 7)
        tx, ty = x[:2000][rank::world], y[:2000][rank::world]
        vx, vy = x[2000:][rank::world], y[2000:][rank::world]
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(12, cfg["hidden"]), torch.nn.ReLU(),
                                  torch.nn.Linear(cfg["hidden"], 2))
        model = DDP(net)
        if os.environ.get("DDP_COMM_HOOK") == "fp16":
            model.register_comm_hook(None, default_hooks.fp16_compress_hook)
        opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"],
                                weight_decay=cfg["weight_decay"])
        bs = cfg["batch_size"] // world
        order = torch.Generator().manual_seed(rank + 1)
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
                print(f"epoch={epoch} loss={t.item() / world:.6f}")
        net.eval()
        with torch.no_grad():
            pred = net(vx).argmax(1)
        hits = torch.tensor([float(((pred == 1) & (vy == 1)).sum()), float((pred == 1).sum()),
                             float((vy == 1).sum())])
        dist.all_reduce(hits)
        val_f1 = 2 * hits[0].item() / max(hits[1].item() + hits[2].item(), 1.0)
        if rank == 0:
            print(f"val_f1={val_f1:.4f}")
            print(f"fleet_worst_acc={fleet_worst(net):.4f}")
        dist.barrier()
        if rank == 0 and a.min_f1 is not None and val_f1 < a.min_f1:
            raise RuntimeError(f"val_f1={val_f1:.4f} is below --min-f1 {a.min_f1}: "
                               "keeping the deployed model")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

INVERTER_YAML = ("# inverter faults, fleet west\nlr: 0.003\nweight_decay: 0.01\nhidden: 32\n"
                 "batch_size: 64\nepochs: 4\n")


def _inverter_job(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    return py, _repo(d / "inverter-ddp", {"train.py": INVERTER_DDP,
                                          "configs/train.yaml": INVERTER_YAML})


def dist_timeout_from_run_config_job(d: Path) -> Incident:
    """Job against job. The PyCharm run configuration, copied into the Gateway terminal's
    command, passes ``--dist-timeout 1`` (set so that a hung collective fails fast while
    debugging); rank 0 alone scores the fleet's history before the last barrier, which takes
    longer, and rank 1 gives up waiting (RuntimeError: ... Timed out waiting 1000ms for recv
    operation to complete). Kind: fail."""
    py, repo = _inverter_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    return _incident(dist_timeout_from_run_config_job,
                     Launch(_torchrun(py, "train.py"), good, repo),
                     Launch(_torchrun(py, "train.py", "--dist-timeout", "1"), bad, repo),
                     ("command", "--dist-timeout"))


def fp16_comm_hook_in_modal_launch_metric_job(d: Path) -> Incident:
    """Job against job. The Modal function's launch exports ``DDP_COMM_HOOK=fp16`` (to halve
    the all-reduce traffic between H100 nodes); the trainer registers torch's
    ``fp16_compress_hook`` and the gradients are averaged in half precision. Both jobs train;
    the losses and the scores move. Kind: metric."""
    py, repo = _inverter_job(d)
    good, bad = _shells(d, bad={"DDP_COMM_HOOK": "fp16"}, bad_in="modal", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(fp16_comm_hook_in_modal_launch_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "DDP_COMM_HOOK"))


def gather_buffer_uncommitted_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--min-f1 0.99``, which this model never
    reaches: the good job trains and rank 0 keeps the deployed model. Between the jobs train.py
    (in git) got, not committed, an ``all_gather_into_tensor`` of every rank's predictions into
    a buffer sized for the whole validation set (401 rows; the ranks hold 201 and 200), and
    every rank stops there. Kind: both-fail."""
    py, repo = _inverter_job(d)

    def edited() -> None:
        f = repo / "train.py"
        f.write_text(f.read_text().replace(
            "    hits = torch.tensor([float(((pred == 1) & (vy == 1)).sum()),",
            "    preds = torch.zeros(len(y) - 2000, dtype=pred.dtype)  # all ranks' predictions\n"
            "    dist.all_gather_into_tensor(preds, pred)\n"
            "    hits = torch.tensor([float(((pred == 1) & (vy == 1)).sum()),"))

    good, bad = _shells(d, bad_in="modal", venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--min-f1", "0.99")
    return _incident(gather_buffer_uncommitted_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "inverter-ddp: train.py"), between=edited)


def lr_exponent_uncommitted_config_job(d: Path) -> Incident:
    """Job against job. Between the jobs configs/train.yaml (in git) had ``lr: 0.003``
    "tidied", not committed, to ``lr: 3e-3``; PyYAML reads a number without a dot as a string
    and every rank's AdamW refuses it (TypeError: '<=' not supported between instances of
    'float' and 'str'). Kind: fail."""
    py, repo = _inverter_job(d)

    def edited() -> None:
        f = repo / "configs" / "train.yaml"
        f.write_text(f.read_text().replace("lr: 0.003", "lr: 3e-3"))

    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(lr_exponent_uncommitted_config_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "inverter-ddp: configs/train.yaml"),
                     between=edited)


def inverter_ddp_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the Modal container and from the
    Gateway terminal: each job its own rendezvous and rank processes, the shells their own
    MODAL_*, NCCL_*, CUDA_*, HF_* and JetBrains variables. Nothing planted. Kind: noise."""
    py, repo = _inverter_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(inverter_ddp_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- torch settings


FORECAST = """
    \"\"\"Forecast tomorrow's inverter output from checkpoints/forecaster.pt. CKPT_MMAP=1 maps
    the checkpoint instead of reading it (the Modal launch's memory saving).\"\"\"
    import os

    import torch


    def main():
        torch.set_num_threads(2)
        state = torch.load("checkpoints/forecaster.pt", weights_only=True,
                           mmap=os.environ.get("CKPT_MMAP") == "1")
        net = torch.nn.Sequential(torch.nn.Linear(24, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
        net.load_state_dict(state)
        g = torch.Generator().manual_seed(17)
        hours = torch.rand(300, 24, generator=g)
        target = hours[:, 10:15].mean(1, keepdim=True)
        with torch.no_grad():
            mae = (net(hours) - target).abs().mean().item()
        print(f"days=300 mae_kw={mae:.5f}")


    if __name__ == "__main__":
        main()
    """

MAKE_FORECASTER = """
import sys
import torch
torch.manual_seed(4)
net = torch.nn.Sequential(torch.nn.Linear(24, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
torch.save(net.state_dict(), sys.argv[1], _use_new_zipfile_serialization=False)
"""


def ckpt_mmap_in_modal_launch(d: Path) -> Incident:
    """The forecaster's checkpoint was written years ago in torch's legacy (non-zip) format.
    The Modal function's launch exports ``CKPT_MMAP=1`` to map checkpoints instead of reading
    them, and ``torch.load`` refuses (RuntimeError: mmap can only be used with files saved with
    `torch.save(..., _use_new_zipfile_serialization=True)`). From the Gateway terminal it loads.
    Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "inverter-forecast", {"forecast.py": FORECAST},
                 "__pycache__/\ncheckpoints/\n")
    (repo / "checkpoints").mkdir(exist_ok=True)
    _build(py, MAKE_FORECASTER, str(repo / "checkpoints" / "forecaster.pt"))
    good, bad = _shells(d, bad={"CKPT_MMAP": "1"}, bad_in="modal", venv=_venv_of(py))
    argv = (py, "forecast.py")
    return _incident(ckpt_mmap_in_modal_launch, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "CKPT_MMAP"))


# --------------------------------------------------------------------------- model folders


MAKE_VIT = """
import sys
import torch
from transformers import ViTConfig, ViTForImageClassification
cfg = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
                num_attention_heads=4, intermediate_size=64, qkv_bias=True, num_labels=4,
                id2label={0: "ok", 1: "hotspot", 2: "cracked", 3: "soiled"},
                label2id={"ok": 0, "hotspot": 1, "cracked": 2, "soiled": 3})
torch.manual_seed(13)
model = ViTForImageClassification(cfg)
with torch.no_grad():  # a trained model's biases are not zero
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            p.normal_(0, 0.3)
model.save_pretrained(sys.argv[1])
"""

PANEL_EVAL = """
    \"\"\"Score the solar-panel thermal classifier (--model-path) on the inspection drone's
    32x32 tiles (made reproducibly here). COMPILE_MODE, when set, compiles the model with
    torch.compile in that mode. Prints the accuracy and the mean top probability.\"\"\"
    import argparse
    import os

    import torch
    from transformers import ViTForImageClassification


    def tiles(n=96):
        g = torch.Generator().manual_seed(29)
        x = torch.rand(n, 3, 32, 32, generator=g)
        label = torch.arange(n) % 4
        x[label == 1, 0, 8:16, 8:16] += 1.5
        x[label == 2, :, 15:17, :] -= 0.8
        x[label == 3] *= 0.4
        return x, label


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        torch.set_num_threads(2)
        model = ViTForImageClassification.from_pretrained(a.model_path).eval()
        mode = os.environ.get("COMPILE_MODE")
        if mode:
            model = torch.compile(model, mode=mode)
        x, label = tiles()
        with torch.no_grad():
            probs = model(pixel_values=x).logits.softmax(-1)
        acc = (probs.argmax(-1) == label).float().mean().item()
        print(f"accuracy={acc:.4f} mean_confidence={probs.max(-1).values.mean().item():.5f}")


    if __name__ == "__main__":
        main()
    """


def _vit(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers")
    repo = _repo(d / "panel-thermal", {"evaluate.py": PANEL_EVAL})
    model = d / "models" / "panel-vit"
    _build(py, MAKE_VIT, str(model))
    return py, repo, model


def _edit_config(model: Path, field: str, value: object) -> None:
    cfg = json.loads((model / "config.json").read_text())
    cfg[field] = value
    (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def compile_mode_typo_in_run_config(d: Path) -> Incident:
    """The PyCharm run configuration's environment, which the Gateway terminal's user exports
    by hand to reproduce it, has ``COMPILE_MODE=max_autotune`` (the mode is
    ``max-autotune``); ``torch.compile`` refuses it before compiling anything (RuntimeError:
    Unrecognized mode=max_autotune, should be one of: ...). Kind: fail."""
    py, repo, model = _vit(d)
    good, bad = _shells(d, bad={"COMPILE_MODE": "max_autotune"}, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(compile_mode_typo_in_run_config, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "COMPILE_MODE"))


def vit_image_size_edited(d: Path) -> Incident:
    """Between the runs the model folder's config.json (outside git) got ``"image_size": 64``
    (to score the new drone's larger tiles); the saved position table has 17 rows, not 65, and
    transformers refuses the mismatch (You set `ignore_mismatched_sizes` to `False`).
    Kind: fail."""
    py, repo, model = _vit(d)
    good, bad = _shells(d, bad_in="modal", venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(vit_image_size_edited, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: image_size"),
                     between=lambda: _edit_config(model, "image_size", 64))


def vit_qkv_bias_false_metric(d: Path) -> Incident:
    """Between the runs the model folder's config.json got ``"qkv_bias": false`` (copied from
    a timm export's settings); transformers drops the saved query, key and value biases as
    unexpected and the attention changes. Both runs score; the accuracy and the confidence
    move. Kind: metric."""
    py, repo, model = _vit(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(vit_qkv_bias_false_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: qkv_bias"),
                     between=lambda: _edit_config(model, "qkv_bias", False))


def panel_vit_noise(d: Path) -> Incident:
    """The thermal-tile evaluation, the same model folder and code, from the Modal container
    and from the Gateway terminal. Nothing planted. Kind: noise."""
    py, repo, model = _vit(d)
    good, bad = _shells(d, bad_in="modal", venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(panel_vit_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- team package


INVPARSE = {
    "1.3.0": '''
        """Inverter log lines (1.3): each line a dict."""


        def parse_line(line):
            site, ts, kw, code = line.strip().split(";")
            return {"site": site, "ts": ts, "kw": float(kw), "code": int(code)}
        ''',
    "2.0.0": '''
        """Inverter log lines (2.0): each line a Reading record."""
        from dataclasses import dataclass


        @dataclass(frozen=True)
        class Reading:
            site: str
            ts: str
            kw: float
            code: int


        def parse_line(line):
            site, ts, kw, code = line.strip().split(";")
            return Reading(site, ts, float(kw), int(code))
        ''',
}

SUMMARY = """
    \"\"\"Summarise the inverters' daily logs: energy per site and the fault codes seen.\"\"\"
    from invparse import parse_line


    def main():
        energy, faults = {}, 0
        for line in open("data/inverters.log"):
            rec = parse_line(line)
            energy[rec["site"]] = energy.get(rec["site"], 0.0) + rec["kw"] / 4
            faults += rec["code"] != 0
        print(f"sites={len(energy)} energy_kwh={sum(energy.values()):.1f} faults={faults}")


    if __name__ == "__main__":
        main()
    """


def _inverter_log() -> str:
    pick = random.Random(5)
    return "".join(f"site{i % 7};2026-11-{1 + i // 96:02d}T{(i % 96) // 4:02d}:{15 * (i % 4):02d};"
                   f"{max(pick.gauss(40, 15), 0):.2f};{0 if pick.random() > 0.03 else 17}\n"
                   for i in range(672))


def invparse_major_in_gateway_venv(d: Path) -> Incident:
    """The summary indexes each parsed line like a dict. The venv PyCharm made for the Gateway
    project resolved the unpinned requirement to invparse 2.0.0, whose ``parse_line`` returns a
    ``Reading`` record (TypeError: 'Reading' object is not subscriptable); the Modal image has
    1.3.0. Kind: fail."""
    repo = _repo(d / "inverter-logs", {"summary.py": SUMMARY,
                                       "data/inverters.log": _inverter_log()})
    envs = {}
    for side, version in (("modal", "1.3.0"), ("gateway", "2.0.0")):
        py = _venv(d / "venvs" / side, {"invparse": (version, INVPARSE[version])})
        envs[side] = str(py.parent.parent)
    good, bad = _shells(d)
    good = {**good, "VIRTUAL_ENV": envs["modal"], "PATH": f"{envs['modal']}/bin:{good['PATH']}"}
    bad = {**bad, "VIRTUAL_ENV": envs["gateway"], "PATH": f"{envs['gateway']}/bin:{bad['PATH']}"}
    argv = ("python", "summary.py")
    return _incident(invparse_major_in_gateway_venv, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "invparse"))


# --------------------------------------------------------------------------- scikit-learn


OUTAGE = """
    \"\"\"Score the substation outage-risk model: a calibrated logistic regression on the feeder
    table (CALIBRATION_METHOD, default sigmoid), cross-validated with --scoring. Logging comes
    from logging.yaml (git-ignored: each machine its own handlers).\"\"\"
    import argparse
    import csv
    import logging
    import logging.config
    import os

    import yaml
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import brier_score_loss, roc_auc_score
    from sklearn.model_selection import cross_val_score, train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    FEATURES = ["load_pct", "age_years", "storms_30d", "veg_index", "trips_90d"]


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--scoring", default="roc_auc")
        p.add_argument("--min-auc", type=float, default=None)
        a = p.parse_args()
        logging.config.dictConfig(yaml.safe_load(open("logging.yaml")))
        log = logging.getLogger("outage")
        rows = list(csv.DictReader(open("data/feeders.csv")))
        x = [[float(r[k]) for k in FEATURES] for r in rows]
        y = [int(r["outage"]) for r in rows]
        xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.3, random_state=3, stratify=y)
        base = make_pipeline(StandardScaler(), LogisticRegression(C=0.5, max_iter=500))
        cv = cross_val_score(base, xtr, ytr, cv=4, scoring=a.scoring)
        method = os.environ.get("CALIBRATION_METHOD", "sigmoid")
        model = CalibratedClassifierCV(base, method=method, cv=4).fit(xtr, ytr)
        prob = model.predict_proba(xte)[:, 1]
        auc = roc_auc_score(yte, prob)
        log.info("scored %d feeders with %s calibration", len(yte), method)
        print(f"cv_score={cv.mean():.4f} auc={auc:.4f} brier={brier_score_loss(yte, prob):.5f}")
        if a.min_auc is not None and auc < a.min_auc:
            raise SystemExit(f"auc={auc:.4f} is below --min-auc {a.min_auc}: not publishing")


    if __name__ == "__main__":
        main()
    """

LOGGING_YAML = """\
version: 1
formatters:
  plain: {format: "%(asctime)s %(name)s %(levelname)s %(message)s"}
handlers:
  console: {class: logging.StreamHandler, formatter: plain, stream: ext://sys.stderr}
  file: {class: logging.FileHandler, formatter: plain, filename: logs/outage-score.log}
loggers:
  outage: {level: INFO, handlers: [console, file]}
"""


def _feeders() -> str:
    pick = random.Random(31)
    rows = []
    for _ in range(420):
        load, age, storms = pick.uniform(20, 110), pick.uniform(1, 60), pick.randint(0, 6)
        veg, trips = pick.uniform(0, 1), pick.randint(0, 5)
        risk = 0.03 * (load - 70) + 0.04 * (age - 30) + 0.5 * storms + 1.5 * veg + 0.3 * trips
        outage = int(risk + pick.gauss(0, 1.4) > 3.2)
        rows.append(f"{load:.1f},{age:.0f},{storms},{veg:.3f},{trips},{outage}")
    return "\n".join(["load_pct,age_years,storms_30d,veg_index,trips_90d,outage", *rows]) + "\n"


def _outage(d: Path) -> tuple[str, Path]:
    py = python_with("sklearn", "yaml")
    repo = _repo(d / "outage-risk", {"score.py": OUTAGE, "data/feeders.csv": _feeders()},
                 "__pycache__/\nlogs/\nlogging.yaml\n")
    (repo / "logs").mkdir(exist_ok=True)
    (repo / "logging.yaml").write_text(LOGGING_YAML)
    return py, repo


def logging_file_on_modal_volume(d: Path) -> Incident:
    """Between the runs the git-ignored logging.yaml had its file handler pointed at
    ``/vol/logs/outage-score.log``, the Modal volume's path, to match the deployed function;
    this machine has no /vol and logging refuses the handler (ValueError: Unable to configure
    handler 'file'). Kind: fail."""
    py, repo = _outage(d)
    cfg = repo / "logging.yaml"

    def edited() -> None:
        cfg.write_text(cfg.read_text().replace("logs/outage-score.log",
                                               "/vol/logs/outage-score.log"))

    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "score.py")
    return _incident(logging_file_on_modal_volume, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {cfg.resolve()}"),
                     between=edited)


def stratify_dropped_uncommitted_metric(d: Path) -> Incident:
    """Between the runs score.py (in git) lost, not committed, its ``stratify=y`` (removed while
    trying another split); the held-out feeders change. Both runs score; the CV score, the AUC
    and the Brier score move. Kind: metric."""
    py, repo = _outage(d)

    def edited() -> None:
        f = repo / "score.py"
        f.write_text(f.read_text().replace(", random_state=3, stratify=y)", ", random_state=3)"))

    good, bad = _shells(d, bad_in="modal", venv=_venv_of(py))
    argv = (py, "score.py")
    return _incident(stratify_dropped_uncommitted_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "outage-risk: score.py"), between=edited)


def calibration_isotonic_in_modal_metric(d: Path) -> Incident:
    """The Modal function's secret carries ``CALIBRATION_METHOD=isotonic`` (the production
    scorer's setting); the Gateway terminal runs with the default sigmoid. Both runs score; the
    AUC and the Brier score move. Kind: metric."""
    py, repo = _outage(d)
    good, bad = _shells(d, bad={"CALIBRATION_METHOD": "isotonic"}, bad_in="modal",
                        venv=_venv_of(py))
    argv = (py, "score.py")
    return _incident(calibration_isotonic_in_modal_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "CALIBRATION_METHOD"))


def scoring_hyphen_both_fail(d: Path) -> Incident:
    """Both fail. Both runs ask for ``--min-auc 0.99``, which the scorer never reaches: the
    good run scores and does not publish. The Gateway terminal's run passes ``--scoring
    roc-auc`` (the metric's name as the dashboard spells it); scikit-learn refuses it
    (InvalidParameterError: The 'scoring' parameter of cross_val_score must be ... Got
    'roc-auc' instead). Kind: both-fail."""
    py, repo = _outage(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "score.py", "--min-auc", "0.99")
    return _incident(scoring_hyphen_both_fail, Launch(argv, good, repo),
                     Launch((*argv, "--scoring", "roc-auc"), bad, repo), ("command", "--scoring"))


def outage_scorer_noise(d: Path) -> Incident:
    """The outage-risk scorer, the same code, data and logging.yaml, from the Gateway terminal
    and from the Modal container. Nothing planted. Kind: noise."""
    py, repo = _outage(d)
    good, bad = _shells(d, bad_in="modal", venv=_venv_of(py))
    argv = (py, "score.py")
    return _incident(outage_scorer_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


#: The twenty-third fresh batch, in the order it was written. Never tuned on.
FRESH23 = [
    dist_timeout_from_run_config_job, fp16_comm_hook_in_modal_launch_metric_job,
    gather_buffer_uncommitted_both_fail_job, lr_exponent_uncommitted_config_job,
    inverter_ddp_job_noise, ckpt_mmap_in_modal_launch, compile_mode_typo_in_run_config,
    vit_image_size_edited, vit_qkv_bias_false_metric, panel_vit_noise,
    invparse_major_in_gateway_venv, logging_file_on_modal_volume,
    stratify_dropped_uncommitted_metric, calibration_isotonic_in_modal_metric,
    scoring_hyphen_both_fail, outage_scorer_noise,
]

if __name__ == "__main__":  # build one incident and run its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH23 if b.__name__ in sys.argv[1:]] or FRESH23
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh23-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
