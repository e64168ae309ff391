"""A fresh held-out batch of diagnosis incidents, written from the outside (issue 22).

**Never tuned on.** These incidents were written by someone who did not read runsnap's ranker
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``docs/ranking.md``): only the incident format
(benchmarks/incidents.py), how third-party incidents are written (benchmarks/thirdparty.py) and
how they are run and scored (benchmarks/corpus.py, benchmarks/diagnosis.py). They form the
corpus's third half, ``fresh``; report it, never change the ranker to fit it, and never change an
incident after seeing its score (except to repair an incident whose bad launch does not fail for
the planted reason, said in the commit).

Every cause acts through real third-party code, as its source reads settings:

- pydantic-settings (``env_prefix``, ``env_nested_delimiter``), typer's ``envvar=``, click 7 on
  ``PYTHONPATH``, python-dotenv (``load_dotenv`` never overrides a variable the shell already
  has), fsspec (a prefix scan of ``FSSPEC_*`` at import, applied to every file system it
  makes), torch (``torch.load`` reads ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` by name), jinja2's
  ``FileSystemLoader`` with ``StrictUndefined``;
- a model's config.json consumed by transformers (``hidden_act``, ``resid_pdrop``), a YAML
  config parsed by PyYAML (YAML 1.1 reads ``1e-3`` as a string), a data file in the project's git
  repository, command options.

The shells are :func:`outside_shell`: copied from two real login shells on a Slurm cluster
(terminal size, ``_``, SSH, tmux, Slurm job, previous directory, a bash level), each with its own
batch of ``NCCL_*``/``CUDA_*``/``OMP_*`` tuning variables that change nothing here: nothing reads
``NCCL_*``/``CUDA_*`` without a GPU, and the OpenMP runtime torch loads reads ``OMP_PLACES``,
``OMP_PROC_BIND``, ``OMP_WAIT_POLICY`` and ``OMP_SCHEDULE`` only to place and wait its threads.
The thread counts that change float reductions (``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``) are the
same in both, as a user who compares two runs pins them.

Kinds: ``fail`` (the good run exits 0, the bad one fails), ``metric`` (both exit 0 and only a
printed ``key=value`` / ``key: value`` metric differs), ``both-fail`` (both fail, differently),
``noise`` (nothing planted: success is "nothing counts").
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from benchmarks.incidents import Incident, Launch, _git, _write
from benchmarks.thirdparty import Unavailable, _incident, python_with


def outside_shell(n: int, home: Path) -> dict[str, str]:
    """The environment of login shell ``n`` (0 or 1) of user bob on two nodes of a Slurm cluster:
    what two real shells differ in, and tuning variables copied between launch scripts."""
    tuning = [
        {"NCCL_SOCKET_IFNAME": "ib0", "NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_IB_GID_INDEX": "3",
         "NCCL_DEBUG": "INFO", "NCCL_CROSS_NIC": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
         "CUDA_MODULE_LOADING": "LAZY", "OMP_PROC_BIND": "close", "OMP_PLACES": "cores"},
        {"NCCL_SOCKET_IFNAME": "^lo,docker0", "NCCL_IB_HCA": "mlx5", "NCCL_NET_GDR_LEVEL": "PHB",
         "NCCL_DEBUG": "WARN", "NCCL_DEBUG_SUBSYS": "INIT,NET", "NCCL_BUFFSIZE": "8388608",
         "CUDA_CACHE_MAXSIZE": "4294967296", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
         "OMP_WAIT_POLICY": "PASSIVE", "OMP_SCHEDULE": "static"},
    ][n % 2]
    node = ["cn-r3-14", "cn-r5-02"][n % 2]
    job = str([7731042, 7731598][n % 2])
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home), "USER": "bob", "LOGNAME": "bob", "SHELL": "/bin/bash",
        "LANG": "en_US.UTF-8", "MAIL": "/var/spool/mail/bob", "HISTCONTROL": "ignoredups",
        "LESSOPEN": "||/usr/bin/lesspipe.sh %s", "PYTHONUNBUFFERED": "1",
        "TERM": ["xterm-256color", "screen-256color"][n % 2],
        "COLUMNS": ["120", "238"][n % 2], "LINES": ["33", "61"][n % 2],
        "_": ["/usr/bin/srun", "/usr/bin/env"][n % 2],
        "SHLVL": ["2", "4"][n % 2],
        "OLDPWD": [str(home), "/scratch/bob/runs"][n % 2],
        "SSH_CLIENT": ["172.16.4.21 60412 22", "172.16.4.77 49822 22"][n % 2],
        "SSH_CONNECTION": ["172.16.4.21 60412 10.10.0.5 22", "172.16.4.77 49822 10.10.0.5 22"][n % 2],
        "SSH_TTY": ["/dev/pts/2", "/dev/pts/11"][n % 2],
        "SSH_AUTH_SOCK": ["/tmp/ssh-k3Jd8/agent.40121", "/tmp/ssh-Qw2pz/agent.51876"][n % 2],
        "XDG_SESSION_ID": ["c118", "c131"][n % 2], "XDG_RUNTIME_DIR": "/run/user/4012",
        "TMUX": [f"/tmp/tmux-4012/default,18233,{n}", "/tmp/tmux-4012/work,20911,3"][n % 2],
        "TMUX_PANE": ["%0", "%7"][n % 2],
        "SLURM_JOB_ID": job, "SLURM_JOBID": job, "SLURM_NODELIST": node,
        "SLURM_JOB_NODELIST": node, "SLURMD_NODENAME": node, "SLURM_CPUS_ON_NODE": "32",
        "SLURM_SUBMIT_DIR": ["/home/bob", "/scratch/bob"][n % 2],
        "SLURM_TASK_PID": ["231877", "90412"][n % 2], "SLURM_JOB_PARTITION": "gpu",
        "OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "4",
        **tuning,
    }
    if n % 2:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None
            ) -> tuple[dict[str, str], dict[str, str]]:
    home = d / "home"
    home.mkdir(parents=True, exist_ok=True)
    return {**outside_shell(0, home), **(good or {})}, {**outside_shell(1, home), **(bad or {})}


def _repo(path: Path, files: dict[str, str]) -> Path:
    """A git repository holding ``files``, all committed."""
    for name, text in files.items():
        _write(path / name, text)
    _git(path, "init", "-q")
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "initial import")
    return path


def _config(folder: Path, config: dict[str, object]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return folder


TINY_LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 32,
              "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "vocab_size": 128, "max_position_embeddings": 128,
              "hidden_act": "silu", "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
              "bos_token_id": 1, "eos_token_id": 2, "tie_word_embeddings": False,
              "transformers_version": "4.57.1"}

TINY_GPT2 = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 32,
             "n_layer": 2, "n_head": 4, "n_positions": 64, "n_ctx": 64, "vocab_size": 96,
             "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
             "layer_norm_epsilon": 1e-05, "bos_token_id": 0, "eos_token_id": 0,
             "transformers_version": "4.57.1"}


# --------------------------------------------------------------------------- settings classes


SERVE_SETTINGS = """
    \"\"\"llmserve: settings from the environment, then serve.\"\"\"
    import logging

    from pydantic_settings import BaseSettings, SettingsConfigDict

    log = logging.getLogger("llmserve")


    class ServeSettings(BaseSettings):
        model_config = SettingsConfigDict(env_prefix="LLMSERVE_")

        model_path: str
        max_batch_tokens: int = 8192
        max_concurrency: int = 16
        log_level: str = "INFO"


    def main():
        settings = ServeSettings()
        logging.basicConfig(level=settings.log_level,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        log.info("loading %s", settings.model_path)
        per_request = settings.max_batch_tokens // settings.max_concurrency
        log.debug("batch budget %d", settings.max_batch_tokens)
        print(f"tokens_per_request={per_request}")


    if __name__ == "__main__":
        main()
    """


def pydantic_settings_prefix(d: Path) -> Incident:
    """pydantic-settings reads LLMSERVE_* (env_prefix); LLMSERVE_MAX_BATCH_TOKENS=16k fails int
    validation. LLMSERVE_LOG_LEVEL differs too, read and harmless. Kind: fail."""
    py = python_with("pydantic_settings")
    app = _write(d / "serve.py", SERVE_SETTINGS)
    common = {"LLMSERVE_MODEL_PATH": "/models/tiny", "LLMSERVE_MAX_CONCURRENCY": "32"}
    good, bad = _shells(d, {**common, "LLMSERVE_MAX_BATCH_TOKENS": "16384",
                            "LLMSERVE_LOG_LEVEL": "INFO"},
                        {**common, "LLMSERVE_MAX_BATCH_TOKENS": "16k",
                         "LLMSERVE_LOG_LEVEL": "DEBUG"})
    return _incident(pydantic_settings_prefix, Launch((py, str(app)), good, d),
                     Launch((py, str(app)), bad, d), ("env", "LLMSERVE_MAX_BATCH_TOKENS"))


def pydantic_settings_same_failure(d: Path) -> Incident:
    """The same pydantic-settings program in two shells, neither exporting the required
    LLMSERVE_MODEL_PATH: the same validation error. Nothing planted. Kind: noise."""
    py = python_with("pydantic_settings")
    app = _write(d / "serve.py", SERVE_SETTINGS)
    good, bad = _shells(d, {"LLMSERVE_MAX_BATCH_TOKENS": "16384"},
                        {"LLMSERVE_MAX_BATCH_TOKENS": "16384"})
    return _incident(pydantic_settings_same_failure, Launch((py, str(app)), good, d),
                     Launch((py, str(app)), bad, d))


def pydantic_nested_weight_decay(d: Path) -> Incident:
    """A torch fit configured by pydantic-settings with env_nested_delimiter='__':
    FIT_OPTIM__WEIGHT_DECAY=0.5 left in one shell moves the final loss. Kind: metric."""
    py = python_with("pydantic_settings", "torch")
    app = _write(d / "fit.py", """
        import logging

        import torch
        from pydantic import BaseModel
        from pydantic_settings import BaseSettings, SettingsConfigDict

        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
        log = logging.getLogger("fit")


        class Optim(BaseModel):
            lr: float = 0.05
            momentum: float = 0.9
            weight_decay: float = 0.0


        class FitConfig(BaseSettings):
            model_config = SettingsConfigDict(env_prefix="FIT_", env_nested_delimiter="__")

            steps: int = 200
            seed: int = 0
            optim: Optim = Optim()


        def main():
            cfg = FitConfig()
            torch.manual_seed(cfg.seed)
            x = torch.randn(256, 8)
            y = x @ torch.linspace(-1, 1, 8) + 0.1 * torch.randn(256)
            model = torch.nn.Linear(8, 1)
            opt = torch.optim.SGD(model.parameters(), lr=cfg.optim.lr,
                                  momentum=cfg.optim.momentum,
                                  weight_decay=cfg.optim.weight_decay)
            for step in range(cfg.steps):
                loss = torch.nn.functional.mse_loss(model(x).squeeze(-1), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                if step % 50 == 0:
                    log.info("step %d loss %.4f", step, loss.item())
            print(f"final_loss={loss.item():.4f}")


        main()
        """)
    good, bad = _shells(d, {"FIT_STEPS": "200", "FIT_OPTIM__LR": "0.05"},
                        {"FIT_STEPS": "200", "FIT_OPTIM__LR": "0.05",
                         "FIT_OPTIM__WEIGHT_DECAY": "0.5"})
    return _incident(pydantic_nested_weight_decay, Launch((py, str(app)), good, d),
                     Launch((py, str(app)), bad, d), ("env", "FIT_OPTIM__WEIGHT_DECAY"))


# --------------------------------------------------------------------------- typer, click


def typer_envvar_topk(d: Path) -> Incident:
    """A typer evaluation command whose --top-k falls back to EVAL_TOP_K (typer's envvar=):
    one shell still exports EVAL_TOP_K=1 from another benchmark, and the accuracy it prints
    drops. Kind: metric."""
    py = python_with("typer", "numpy")
    subprocess.run([py, "-c", (
        "import numpy as np, sys; rng = np.random.default_rng(3); "
        "labels = rng.integers(0, 20, 500); logits = rng.normal(size=(500, 20)); "
        "logits[np.arange(500), labels] += 1.2; "
        "np.savez(sys.argv[1], logits=logits, labels=labels)"), str(d / "scores.npz")],
        check=True)
    app = _write(d / "evaluate.py", """
        from pathlib import Path

        import numpy as np
        import typer

        app = typer.Typer(add_completion=False)


        @app.command()
        def evaluate(scores: Path = typer.Argument(..., exists=True, dir_okay=False),
                     top_k: int = typer.Option(5, envvar="EVAL_TOP_K", help="k of accuracy@k"),
                     temperature: float = typer.Option(1.0)):
            data = np.load(scores)
            ranked = np.argsort(-data["logits"] / temperature, axis=1)[:, :top_k]
            hits = (ranked == data["labels"][:, None]).any(axis=1)
            typer.echo(f"examples: {len(hits)}")
            typer.echo(f"accuracy: {hits.mean():.4f}")


        if __name__ == "__main__":
            app()
        """)
    good, bad = _shells(d, None, {"EVAL_TOP_K": "1"})
    argv = (py, str(app), str(d / "scores.npz"))
    return _incident(typer_envvar_topk, Launch(argv, good, d), Launch(argv, bad, d),
                     ("env", "EVAL_TOP_K"))


def typer_rich_noise(d: Path) -> Incident:
    """A typer report command that prints a rich table (rich sizes it from COLUMNS and picks
    colours from TERM) in two shells: nothing planted. Kind: noise."""
    py = python_with("typer", "rich")
    app = _write(d / "report.py", """
        import typer
        from rich.console import Console
        from rich.table import Table

        app = typer.Typer(add_completion=False)


        @app.command()
        def report(runs: int = typer.Option(3)):
            table = Table(title="runs")
            table.add_column("run")
            table.add_column("loss", justify="right")
            for i in range(runs):
                table.add_row(f"run-{i}", f"{0.9 / (i + 1):.3f}")
            Console().print(table)
            print(f"best_loss={0.9 / runs:.3f}")


        if __name__ == "__main__":
            app()
        """)
    good, bad = _shells(d)
    argv = (py, str(app), "--runs", "3")
    return _incident(typer_rich_noise, Launch(argv, good, d), Launch(argv, bad, d))


def pythonpath_old_click(d: Path) -> Incident:
    """A team's shared library folder on PYTHONPATH holds click 7.1.2, which shadows the venv's
    click 8: ``click.Path(path_type=pathlib.Path)`` then hands the command a str. Kind: fail."""
    py = python_with("click")
    libs = d / "team-pylibs"
    if not (libs / "click").is_dir():
        res = subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--target",
                              str(libs), "click==7.1.2"], capture_output=True, text=True,
                             check=False)
        if res.returncode:
            raise Unavailable("pip could not install click 7.1.2: " + res.stderr[-200:])
    (d / "shards").mkdir(exist_ok=True)
    (d / "shards" / "train-00000.jsonl").write_text('{"text": "hello"}\n' * 10)
    app = _write(d / "count.py", """
        import json
        import pathlib

        import click


        @click.command()
        @click.option("--data-dir", type=click.Path(exists=True, file_okay=False,
                                                    path_type=pathlib.Path), required=True)
        @click.option("--pattern", default="*.jsonl", show_default=True)
        def main(data_dir, pattern):
            total = 0
            for shard in sorted(data_dir.glob(pattern)):
                with shard.open() as f:
                    total += sum(1 for line in f if json.loads(line)["text"])
            click.echo(f"documents={total}")


        if __name__ == "__main__":
            main()
        """)
    good, bad = _shells(d, None, {"PYTHONPATH": str(libs)})
    argv = (py, str(app), "--data-dir", str(d / "shards"))
    return _incident(pythonpath_old_click, Launch(argv, good, d), Launch(argv, bad, d),
                     ("env", "PYTHONPATH"), ("packages", "click"))


# --------------------------------------------------------------------------- env files, fs


def dotenv_shell_wins(d: Path) -> Incident:
    """The project's .env sets DATA_DIR, but python-dotenv's load_dotenv() never overrides a
    variable the shell already has: one shell still exports DATA_DIR from an old experiment.
    Kind: fail."""
    py = python_with("dotenv")
    proj = d / "proj"
    _write(proj / ".env", "DATA_DIR=data\nRUN_NAME=baseline\n")
    _write(proj / "data" / "train.csv", "x,y\n" + "".join(f"{i},{2 * i + 1}\n"
                                                          for i in range(20)))
    app = _write(proj / "stats.py", """
        import argparse
        import csv
        import logging
        import os
        from pathlib import Path

        from dotenv import load_dotenv

        log = logging.getLogger("stats")


        def main():
            load_dotenv()
            logging.basicConfig(level=logging.INFO)
            p = argparse.ArgumentParser()
            p.add_argument("--split", default="train")
            a = p.parse_args()
            data_dir = Path(os.environ["DATA_DIR"])
            log.info("run %s reading %s", os.environ.get("RUN_NAME"), data_dir)
            with open(data_dir / f"{a.split}.csv") as f:
                rows = list(csv.DictReader(f))
            mean = sum(float(r["y"]) for r in rows) / len(rows)
            print(f"rows={len(rows)} mean_y={mean:.3f}")


        if __name__ == "__main__":
            main()
        """)
    good, bad = _shells(d, None, {"DATA_DIR": "/scratch/bob/exp-0412/data"})
    argv = (py, str(app), "--split", "train")
    return _incident(dotenv_shell_wins, Launch(argv, good, proj), Launch(argv, bad, proj),
                     ("env", "DATA_DIR"))


def fsspec_auto_mkdir(d: Path) -> Incident:
    """fsspec scans FSSPEC_* at import and applies FSSPEC_FILE_AUTO_MKDIR to every local file
    system: only one shell exports it, and writing metrics under runs/<job id>/ fails in the
    other. Kind: fail."""
    py = python_with("fsspec")
    app = _write(d / "export.py", """
        import argparse
        import json
        import os

        import fsspec


        def save(url, metrics):
            fs, path = fsspec.core.url_to_fs(url)
            with fs.open(path, "w") as f:
                json.dump(metrics, f)
            return path


        def main():
            p = argparse.ArgumentParser()
            p.add_argument("--out-root", default="runs")
            a = p.parse_args()
            job = os.environ.get("SLURM_JOB_ID", "local")
            url = f"file://{os.path.abspath(a.out_root)}/{job}/metrics.json"
            metrics = {"loss": 0.318, "accuracy": 0.91}
            print("wrote", save(url, metrics))
            print(f"loss={metrics['loss']}")


        main()
        """)
    good, bad = _shells(d, {"FSSPEC_FILE_AUTO_MKDIR": "true"})
    argv = (py, str(app), "--out-root", str(d / "runs"))
    return _incident(fsspec_auto_mkdir, Launch(argv, good, d), Launch(argv, bad, d),
                     ("env", "FSSPEC_FILE_AUTO_MKDIR"))


def fsspec_loguru_noise(d: Path) -> Incident:
    """loguru logging and an fsspec write into an existing folder, in two shells: nothing
    planted. Kind: noise."""
    py = python_with("fsspec", "loguru")
    (d / "out").mkdir(exist_ok=True)
    app = _write(d / "job.py", """
        import sys

        import fsspec
        from loguru import logger

        logger.remove()
        logger.add(sys.stderr, level="INFO")


        def run(out):
            total = 0.0
            for step in range(5):
                total += 1.0 / (step + 1)
                logger.info("step {} total {:.3f}", step, total)
            with fsspec.open(out, "w") as f:
                f.write(f"{total:.4f}\\n")
            return total


        print(f"score={run(sys.argv[1]):.4f}")
        """)
    good, bad = _shells(d)
    return _incident(fsspec_loguru_noise, Launch((py, str(app), str(d / "out" / "a.txt")),
                                                 good, d),
                     Launch((py, str(app), str(d / "out" / "a.txt")), bad, d))


# --------------------------------------------------------------------------- torch


def torch_load_weights_only(d: Path) -> Incident:
    """A checkpoint that pickles its argparse.Namespace of hyperparameters: torch.load's
    default weights_only=True refuses it unless TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD is set, which
    only one shell exports. Kind: fail."""
    py = python_with("torch")
    ckpt = d / "ckpt" / "last.pt"
    ckpt.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([py, "-c", (
        "import argparse, sys, torch; torch.manual_seed(0); m = torch.nn.Linear(4, 2); "
        "torch.save({'model': m.state_dict(), 'args': argparse.Namespace(epochs=3, lr=0.01)}, "
        "sys.argv[1])"), str(ckpt)], check=True)
    app = _write(d / "infer.py", """
        import argparse

        import torch


        def load(path):
            return torch.load(path, map_location="cpu")


        def main():
            p = argparse.ArgumentParser(description="run a trained probe")
            p.add_argument("checkpoint")
            a = p.parse_args()
            ckpt = load(a.checkpoint)
            model = torch.nn.Linear(4, 2)
            model.load_state_dict(ckpt["model"])
            out = model(torch.ones(1, 4)).sum().item()
            print(f"trained_epochs={ckpt['args'].epochs} logit_sum={out:.4f}")


        if __name__ == "__main__":
            main()
        """)
    good, bad = _shells(d, {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"})
    argv = (py, str(app), str(ckpt))
    return _incident(torch_load_weights_only, Launch(argv, good, d), Launch(argv, bad, d),
                     ("env", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"))


def yaml_lr_both_fail(d: Path) -> Incident:
    """A training repo's YAML config: the lr is rewritten from 0.001 to 1e-3 (and steps raised)
    without a commit; PyYAML (YAML 1.1) reads 1e-3 as a string and torch's AdamW refuses it.
    The resume checkpoint is missing in both runs, so the good run fails too, later.
    Kind: both-fail."""
    py = python_with("torch", "yaml")
    repo = _repo(d / "trainer", {
        "configs/base.yaml": """
            model:
              hidden: 32
            optim:
              lr: 0.001
              weight_decay: 0.01
            train:
              steps: 10
              resume_from: checkpoints/last.pt
            """,
        "train.py": """
            import argparse
            import logging

            import torch
            import yaml

            log = logging.getLogger("train")


            def build(cfg):
                hidden = cfg["model"]["hidden"]
                model = torch.nn.Sequential(torch.nn.Linear(16, hidden), torch.nn.ReLU(),
                                            torch.nn.Linear(hidden, 1))
                opt = torch.optim.AdamW(model.parameters(), lr=cfg["optim"]["lr"],
                                        weight_decay=cfg["optim"]["weight_decay"])
                return model, opt


            def main():
                logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
                p = argparse.ArgumentParser()
                p.add_argument("--config", default="configs/base.yaml")
                a = p.parse_args()
                with open(a.config) as f:
                    cfg = yaml.safe_load(f)
                model, opt = build(cfg)
                resume = cfg["train"].get("resume_from")
                if resume:
                    state = torch.load(resume, map_location="cpu")
                    model.load_state_dict(state["model"])
                    opt.load_state_dict(state["optim"])
                    log.info("resumed from %s", resume)
                print("steps=%d" % cfg["train"]["steps"])


            if __name__ == "__main__":
                main()
            """,
        ".gitignore": "checkpoints/\n",
    })

    def edit() -> None:
        path = repo / "configs" / "base.yaml"
        path.write_text(path.read_text().replace("lr: 0.001", "lr: 1e-3")
                        .replace("steps: 10", "steps: 20"))

    good, bad = _shells(d)
    argv = (py, "train.py", "--config", "configs/base.yaml")
    return _incident(yaml_lr_both_fail, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("git", "trainer: configs/base.yaml"), between=edit)


# --------------------------------------------------------------------------- transformers


FINETUNE = """
    import argparse
    import logging

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    logger = logging.getLogger(__name__)


    def parse_args():
        parser = argparse.ArgumentParser(description="Finetune a causal LM on a toy batch")
        parser.add_argument("--model_name_or_path", type=str, required=True)
        parser.add_argument("--learning_rate", type=float, default=5e-3)
        parser.add_argument("--max_train_steps", type=int, default=6)
        parser.add_argument("--seed", type=int, default=42)
        return parser.parse_args()


    def main():
        args = parse_args()
        logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                            level=logging.INFO)
        torch.manual_seed(args.seed)
        config = AutoConfig.from_pretrained(args.model_name_or_path)
        model = AutoModelForCausalLM.from_config(config)
        model.train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)
        input_ids = torch.arange(48).remainder(config.vocab_size).reshape(3, 16)
        for step in range(args.max_train_steps):
            loss = model(input_ids=input_ids, labels=input_ids).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            logger.info("step %d: loss %.4f", step, loss.item())
        print(f"train_loss: {loss.item():.4f}")


    if __name__ == "__main__":
        main()
    """


def transformers_hidden_act(d: Path) -> Incident:
    """A tiny Llama's config.json edited in place: hidden_act "silu" becomes "swiglu" (and
    rms_norm_eps moves, harmlessly); transformers finds no such activation when it builds the
    MLP. Kind: fail."""
    py = python_with("torch", "transformers")
    model = _config(d / "tiny-llama", TINY_LLAMA)
    app = _write(d / "run_clm.py", FINETUNE)

    def edit() -> None:
        _config(model, {**TINY_LLAMA, "hidden_act": "swiglu", "rms_norm_eps": 1e-05})

    good, bad = _shells(d)
    argv = (py, str(app), "--model_name_or_path", str(model), "--max_train_steps", "2")
    return _incident(transformers_hidden_act, Launch(argv, good, d), Launch(argv, bad, d),
                     ("models", "--model_name_or_path: hidden_act"), between=edit)


def transformers_dropout_metric(d: Path) -> Incident:
    """A tiny GPT-2's config.json replaced by a copy from another checkpoint: resid_pdrop 0.0
    becomes 0.3 (and transformers_version moves); both runs train and exit 0, the train loss
    differs. Kind: metric."""
    py = python_with("torch", "transformers")
    model = _config(d / "tiny-gpt2", TINY_GPT2)
    app = _write(d / "run_clm.py", FINETUNE)

    def edit() -> None:
        _config(model, {**TINY_GPT2, "resid_pdrop": 0.3, "transformers_version": "4.55.0"})

    good, bad = _shells(d)
    argv = (py, str(app), "--model_name_or_path", str(model))
    return _incident(transformers_dropout_metric, Launch(argv, good, d), Launch(argv, bad, d),
                     ("models", "--model_name_or_path: resid_pdrop"), between=edit)


def transformers_generate_length(d: Path) -> Incident:
    """Greedy generation with a tiny GPT-2 whose context is 64 positions: --max-new-tokens 80
    runs past its position table (the output file name differs too). Kind: fail."""
    py = python_with("torch", "transformers")
    model = _config(d / "tiny-gpt2", TINY_GPT2)
    app = _write(d / "generate.py", """
        import argparse
        import json

        import torch
        from transformers import AutoConfig, AutoModelForCausalLM


        def main():
            p = argparse.ArgumentParser()
            p.add_argument("--model-path", required=True)
            p.add_argument("--max-new-tokens", type=int, default=16)
            p.add_argument("--output", default="generations.jsonl")
            p.add_argument("--seed", type=int, default=0)
            a = p.parse_args()
            torch.manual_seed(a.seed)
            config = AutoConfig.from_pretrained(a.model_path)
            model = AutoModelForCausalLM.from_config(config).eval()
            prompt = torch.arange(1, 17).unsqueeze(0)
            with torch.no_grad():
                out = model.generate(prompt, max_new_tokens=a.max_new_tokens, do_sample=False,
                                     pad_token_id=config.eos_token_id)
            new = out[0, prompt.shape[1]:].tolist()
            with open(a.output, "w") as f:
                f.write(json.dumps({"tokens": new}) + "\\n")
            print(f"generated_tokens={len(new)}")


        if __name__ == "__main__":
            main()
        """)
    good, bad = _shells(d)
    base = (py, str(app), "--model-path", str(model), "--seed", "0")
    return _incident(transformers_generate_length,
                     Launch((*base, "--max-new-tokens", "32", "--output",
                             str(d / "gen-a.jsonl")), good, d),
                     Launch((*base, "--max-new-tokens", "80", "--output",
                             str(d / "gen-b.jsonl")), bad, d),
                     ("command", "--max-new-tokens"))


def transformers_eval_noise(d: Path) -> Incident:
    """Evaluation of a tiny GPT-2 in two shells that also differ in Hugging Face variables the
    libraries read (progress bars, advisory warnings, tokenizers' parallelism) to no effect
    here: nothing planted. Kind: noise."""
    py = python_with("torch", "transformers")
    model = _config(d / "tiny-gpt2", TINY_GPT2)
    app = _write(d / "evaluate.py", """
        import argparse
        import math

        import torch
        from transformers import AutoConfig, AutoModelForCausalLM

        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        torch.manual_seed(0)
        config = AutoConfig.from_pretrained(a.model_path)
        model = AutoModelForCausalLM.from_config(config).eval()
        ids = torch.arange(64).remainder(config.vocab_size).reshape(2, 32)
        with torch.no_grad():
            loss = model(input_ids=ids, labels=ids).loss.item()
        print(f"eval_loss={loss:.4f} perplexity={math.exp(loss):.2f}")
        """)
    good, bad = _shells(d, {"HF_HUB_DISABLE_PROGRESS_BARS": "1",
                            "TOKENIZERS_PARALLELISM": "false"},
                        {"TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
                         "TOKENIZERS_PARALLELISM": "true"})
    argv = (py, str(app), "--model-path", str(model))
    return _incident(transformers_eval_noise, Launch(argv, good, d), Launch(argv, bad, d))


# --------------------------------------------------------------------------- data, templates


def _eval_rows(flip: int) -> str:
    words = ["good", "great", "fine", "bad", "awful", "poor"]
    rows = []
    for i in range(200):
        positive = (i * 7) % 3 != 0
        text = f"{words[(i % 3) if positive else 3 + (i % 3)]} item {i}"
        label = int(positive)
        if i < flip * 3 and i % 3 == 0:
            label = 1 - label
        rows.append(json.dumps({"id": i, "text": text, "label": label}))
    return "\n".join(rows) + "\n"


def data_file_labels_metric(d: Path) -> Incident:
    """An evaluation repo whose data/eval.jsonl is re-exported (uncommitted) with some labels
    flipped: both runs exit 0 and the accuracy drops. Kind: metric."""
    py = python_with("numpy")
    repo = _repo(d / "evalkit", {
        "data/eval.jsonl": _eval_rows(0),
        "score.py": """
            import argparse
            import json

            import numpy as np

            POSITIVE = {"good", "great", "fine"}


            def predict(text):
                return int(text.split()[0] in POSITIVE)


            def main():
                p = argparse.ArgumentParser()
                p.add_argument("--data", default="data/eval.jsonl")
                a = p.parse_args()
                with open(a.data) as f:
                    rows = [json.loads(line) for line in f]
                pred = np.array([predict(r["text"]) for r in rows])
                gold = np.array([r["label"] for r in rows])
                print(f"n={len(rows)}")
                print(f"accuracy={float((pred == gold).mean()):.4f}")


            if __name__ == "__main__":
                main()
            """,
    })

    def edit() -> None:
        (repo / "data" / "eval.jsonl").write_text(_eval_rows(20))

    good, bad = _shells(d)
    argv = (py, "score.py")
    return _incident(data_file_labels_metric, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("git", "evalkit: data/eval.jsonl"), between=edit)


def jinja_templates_both_fail(d: Path) -> Incident:
    """A prompt rendered by jinja2 (FileSystemLoader, StrictUndefined) from the folder
    PROMPT_TEMPLATES names, then sent with requests to an inference server that is down in both
    shells. One shell's PROMPT_TEMPLATES names last month's templates, whose variable the
    program no longer passes: it fails at rendering, the other at connecting.
    Kind: both-fail."""
    py = python_with("jinja2", "requests")
    _write(d / "prompts-v2" / "chat.j2",
           "<|system|>{{ system }}\n<|user|>{{ question }}\n<|assistant|>")
    _write(d / "prompts-v1" / "chat.j2",
           "<|system|>{{ system_prompt }}\n<|user|>{{ question }}\n<|assistant|>")
    app = _write(d / "ask.py", """
        import argparse
        import os

        import requests
        from jinja2 import Environment, FileSystemLoader, StrictUndefined


        def render(name, **context):
            env = Environment(loader=FileSystemLoader(os.environ.get("PROMPT_TEMPLATES",
                                                                     "templates")),
                              undefined=StrictUndefined)
            return env.get_template(name).render(**context)


        def main():
            p = argparse.ArgumentParser()
            p.add_argument("question")
            p.add_argument("--endpoint", default="http://127.0.0.1:8000")
            a = p.parse_args()
            prompt = render("chat.j2", system="Answer in one line.", question=a.question)
            r = requests.post(a.endpoint + "/v1/completions",
                              json={"prompt": prompt, "max_tokens": 16}, timeout=5)
            r.raise_for_status()
            print(r.json()["choices"][0]["text"])


        if __name__ == "__main__":
            main()
        """)
    good, bad = _shells(d, {"PROMPT_TEMPLATES": str(d / "prompts-v2")},
                        {"PROMPT_TEMPLATES": str(d / "prompts-v1")})
    argv = (py, str(app), "what is 2+2?", "--endpoint", "http://127.0.0.1:9")
    return _incident(jinja_templates_both_fail, Launch(argv, good, d), Launch(argv, bad, d),
                     ("env", "PROMPT_TEMPLATES"))


#: The fresh incidents, in the order they were written. Never tuned on.
FRESH = [
    pydantic_settings_prefix, pydantic_settings_same_failure, pydantic_nested_weight_decay,
    typer_envvar_topk, typer_rich_noise, pythonpath_old_click, dotenv_shell_wins,
    fsspec_auto_mkdir, fsspec_loguru_noise, torch_load_weights_only, yaml_lr_both_fail,
    transformers_hidden_act, transformers_dropout_metric, transformers_generate_length,
    transformers_eval_noise, data_file_labels_metric, jinja_templates_both_fail,
]
