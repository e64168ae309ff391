"""Incidents where a library's deprecation notice names a variable set in one shell only, beside
the real cause (issue 41): the notice is printed by real torch code (torch.hub's ``TORCH_HUB is
deprecated, please use env TORCH_HOME instead`` and its ``TORCH_MODEL_ZOO`` twin; c10d's
``Environment variable TORCH_NCCL_TRACE_CPP_STACK is deprecated; use TORCH_FR_CPP_STACK
instead`` when a gloo process group starts), the variable it names changes nothing, and the
planted cause (an option, a variable the program reads) acts through torch. In fail and metric
kinds.

Every incident here is ``tune`` (benchmarks/corpus.py): the rows of
runsnap/knowledge/deprecation-notices.tsv they exercise are marked ``tune``.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.engines import _shells
from benchmarks.incidents import Incident, Launch, _write
from benchmarks.thirdparty import _incident, python_with, real_shell

#: A model whose width is an option, its first checkpoint saved under torch.hub's folder.
_LOAD = """
    import argparse, os
    import torch

    def build(hidden):
        return torch.nn.Sequential(torch.nn.Linear(8, hidden), torch.nn.ReLU(),
                                   torch.nn.Linear(hidden, 2))

    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--hidden", type=int, default=256)
        a = p.parse_args()
        ckpt = os.path.join(torch.hub.get_dir(), "checkpoints", "tiny.pt")
        if not os.path.exists(ckpt):
            os.makedirs(os.path.dirname(ckpt), exist_ok=True)
            torch.manual_seed(0)
            torch.save(build(256).state_dict(), ckpt)
        model = build(a.hidden)
        model.load_state_dict(torch.load(ckpt))
        print(f"loaded {sum(p.numel() for p in model.parameters())} parameters")

    main()
    """


def _torch_home(d: Path) -> dict[str, str]:
    return {"TORCH_HOME": str(d / "torch-home")}


def torch_hub_notice_width(d: Path) -> Incident:
    """B's shell still exports TORCH_HUB (torch.hub warns that it is deprecated and ignores it);
    B's --hidden 384 does not fit the saved checkpoint: load_state_dict's size mismatch."""
    py = python_with("torch")
    app = _write(d / "load.py", _LOAD)
    a = {**real_shell(0, d), **_torch_home(d)}
    b = {**real_shell(1, d), **_torch_home(d), "TORCH_HUB": str(d / "old-hub")}
    return _incident(torch_hub_notice_width, Launch((py, str(app)), a, d),
                     Launch((py, str(app), "--hidden", "384"), b, d), ("command", "--hidden"))


_FIT = """
    import argparse, os
    import torch

    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--lr", type=float, default=0.05)
        a = p.parse_args()
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 1)
        init = os.path.join(torch.hub.get_dir(), "checkpoints", "init.pt")
        os.makedirs(os.path.dirname(init), exist_ok=True)
        torch.save(model.state_dict(), init)
        # a cached file is loaded as it is: no download
        model.load_state_dict(torch.hub.load_state_dict_from_url("https://example.invalid/init.pt"))
        batch = int(os.environ.get("FIT_BATCH", "32"))
        x = torch.randn(256, 4)
        y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
        opt = torch.optim.SGD(model.parameters(), lr=a.lr)
        for step in range(40):
            i = (step * batch) % 256
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x[i:i + batch]), y[i:i + batch])
            loss.backward()
            opt.step()
        print(f"final_loss={torch.nn.functional.mse_loss(model(x), y).item():.4f}")

    main()
    """


def torch_model_zoo_notice_lr(d: Path) -> Incident:
    """Both runs exit 0; B's shell exports TORCH_MODEL_ZOO (deprecated: torch.hub warns and
    ignores it) and B's --lr is ten times A's: the final loss moves."""
    py = python_with("torch")
    app = _write(d / "fit.py", _FIT)
    a = {**real_shell(0, d), **_torch_home(d)}
    b = {**real_shell(1, d), **_torch_home(d), "TORCH_MODEL_ZOO": str(d / "old-zoo")}
    return _incident(torch_model_zoo_notice_lr, Launch((py, str(app), "--lr", "0.05"), a, d),
                     Launch((py, str(app), "--lr", "0.5"), b, d), ("command", "--lr"))


def torch_hub_notice_batch(d: Path) -> Incident:
    """Both runs exit 0; B's shell exports TORCH_HUB (deprecated, ignored) and FIT_BATCH=8,
    which the program reads: the final loss moves."""
    py = python_with("torch")
    app = _write(d / "fit.py", _FIT)
    a = {**real_shell(0, d), **_torch_home(d)}
    b = {**real_shell(1, d), **_torch_home(d), "TORCH_HUB": str(d / "old-hub"), "FIT_BATCH": "8"}
    return _incident(torch_hub_notice_batch, Launch((py, str(app)), a, d),
                     Launch((py, str(app)), b, d), ("env", "FIT_BATCH"))


_ALLREDUCE = """
    import os
    import torch
    import torch.distributed as dist

    def main():
        dist.init_process_group("gloo", init_method="env://")
        scale = float(os.environ.get("GRAD_SCALE", "1.0"))
        t = torch.arange(4, dtype=torch.float32) * scale
        dist.all_reduce(t)
        print(f"grad_norm={float(t.norm()):.4f}")
        dist.destroy_process_group()

    main()
    """


def c10d_renamed_notice_scale(d: Path) -> Incident:
    """Both runs exit 0 (a one-process gloo group); B's shell exports TORCH_NCCL_TRACE_CPP_STACK
    (c10d warns that it is deprecated for TORCH_FR_CPP_STACK: flight recording, which no
    collective here uses) and GRAD_SCALE=2, which the program reads: the reported norm moves."""
    py = python_with("torch")
    app = _write(d / "allreduce.py", _ALLREDUCE)
    a, b = _shells(d)
    b.update({"TORCH_NCCL_TRACE_CPP_STACK": "1", "GRAD_SCALE": "2.0"})
    return _incident(c10d_renamed_notice_scale, Launch((py, str(app)), a, d),
                     Launch((py, str(app)), b, d), ("env", "GRAD_SCALE"))


#: The incidents, in the order they were written (all in the tune half).
TUNE_WARNINGS = [torch_hub_notice_width, torch_model_zoo_notice_lr, torch_hub_notice_batch,
                 c10d_renamed_notice_scale]
