"""More incidents to tune on (issue 41, the verdict's confidence), written from the outside:
plain torch programs on CPU, launched from two real shells (other thread counts, terminals,
Slurm allocations, tuning variables nobody reads here), with the planted cause acting through
torch's own code. Each class is one an expert commits on, or one where they would not:

- a metric-only pair whose only input that differs is a launch option (momentum, weight decay:
  the program is handed its command line);
- the same with a second option that changes nothing the run shows (the log interval): two
  inputs differ, so the verdict must not commit, however sure the first one looks;
- an error that quotes the value of an option (an optimizer's name looked up in torch.optim),
  alone or beside another option that differs;
- a c10d store that waits for more ranks than the job has, its size given as an option;
- a YAML config edited inside the run's git tree (the runs do not show it was read);
- an option that moves the loss while a library's deprecation warning, printed in one run
  only, names a variable an old launch script still exports.

Every incident here is ``tune`` (benchmarks/corpus.py, source ``tune3``; w3-41c's
benchmarks/tune2.py holds the others added in this wave).
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.incidents import Incident, Launch, _git, _write
from benchmarks.thirdparty import _incident, python_with, real_shell

_TRAIN = """
    import argparse
    import torch

    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--momentum", type=float, default=0.0)
        p.add_argument("--weight-decay", type=float, default=0.0)
        p.add_argument("--optim", default="SGD")
        p.add_argument("--log-every", type=int, default=10)
        a = p.parse_args()
        torch.manual_seed(0)
        x = torch.randn(256, 8)
        y = x @ torch.arange(1.0, 9.0) + 0.1 * torch.randn(256)
        model = torch.nn.Linear(8, 1)
        kwargs = {"lr": 0.01, "weight_decay": a.weight_decay}
        if a.optim == "SGD":
            kwargs["momentum"] = a.momentum
        opt = getattr(torch.optim, a.optim)(model.parameters(), **kwargs)
        for step in range(60):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x).squeeze(-1), y)
            loss.backward()
            opt.step()
            if step % a.log_every == 0:
                print(f"step {step}")
        print(f"loss={loss.item():.4f}")

    main()
    """


def _train(d: Path, build: object, good: tuple[str, ...], bad: tuple[str, ...],
           cause: tuple[str, str]) -> Incident:
    py = python_with("torch")
    app = _write(d / "train.py", _TRAIN)
    return _incident(build, Launch((py, str(app), *good), real_shell(0, d), d),
                     Launch((py, str(app), *bad), real_shell(1, d), d), cause)


def sgd_momentum_metric(d: Path) -> Incident:
    """Both runs exit 0; --momentum differs (0.9 against 0.0) and the final loss moves."""
    return _train(d, sgd_momentum_metric, ("--momentum", "0.9"), ("--momentum", "0.0"),
                  ("command", "--momentum"))


def weight_decay_and_log_interval(d: Path) -> Incident:
    """Both runs exit 0; --weight-decay differs and the loss moves, and --log-every differs too
    (it changes which steps are printed, not the loss): two inputs differ, undecided."""
    return _train(d, weight_decay_and_log_interval,
                  ("--weight-decay", "0", "--log-every", "10"),
                  ("--weight-decay", "5", "--log-every", "20"),
                  ("command", "--weight-decay"))


def optimizer_name_quoted(d: Path) -> Incident:
    """--optim names an optimizer torch.optim lacks in B; the AttributeError quotes it."""
    return _train(d, optimizer_name_quoted, ("--optim", "Adam"), ("--optim", "AdamW8bit"),
                  ("command", "--optim"))


def optimizer_name_and_log_interval(d: Path) -> Incident:
    """--optim names an optimizer torch.optim lacks in B, and --log-every differs too: the
    AttributeError quotes the one value, and nothing in the runs names the other."""
    return _train(d, optimizer_name_and_log_interval, ("--optim", "SGD", "--log-every", "10"),
                  ("--optim", "RAdamW", "--log-every", "20"), ("command", "--optim"))


_STORE = """
    import argparse
    import datetime
    import os
    import torch.distributed as dist

    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--nprocs", type=int, default=1)
        a = p.parse_args()
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + os.environ["PORT"],
                                rank=0, world_size=a.nprocs,
                                timeout=datetime.timedelta(seconds=3))
        print("joined")
        dist.destroy_process_group()

    main()
    """


def store_world_size_option(d: Path) -> Incident:
    """--nprocs asks the c10d store for two ranks in B, and only rank 0 is started: the store
    times out waiting for the second one."""
    py = python_with("torch")
    app = _write(d / "job.py", _STORE)
    a = {**real_shell(0, d), "PORT": "29611"}
    b = {**real_shell(1, d), "PORT": "29612"}
    return _incident(store_world_size_option,
                     Launch((py, str(app), "--nprocs", "1"), a, d),
                     Launch((py, str(app), "--nprocs", "2"), b, d),
                     ("command", "--nprocs"))


def yaml_config_edit_metric(d: Path) -> Incident:
    """Both runs exit 0; the run's YAML config (OmegaConf, inside a git tree) has an
    uncommitted edit to its learning rate between them, and the loss moves."""
    py = python_with("omegaconf", "torch")
    repo = d / "exp"
    _write(repo / "conf.yaml", "optim:\n  lr: 0.01\n  steps: 40\nlog_every: 10\n")
    app = _write(repo / "train.py", """
        import torch
        from omegaconf import OmegaConf

        def main():
            cfg = OmegaConf.load("conf.yaml")
            torch.manual_seed(0)
            x = torch.randn(128, 4)
            y = x.sum(-1)
            w = torch.zeros(4, requires_grad=True)
            opt = torch.optim.SGD([w], lr=cfg.optim.lr)
            for _ in range(cfg.optim.steps):
                opt.zero_grad()
                loss = ((x @ w - y) ** 2).mean()
                loss.backward()
                opt.step()
            print(f"loss={loss.item():.4f}")

        main()
        """)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "first")

    def edit() -> None:
        _write(repo / "conf.yaml", "optim:\n  lr: 0.002\n  steps: 40\nlog_every: 10\n")

    return _incident(yaml_config_edit_metric, Launch((py, str(app)), real_shell(0, d), repo),
                     Launch((py, str(app)), real_shell(1, d), repo),
                     ("git", "exp: conf.yaml"), between=edit)


def lr_with_deprecated_hub_variable(d: Path) -> Incident:
    """Both runs exit 0; --lr differs and the loss moves. B's shell still exports TORCH_HUB
    from an old launch script, so torch.hub.get_dir() warns in B only ("TORCH_HUB is
    deprecated, please use env TORCH_HOME instead"): the warning names a variable the run took
    in, not what changed the loss."""
    py = python_with("torch")
    app = _write(d / "finetune.py", """
        import argparse, os
        import torch

        def main():
            p = argparse.ArgumentParser()
            p.add_argument("--lr", type=float, default=0.01)
            a = p.parse_args()
            cache = torch.hub.get_dir()
            os.makedirs(cache, exist_ok=True)
            torch.manual_seed(0)
            x = torch.randn(128, 4)
            y = x.sum(-1)
            w = torch.zeros(4, requires_grad=True)
            opt = torch.optim.SGD([w], lr=a.lr)
            for _ in range(30):
                opt.zero_grad()
                loss = ((x @ w - y) ** 2).mean()
                loss.backward()
                opt.step()
            print(f"loss={loss.item():.4f}")

        main()
        """)
    a = {**real_shell(0, d), "TORCH_HOME": str(d / "torch-home")}
    b = {**real_shell(1, d), "TORCH_HOME": str(d / "torch-home"),
         "TORCH_HUB": str(d / "old-hub")}
    return _incident(lr_with_deprecated_hub_variable,
                     Launch((py, str(app), "--lr", "0.01"), a, d),
                     Launch((py, str(app), "--lr", "0.002"), b, d), ("command", "--lr"))


#: The incidents of this module, in the tune half.
TUNE3 = [sgd_momentum_metric, weight_decay_and_log_interval, optimizer_name_quoted,
         optimizer_name_and_log_interval, store_world_size_option, yaml_config_edit_metric,
         lr_with_deprecated_hub_variable]
