"""A second fresh held-out batch of diagnosis incidents, written from the outside (issue 22).

**Never tuned on.** Written by someone who read neither runsnap's ranker (``runsnap/diffing/``,
``runsnap/knowledge/``, ``docs/ranking.md``) nor its capture and tracing code
(``runsnap/launch/``, ``runsnap/tracing/``): only the incident format (benchmarks/incidents.py),
how third-party incidents are written (benchmarks/thirdparty.py, benchmarks/fresh.py), how they
are run and scored (benchmarks/corpus.py, benchmarks/diagnosis.py) and the snapshot reference
(docs/schema.md) for the names of the keys. They form the corpus's fourth half, ``fresh2``;
report it, never change the ranker to fit it, and never change an incident after seeing its
score (except to repair an incident whose bad launch does not fail for the planted reason, said
in the commit).

The first fresh batch (benchmarks/fresh.py) covers pydantic-settings, typer, fsspec,
python-dotenv, PyYAML, jinja2, ``torch.load`` and transformers' config fields; this one uses
other libraries and other mechanisms, each as its source really reads its settings:

- dynaconf (``ENV_FOR_DYNACONF`` picks the ``[production]`` table of settings.toml), accelerate
  (``ACCELERATE_GRADIENT_ACCUMULATION_STEPS``, read by ``Accelerator`` when the program passes
  no ``gradient_accumulation_steps``), ``torch.hub`` (``TORCH_HOME`` decides where cached checkpoints are
  looked for), click's ``auto_envvar_prefix`` read in worker subprocesses, platformdirs
  (``XDG_CACHE_HOME``), python-decouple (a variable in the shell wins over settings.ini);
- OmegaConf's ``from_cli`` dotlist and Hydra overrides (positional arguments), a JSON config
  validated by jsonschema, a model's generation_config.json consumed by transformers'
  ``generate``, a safetensors embedding file re-exported in a git repository, a different
  interpreter whose venv holds marshmallow 3 instead of 4.

The shells are :func:`lab_shell`, a variant of fresh.py's: two login shells of user carol on a
university cluster (terminal size, ``_``, SSH with X forwarding, tmux, a Slurm allocation,
previous directory, bash level, Kerberos ticket cache), each with its own batch of
``NCCL_*``/``CUDA_*``/``OMP_*``/``TORCH_*`` tuning variables that change nothing here (no GPU; the
OpenMP runtime reads ``OMP_PROC_BIND``/``OMP_PLACES``/``OMP_WAIT_POLICY`` only to place and wait
its threads; ``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS`` are pinned alike).

Kinds: ``fail`` (the good run exits 0, the bad one fails), ``metric`` (both exit 0 and only a
printed ``key=value`` / ``key: value`` metric differs), ``both-fail`` (both fail, differently),
``noise`` (nothing planted: success is "nothing counts"). ``click_auto_envvar_workers`` is
multi-process: the cause is read by worker subprocesses only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.incidents import Incident, Launch, _git, _write
from benchmarks.thirdparty import Unavailable, _incident, python_with


def lab_shell(n: int, home: Path) -> dict[str, str]:
    """The environment of login shell ``n`` (0 or 1) of user carol on two nodes of a university
    cluster: what two real shells differ in, and tuning variables copied between job scripts."""
    tuning = [
        {"NCCL_SOCKET_IFNAME": "eth0", "NCCL_P2P_DISABLE": "0", "NCCL_IB_TIMEOUT": "22",
         "NCCL_ASYNC_ERROR_HANDLING": "1", "CUDA_LAUNCH_BLOCKING": "0",
         "CUDA_VISIBLE_DEVICES": "0,1", "OMP_PROC_BIND": "spread",
         "TORCH_DISTRIBUTED_DEBUG": "OFF"},
        {"NCCL_SOCKET_IFNAME": "ens1f0", "NCCL_IB_DISABLE": "1", "NCCL_DEBUG": "VERSION",
         "NCCL_TREE_THRESHOLD": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
         "CUDA_VISIBLE_DEVICES": "2,3", "OMP_WAIT_POLICY": "ACTIVE", "OMP_PLACES": "threads",
         "TORCH_NCCL_ENABLE_MONITORING": "0", "TORCH_SHOW_CPP_STACKTRACES": "1"},
    ][n % 2]
    node = ["gpu-node-031", "gpu-node-117"][n % 2]
    job = str([2290117, 2291846][n % 2])
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home), "USER": "carol", "LOGNAME": "carol", "SHELL": "/bin/bash",
        "LANG": "en_GB.UTF-8", "LC_TIME": ["en_GB.UTF-8", "C.UTF-8"][n % 2],
        "MAIL": "/var/mail/carol", "HISTFILESIZE": "20000", "PAGER": "less",
        "TERM": ["tmux-256color", "xterm-kitty"][n % 2],
        "COLORTERM": ["truecolor", ""][n % 2],
        "COLUMNS": ["157", "94"][n % 2], "LINES": ["48", "27"][n % 2],
        "_": ["/home/carol/bin/submit.sh", "/usr/bin/salloc"][n % 2],
        "SHLVL": ["3", "2"][n % 2],
        "OLDPWD": ["/home/carol/src", "/work/carol/checkpoints"][n % 2],
        "SSH_CLIENT": ["192.168.40.12 53110 22", "192.168.40.88 40022 22"][n % 2],
        "SSH_CONNECTION": ["192.168.40.12 53110 192.168.1.20 22",
                           "192.168.40.88 40022 192.168.1.20 22"][n % 2],
        "SSH_TTY": ["/dev/pts/4", "/dev/pts/19"][n % 2],
        "DISPLAY": ["localhost:10.0", "localhost:14.0"][n % 2],
        "KRB5CCNAME": ["FILE:/tmp/krb5cc_5120_Xa81", "FILE:/tmp/krb5cc_5120_pQ02"][n % 2],
        "XDG_SESSION_ID": ["2071", "2096"][n % 2], "XDG_RUNTIME_DIR": "/run/user/5120",
        "TMUX": ["/tmp/tmux-5120/default,7781,0", "/tmp/tmux-5120/default,7781,2"][n % 2],
        "TMUX_PANE": ["%1", "%5"][n % 2],
        "SLURM_JOB_ID": job, "SLURM_JOBID": job, "SLURM_NODELIST": node,
        "SLURM_JOB_NODELIST": node, "SLURMD_NODENAME": node, "SLURM_CPUS_ON_NODE": "16",
        "SLURM_JOB_NAME": ["interactive", "sh"][n % 2], "SLURM_JOB_PARTITION": "gpu-short",
        "SLURM_SUBMIT_DIR": ["/home/carol/src", "/work/carol"][n % 2],
        "SLURM_TASK_PID": ["118203", "40771"][n % 2], "SLURM_JOB_ACCOUNT": "nlp-lab",
        "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2", "PYTHONUNBUFFERED": "1",
        **tuning,
    }
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None
            ) -> tuple[dict[str, str], dict[str, str]]:
    home = d / "home"
    home.mkdir(parents=True, exist_ok=True)
    return {**lab_shell(0, home), **(good or {})}, {**lab_shell(1, home), **(bad or {})}


def _repo(path: Path, files: dict[str, str]) -> Path:
    """A git repository holding ``files``, all committed."""
    for name, text in files.items():
        _write(path / name, text)
    _git(path, "init", "-q")
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "first version")
    return path


def _run(py: str, code: str, *args: str) -> None:
    """Run a build step (make a model, a data file) with the corpus interpreter."""
    res = subprocess.run([py, "-c", code, *args], capture_output=True, text=True, check=False,
                         timeout=300)
    if res.returncode:
        raise RuntimeError(f"build step failed: {res.stderr[-400:]}")


# --------------------------------------------------------------------------- settings libraries


DYNACONF_APP = """
    \"\"\"Summarise a dataset folder: settings from settings.toml through dynaconf.\"\"\"
    import json
    from pathlib import Path

    from dynaconf import Dynaconf, Validator

    settings = Dynaconf(
        settings_files=["settings.toml"],
        environments=True,
        validators=[Validator("DATA_ROOT", must_exist=True)],
    )


    def main():
        root = Path(settings.DATA_ROOT)
        sizes = []
        for shard in sorted(root.glob("*.jsonl")):
            with shard.open() as f:
                sizes.append(sum(1 for _ in f))
        print(f"shards={len(sizes)}")
        print(f"examples={sum(sizes)} batch_size={settings.BATCH_SIZE}")
        with open(settings.get("REPORT", "report.json"), "w") as f:
            json.dump({"examples": sum(sizes)}, f)


    if __name__ == "__main__":
        main()
    """


def dynaconf_env_production(d: Path) -> Incident:
    """dynaconf with environments=True: one shell still exports ENV_FOR_DYNACONF=production
    from a deployment, so DATA_ROOT and REPORT come from the [production] table, a mount this
    node does not have: no shard is found, and writing the report fails. Kind: fail."""
    py = python_with("dynaconf")
    proj = d / "summarise"
    for i in range(3):
        _write(proj / "data" / f"part-{i}.jsonl", '{"x": 1}\n' * (10 + i))
    _write(proj / "settings.toml", """
        [default]
        batch_size = 32

        [development]
        data_root = "data"
        report = "report.json"

        [production]
        data_root = "/mnt/lustre/prod/datasets/summarise"
        report = "/mnt/lustre/prod/reports/summarise.json"
        batch_size = 256
        """)
    app = _write(proj / "summarise.py", DYNACONF_APP)
    good, bad = _shells(d, None, {"ENV_FOR_DYNACONF": "production"})
    argv = (py, str(app))
    return _incident(dynaconf_env_production, Launch(argv, good, proj),
                     Launch(argv, bad, proj), ("env", "ENV_FOR_DYNACONF"))


def dynaconf_same_failure(d: Path) -> Incident:
    """The same dynaconf program whose settings.toml lost its [development] table: DATA_ROOT
    is missing and dynaconf's validator refuses it, alike in two shells. Nothing planted.
    Kind: noise."""
    py = python_with("dynaconf")
    proj = d / "summarise"
    _write(proj / "settings.toml", """
        [default]
        batch_size = 32

        [production]
        data_root = "/mnt/lustre/prod/datasets/summarise"
        """)
    app = _write(proj / "summarise.py", DYNACONF_APP)
    good, bad = _shells(d)
    argv = (py, str(app))
    return _incident(dynaconf_same_failure, Launch(argv, good, proj), Launch(argv, bad, proj))


def decouple_env_over_ini(d: Path) -> Incident:
    """python-decouple reads NUM_LABELS from settings.ini unless the shell has it: one shell
    still exports NUM_LABELS=5 from another project, and the classifier head no longer fits
    the checkpoint. Kind: fail."""
    py = python_with("decouple", "torch")
    proj = d / "classify"
    _write(proj / "settings.ini", """
        [settings]
        NUM_LABELS=3
        HIDDEN=16
        CHECKPOINT=head.pt
        """)
    _run(py, "import torch, sys; torch.manual_seed(0); "
             "torch.save(torch.nn.Linear(16, 3).state_dict(), sys.argv[1])",
         str(proj / "head.pt"))
    _write(proj / "classify.py", """
        import torch
        from decouple import config

        NUM_LABELS = config("NUM_LABELS", cast=int)
        HIDDEN = config("HIDDEN", cast=int, default=16)


        def load_head():
            head = torch.nn.Linear(HIDDEN, NUM_LABELS)
            head.load_state_dict(torch.load(config("CHECKPOINT"), map_location="cpu"))
            return head.eval()


        def main():
            torch.manual_seed(1)
            feats = torch.randn(64, HIDDEN)
            with torch.no_grad():
                pred = load_head()(feats).argmax(-1)
            counts = torch.bincount(pred, minlength=NUM_LABELS).tolist()
            print(f"label_counts={counts}")


        if __name__ == "__main__":
            main()
        """)
    good, bad = _shells(d, None, {"NUM_LABELS": "5"})
    argv = (py, "classify.py")
    return _incident(decouple_env_over_ini, Launch(argv, good, proj), Launch(argv, bad, proj),
                     ("env", "NUM_LABELS"))


# --------------------------------------------------------------------------- accelerate, torch


ACCELERATE_FIT = """
    import torch
    from accelerate import Accelerator
    from accelerate.utils import set_seed


    def main():
        accelerator = Accelerator()
        set_seed(0)
        x = torch.randn(512, 32)
        y = (x[:, :4].sum(-1, keepdim=True) > 0).float()
        data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=64)
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(),
                                    torch.nn.Linear(64, 1))
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        model, opt, data = accelerator.prepare(model, opt, data)
        for epoch in range(3):
            for xb, yb in data:
                with accelerator.accumulate(model):
                    loss = torch.nn.functional.binary_cross_entropy_with_logits(model(xb), yb)
                    accelerator.backward(loss)
                    opt.step()
                    opt.zero_grad()
            accelerator.print(f"epoch {epoch} done")
        accelerator.print(f"final_loss={loss.item():.6f}")


    if __name__ == "__main__":
        main()
    """


def accelerate_grad_accum_metric(d: Path) -> Incident:
    """An accelerate training loop under accelerator.accumulate() that passes no
    gradient_accumulation_steps: Accelerator reads ACCELERATE_GRADIENT_ACCUMULATION_STEPS,
    which one shell still exports as 4 from a multi-GPU job script; the optimizer steps a
    quarter as often and the final loss moves. Kind: metric."""
    py = python_with("accelerate", "torch")
    app = _write(d / "fit.py", ACCELERATE_FIT)
    good, bad = _shells(d, None, {"ACCELERATE_GRADIENT_ACCUMULATION_STEPS": "4"})
    argv = (py, str(app))
    return _incident(accelerate_grad_accum_metric, Launch(argv, good, d),
                     Launch(argv, bad, d), ("env", "ACCELERATE_GRADIENT_ACCUMULATION_STEPS"))


def accelerate_noise(d: Path) -> Incident:
    """The same accelerate training script in two shells: nothing planted. Kind: noise."""
    py = python_with("accelerate", "torch")
    app = _write(d / "fit.py", ACCELERATE_FIT)
    good, bad = _shells(d)
    argv = (py, str(app))
    return _incident(accelerate_noise, Launch(argv, good, d), Launch(argv, bad, d))


def torch_hub_home(d: Path) -> Incident:
    """torch.hub.load_state_dict_from_url looks for the checkpoint in $TORCH_HOME/hub/checkpoints
    first: the group's shared TORCH_HOME has it, but one shell never sourced the group profile,
    so torch looks under ~/.cache/torch and tries to download (no network). Kind: fail."""
    py = python_with("torch")
    shared = d / "group" / "torch-cache"
    ckpt = shared / "hub" / "checkpoints" / "probe-mlp-5d1e7a2c.pth"
    ckpt.parent.mkdir(parents=True, exist_ok=True)
    _run(py, "import torch, sys; torch.manual_seed(0); "
             "torch.save(torch.nn.Linear(8, 2).state_dict(), sys.argv[1])", str(ckpt))
    app = _write(d / "probe.py", """
        import argparse

        import torch
        from torch.hub import load_state_dict_from_url

        WEIGHTS = "https://weights.nlp-lab.example.org/probes/probe-mlp-5d1e7a2c.pth"


        def main():
            p = argparse.ArgumentParser(description="score a batch with the released probe")
            p.add_argument("--batch", type=int, default=16)
            a = p.parse_args()
            model = torch.nn.Linear(8, 2)
            model.load_state_dict(load_state_dict_from_url(WEIGHTS, map_location="cpu",
                                                           progress=False))
            torch.manual_seed(0)
            with torch.no_grad():
                p_pos = model(torch.randn(a.batch, 8)).softmax(-1)[:, 1].mean().item()
            print(f"mean_p_positive={p_pos:.4f}")


        if __name__ == "__main__":
            main()
        """)
    good, bad = _shells(d, {"TORCH_HOME": str(shared)})
    argv = (py, str(app), "--batch", "16")
    return _incident(torch_hub_home, Launch(argv, good, d), Launch(argv, bad, d),
                     ("env", "TORCH_HOME"))


# --------------------------------------------------------------------------- click, platformdirs


def click_auto_envvar_workers(d: Path) -> Incident:
    """A launcher runs one worker subprocess per shard; the worker is a click command called
    with auto_envvar_prefix="TOKSHARD", so click fills --vocab from TOKSHARD_VOCAB. One shell
    still exports it, naming a vocabulary that was deleted: every worker exits 2 and the
    launcher fails. Only the workers read the variable. Kind: fail (multi-process)."""
    py = python_with("click")
    proj = d / "prep"
    _write(proj / "vocab.txt", "\n".join(["<unk>", "the", "a", "cat", "dog", "sat", "on",
                                          "mat"]) + "\n")
    for i in range(2):
        _write(proj / "raw" / f"shard-{i}.txt", "the cat sat on the mat\na dog sat\n" * (3 + i))
    _write(proj / "tokenize_shard.py", """
        import json
        from pathlib import Path

        import click


        @click.command()
        @click.option("--shard", type=click.Path(exists=True, dir_okay=False), required=True)
        @click.option("--vocab", type=click.Path(exists=True, dir_okay=False),
                      default="vocab.txt", show_default=True)
        @click.option("--out-dir", type=click.Path(file_okay=False), default="tokens")
        def main(shard, vocab, out_dir):
            ids = {w: i for i, w in enumerate(Path(vocab).read_text().split())}
            tokens = [ids.get(w, 0) for w in Path(shard).read_text().split()]
            Path(out_dir).mkdir(exist_ok=True)
            out = Path(out_dir) / (Path(shard).stem + ".json")
            out.write_text(json.dumps(tokens))
            click.echo(f"{shard}: {len(tokens)} tokens")


        if __name__ == "__main__":
            main(auto_envvar_prefix="TOKSHARD")
        """)
    app = _write(proj / "launch.py", """
        import subprocess
        import sys
        from concurrent.futures import ThreadPoolExecutor
        from pathlib import Path


        def run(shard):
            return subprocess.run([sys.executable, "tokenize_shard.py", "--shard", str(shard)],
                                  check=True, capture_output=True, text=True).stdout


        def main():
            shards = sorted(Path("raw").glob("*.txt"))
            with ThreadPoolExecutor(max_workers=2) as pool:
                for line in pool.map(run, shards):
                    print(line.strip())
            total = sum(len(p.read_text().split(",")) for p in Path("tokens").glob("*.json"))
            print(f"shards={len(shards)} tokens={total}")


        if __name__ == "__main__":
            main()
        """)
    good, bad = _shells(d, None, {"TOKSHARD_VOCAB": "/work/carol/vocab-2025-03.txt"})
    argv = (py, str(app))
    return _incident(click_auto_envvar_workers, Launch(argv, good, proj),
                     Launch(argv, bad, proj), ("env", "TOKSHARD_VOCAB"))


def platformdirs_stale_cache(d: Path) -> Incident:
    """A featurizer caches features in platformdirs' user_cache_dir, then posts a summary to a
    results server that is down in both shells. One shell sets XDG_CACHE_HOME to a scratch
    cache holding last year's file (another key): it fails reading the cache, the other at
    posting. Kind: both-fail."""
    py = python_with("platformdirs", "numpy", "requests")
    old = d / "scratch-cache"
    (old / "featurize" / "v1").mkdir(parents=True, exist_ok=True)
    _run(py, "import numpy as np, sys; np.savez(sys.argv[1], feats=np.zeros((4, 3)))",
         str(old / "featurize" / "v1" / "features.npz"))
    app = _write(d / "featurize.py", """
        import argparse
        from pathlib import Path

        import numpy as np
        import requests
        from platformdirs import user_cache_dir


        def features(n):
            cache = Path(user_cache_dir("featurize", version="v1")) / "features.npz"
            if cache.exists():
                return np.load(cache)["features"]
            rng = np.random.default_rng(0)
            feats = rng.normal(size=(n, 3))
            cache.parent.mkdir(parents=True, exist_ok=True)
            np.savez(cache, features=feats)
            return feats


        def main():
            p = argparse.ArgumentParser()
            p.add_argument("--n", type=int, default=100)
            p.add_argument("--results-url", default="http://127.0.0.1:9/api/results")
            a = p.parse_args()
            feats = features(a.n)
            summary = {"n": len(feats), "mean": float(feats.mean())}
            print(f"feature_mean={summary['mean']:.4f}")
            requests.post(a.results_url, json=summary, timeout=5).raise_for_status()


        if __name__ == "__main__":
            main()
        """)
    good, bad = _shells(d, None, {"XDG_CACHE_HOME": str(old)})
    argv = (py, str(app), "--n", "100")
    return _incident(platformdirs_stale_cache, Launch(argv, good, d), Launch(argv, bad, d),
                     ("env", "XDG_CACHE_HOME"))


# --------------------------------------------------------------------------- OmegaConf, Hydra


def omegaconf_dotlist_metric(d: Path) -> Incident:
    """A training script that merges OmegaConf.from_cli() over its YAML config: the second run
    was launched from the shell history with optim.lr=0.002 instead of 0.02; both exit 0 and
    the final loss differs. Kind: metric."""
    py = python_with("omegaconf", "torch")
    proj = d / "regress"
    _write(proj / "conf" / "train.yaml", """
        seed: 0
        data:
          n: 256
          noise: 0.1
        optim:
          lr: 0.01
          momentum: 0.9
        train:
          steps: 150
        """)
    _write(proj / "train.py", """
        import torch
        from omegaconf import OmegaConf


        def main():
            cfg = OmegaConf.merge(OmegaConf.load("conf/train.yaml"), OmegaConf.from_cli())
            torch.manual_seed(cfg.seed)
            x = torch.randn(cfg.data.n, 8)
            y = x @ torch.linspace(-2, 2, 8) + cfg.data.noise * torch.randn(cfg.data.n)
            model = torch.nn.Linear(8, 1)
            opt = torch.optim.SGD(model.parameters(), lr=cfg.optim.lr,
                                  momentum=cfg.optim.momentum)
            for step in range(cfg.train.steps):
                loss = torch.nn.functional.mse_loss(model(x).squeeze(-1), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            print(f"final_loss={loss.item():.5f}")


        if __name__ == "__main__":
            main()
        """)
    good, bad = _shells(d)
    good_argv = (py, "train.py", "train.steps=30", "optim.lr=0.02")
    bad_argv = (py, "train.py", "train.steps=30", "optim.lr=0.002")
    return _incident(omegaconf_dotlist_metric, Launch(good_argv, good, proj),
                     Launch(bad_argv, bad, proj), ("command", "argument 3"))


def hydra_override_heads(d: Path) -> Incident:
    """A Hydra app building a torch transformer encoder layer: the override model.n_heads=6
    (instead of 8) does not divide d_model=64, and torch's MultiheadAttention refuses it.
    Kind: fail."""
    py = python_with("hydra", "torch")
    proj = d / "encoder"
    _write(proj / "conf" / "config.yaml", """
        model:
          d_model: 64
          n_heads: 4
          dropout: 0.0
        data:
          batch: 8
          seq_len: 12
        """)
    _write(proj / "run.py", """
        import logging

        import hydra
        import torch
        from omegaconf import DictConfig

        log = logging.getLogger(__name__)


        @hydra.main(version_base="1.3", config_path="conf", config_name="config")
        def main(cfg: DictConfig) -> None:
            torch.manual_seed(0)
            layer = torch.nn.TransformerEncoderLayer(cfg.model.d_model, cfg.model.n_heads,
                                                     dropout=cfg.model.dropout,
                                                     batch_first=True)
            x = torch.randn(cfg.data.batch, cfg.data.seq_len, cfg.model.d_model)
            out = layer(x)
            log.info("output shape %s", tuple(out.shape))
            print(f"output_norm={out.norm().item():.4f}")


        if __name__ == "__main__":
            main()
        """)
    good, bad = _shells(d)
    good_argv = (py, "run.py", "model.n_heads=8", "data.batch=8")
    bad_argv = (py, "run.py", "model.n_heads=6", "data.batch=8")
    return _incident(hydra_override_heads, Launch(good_argv, good, proj),
                     Launch(bad_argv, bad, proj), ("command", "argument 2"))


# --------------------------------------------------------------------------- config and data files


def jsonschema_config_both_fail(d: Path) -> Incident:
    """A service's config.json, validated by jsonschema at start-up, is hand-edited: batch_size
    becomes the string "32" (and the log level changes). The bad run stops at validation; the
    good one validates and then fails at connecting to a feature store that is down in both
    shells. Kind: both-fail."""
    py = python_with("jsonschema", "httpx")
    repo = _repo(d / "svc", {
        "config.json": json.dumps({"batch_size": 32, "feature_store": "http://127.0.0.1:9",
                                   "log_level": "INFO", "timeout_s": 2}, indent=2) + "\n",
        "schema.json": json.dumps({
            "type": "object",
            "required": ["batch_size", "feature_store"],
            "properties": {"batch_size": {"type": "integer", "minimum": 1},
                           "feature_store": {"type": "string"},
                           "log_level": {"enum": ["DEBUG", "INFO", "WARNING"]},
                           "timeout_s": {"type": "number"}}}, indent=2) + "\n",
        "serve.py": """
            import json
            import logging

            import httpx
            import jsonschema

            log = logging.getLogger("svc")


            def load_config(path="config.json"):
                with open(path) as f:
                    cfg = json.load(f)
                with open("schema.json") as f:
                    jsonschema.validate(cfg, json.load(f))
                return cfg


            def main():
                cfg = load_config()
                logging.basicConfig(level=cfg.get("log_level", "INFO"))
                with httpx.Client(base_url=cfg["feature_store"],
                                  timeout=cfg["timeout_s"]) as client:
                    r = client.get("/v1/features", params={"limit": cfg["batch_size"]})
                    r.raise_for_status()
                log.info("got %d features", len(r.json()))


            if __name__ == "__main__":
                main()
            """,
    })

    def edit() -> None:
        path = repo / "config.json"
        cfg = json.loads(path.read_text())
        cfg.update(batch_size="32", log_level="DEBUG")
        path.write_text(json.dumps(cfg, indent=2) + "\n")

    good, bad = _shells(d)
    argv = (py, "serve.py")
    return _incident(jsonschema_config_both_fail, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "svc: config.json"), between=edit)


def safetensors_index_metric(d: Path) -> Incident:
    """A retrieval repo's embedding index (safetensors, tracked in git) is re-exported from a
    different checkpoint and not committed: both runs exit 0, recall@1 drops.
    Kind: metric."""
    py = python_with("safetensors", "torch")
    repo = d / "retrieval"
    (repo / "index").mkdir(parents=True, exist_ok=True)
    make = ("import sys, torch; from safetensors.torch import save_file; "
            "g = torch.Generator().manual_seed(7); keys = torch.randn(200, 16, generator=g); "
            "noise = float(sys.argv[2]); "
            "save_file({'keys': keys + noise * torch.randn(200, 16, generator=g)}, sys.argv[1])")
    _run(py, make, str(repo / "index" / "embeddings.safetensors"), "0.3")
    _write(repo / "evaluate.py", """
        import torch
        from safetensors.torch import load_file


        def main():
            index = load_file("index/embeddings.safetensors")["keys"]
            g = torch.Generator().manual_seed(7)
            truth = torch.randn(200, 16, generator=g)
            queries = truth + 0.3 * torch.randn(200, 16, generator=torch.Generator().manual_seed(1))
            scores = torch.nn.functional.normalize(queries, dim=-1) @ \\
                torch.nn.functional.normalize(index, dim=-1).T
            recall = (scores.argmax(-1) == torch.arange(200)).float().mean().item()
            print(f"recall@1={recall:.4f}")


        if __name__ == "__main__":
            main()
        """)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "index of checkpoint 12k")

    def edit() -> None:
        _run(py, make, str(repo / "index" / "embeddings.safetensors"), "1.2")

    good, bad = _shells(d)
    argv = (py, "evaluate.py")
    return _incident(safetensors_index_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "retrieval: index/embeddings.safetensors"),
                     between=edit)


TINY_GPT2 = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 32,
             "n_layer": 2, "n_head": 4, "n_positions": 128, "vocab_size": 64,
             "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
             "layer_norm_epsilon": 1e-05, "bos_token_id": 0, "eos_token_id": 63}


def generation_config_metric(d: Path) -> Incident:
    """A saved tiny GPT-2 whose generation_config.json is replaced by a colleague's copy with
    repetition_penalty 1.8; transformers' generate() applies it, both runs exit 0 and the
    distinct-token ratio of the sample differs. Kind: metric."""
    py = python_with("torch", "transformers")
    model = d / "tiny-gpt2"
    _run(py, "import json, sys, torch; from transformers import GPT2Config, GPT2LMHeadModel; "
             "torch.manual_seed(0); m = GPT2LMHeadModel(GPT2Config(**json.loads(sys.argv[2]))); "
             "m.save_pretrained(sys.argv[1])", str(model), json.dumps(TINY_GPT2))
    gen = {"bos_token_id": 0, "eos_token_id": 63, "max_new_tokens": 40, "do_sample": False}
    (model / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
    app = _write(d / "sample.py", """
        import argparse

        import torch
        from transformers import AutoModelForCausalLM


        def main():
            p = argparse.ArgumentParser()
            p.add_argument("--model-path", required=True)
            a = p.parse_args()
            model = AutoModelForCausalLM.from_pretrained(a.model_path).eval()
            prompt = torch.tensor([[5, 9, 5, 9, 5, 9]])
            with torch.no_grad():
                out = model.generate(prompt)
            new = out[0, prompt.shape[1]:].tolist()
            print(f"new_tokens={len(new)}")
            print(f"distinct_ratio={len(set(new)) / max(len(new), 1):.3f}")


        if __name__ == "__main__":
            main()
        """)

    def edit() -> None:
        (model / "generation_config.json").write_text(json.dumps(
            {**gen, "repetition_penalty": 1.8}, indent=2) + "\n")

    good, bad = _shells(d)
    argv = (py, str(app), "--model-path", str(model))
    return _incident(generation_config_metric, Launch(argv, good, d), Launch(argv, bad, d),
                     ("models", "--model-path: file generation_config.json"), between=edit)


# --------------------------------------------------------------------------- installed versions


def marshmallow_other_venv(d: Path) -> Incident:
    """A data checker written for marshmallow 3 (fields with missing=): the project's venv
    (layered on the shared one, with marshmallow 3.26 of its own) runs it; the second launch
    used the shared venv's python directly, whose marshmallow 4 rejects missing=. Kind: fail."""
    corpus = python_with("marshmallow")
    proj_venv = d / "venv-checker"
    py = proj_venv / "bin" / "python"
    if not py.exists():
        subprocess.run([corpus, "-m", "venv", "--without-pip", str(proj_venv)], check=True)
        site = subprocess.check_output(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            text=True).strip()
        shared = subprocess.check_output(
            [corpus, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            text=True).strip()
        (Path(site) / "_shared_venv.pth").write_text(shared + "\n")
        res = subprocess.run([corpus, "-m", "pip", "install", "-q", "--no-deps", "--target",
                              site, "marshmallow==3.26.1"], capture_output=True, text=True,
                             check=False)
        if res.returncode:
            raise Unavailable("pip could not install marshmallow 3.26.1: " + res.stderr[-200:])
    proj = d / "checker"
    _write(proj / "data" / "records.jsonl", "".join(
        json.dumps({"id": i, "text": f"row {i}", **({"weight": 2.0} if i % 4 == 0 else {})})
        + "\n" for i in range(40)))
    _write(proj / "check.py", """
        import json
        import sys

        from marshmallow import EXCLUDE, Schema, ValidationError, fields


        class Record(Schema):
            class Meta:
                unknown = EXCLUDE

            id = fields.Integer(required=True)
            text = fields.String(required=True)
            weight = fields.Float(missing=1.0)


        def main(path):
            schema = Record()
            good, bad, total = 0, 0, 0.0
            with open(path) as f:
                for line in f:
                    try:
                        rec = schema.load(json.loads(line))
                    except ValidationError:
                        bad += 1
                        continue
                    good += 1
                    total += rec["weight"]
            print(f"valid={good} invalid={bad} total_weight={total:.1f}")


        if __name__ == "__main__":
            main(sys.argv[1] if len(sys.argv) > 1 else "data/records.jsonl")
        """)
    good, bad = _shells(d)
    return _incident(marshmallow_other_venv,
                     Launch((str(py), "check.py", "data/records.jsonl"), good, proj),
                     Launch((corpus, "check.py", "data/records.jsonl"), bad, proj),
                     ("packages", "marshmallow"), ("packages", "interpreter"))


#: The second fresh batch, in the order it was written. Never tuned on.
FRESH2 = [
    dynaconf_env_production, dynaconf_same_failure, decouple_env_over_ini,
    accelerate_grad_accum_metric, accelerate_noise, torch_hub_home,
    click_auto_envvar_workers, platformdirs_stale_cache, omegaconf_dotlist_metric,
    hydra_override_heads, jsonschema_config_both_fail, safetensors_index_metric,
    generation_config_metric, marshmallow_other_venv,
]

if __name__ == "__main__":  # build one incident and print its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH2 if b.__name__ in sys.argv[1:]] or FRESH2
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh2-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
