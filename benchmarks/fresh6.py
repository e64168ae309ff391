"""A sixth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``docs/ranking.md``,
``docs/diff.md``) nor its capture and tracing code (``runsnap/launch/``, ``runsnap/tracing/``,
``runsnap/probe/``): only the incident format (benchmarks/incidents.py), how third-party incidents
are written (benchmarks/thirdparty.py, benchmarks/fresh.py, fresh2.py, fresh3.py, fresh4.py), how
they are run and scored (benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot
reference (docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun or
mpirun job captures one snapshot per rank. They form the corpus's ``fresh6`` half; report it,
never change the ranker to fit it, and never change an incident after seeing its score (except to
repair an incident whose bad launch does not fail for the planted reason, said in the commit).

Distributed and engine start-up, on this CPU-only build of torch, the way an engineer hits them,
with mechanisms the earlier batches did not use:

- torchrun gloo jobs compared **job to job** (``torchrun --standalone --nproc-per-node 2
  --no-python runsnap capture -o JOB/{host}-{rank}.toml -- python train.py``, one snapshot per
  rank): ``GLOO_DEVICE_TRANSPORT`` copied from an InfiniBand cluster's script (gloo: "unsupported
  gloo device", the value named nowhere), a ``--global-batch-size`` that does not divide by the
  micro batch times the world size, and ``torch_dtype`` rewritten to bfloat16 in a shared model
  folder (the loss moves);
- ``mpirun`` jobs with mpi4py, also job to job (``mpirun -np 2 runsnap capture -o
  JOB/{host}-{rank}.toml -- python ...``): ``OMPI_MCA_btl=self`` copied from a unit-test script
  (MPI_INIT fails: the ranks cannot reach each other), a data shard re-exported without being
  committed (the mean moves), and the same job from both shells with their ``OMPI_MCA_*`` and
  ``UCX_*`` tuning (noise);
- the c10d TCPStore outside a launcher: a ``MASTER_PORT`` with one digit too many (the error
  quotes it), an engine whose HTTP ``--port`` is the port its tensor-parallel workers rendezvous
  on (``init_method="tcp://..."``: EADDRINUSE), a model folder whose ``num_key_value_heads`` no
  longer divides by the TP size while its weights were never downloaded (both fail), and the
  same evaluation with another port and the older TCPStore back end (noise);
- torch settings the CPU build does read: ``ATEN_CPU_CAPABILITY=default`` (read at the first
  kernel dispatch: other vector kernels, the score moves in its last digits) and a
  ``torch.compile`` mode, taken from an engine variable, with one letter missing (the error
  quotes it);
- DataLoader workers: an IterableDataset whose per-worker split was "simplified" away in an
  uncommitted edit (every sample seen twice), and a loader config in git edited to
  ``num_workers: 0`` beside ``persistent_workers`` (DataLoader refuses);
- another numpy: the project's venv (numpy 1.26, layered on the shared one) first on ``PATH`` in
  one shell, the shared venv (numpy 2) in the other; ``np.float_`` is gone in numpy 2.

The shells are :func:`hpc_shell`: user gus on a university HPC cluster, one shell an SSH login on a
bare-metal node with Lmod modules loaded, the other an Apptainer container shell on the same
node; each with the tuning variables its job scripts export (``NCCL_*``, ``UCX_*``,
``OMPI_MCA_*``, ``TORCH_*``, ``PYTORCH_CUDA_ALLOC_CONF``) that change nothing here; the thread
counts that change float reductions are pinned alike.

Kinds: ``fail`` (the good run exits 0, the bad one fails), ``metric`` (both exit 0 and only a
printed ``key=value`` metric differs), ``both-fail`` (both fail, differently), ``noise`` (nothing
planted: success is "nothing counts"). Job incidents (``*_job``) use
:data:`benchmarks.incidents.RANKS_RUNSNAP` and :data:`benchmarks.incidents.RANKS_FOLDER`.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from benchmarks.incidents import RANKS_FOLDER, RANKS_RUNSNAP, Incident, Launch, _git, _write
from benchmarks.thirdparty import Unavailable, _incident, python_with


def hpc_shell(n: int, home: Path) -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1) of user gus on a university HPC cluster: 0 an SSH
    login on a bare-metal node with Lmod modules loaded, 1 an Apptainer shell into the group's
    PyTorch image on the same node; each with the tuning variables its own job scripts export."""
    tuning = [
        {"NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_SOCKET_IFNAME": "ib0", "NCCL_DEBUG": "WARN",
         "UCX_NET_DEVICES": "mlx5_0:1", "UCX_TLS": "rc,sm,self",
         "OMPI_MCA_btl_openib_allow_ib": "1", "OMPI_MCA_mpi_warn_on_fork": "0",
         "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "TORCH_CPP_LOG_LEVEL": "ERROR",
         "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
        {"NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_DISABLE": "1", "NCCL_DEBUG": "INFO",
         "UCX_TLS": "tcp,sm,self", "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
         "OMPI_MCA_hwloc_base_binding_policy": "none", "TORCH_NCCL_BLOCKING_WAIT": "1",
         "TORCH_CPP_LOG_LEVEL": "WARNING", "TORCH_SHOW_CPP_STACKTRACES": "1",
         "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:256", "CUDA_MODULE_LOADING": "LAZY"},
    ][n % 2]
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home), "USER": "gus", "LOGNAME": "gus", "LANG": "en_US.UTF-8",
        "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        **tuning,
    }
    if n % 2 == 0:  # SSH login, Lmod modules loaded
        env.update({
            "SHELL": "/bin/bash", "TERM": "xterm-256color", "SHLVL": "1", "OLDPWD": str(home),
            "SSH_CLIENT": "172.16.40.18 52144 22",
            "SSH_CONNECTION": "172.16.40.18 52144 172.16.8.31 22", "SSH_TTY": "/dev/pts/2",
            "XDG_SESSION_ID": "3381", "XDG_RUNTIME_DIR": "/run/user/20417", "MAIL": "/var/mail/gus",
            "MODULEPATH": "/sw/modulefiles/Core:/sw/modulefiles/linux-x86_64",
            "LOADEDMODULES": "gcc/12.3.0:openmpi/4.1.4:cuda/12.4.1:python/3.11.7",
            "_LMFILES_": "/sw/modulefiles/Core/gcc/12.3.0.lua:/sw/modulefiles/Core/openmpi/"
                         "4.1.4.lua:/sw/modulefiles/Core/cuda/12.4.1.lua",
            "LMOD_CMD": "/sw/lmod/lmod/libexec/lmod", "LMOD_VERSION": "8.7.37",
            "MPI_HOME": "/sw/openmpi/4.1.4", "CUDA_HOME": "/sw/cuda/12.4.1",
            "SCRATCH": "/scratch/gus", "HISTCONTROL": "ignoredups", "_": "/usr/bin/ssh-agent",
        })
    else:  # apptainer shell --nv pytorch_24.11.sif
        env.update({
            "SHELL": "/bin/sh", "TERM": "xterm-256color", "SHLVL": "2",
            "OLDPWD": "/scratch/gus/containers",
            "APPTAINER_CONTAINER": "/scratch/gus/containers/pytorch_24.11.sif",
            "APPTAINER_NAME": "pytorch_24.11.sif",
            "APPTAINER_ENVIRONMENT": "/.singularity.d/env/91-environment.sh",
            "APPTAINER_BIND": "/scratch,/sw",
            "SINGULARITY_CONTAINER": "/scratch/gus/containers/pytorch_24.11.sif",
            "SINGULARITY_NAME": "pytorch_24.11.sif", "PS1": "Apptainer> ",
            "NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
            "PYTORCH_BUILD_VERSION": "2.6.0a0+df5bbc0", "NVIDIA_PYTORCH_VERSION": "24.11",
            "CUDA_DRIVER_VERSION": "560.35.03", "NCCL_VERSION": "2.23.4",
            "_": "/usr/bin/apptainer",
        })
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None
            ) -> tuple[dict[str, str], dict[str, str]]:
    home = d / "home"
    home.mkdir(parents=True, exist_ok=True)
    return {**hpc_shell(0, home), **(good or {})}, {**hpc_shell(1, home), **(bad or {})}


def _repo(path: Path, files: dict[str, str]) -> Path:
    """A git repository holding ``files``, all committed."""
    for name, text in files.items():
        _write(path / name, text)
    _git(path, "init", "-q")
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "start of the project")
    return path


def _free_port() -> int:
    """A TCP port nothing listens on now (the kernel's choice), so that incidents run beside
    other jobs on this machine never meet on 29500."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _torchrun_job(py: str, script: Path, *args: str) -> tuple[str, ...]:
    """A torchrun job of two ranks, each captured by runsnap into the job's folder."""
    runner = Path(py).parent / "torchrun"
    if not runner.exists():
        raise Unavailable(f"no torchrun beside {py}")
    return (str(runner), "--standalone", "--nproc-per-node", "2", "--no-python", RANKS_RUNSNAP,
            "capture", "-o", f"{RANKS_FOLDER}/{{host}}-{{rank}}.toml", "--", py, str(script),
            *args)


def _mpirun_job(py: str, script: Path, *args: str) -> tuple[str, ...]:
    """An Open MPI job of two ranks on this node, each captured by runsnap into the job's
    folder (``--allow-run-as-root``: the container runs as root here)."""
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise Unavailable("no mpirun on PATH")
    return (mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", RANKS_RUNSNAP,
            "capture", "-o", f"{RANKS_FOLDER}/{{host}}-{{rank}}.toml", "--", py, str(script),
            *args)


# --------------------------------------------------------------------------- torchrun jobs


ALLGATHER_WARMUP = """
    \"\"\"Warm-up of a data-parallel job: join the gloo group, all-gather each rank's shard
    sizes, all-reduce a checksum of the initial weights, and say the group is healthy.\"\"\"
    import datetime

    import torch
    import torch.distributed as dist


    def main():
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
        rank, world = dist.get_rank(), dist.get_world_size()
        sizes = [torch.zeros(1, dtype=torch.long) for _ in range(world)]
        dist.all_gather(sizes, torch.tensor([1000 + 10 * rank]))
        torch.manual_seed(0)
        weights = torch.nn.Linear(64, 64).weight.detach()
        checksum = weights.sum().reshape(1)
        dist.all_reduce(checksum)
        if rank == 0:
            print(f"world_size={world} shard_rows={sum(int(s) for s in sizes)} "
                  f"weight_checksum={checksum.item() / world:.5f}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """


def gloo_device_transport_job(d: Path) -> Incident:
    """Job against job. The Apptainer shell exports GLOO_DEVICE_TRANSPORT=IBVERBS beside its
    NCCL_* and UCX_* settings, copied from the InfiniBand partition's job script; torch's gloo
    has no such device and every rank stops in init_process_group with "makeDeviceForHostname():
    unsupported gloo device", the variable named nowhere. Kind: fail."""
    py = python_with("torch")
    app = _write(d / "warmup" / "warmup.py", ALLGATHER_WARMUP)
    good, bad = _shells(d, {}, {"GLOO_DEVICE_TRANSPORT": "IBVERBS"})
    argv = _torchrun_job(py, app)
    return _incident(gloo_device_transport_job, Launch(argv, good, app.parent),
                     Launch(argv, bad, app.parent), ("env", "GLOO_DEVICE_TRANSPORT"))


PRETRAIN = """
    \"\"\"Pre-train a tiny LM with DDP over gloo: micro batches accumulated up to the global
    batch, the model's shape and dtype from the model folder's config.json.\"\"\"
    import argparse
    import json
    import os

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP


    class TinyLM(torch.nn.Module):
        def __init__(self, cfg):
            super().__init__()
            h = cfg["hidden_size"]
            self.embed = torch.nn.Embedding(cfg["vocab_size"], h)
            self.blocks = torch.nn.Sequential(*(torch.nn.Sequential(
                torch.nn.LayerNorm(h), torch.nn.Linear(h, cfg["intermediate_size"]),
                torch.nn.GELU(), torch.nn.Linear(cfg["intermediate_size"], h))
                for _ in range(cfg["num_hidden_layers"])))
            self.head = torch.nn.Linear(h, cfg["vocab_size"])

        def forward(self, ids):
            return self.head(self.blocks(self.embed(ids)))


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--global-batch-size", type=int, default=32)
        p.add_argument("--micro-batch-size", type=int, default=4)
        p.add_argument("--steps", type=int, default=3)
        a = p.parse_args()
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        if a.global_batch_size % (a.micro_batch_size * world):
            raise ValueError(f"global batch size {a.global_batch_size} is not divisible by "
                             f"micro batch size {a.micro_batch_size} times data parallel "
                             f"size {world}")
        accum = a.global_batch_size // (a.micro_batch_size * world)
        with open(os.path.join(a.model_path, "config.json")) as f:
            cfg = json.load(f)
        low = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(cfg["torch_dtype"])
        torch.manual_seed(0)
        model = DDP(TinyLM(cfg))
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        g = torch.Generator().manual_seed(1234 + rank)
        for step in range(a.steps):
            opt.zero_grad()
            total = 0.0
            for _ in range(accum):
                ids = torch.randint(0, cfg["vocab_size"], (a.micro_batch_size, 16), generator=g)
                with torch.autocast("cpu", dtype=low or torch.bfloat16, enabled=low is not None):
                    logits = model(ids[:, :-1])
                loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1),
                                                         ids[:, 1:].flatten()) / accum
                loss.backward()
                total += loss.item()
            opt.step()
        done = torch.tensor([total])
        dist.all_reduce(done)
        if rank == 0:
            print(f"steps={a.steps} accum={accum} train_loss={done.item() / world:.6f}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

TINY_LM = {"architectures": ["TinyLMForCausalLM"], "model_type": "tiny-lm", "vocab_size": 128,
           "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
           "max_position_embeddings": 64, "torch_dtype": "float32"}


def _pretrain_project(d: Path) -> tuple[Path, Path]:
    """The pre-training repository and the model folder beside it (not under git)."""
    repo = _repo(d / "tinylm-pretrain", {"pretrain.py": PRETRAIN,
                                         "README.md": "Pre-training for the tiny LM.\n"})
    model = d / "models" / "tinylm-40k"
    _write(model / "config.json", json.dumps(TINY_LM, indent=2) + "\n")
    return repo, model


def global_batch_option_job(d: Path) -> Incident:
    """Job against job. The second job is started with --global-batch-size 36 (from a
    four-rank script) instead of 32; with micro batch 4 and two ranks it does not divide and
    both ranks stop at start-up with an error that quotes 36. Kind: fail."""
    py = python_with("torch")
    repo, model = _pretrain_project(d)
    good, bad = _shells(d)
    base = ("--model-path", str(model), "--micro-batch-size", "4", "--steps", "2")
    return _incident(global_batch_option_job,
                     Launch(_torchrun_job(py, repo / "pretrain.py", *base,
                                          "--global-batch-size", "32"), good, repo),
                     Launch(_torchrun_job(py, repo / "pretrain.py", *base,
                                          "--global-batch-size", "36"), bad, repo),
                     ("command", "--global-batch-size"))


def model_dtype_edit_metric_job(d: Path) -> Incident:
    """Job against job. Between the jobs a colleague converting the checkpoint for serving
    rewrote torch_dtype to "bfloat16" in the shared model folder's config.json; the training
    code autocasts to it, both jobs finish and the train loss differs. Kind: metric."""
    py = python_with("torch")
    repo, model = _pretrain_project(d)

    def edit() -> None:
        (model / "config.json").write_text(
            json.dumps({**TINY_LM, "torch_dtype": "bfloat16"}, indent=2) + "\n")

    good, bad = _shells(d)
    argv = _torchrun_job(py, repo / "pretrain.py", "--model-path", str(model),
                         "--global-batch-size", "16", "--steps", "3")
    return _incident(model_dtype_edit_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: torch_dtype"),
                     between=edit)


# --------------------------------------------------------------------------- mpirun jobs


MPI_STATS = """
    \"\"\"Per-rank latency statistics over the shards of a request log, reduced with MPI.\"\"\"
    import argparse
    import csv

    from mpi4py import MPI


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--shards", default="data/part-{rank}.csv")
        a = p.parse_args()
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        settings = comm.bcast({"column": "latency_ms"} if rank == 0 else None, root=0)
        with open(a.shards.format(rank=rank)) as f:
            values = [float(r[settings["column"]]) for r in csv.DictReader(f)]
        count = comm.allreduce(len(values), op=MPI.SUM)
        total = comm.allreduce(sum(values), op=MPI.SUM)
        worst = comm.allreduce(max(values), op=MPI.MAX)
        if rank == 0:
            print(f"ranks={comm.Get_size()} requests={count} "
                  f"mean_latency_ms={total / count:.3f} max_latency_ms={worst:.1f}")


    if __name__ == "__main__":
        main()
    """


def _shard(rank: int, rows: int = 120, slow_every: int = 0) -> str:
    lines = ["request_id,latency_ms"]
    for i in range(rows):
        ms = 20 + (i * 7 + rank * 3) % 41
        if slow_every and i % slow_every == 0:
            ms *= 10
        lines.append(f"{rank * 1000 + i},{ms}")
    return "\n".join(lines) + "\n"


def _stats_repo(d: Path) -> Path:
    return _repo(d / "latency-stats", {"stats.py": MPI_STATS, "data/part-0.csv": _shard(0),
                                       "data/part-1.csv": _shard(1)})


def _mpi_python() -> str:
    py = python_with("mpi4py")
    if shutil.which("mpirun") is None:
        raise Unavailable("no mpirun on PATH")
    return py


def mpi_btl_self_job(d: Path) -> Incident:
    """Job against job under mpirun. The Apptainer shell exports OMPI_MCA_btl=self, copied
    from the script that runs the one-rank unit tests ("keep them off the network"); with two
    ranks, neither can reach the other and MPI_INIT fails ("at least one MPI process is
    unreachable from another"). Both shells carry other OMPI_MCA_* and UCX_* tuning. Kind:
    fail."""
    py = _mpi_python()
    repo = _stats_repo(d)
    good, bad = _shells(d, {}, {"OMPI_MCA_btl": "self"})
    argv = _mpirun_job(py, repo / "stats.py")
    return _incident(mpi_btl_self_job, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("env", "OMPI_MCA_btl"))


def mpi_shard_edit_metric_job(d: Path) -> Incident:
    """Job against job under mpirun. Between the jobs data/part-1.csv was re-exported from the
    log store (with the retried requests, ten times slower, left in) and not committed; both
    jobs finish and the mean and max latency move. Kind: metric."""
    py = _mpi_python()
    repo = _stats_repo(d)

    def edit() -> None:
        (repo / "data" / "part-1.csv").write_text(_shard(1, slow_every=15))

    good, bad = _shells(d)
    argv = _mpirun_job(py, repo / "stats.py")
    return _incident(mpi_shard_edit_metric_job, Launch(argv, good, repo), Launch(argv, bad, repo),
                     ("git", "latency-stats: data/part-1.csv"), between=edit)


def mpi_job_noise(d: Path) -> Incident:
    """Job against job under mpirun, the same code and data, from the SSH login and from the
    Apptainer shell: each job has its own Open MPI job id, ranks and process ids, and the
    shells their own OMPI_MCA_*, UCX_* and NCCL_* tuning. Nothing planted. Kind: noise."""
    py = _mpi_python()
    repo = _stats_repo(d)
    good, bad = _shells(d)
    argv = _mpirun_job(py, repo / "stats.py")
    return _incident(mpi_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- c10d store, engines


EVAL_GROUP = """
    \"\"\"Evaluate a checkpoint in a process group of one (env:// rendezvous, so that the same
    code runs under a launcher); the metric code all-reduces its counts.\"\"\"
    import datetime

    import torch
    import torch.distributed as dist


    def main():
        dist.init_process_group("gloo", init_method="env://", rank=0, world_size=1,
                                timeout=datetime.timedelta(seconds=20))
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(24, 48), torch.nn.ReLU(),
                                    torch.nn.Linear(48, 3))
        x = torch.randn(512, 24)
        y = (x[:, 0] > 0).long() + (x[:, 1] > 1).long()
        with torch.no_grad():
            hits = (model(x).argmax(-1) == y).sum().float().reshape(1)
        dist.all_reduce(hits)
        print(f"eval_examples=512 eval_accuracy={hits.item() / 512:.4f}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """


def master_port_digit_too_many(d: Path) -> Incident:
    """A one-process evaluation with env:// rendezvous, MASTER_ADDR and MASTER_PORT from the
    shell. In the Apptainer shell MASTER_PORT was typed with one digit too many; the TCPStore
    refuses it: "port must have value from 0 to 65535 but was ...", quoting it. Kind: fail."""
    py = python_with("torch")
    app = _write(d / "eval" / "evaluate.py", EVAL_GROUP)
    port = _free_port()
    good, bad = _shells(d, {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)},
                        {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": f"{port}1"})
    argv = (py, str(app))
    return _incident(master_port_digit_too_many, Launch(argv, good, app.parent),
                     Launch(argv, bad, app.parent), ("env", "MASTER_PORT"))


def store_backend_noise(d: Path) -> Incident:
    """The same one-process evaluation from both shells, each with its own MASTER_PORT; the
    Apptainer shell also exports TORCH_TCPSTORE_USE_LIBUV=0 (the older TCPStore back end, kept
    from a workaround) and TORCH_DISTRIBUTED_DEBUG=INFO. Same accuracy. Nothing planted. Kind:
    noise."""
    py = python_with("torch")
    app = _write(d / "eval" / "evaluate.py", EVAL_GROUP)
    good, bad = _shells(d, {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port())},
                        {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()),
                         "TORCH_TCPSTORE_USE_LIBUV": "0", "TORCH_DISTRIBUTED_DEBUG": "INFO"})
    argv = (py, str(app))
    return _incident(store_backend_noise, Launch(argv, good, app.parent),
                     Launch(argv, bad, app.parent))


TP_ENGINE = """
    \"\"\"Start a small tensor-parallel inference engine: bind the HTTP front end, then start one
    worker per TP rank (torch.multiprocessing.spawn); the workers join a gloo group at
    --dist-init-addr, check the model's shape against the TP size, load their weight shard and
    run a warm-up all-reduce.\"\"\"
    import argparse
    import datetime
    import json
    import os
    import socket

    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp


    def tp_worker(rank, args, cfg):
        dist.init_process_group("gloo", init_method=f"tcp://{args.dist_init_addr}", rank=rank,
                                world_size=args.tp_size, timeout=datetime.timedelta(seconds=20))
        kv_heads = cfg["num_key_value_heads"]
        if kv_heads % args.tp_size:
            raise ValueError(f"num_key_value_heads ({kv_heads}) must be divisible by the "
                             f"tensor parallel size ({args.tp_size})")
        weights = os.path.join(args.model_path, "pytorch_model.bin")
        if not os.path.exists(weights):
            raise FileNotFoundError(f"no weights in {args.model_path}: expected "
                                    "pytorch_model.bin (is the download finished?)")
        state = torch.load(weights, weights_only=True)
        shard = state["proj.weight"].chunk(args.tp_size, dim=0)[rank]
        partial = (shard @ torch.ones(shard.shape[1])).sum().reshape(1)
        dist.all_reduce(partial)
        if rank == 0:
            print(f"tp_size={args.tp_size} warmup_sum={partial.item():.4f}")
        dist.destroy_process_group()


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        p.add_argument("--tp-size", type=int, default=2)
        p.add_argument("--host", default="127.0.0.1")
        p.add_argument("--port", type=int, default=30000)
        p.add_argument("--dist-init-addr", required=True)
        args = p.parse_args()
        with open(os.path.join(args.model_path, "config.json")) as f:
            cfg = json.load(f)
        front = socket.socket()
        front.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        front.bind((args.host, args.port))
        front.listen()
        mp.spawn(tp_worker, args=(args, cfg), nprocs=args.tp_size)
        print(f"engine ready on http://{args.host}:{args.port}")
        front.close()


    if __name__ == "__main__":
        main()
    """

TP_CONFIG = {"architectures": ["TinyForCausalLM"], "model_type": "tiny", "hidden_size": 32,
             "num_attention_heads": 8, "num_key_value_heads": 4, "vocab_size": 256,
             "torch_dtype": "float32"}

SAVE_WEIGHTS = """
import sys, torch
torch.manual_seed(0)
torch.save({"proj.weight": torch.randn(32, 32)}, sys.argv[1])
"""


def engine_port_is_rendezvous_port(d: Path) -> Incident:
    """A tensor-parallel engine binds its HTTP --port, then its two TP workers rendezvous at
    --dist-init-addr (tcp://). The second launch took --port from another node's script, where
    it happens to be the port this node's rendezvous uses: rank 0's TCPStore cannot listen
    ("EADDRINUSE", with the port number), and mp.spawn reports the worker's traceback. Kind:
    fail."""
    py = python_with("torch")
    model = d / "models" / "tiny-tp"
    _write(model / "config.json", json.dumps(TP_CONFIG, indent=2) + "\n")
    if not (model / "pytorch_model.bin").exists():
        subprocess.run([py, "-c", SAVE_WEIGHTS, str(model / "pytorch_model.bin")], check=True,
                       capture_output=True)
    app = _write(d / "engine" / "serve.py", TP_ENGINE)
    http, rdzv = _free_port(), _free_port()
    good, bad = _shells(d)
    base = (py, str(app), "--model-path", str(model), "--tp-size", "2",
            "--dist-init-addr", f"127.0.0.1:{rdzv}")
    return _incident(engine_port_is_rendezvous_port,
                     Launch((*base, "--port", str(http)), good, app.parent),
                     Launch((*base, "--port", str(rdzv)), bad, app.parent),
                     ("command", "--port"))


def engine_kv_heads_both_fail(d: Path) -> Incident:
    """Both launches fail: the model folder holds only config.json (the weights' download never
    finished), so the first stops in its TP workers at "no weights in ...". Between the
    launches someone edited num_key_value_heads from 4 to 3 in that config.json (trying a
    grouped-query variant); the second stops earlier, at the check against the TP size. Kind:
    both-fail."""
    py = python_with("torch")
    model = d / "models" / "tiny-gqa"
    _write(model / "config.json", json.dumps(TP_CONFIG, indent=2) + "\n")
    app = _write(d / "engine" / "serve.py", TP_ENGINE)

    def edit() -> None:
        (model / "config.json").write_text(
            json.dumps({**TP_CONFIG, "num_key_value_heads": 3}, indent=2) + "\n")

    good, bad = _shells(d)
    argv = (py, str(app), "--model-path", str(model), "--tp-size", "2",
            "--port", str(_free_port()), "--dist-init-addr", f"127.0.0.1:{_free_port()}")
    return _incident(engine_kv_heads_both_fail, Launch(argv, good, app.parent),
                     Launch(argv, bad, app.parent),
                     ("models", "--model-path: num_key_value_heads"), between=edit)


# --------------------------------------------------------------------------- torch settings


SCORE_RERANKER = """
    \"\"\"Score 2048 queries against 512 candidate passages with a small projection and report
    the score statistics the calibration step uses.\"\"\"
    import torch


    def main():
        torch.manual_seed(0)
        queries = torch.randn(2048, 256)
        passages = torch.randn(256, 512) / 16
        logits = queries @ passages
        top = logits.softmax(-1).max(-1).values
        print(f"scored_pairs={logits.numel()} mean_logit={logits.mean().item():.10f} "
              f"partition={logits.exp().sum().item():.3f} mean_top_prob={top.mean().item():.6f}")


    if __name__ == "__main__":
        main()
    """


def aten_cpu_capability_metric(d: Path) -> Incident:
    """A CPU reranking run prints its score statistics. The Apptainer shell still exports
    ATEN_CPU_CAPABILITY=default (set while chasing an illegal-instruction crash on an old node);
    torch reads it at the first kernel dispatch and runs its plain kernels instead of the vector
    ones: both runs finish, and the summed statistics differ in their last digits. Kind:
    metric."""
    py = python_with("torch")
    app = _write(d / "rerank" / "score.py", SCORE_RERANKER)
    good, bad = _shells(d, {}, {"ATEN_CPU_CAPABILITY": "default"})
    argv = (py, str(app))
    return _incident(aten_cpu_capability_metric, Launch(argv, good, app.parent),
                     Launch(argv, bad, app.parent), ("env", "ATEN_CPU_CAPABILITY"))


COMPILE_ENGINE = """
    \"\"\"Engine start-up: build the model, wrap it with torch.compile in the mode the engine's
    settings give, and answer one warm-up request.\"\"\"
    import argparse
    import os

    import torch

    COMPILE_MODE = os.environ.get("ENGINE_TORCH_COMPILE_MODE", "default")


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--enable-torch-compile", action="store_true")
        p.add_argument("--max-batch-size", type=int, default=8)
        a = p.parse_args()
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh()).eval()
        if a.enable_torch_compile:
            model = torch.compile(model, mode=COMPILE_MODE, dynamic=False)
        print(f"engine_ready max_batch_size={a.max_batch_size}")


    if __name__ == "__main__":
        main()
    """


def compile_mode_typo(d: Path) -> Incident:
    """An engine started with --enable-torch-compile takes the mode from
    ENGINE_TORCH_COMPILE_MODE; the SSH login's job script exports max-autotune-no-cudagraphs,
    the Apptainer one max-autotune-no-cudagraph (the last letter lost in a copy), which
    torch.compile refuses at start-up, quoting it. Kind: fail."""
    py = python_with("torch")
    app = _write(d / "engine" / "start.py", COMPILE_ENGINE)
    good, bad = _shells(d, {"ENGINE_TORCH_COMPILE_MODE": "max-autotune-no-cudagraphs"},
                        {"ENGINE_TORCH_COMPILE_MODE": "max-autotune-no-cudagraph"})
    argv = (py, str(app), "--enable-torch-compile", "--max-batch-size", "8")
    return _incident(compile_mode_typo, Launch(argv, good, app.parent),
                     Launch(argv, bad, app.parent), ("env", "ENGINE_TORCH_COMPILE_MODE"))


# --------------------------------------------------------------------------- DataLoader workers


STREAMING = """
    import torch
    from torch.utils.data import IterableDataset, get_worker_info


    class TokenStream(IterableDataset):
        \"\"\"Token ids of a text file, one sample a line; each loader worker reads its own
        lines.\"\"\"

        def __init__(self, path, vocab=97):
            self.path, self.vocab = path, vocab

        def __iter__(self):
            info = get_worker_info()
            worker, workers = (info.id, info.num_workers) if info else (0, 1)
            with open(self.path) as f:
                for i, line in enumerate(f):
                    if i % workers != worker:
                        continue
                    ids = [sum(map(ord, w)) % self.vocab for w in line.split()][:8]
                    yield torch.tensor(ids + [0] * (8 - len(ids)))
    """

STREAM_TRAIN = """
    \"\"\"One epoch over a streamed text file with loader workers.\"\"\"
    import argparse

    import torch
    from torch.utils.data import DataLoader

    from streaming import TokenStream


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--num-workers", type=int, default=2)
        a = p.parse_args()
        torch.manual_seed(0)
        model = torch.nn.EmbeddingBag(97, 16)
        head = torch.nn.Linear(16, 97)
        opt = torch.optim.SGD([*model.parameters(), *head.parameters()], lr=0.1)
        seen = 0
        for batch in DataLoader(TokenStream("data/lines.txt"), batch_size=16,
                                num_workers=a.num_workers):
            loss = torch.nn.functional.cross_entropy(head(model(batch[:, :-1])), batch[:, -1])
            opt.zero_grad()
            loss.backward()
            opt.step()
            seen += batch.shape[0]
        print(f"samples_seen={seen} last_loss={loss.item():.4f}")


    if __name__ == "__main__":
        main()
    """


def iterable_worker_split_edit_metric(d: Path) -> Incident:
    """A training loop over an IterableDataset with two loader workers. Between the runs the
    per-worker split in streaming.py was "simplified" away (uncommitted: "the sampler does
    that"; an IterableDataset has none): each worker streams the whole file, every sample is
    seen twice, and samples_seen and the loss differ. Kind: metric."""
    py = python_with("torch")
    lines = "".join(f"request {i} asks for {i % 17} tokens of model {i % 5} batch {i % 3}\n"
                    for i in range(160))
    repo = _repo(d / "stream-train", {"train.py": STREAM_TRAIN, "streaming.py": STREAMING,
                                      "data/lines.txt": lines})

    def edit() -> None:
        _write(repo / "streaming.py", STREAMING.replace(
            "                    if i % workers != worker:\n"
            "                        continue\n", ""))

    good, bad = _shells(d)
    argv = (py, "train.py", "--num-workers", "2")
    return _incident(iterable_worker_split_edit_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "stream-train: streaming.py"),
                     between=edit)


LOADER_TRAIN = """
    \"\"\"Train a small classifier; the DataLoader's settings come from configs/loader.json.\"\"\"
    import json

    import torch
    from torch.utils.data import DataLoader, TensorDataset


    def main():
        with open("configs/loader.json") as f:
            loader_cfg = json.load(f)
        torch.manual_seed(0)
        x = torch.randn(256, 12)
        y = (x.sum(-1) > 0).long()
        loader = DataLoader(TensorDataset(x, y), shuffle=False, **loader_cfg)
        model = torch.nn.Linear(12, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.2)
        for epoch in range(2):
            for xb, yb in loader:
                loss = torch.nn.functional.cross_entropy(model(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
        print(f"epochs=2 loss={loss.item():.4f}")


    if __name__ == "__main__":
        main()
    """

LOADER_JSON = {"batch_size": 32, "num_workers": 2, "persistent_workers": True,
               "prefetch_factor": 2, "drop_last": True}


def loader_config_num_workers_edit(d: Path) -> Incident:
    """configs/loader.json (in git) was edited to num_workers 0 to step through the loader in
    a debugger and left so; persistent_workers and prefetch_factor stay, and DataLoader refuses
    them without workers before the first batch. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "cls-train", {"train.py": LOADER_TRAIN,
                                   "configs/loader.json": json.dumps(LOADER_JSON, indent=2)
                                   + "\n"})

    def edit() -> None:
        (repo / "configs" / "loader.json").write_text(
            json.dumps({**LOADER_JSON, "num_workers": 0}, indent=2) + "\n")

    good, bad = _shells(d)
    argv = (py, "train.py")
    return _incident(loader_config_num_workers_edit, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "cls-train: configs/loader.json"),
                     between=edit)


# --------------------------------------------------------------------------- another numpy


ROPE_WARMUP = """
    \"\"\"Engine start-up: precompute the rotary position table with numpy, hand it to torch and
    check one rotated query.\"\"\"
    import numpy as np
    import torch


    def rope_table(dim=32, positions=256, theta=10000.0):
        inv_freq = 1.0 / theta ** (np.arange(0, dim, 2, dtype=np.float_) / dim)
        angles = np.outer(np.arange(positions, dtype=np.float_), inv_freq)
        return torch.from_numpy(np.cos(angles)).float(), torch.from_numpy(np.sin(angles)).float()


    def main():
        cos, sin = rope_table()
        torch.manual_seed(0)
        q = torch.randn(256, 16)
        rotated = q * cos - q.flip(-1) * sin
        print(f"numpy={np.__version__} rope_check={rotated.norm().item():.4f}")


    if __name__ == "__main__":
        main()
    """


def numpy_two_on_path(d: Path) -> Incident:
    """Both launches run ``python rope_warmup.py``; PATH decides which. The SSH login has the
    project's venv first (layered on the shared one, numpy 1.26 pinned for this code); the
    Apptainer shell has the shared venv first, with numpy 2, where ``np.float_`` is gone:
    "AttributeError: `np.float_` was removed in the NumPy 2.0 release". Kind: fail."""
    shared = python_with("torch", "numpy")
    proj_venv = d / "venv-engine"
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
                              site, "numpy==1.26.4"], capture_output=True, text=True,
                             check=False)
        if res.returncode:
            raise Unavailable("pip could not install numpy 1.26.4: " + res.stderr[-200:])
    app = _write(d / "engine" / "rope_warmup.py", ROPE_WARMUP)
    good, bad = _shells(d)
    good = {**good, "VIRTUAL_ENV": str(proj_venv), "PATH": f"{proj_venv / 'bin'}:{good['PATH']}"}
    shared_bin = Path(shared).parent
    bad = {**bad, "VIRTUAL_ENV": str(shared_bin.parent), "PATH": f"{shared_bin}:{bad['PATH']}"}
    argv = ("python", str(app))
    return _incident(numpy_two_on_path, Launch(argv, good, app.parent),
                     Launch(argv, bad, app.parent),
                     ("packages", "numpy"), ("packages", "interpreter"))


#: The sixth fresh batch, in the order it was written. Never tuned on.
FRESH6 = [
    gloo_device_transport_job, global_batch_option_job, model_dtype_edit_metric_job,
    mpi_btl_self_job, mpi_shard_edit_metric_job, mpi_job_noise, master_port_digit_too_many,
    store_backend_noise, engine_port_is_rendezvous_port, engine_kv_heads_both_fail,
    aten_cpu_capability_metric, compile_mode_typo, iterable_worker_split_edit_metric,
    loader_config_num_workers_edit, numpy_two_on_path,
]

if __name__ == "__main__":  # build one incident and print its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH6 if b.__name__ in sys.argv[1:]] or FRESH6
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh6-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
