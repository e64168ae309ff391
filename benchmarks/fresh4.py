"""A fourth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``docs/ranking.md``,
``docs/diff.md``) nor its capture and tracing code (``runsnap/launch/``, ``runsnap/tracing/``,
``runsnap/probe/``): only the incident format (benchmarks/incidents.py), how third-party incidents
are written (benchmarks/thirdparty.py, benchmarks/fresh.py, fresh2.py, fresh3.py), how they are
run and scored (benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot
reference (docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun
job captures one snapshot per rank. They form the corpus's sixth half, ``fresh4``; report it,
never change the ranker to fit it, and never change an incident after seeing its score (except
to repair an incident whose bad launch does not fail for the planted reason, said in the commit).

Real workloads, the way an engineer hits them, with libraries and mechanisms the earlier batches
did not use:

- the Hugging Face ``Trainer`` on a tiny GPT-2 built from a model folder's config.json, its
  ``TrainingArguments`` from the command line (``HfArgumentParser``): gradient accumulation
  given on the command line, ``n_positions`` shrunk in the model folder (an uncommitted edit), a
  stale ``MLFLOW_RUN_ID`` left in a shell (the Trainer's MLflow callback, a local file store,
  resumes a run that does not exist), and the same MLflow-logged run from two shells (noise);
- torchrun gloo jobs compared **job to job** (``torchrun --nproc-per-node 2 --no-python runsnap
  capture -o JOB/{host}-{rank}.toml -- python train.py``): ``PYTORCH_JIT=0``, read when torch is
  imported, makes ``torch.jit.script`` hand back the module itself and the export at the end of
  training fails; an uncommitted edit to a hand-written gradient all-reduce;
- servers hit by a client in the same launch script: uvicorn with FastAPI
  (``--limit-concurrency`` copied from a production script answers 503 to concurrent requests;
  an environs setting that does not parse stops start-up in a uvicorn child process), and
  aiohttp (a request body over ``client_max_size`` from a bigger ``--batch-size``: 413);
- data pipelines: Hugging Face ``datasets`` (an uncommitted edit to a filter; ``num_proc`` and a
  map function that numbers rows with a global counter), polars over pyarrow parquet (thread and
  memory-pool settings that change nothing: noise; an older polars in a project venv without
  ``group_by``), a ``tokenizers`` tokenizer.json whose truncation was switched on;
- config systems not used before: jsonargparse (``JSONARGPARSE_DEFAULT_ENV`` turns on the
  environment variables that both shells export) and gin-config (a binding for a parameter the
  function lacks, in a run that already failed for a missing checkpoint: both fail).

The shells are :func:`studio_shell`: user erin on a shared GPU workstation, one shell the
terminal of JupyterLab, the other VS Code's Remote-SSH terminal, each with the tuning variables of
its own scripts (``NCCL_*``, ``CUDA_*``, ``TORCH_*``, ``HF_*``, ``TOKENIZERS_PARALLELISM``) that
change nothing on this CPU-only build; the thread counts that change float reductions are pinned
alike.

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

from benchmarks.incidents import RANKS_FOLDER, RANKS_RUNSNAP, Incident, Launch, _git, _write
from benchmarks.thirdparty import Unavailable, _incident, python_with


def studio_shell(n: int, home: Path) -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1) of user erin on a shared GPU workstation: 0 the
    terminal of JupyterLab, 1 VS Code's Remote-SSH terminal; each with the tuning variables its
    own scripts export."""
    tuning = [
        {"NCCL_P2P_LEVEL": "SYS", "NCCL_SHM_DISABLE": "0", "CUDA_VISIBLE_DEVICES": "0,1",
         "TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT": "5000", "TORCH_SHOW_CPP_STACKTRACES": "1",
         "HF_HUB_ENABLE_HF_TRANSFER": "1", "TOKENIZERS_PARALLELISM": "false",
         "TRANSFORMERS_VERBOSITY": "warning"},
        {"NCCL_P2P_LEVEL": "NVL", "NCCL_DEBUG": "INFO", "CUDA_VISIBLE_DEVICES": "1",
         "CUDA_LAUNCH_BLOCKING": "1", "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000",
         "HF_HUB_DOWNLOAD_TIMEOUT": "60", "TOKENIZERS_PARALLELISM": "true",
         "PYTORCH_NVML_BASED_CUDA_CHECK": "1"},
    ][n % 2]
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home), "USER": "erin", "LOGNAME": "erin", "SHELL": "/bin/bash",
        "LANG": "en_US.UTF-8", "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2",
        **tuning,
    }
    if n % 2 == 0:  # JupyterLab's terminal
        env.update({
            "TERM": "xterm-256color", "SHLVL": "2", "OLDPWD": str(home / "notebooks"),
            "JPY_PARENT_PID": "18842", "JUPYTER_SERVER_ROOT": str(home),
            "JPY_SESSION_NAME": str(home / "notebooks" / "explore.ipynb"),
            "PAGER": "cat", "CLICOLOR": "1", "MPLBACKEND": "module://matplotlib_inline.backend_inline",
            "CONDA_DEFAULT_ENV": "ml", "CONDA_PROMPT_MODIFIER": "(ml) ", "CONDA_SHLVL": "1",
            "_": "/opt/conda/bin/jupyter",
        })
    else:  # VS Code Remote-SSH
        env.update({
            "TERM": "xterm-256color", "TERM_PROGRAM": "vscode", "TERM_PROGRAM_VERSION": "1.96.2",
            "COLORTERM": "truecolor", "SHLVL": "1", "OLDPWD": str(home / "src"),
            "SSH_CLIENT": "192.168.4.23 53710 22",
            "SSH_CONNECTION": "192.168.4.23 53710 192.168.4.60 22",
            "VSCODE_IPC_HOOK_CLI": "/run/user/1002/vscode-ipc-5b1e0c9a.sock",
            "VSCODE_GIT_ASKPASS_MAIN": str(home / ".vscode-server/bin/fabdb6a3/extensions/git/"
                                                  "dist/askpass-main.js"),
            "GIT_ASKPASS": str(home / ".vscode-server/bin/fabdb6a3/extensions/git/dist/"
                                      "askpass.sh"),
            "BROWSER": str(home / ".vscode-server/bin/fabdb6a3/bin/helpers/browser.sh"),
            "XDG_RUNTIME_DIR": "/run/user/1002", "XDG_SESSION_ID": "212",
            "_": "/usr/bin/python3",
        })
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None
            ) -> tuple[dict[str, str], dict[str, str]]:
    home = d / "home"
    home.mkdir(parents=True, exist_ok=True)
    return {**studio_shell(0, home), **(good or {})}, {**studio_shell(1, home), **(bad or {})}


def _repo(path: Path, files: dict[str, str]) -> Path:
    """A git repository holding ``files``, all committed."""
    for name, text in files.items():
        _write(path / name, text)
    _git(path, "init", "-q")
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "initial import")
    return path


def _torchrun(py: str) -> str:
    runner = Path(py).parent / "torchrun"
    if not runner.exists():
        raise Unavailable(f"no torchrun beside {py}")
    return str(runner)


# --------------------------------------------------------------------------- Hugging Face Trainer


TINY_GPT2 = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 96,
             "n_positions": 64, "n_embd": 32, "n_layer": 2, "n_head": 2, "n_inner": 64,
             "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
             "bos_token_id": 0, "eos_token_id": 0, "torch_dtype": "float32"}

CORPUS_TEXT = " ".join(
    f"the {w} model reads {n} tokens and writes {m} more before it stops."
    for w, n, m in zip(["small", "tiny", "quick", "slow", "large", "odd"] * 6,
                       range(3, 39), range(40, 76), strict=True))

TRAIN_CLM = """
    \"\"\"Fine-tune a tiny causal LM, built from the model folder's config.json, on a text file
    with the Hugging Face Trainer. TrainingArguments come from the command line.\"\"\"
    import sys
    from dataclasses import dataclass, field

    import torch
    from transformers import (AutoConfig, AutoModelForCausalLM, HfArgumentParser, Trainer,
                              TrainingArguments, set_seed)


    @dataclass
    class ModelArguments:
        model_name_or_path: str = field(metadata={"help": "folder with config.json"})
        train_file: str = field(default="data/train.txt")
        block_size: int = field(default=32)


    class Blocks(torch.utils.data.Dataset):
        def __init__(self, path, vocab, block):
            text = open(path, encoding="utf-8").read()
            ids = [1 + (ord(c) % (vocab - 1)) for c in text]
            self.blocks = [torch.tensor(ids[i:i + block])
                           for i in range(0, len(ids) - block, block)]

        def __len__(self):
            return len(self.blocks)

        def __getitem__(self, i):
            return {"input_ids": self.blocks[i], "labels": self.blocks[i]}


    def main():
        margs, targs = HfArgumentParser((ModelArguments, TrainingArguments)).parse_args_into_dataclasses()
        set_seed(targs.seed)
        config = AutoConfig.from_pretrained(margs.model_name_or_path)
        model = AutoModelForCausalLM.from_config(config)
        data = Blocks(margs.train_file, config.vocab_size, margs.block_size)
        trainer = Trainer(model=model, args=targs, train_dataset=data)
        result = trainer.train()
        print(f"train_loss={result.training_loss:.4f}")
        print(f"steps={result.global_step}")


    if __name__ == "__main__":
        main()
    """


def _clm_project(d: Path, name: str = "tiny-clm") -> Path:
    repo = _repo(d / name, {"train_clm.py": TRAIN_CLM,
                            "model/config.json": json.dumps(TINY_GPT2, indent=2) + "\n",
                            "data/train.txt": CORPUS_TEXT + "\n",
                            ".gitignore": "runs/\nmlruns/\n"})
    return repo


def _trainer_argv(py: str, repo: Path, out: str, *extra: str) -> tuple[str, ...]:
    return (py, str(repo / "train_clm.py"), "--model_name_or_path", "model",
            "--output_dir", out, "--max_steps", "8", "--per_device_train_batch_size", "4",
            "--learning_rate", "3e-3", "--logging_steps", "4", "--save_strategy", "no",
            "--seed", "7", "--disable_tqdm", "true", "--dataloader_num_workers", "0", *extra)


def trainer_grad_accum_metric(d: Path) -> Incident:
    """The Trainer run again from VS Code's terminal with ``--gradient_accumulation_steps 4``
    (from a recipe for a bigger model), into another output folder: 8 optimizer steps now see
    four times the batches and the training loss moves. Kind: metric."""
    py = python_with("torch", "transformers", "accelerate")
    repo = _clm_project(d)
    good, bad = _shells(d)
    return _incident(
        trainer_grad_accum_metric,
        Launch(_trainer_argv(py, repo, "runs/clm-0412", "--report_to", "none"), good, repo),
        Launch(_trainer_argv(py, repo, "runs/clm-0413", "--report_to", "none",
                             "--gradient_accumulation_steps", "4"), bad, repo),
        ("command", "--gradient_accumulation_steps"))


def trainer_n_positions_edit(d: Path) -> Incident:
    """Between the runs ``n_positions`` in the model folder's config.json went from 64 to 16 (an
    uncommitted edit, meant for a unit test); the Trainer feeds blocks of 32 tokens and GPT-2's
    position embedding fails: "index out of range in self". Kind: fail."""
    py = python_with("torch", "transformers", "accelerate")
    repo = _clm_project(d)

    def edit() -> None:
        (repo / "model" / "config.json").write_text(
            json.dumps({**TINY_GPT2, "n_positions": 16}, indent=2) + "\n")

    good, bad = _shells(d)
    argv = _trainer_argv(py, repo, "runs/clm", "--report_to", "none")
    return _incident(trainer_n_positions_edit, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("models", "--model_name_or_path: n_positions"),
                     ("git", "tiny-clm: model/config.json"), between=edit)


def _mlflow_shells(d: Path, bad: dict[str, str] | None = None
                   ) -> tuple[dict[str, str], dict[str, str]]:
    store = {"MLFLOW_TRACKING_URI": (d / "tiny-clm" / "mlruns").as_uri(),
             "MLFLOW_EXPERIMENT_NAME": "tiny-clm", "HF_MLFLOW_LOG_ARTIFACTS": "0",
             # MLflow 3 refuses a file store unless told (both shells' profiles say so)
             "MLFLOW_ALLOW_FILE_STORE": "true"}
    return _shells(d, store, {**store, **(bad or {})})


def trainer_mlflow_stale_run_id(d: Path) -> Incident:
    """The Trainer logs to MLflow (``--report_to mlflow``, a local file store). VS Code's
    terminal still has ``MLFLOW_RUN_ID`` exported from a notebook session against another
    tracking server; MLflow's ``start_run`` resumes that run, which this store does not have,
    and training stops before its first step. Kind: fail."""
    py = python_with("torch", "transformers", "accelerate", "mlflow")
    repo = _clm_project(d)
    good, bad = _mlflow_shells(d, {"MLFLOW_RUN_ID": "3f1c9a0be27d4c55a8e6d1f0b2c47e91"})
    argv = _trainer_argv(py, repo, "runs/clm", "--report_to", "mlflow", "--run_name", "clm-lr3e-3")
    return _incident(trainer_mlflow_stale_run_id, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "MLFLOW_RUN_ID"))


def trainer_mlflow_noise(d: Path) -> Incident:
    """The same MLflow-logged Trainer run from JupyterLab's terminal and from VS Code's: each
    makes its own MLflow run in the same local store. Nothing planted. Kind: noise."""
    py = python_with("torch", "transformers", "accelerate", "mlflow")
    repo = _clm_project(d)
    good, bad = _mlflow_shells(d)
    argv = _trainer_argv(py, repo, "runs/clm", "--report_to", "mlflow", "--run_name", "clm-lr3e-3")
    return _incident(trainer_mlflow_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- torchrun jobs


DDP_EXPORT = """
    \"\"\"Train a small MLP with DDP over gloo, then export it with TorchScript on rank 0.\"\"\"
    import argparse
    import os

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP


    class Scorer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                            torch.nn.Linear(32, 1))

        def forward(self, x):
            return self.body(x).squeeze(-1)


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--steps", type=int, default=5)
        p.add_argument("--export", default="export/scorer.pt")
        a = p.parse_args()
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        torch.manual_seed(0)
        model = DDP(Scorer())
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        g = torch.Generator().manual_seed(100 + rank)
        for _ in range(a.steps):
            x = torch.randn(32, 16, generator=g)
            y = x[:, :4].sum(-1)
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.barrier()
        if rank == 0:
            os.makedirs(os.path.dirname(a.export), exist_ok=True)
            scripted = torch.jit.script(model.module.eval())
            scripted.save(a.export)
            print(f"exported={a.export} loss={loss.item():.4f}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """


def _job(py: str, script: Path, *args: str) -> tuple[str, ...]:
    """A torchrun job of two ranks, each captured by runsnap into the job's folder."""
    return (_torchrun(py), "--nproc-per-node", "2", "--no-python", RANKS_RUNSNAP, "capture",
            "-o", f"{RANKS_FOLDER}/{{host}}-{{rank}}.toml", "--", py, str(script), *args)


def pytorch_jit_export_job(d: Path) -> Incident:
    """Job against job. VS Code's terminal has ``PYTORCH_JIT=0`` (set while stepping through a
    scripted function in the debugger); torch reads it when imported and ``torch.jit.script``
    then returns the module unchanged, so rank 0's export fails after training: "'Scorer' object
    has no attribute 'save'". Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "scorer", {"train_ddp.py": DDP_EXPORT, ".gitignore": "export/\n"})
    good, bad = _shells(d, {}, {"PYTORCH_JIT": "0"})
    argv = _job(py, repo / "train_ddp.py", "--steps", "5")
    return _incident(pytorch_jit_export_job, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("env", "PYTORCH_JIT"))


MANUAL_ALLREDUCE = """
    \"\"\"Data-parallel training without DDP: gradients averaged by hand after backward.\"\"\"
    import torch
    import torch.distributed as dist

    from gradsync import average_gradients


    def main():
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        torch.manual_seed(0)
        model = torch.nn.Linear(8, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(7 + rank)
        w = torch.arange(1.0, 9.0) / 8
        for _ in range(20):
            x = torch.randn(64, 8, generator=g)
            loss = torch.nn.functional.mse_loss(model(x).squeeze(-1), x @ w)
            opt.zero_grad()
            loss.backward()
            average_gradients(model)
            opt.step()
        dist.all_reduce(loss)
        if rank == 0:
            print(f"final_loss={loss.item() / dist.get_world_size():.4e}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

GRADSYNC = """
    import torch.distributed as dist


    def average_gradients(model):
        world = dist.get_world_size()
        for p in model.parameters():
            if p.grad is not None:
                dist.all_reduce(p.grad)
                p.grad /= world
    """


def grad_sync_edit_metric_job(d: Path) -> Incident:
    """Job against job. Between the jobs the division by the world size was taken out of
    gradsync.py ("all_reduce already averages", it does not: it sums), an uncommitted edit;
    both jobs finish, the second with twice the step size and another final loss. Kind:
    metric."""
    py = python_with("torch")
    repo = _repo(d / "linreg-dp", {"train.py": MANUAL_ALLREDUCE, "gradsync.py": GRADSYNC})

    def edit() -> None:
        _write(repo / "gradsync.py", GRADSYNC.replace("                p.grad /= world\n", ""))

    good, bad = _shells(d)
    argv = _job(py, repo / "train.py")
    return _incident(grad_sync_edit_metric_job, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("git", "linreg-dp: gradsync.py"), between=edit)


# --------------------------------------------------------------------------- servers


EMBED_APP = """
    \"\"\"A model-like embedding endpoint.\"\"\"
    import asyncio
    import hashlib

    from fastapi import FastAPI
    from pydantic import BaseModel

    app = FastAPI()


    class Batch(BaseModel):
        texts: list[str]


    def embed(text, dim=8):
        h = hashlib.sha256(text.encode()).digest()
        return [b / 255 for b in h[:dim]]


    @app.post("/v1/embed")
    async def embed_batch(batch: Batch):
        await asyncio.sleep(0.3)  # the forward pass
        return {"vectors": [embed(t) for t in batch.texts]}


    @app.get("/health")
    async def health():
        return {"ok": True}
    """

SERVE_AND_PROBE = """
    \"\"\"Start the embedding server in this process and send it concurrent requests, as the
    load test before a deployment does.\"\"\"
    import argparse
    import asyncio
    import socket
    import threading
    import time

    import httpx
    import uvicorn

    from embed_app import app


    def free_port():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]


    async def probe(url, clients):
        async with httpx.AsyncClient(timeout=10) as client:
            async def one(i):
                r = await client.post(f"{url}/v1/embed", json={"texts": [f"query {i}", "doc"]})
                r.raise_for_status()
                return len(r.json()["vectors"])
            return await asyncio.gather(*(one(i) for i in range(clients)))


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--limit-concurrency", type=int, default=None)
        p.add_argument("--timeout-keep-alive", type=int, default=5)
        p.add_argument("--clients", type=int, default=6)
        a = p.parse_args()
        port = free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                limit_concurrency=a.limit_concurrency,
                                timeout_keep_alive=a.timeout_keep_alive)
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        try:
            done = asyncio.run(probe(f"http://127.0.0.1:{port}", a.clients))
            print(f"requests_ok={len(done)} vectors={sum(done)}")
        finally:
            server.should_exit = True
            thread.join(5)


    if __name__ == "__main__":
        main()
    """


def uvicorn_limit_concurrency(d: Path) -> Incident:
    """A FastAPI embedding server started with uvicorn in the launch script, which then sends
    six concurrent requests. The second launch copied ``--limit-concurrency 2`` (and a longer
    keep-alive) from the production script: uvicorn answers 503 to the requests over the
    limit and the probe fails. Kind: fail."""
    py = python_with("fastapi", "uvicorn", "httpx")
    _write(d / "svc" / "embed_app.py", EMBED_APP)
    app = _write(d / "svc" / "serve_and_probe.py", SERVE_AND_PROBE)
    good, bad = _shells(d)
    return _incident(uvicorn_limit_concurrency,
                     Launch((py, str(app)), good, d / "svc"),
                     Launch((py, str(app), "--limit-concurrency", "2", "--timeout-keep-alive",
                             "30"), bad, d / "svc"),
                     ("command", "--limit-concurrency"))


SETTINGS_APP = """
    \"\"\"The ranking service: settings from the environment (environs), read at import.\"\"\"
    from environs import Env
    from fastapi import FastAPI

    env = Env()
    with env.prefixed("RANKER_"):
        MODEL_NAME = env.str("MODEL_NAME", "bge-tiny")
        MAX_BATCH_TOKENS = env.int("MAX_BATCH_TOKENS", 4096)
        WARMUP = env.bool("WARMUP", False)

    app = FastAPI()


    @app.get("/health")
    def health():
        return {"ok": True, "model": MODEL_NAME}


    @app.post("/rank")
    def rank(query: str, docs: list[str]):
        budget = MAX_BATCH_TOKENS
        scored = []
        for d in docs:
            budget -= len(d.split())
            if budget < 0:
                break
            scored.append((len(set(query.split()) & set(d.split())), d))
        return {"ranked": [d for _, d in sorted(scored, reverse=True)]}
    """

START_AND_CHECK = """
    \"\"\"Start the ranking service with uvicorn in a child process, wait for /health, send one
    request, stop it: the smoke test of the deploy script.\"\"\"
    import socket
    import subprocess
    import sys
    import time

    import httpx


    def free_port():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]


    def main():
        port = free_port()
        server = subprocess.Popen([sys.executable, "-m", "uvicorn", "ranker_app:app",
                                   "--host", "127.0.0.1", "--port", str(port),
                                   "--log-level", "warning"])
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(200):
                if server.poll() is not None:
                    sys.exit(f"ranker exited during start-up with status {server.returncode}")
                try:
                    if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            r = httpx.post(f"{url}/rank", params={"query": "gpu memory"},
                           json=["gpu memory limits", "cpu threads", "memory of a gpu"])
            r.raise_for_status()
            print(f"ranked={len(r.json()['ranked'])}")
        finally:
            server.terminate()
            server.wait(10)


    if __name__ == "__main__":
        main()
    """


def environs_ranker_startup(d: Path) -> Incident:
    """The ranking service (FastAPI, settings read with environs at import) is started by a
    smoke-test script in a uvicorn child process. VS Code's terminal exports
    ``RANKER_MAX_BATCH_TOKENS=16k`` (from a README); environs cannot parse it, the app does not
    import and uvicorn exits during start-up. ``RANKER_MODEL_NAME`` differs too and is fine.
    Kind: fail."""
    py = python_with("fastapi", "uvicorn", "httpx", "environs")
    _write(d / "ranker" / "ranker_app.py", SETTINGS_APP)
    app = _write(d / "ranker" / "start_and_check.py", START_AND_CHECK)
    good, bad = _shells(d, {"RANKER_MODEL_NAME": "bge-tiny"},
                        {"RANKER_MODEL_NAME": "bge-tiny-v2", "RANKER_MAX_BATCH_TOKENS": "16k"})
    argv = (py, str(app))
    return _incident(environs_ranker_startup, Launch(argv, good, d / "ranker"),
                     Launch(argv, bad, d / "ranker"), ("env", "RANKER_MAX_BATCH_TOKENS"))


AIOHTTP_SCORE = """
    \"\"\"Score feature rows against a linear model served by aiohttp in this process, in
    batches, as the nightly scoring job does.\"\"\"
    import argparse
    import asyncio
    import random

    from aiohttp import ClientSession, web

    WEIGHTS = [((i * 37) % 11 - 5) / 10 for i in range(256)]


    async def score(request):
        rows = (await request.json())["rows"]
        return web.json_response({"scores": [sum(w * x for w, x in zip(WEIGHTS, r))
                                             for r in rows]})


    async def main(a):
        app = web.Application()
        app.router.add_post("/score", score)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        rnd = random.Random(3)
        rows = [[round(rnd.uniform(-1, 1), 6) for _ in range(256)] for _ in range(1024)]
        total, n = 0.0, 0
        try:
            async with ClientSession(raise_for_status=True) as client:
                for i in range(0, len(rows), a.batch_size):
                    async with client.post(f"http://127.0.0.1:{port}/score",
                                           json={"rows": rows[i:i + a.batch_size]}) as r:
                        scores = (await r.json())["scores"]
                    total += sum(scores)
                    n += len(scores)
                    if (i // a.batch_size) % a.log_every == 0:
                        print(f"batch {i // a.batch_size}: {len(scores)} rows")
        finally:
            await runner.cleanup()
        print(f"rows_scored={n} mean_score={total / n:.5f}")


    if __name__ == "__main__":
        p = argparse.ArgumentParser()
        p.add_argument("--batch-size", type=int, default=128)
        p.add_argument("--log-every", type=int, default=4)
        asyncio.run(main(p.parse_args()))
    """


def aiohttp_batch_too_large(d: Path) -> Incident:
    """The scoring job serves a model with aiohttp and posts feature rows to it in batches. The
    second launch raised ``--batch-size`` from 128 to 512 (and logs less often): a request body
    is now over aiohttp's default ``client_max_size`` of 1 MiB and the server answers 413.
    Kind: fail."""
    py = python_with("aiohttp")
    app = _write(d / "scoring" / "score_job.py", AIOHTTP_SCORE)
    good, bad = _shells(d)
    return _incident(aiohttp_batch_too_large,
                     Launch((py, str(app), "--batch-size", "128", "--log-every", "2"), good,
                            d / "scoring"),
                     Launch((py, str(app), "--batch-size", "512", "--log-every", "8"), bad,
                            d / "scoring"),
                     ("command", "--batch-size"))


# --------------------------------------------------------------------------- data pipelines


def _reviews(n: int = 240) -> str:
    words = ["great", "battery", "slow", "screen", "fine", "broke", "love", "refund", "ok",
             "fast", "cheap", "works"]
    rows = ["id,text,label"]
    for i in range(n):
        k = 1 + (i * 7) % 9
        text = " ".join(words[(i + j * 5) % len(words)] for j in range(k))
        rows.append(f"{i},{text},{i % 2}")
    return "\n".join(rows) + "\n"


BUILD_DATASET = """
    \"\"\"Build the review dataset for fine-tuning: load the CSV with Hugging Face datasets,
    tokenize, drop reviews too short to learn from.\"\"\"
    from datasets import load_dataset

    from prep import MIN_WORDS, keep, tokenize


    def main():
        ds = load_dataset("csv", data_files="data/reviews.csv", split="train")
        ds = ds.map(tokenize)
        ds = ds.filter(keep, fn_kwargs={"min_words": MIN_WORDS})
        tokens = sum(len(t) for t in ds["tokens"])
        print(f"examples={len(ds)} tokens={tokens}")


    if __name__ == "__main__":
        main()
    """

PREP = """
    MIN_WORDS = 3  # shorter reviews carry no signal


    def tokenize(example):
        return {"tokens": example["text"].lower().split()}


    def keep(example, min_words):
        return len(example["tokens"]) >= min_words
    """


def datasets_filter_edit_metric(d: Path) -> Incident:
    """A ``datasets`` pipeline builds the review set; between the runs MIN_WORDS in prep.py was
    raised from 3 to 5 (uncommitted). Both runs finish; fewer examples and tokens. Kind:
    metric."""
    py = python_with("datasets")
    repo = _repo(d / "review-data", {"build_dataset.py": BUILD_DATASET, "prep.py": PREP,
                                     "data/reviews.csv": _reviews()})

    def edit() -> None:
        _write(repo / "prep.py", PREP.replace("MIN_WORDS = 3", "MIN_WORDS = 5"))

    good, bad = _shells(d)
    argv = (py, str(repo / "build_dataset.py"))
    return _incident(datasets_filter_edit_metric, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("git", "review-data: prep.py"), between=edit)


DEDUP_IDS = """
    \"\"\"Give every review a sequential id while tokenizing, then keep one row per id.\"\"\"
    import argparse
    import itertools

    from datasets import load_dataset

    NEXT_ID = itertools.count()


    def assign(example):
        return {"uid": next(NEXT_ID), "n_words": len(example["text"].split())}


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--num-proc", type=int, default=None)
        p.add_argument("--writer-batch-size", type=int, default=1000)
        a = p.parse_args()
        ds = load_dataset("csv", data_files="data/reviews.csv", split="train")
        ds = ds.map(assign, num_proc=a.num_proc, writer_batch_size=a.writer_batch_size)
        by_id = {}
        for uid, n in zip(ds["uid"], ds["n_words"]):
            by_id.setdefault(uid, n)
        print(f"rows={len(ds)} unique_ids={len(by_id)} words={sum(by_id.values())}")


    if __name__ == "__main__":
        main()
    """


def datasets_num_proc_metric(d: Path) -> Incident:
    """The map function numbers rows with a module-level counter. The second run passes
    ``--num-proc 2`` (and a smaller writer batch) to go faster: each worker process counts from
    0, ids repeat and the de-duplicated set shrinks; both exit 0. Kind: metric."""
    py = python_with("datasets")
    _write(d / "dedup" / "dedup_ids.py", DEDUP_IDS)
    _write(d / "dedup" / "data" / "reviews.csv", _reviews())
    good, bad = _shells(d)
    app = str(d / "dedup" / "dedup_ids.py")
    return _incident(datasets_num_proc_metric, Launch((py, app), good, d / "dedup"),
                     Launch((py, app, "--num-proc", "2", "--writer-batch-size", "100"), bad,
                            d / "dedup"),
                     ("command", "--num-proc"))


POLARS_REPORT = """
    \"\"\"Daily latency report: parquet written with pyarrow, aggregated with polars.\"\"\"
    import pyarrow as pa
    import pyarrow.parquet as pq
    import polars as pl


    def main():
        n = 20000
        table = pa.table({"route": [f"/v1/{('chat', 'embed', 'rank')[i % 3]}" for i in range(n)],
                          "ms": [float((i * 7919) % 503) / 3 for i in range(n)]})
        pq.write_table(table, "latency.parquet")
        df = pl.read_parquet("latency.parquet")
        out = df.group_by("route").agg(pl.col("ms").mean().alias("mean_ms"),
                                       pl.col("ms").quantile(0.99).alias("p99_ms")).sort("route")
        for route, mean, p99 in out.iter_rows():
            print(f"{route} mean_ms={mean:.3f} p99_ms={p99:.3f}")


    if __name__ == "__main__":
        main()
    """


def polars_arrow_noise(d: Path) -> Incident:
    """The latency report (pyarrow writes parquet, polars aggregates) from both terminals: the
    JupyterLab one caps ``POLARS_MAX_THREADS`` and uses arrow's system allocator, the VS Code
    one shows more rows in printed frames. Same report. Nothing planted. Kind: noise."""
    py = python_with("polars", "pyarrow")
    app = _write(d / "report" / "latency_report.py", POLARS_REPORT)
    good, bad = _shells(d, {"POLARS_MAX_THREADS": "1", "ARROW_DEFAULT_MEMORY_POOL": "system"},
                        {"POLARS_FMT_MAX_ROWS": "50", "ARROW_IO_THREADS": "4"})
    return _incident(polars_arrow_noise, Launch((py, str(app)), good, d / "report"),
                     Launch((py, str(app)), bad, d / "report"))


def polars_old_project_venv(d: Path) -> Incident:
    """The same report run with the project's own venv (layered on the shared one) that pins
    polars 0.18 for an old notebook: ``DataFrame.group_by`` is called ``groupby`` there and the
    report fails. The first launch used the shared venv's python. Kind: fail."""
    shared = python_with("polars", "pyarrow")
    proj_venv = d / "venv-report"
    py = proj_venv / "bin" / "python"
    if not py.exists():
        subprocess.run([shared, "-m", "venv", "--without-pip", str(proj_venv)], check=True)
        site = subprocess.check_output(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            text=True).strip()
        base = subprocess.check_output(
            [shared, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            text=True).strip()
        (Path(site) / "_shared_venv.pth").write_text(base + "\n")
        res = subprocess.run([shared, "-m", "pip", "install", "-q", "--no-deps", "--target",
                              site, "polars==0.18.15"], capture_output=True, text=True,
                             check=False)
        if res.returncode:
            raise Unavailable("pip could not install polars 0.18.15: " + res.stderr[-200:])
    app = _write(d / "report" / "latency_report.py", POLARS_REPORT)
    good, bad = _shells(d)
    bad = {**bad, "VIRTUAL_ENV": str(proj_venv), "PATH": f"{proj_venv / 'bin'}:{bad['PATH']}"}
    return _incident(polars_old_project_venv, Launch((shared, str(app)), good, d / "report"),
                     Launch((str(py), str(app)), bad, d / "report"),
                     ("packages", "polars"), ("packages", "interpreter"))


def _tokenizer_json(truncation: dict[str, object] | None) -> dict[str, object]:
    words = ["[UNK]", "[PAD]"] + sorted(set(CORPUS_TEXT.replace(".", " .").split()))
    return {"version": "1.0", "truncation": truncation, "padding": None, "added_tokens": [
        {"id": 0, "content": "[UNK]", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True},
        {"id": 1, "content": "[PAD]", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}],
        "normalizer": {"type": "Lowercase"}, "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": None, "decoder": None,
        "model": {"type": "WordLevel", "vocab": {w: i for i, w in enumerate(words)},
                  "unk_token": "[UNK]"}}


COUNT_TOKENS = """
    \"\"\"Token statistics of the eval set with the model folder's tokenizer.json, to size the
    context window.\"\"\"
    import argparse
    import os

    from tokenizers import Tokenizer


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--eval-file", default="data/eval.txt")
        a = p.parse_args()
        tok = Tokenizer.from_file(os.path.join(a.model_path, "tokenizer.json"))
        lines = [l for l in open(a.eval_file, encoding="utf-8").read().splitlines() if l]
        enc = tok.encode_batch(lines)
        lengths = [len(e.ids) for e in enc]
        unk = sum(e.ids.count(0) for e in enc)
        print(f"docs={len(lines)} mean_tokens={sum(lengths) / len(lengths):.2f} "
              f"max_tokens={max(lengths)} unk={unk}")


    if __name__ == "__main__":
        main()
    """


def tokenizer_truncation_metric(d: Path) -> Incident:
    """The model folder's tokenizer.json got ``"truncation": {"max_length": 16, ...}`` between
    the runs (saved from a notebook that called ``enable_truncation``; uncommitted): the token
    counts of the eval set come out smaller, both runs exit 0. Kind: metric."""
    py = python_with("tokenizers")
    sentences = CORPUS_TEXT.split(". ")
    eval_text = "\n".join(". ".join(sentences[i:i + 3]) for i in range(0, len(sentences), 3))
    repo = _repo(d / "ctx-sizing", {
        "count_tokens.py": COUNT_TOKENS, "data/eval.txt": eval_text + "\n",
        "model/config.json": json.dumps(TINY_GPT2, indent=2) + "\n",
        "model/tokenizer.json": json.dumps(_tokenizer_json(None), indent=2) + "\n"})

    def edit() -> None:
        (repo / "model" / "tokenizer.json").write_text(json.dumps(_tokenizer_json(
            {"direction": "Right", "max_length": 16, "strategy": "LongestFirst", "stride": 0}),
            indent=2) + "\n")

    good, bad = _shells(d)
    argv = (py, str(repo / "count_tokens.py"), "--model-path", "model")
    return _incident(tokenizer_truncation_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: file tokenizer.json"),
                     ("git", "ctx-sizing: model/tokenizer.json"), between=edit)


# --------------------------------------------------------------------------- config systems


FIT_JSONARGPARSE = """
    \"\"\"Fit a one-feature linear model by gradient descent; options from the project's
    fit.yaml and the command line (jsonargparse).\"\"\"
    from jsonargparse import ArgumentParser


    def main():
        p = ArgumentParser(prog="fit", env_prefix="FIT", default_config_files=["fit.yaml"])
        p.add_argument("--lr", type=float, default=0.01)
        p.add_argument("--epochs", type=int, default=50)
        p.add_argument("--l2", type=float, default=0.0)
        a = p.parse_args()
        xs = [i / 10 for i in range(40)]
        ys = [3.0 * x + 1.0 for x in xs]
        w = b = 0.0
        for _ in range(a.epochs):
            gw = sum((w * x + b - y) * x for x, y in zip(xs, ys)) / len(xs) + a.l2 * w
            gb = sum((w * x + b - y) for x, y in zip(xs, ys)) / len(xs)
            w, b = w - a.lr * gw, b - a.lr * gb
        mse = sum((w * x + b - y) ** 2 for x, y in zip(xs, ys)) / len(xs)
        print(f"w={w:.4f} b={b:.4f} mse={mse:.5f}")


    if __name__ == "__main__":
        main()
    """


def jsonargparse_default_env_metric(d: Path) -> Incident:
    """Both shells export ``FIT_LR=0.002`` (left by a sweep script months ago; nothing read
    it). VS Code's terminal also has ``JSONARGPARSE_DEFAULT_ENV=true`` (from a LightningCLI
    tutorial): jsonargparse now reads ``FIT_*`` variables over the YAML config, the learning rate
    drops and the fit ends elsewhere (``--epochs`` on the command line still wins); both exit 0.
    Kind: metric."""
    py = python_with("jsonargparse", "yaml")
    _write(d / "fit" / "fit.py", FIT_JSONARGPARSE)
    _write(d / "fit" / "fit.yaml", "lr: 0.05\nepochs: 40\nl2: 0.0\n")
    good, bad = _shells(d, {"FIT_LR": "0.002"},
                        {"FIT_LR": "0.002", "JSONARGPARSE_DEFAULT_ENV": "true"})
    argv = (py, str(d / "fit" / "fit.py"), "--epochs", "60")
    return _incident(jsonargparse_default_env_metric, Launch(argv, good, d / "fit"),
                     Launch(argv, bad, d / "fit"), ("env", "JSONARGPARSE_DEFAULT_ENV"))


GIN_EVAL = """
    \"\"\"Evaluate a checkpoint; hyper-parameters bound with gin.\"\"\"
    import argparse
    import os

    import gin


    @gin.configurable
    def evaluate(checkpoint, max_length=64, temperature=1.0):
        if not os.path.exists(checkpoint):
            raise FileNotFoundError(f"no checkpoint at {checkpoint}")
        return {"checkpoint": checkpoint, "max_length": max_length}


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--gin-file", action="append", default=[])
        p.add_argument("--gin-param", action="append", default=[])
        a = p.parse_args()
        gin.parse_config_files_and_bindings(a.gin_file, a.gin_param)
        print(evaluate())


    if __name__ == "__main__":
        main()
    """

EVAL_GIN = """
    evaluate.checkpoint = 'ckpt/step_2000.pt'
    evaluate.max_length = 128
    evaluate.temperature = 0.7
    """


def gin_binding_both_fail(d: Path) -> Incident:
    """The eval run fails in both: the checkpoint was never copied to this machine. Between the
    runs configs/eval.gin got ``evaluate.num_beams = 4`` (uncommitted; the function has no such
    parameter), so the second run fails earlier, in gin, and never reaches the checkpoint.
    Kind: both-fail."""
    py = python_with("gin")
    repo = _repo(d / "gin-eval", {"eval.py": GIN_EVAL, "configs/eval.gin": EVAL_GIN})

    def edit() -> None:
        _write(repo / "configs" / "eval.gin", EVAL_GIN + "    evaluate.num_beams = 4\n")

    good, bad = _shells(d)
    argv = (py, str(repo / "eval.py"), "--gin-file", "configs/eval.gin")
    return _incident(gin_binding_both_fail, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("git", "gin-eval: configs/eval.gin"), between=edit)


#: The fourth fresh batch, in the order it was written. Never tuned on.
FRESH4 = [
    trainer_grad_accum_metric, trainer_n_positions_edit, trainer_mlflow_stale_run_id,
    trainer_mlflow_noise, pytorch_jit_export_job, grad_sync_edit_metric_job,
    uvicorn_limit_concurrency, environs_ranker_startup, aiohttp_batch_too_large,
    datasets_filter_edit_metric, datasets_num_proc_metric, polars_arrow_noise,
    polars_old_project_venv, tokenizer_truncation_metric, jsonargparse_default_env_metric,
    gin_binding_both_fail,
]

if __name__ == "__main__":  # build incidents and run their launches bare (no runsnap)
    import shlex
    import tempfile

    chosen = [b for b in FRESH4 if b.__name__ in sys.argv[1:]] or FRESH4
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh4-{build.__name__}-"))
        inc = build(folder)
        print("==", inc.name, folder, inc.cause, flush=True)
        for which, launch in (("good", inc.good), ("bad", inc.bad)):
            if which == "bad" and inc.between is not None:
                inc.between()
            argv = list(launch.argv)
            if RANKS_RUNSNAP in argv:  # bare: drop "<runsnap> capture -o ... --"
                at = argv.index(RANKS_RUNSNAP)
                argv = argv[:at] + argv[argv.index("--", at) + 1:]
            res = subprocess.run(argv, env=launch.env, cwd=launch.cwd, capture_output=True,
                                 text=True, check=False, timeout=300)
            tail = res.stdout.strip().splitlines()[-2:] + res.stderr.strip().splitlines()[-2:]
            print(f"  {which}: rc={res.returncode}", shlex.join(argv)[-80:], flush=True)
            for line in tail:
                print("     |", line[:200], flush=True)
