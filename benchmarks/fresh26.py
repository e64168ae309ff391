"""A twenty-sixth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh22.py, for their format), how they are run and scored
(benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot reference
(docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun job captures
one snapshot per rank. They form the corpus's ``fresh26`` half; report it, never change the
ranker to fit it, and never change an incident after seeing its score (except to repair an
incident whose bad launch does not fail or differ for the planted reason, said in the commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a wafer-defect classifier (an
  attention layer over sensor traces) trained with DDP: ``--heads 6`` for an embedding of 32
  (fail), ``TRAIN_FRACTION`` exported by the Vast.ai notebook (metric), an uncommitted
  ``DistributedSampler(num_replicas=world - 1)`` on top of a quality gate the good job already
  misses (both fail), and the same job from both shells (noise);
- the c10d store and an engine on the CPU: a coordinator sizing its ``TCPStore`` from LSF's
  ``LSB_DJOB_NUMPROC`` (fail), a decoding engine's ``KV_CACHE_GB`` from the cluster's launch
  script that the CPU allocator refuses, quoted in bytes (fail), and ``PYTHONWARNINGS=error``
  turning ``reduce_scatter_tensor``'s FutureWarning into the error (fail);
- a GPT-2 model folder under transformers: ``n_inner`` edited to 96 (fail),
  ``scale_attn_weights`` false (metric), and its evaluation from both shells (noise);
- the rest: a team package ``lotcodes`` 3.0 (``parse`` returns an object, not a tuple) in the
  cluster's venv (fail), scikit-learn solder-joint classifiers: an uncommitted ``loss =
  "exponential"`` in the git-tracked configs/model.toml on three classes (fail), ``--n-neighbors
  1`` (metric), an uncommitted ``stratify=y`` (metric), an uncommitted
  ``OneHotEncoder(sparse=False)`` on top of a missed gate (both fail) and the same fit from both
  shells (noise).

The shells are :func:`vast_or_lsf_shell`: shell 0 a Vast.ai container's Jupyter ``!`` shell
(``/bin/sh -c`` under the notebook's kernel: ``VAST_*``, ``PUBLIC_IPADDR``, ``JPY_*``,
``MPLBACKEND``, ``PAGER``, root in /workspace, the onstart script's ``NCCL_*``/``HF_*``/
``PYTORCH_*`` settings and the image's ``CUDA_*``/``NVIDIA_*``), shell 1 bash in an LSF
``bsub -Is`` interactive job (``LSB_*``, ``LSF_*``, ``LS_*``, the login node's ``SSH_*``, Lmod's
``MODULEPATH``, the team's env script exporting ``NCCL_*``/``OMP_*``/``TORCH_*``/``HF_*``). The
thread counts that change float reductions are pinned alike. The planted side is either: some
incidents work in the notebook and fail under LSF, others the reverse.

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

LSF_JOB = "8830147"
LSF_TOP = "/opt/ibm/lsfsuite/lsf"


def vast_or_lsf_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 the ``!``
    shell of a Jupyter notebook in a Vast.ai container, 1 bash in an LSF ``bsub -Is`` job
    (``venv`` the interpreter's virtual environment, first on ``PATH``); each with its own
    tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    if n % 2 == 0:  # `!cmd` in a notebook cell: /bin/sh -c under the kernel, as root
        env = {
            **common, "PATH": f"/opt/conda/bin:/usr/local/nvidia/bin:/usr/local/cuda/bin:{path}",
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOSTNAME": "C.14172604", "PWD": "/workspace",
            "TERM": "xterm-color", "CLICOLOR": "1", "PAGER": "cat", "GIT_PAGER": "cat",
            "FORCE_COLOR": "1", "MPLBACKEND": "module://matplotlib_inline.backend_inline",
            "JPY_PARENT_PID": "61", "JPY_SESSION_NAME": "/workspace/notebooks/wafer.ipynb",
            "PYDEVD_USE_FRAME_EVAL": "NO", "JUPYTER_DIR": "/", "DATA_DIRECTORY": "/workspace/",
            "VAST_CONTAINERLABEL": "C.14172604", "CONTAINER_ID": "14172604",
            "PUBLIC_IPADDR": "203.0.113.58", "VAST_TCP_PORT_22": "40122",
            "VAST_TCP_PORT_8080": "40180", "VAST_TCP_PORT_72299": "40199",
            "OPEN_BUTTON_PORT": "8080", "DIRECT_PORT_START": "40100", "DIRECT_PORT_END": "40199",
            "CUDA_VERSION": "12.4.1", "NV_CUDA_CUDART_VERSION": "12.4.127-1",
            "NCCL_VERSION": "2.21.5-1", "NVIDIA_VISIBLE_DEVICES": "GPU-4f1d0c7e-2b9a-6e35",
            "NVIDIA_DRIVER_CAPABILITIES": "compute,utility", "NVIDIA_REQUIRE_CUDA": "cuda>=12.4",
            "PYTORCH_VERSION": "2.5.1", "PYTHONUNBUFFERED": "1",
            # the template's onstart script (consumer GPUs: no P2P, no InfiniBand)
            "NCCL_P2P_DISABLE": "1", "NCCL_IB_DISABLE": "1", "NCCL_SHM_USE_CUDA_MEMCPY": "1",
            "HF_HOME": "/workspace/.hf", "HF_HUB_ENABLE_HF_TRANSFER": "1",
            "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "CUDA_MODULE_LOADING": "LAZY",
            "TORCH_CUDA_ARCH_LIST": "8.9",
        }
        if venv:  # `source /workspace/.venv/bin/activate` in the onstart script
            env["VIRTUAL_ENV"] = venv
            env["PATH"] = f"{venv}/bin:{env['PATH']}"
        return env
    tmp = home.parent / "lsf-tmp" / f"{LSF_JOB}.tmpdir"  # LSF's job-private TMPDIR
    tmp.mkdir(parents=True, exist_ok=True)
    bindir = f"{LSF_TOP}/10.1/linux3.10-glibc2.17-x86_64/bin"
    env = {  # bash in `bsub -Is -q interactive -n 4 -gpu num=2 bash`, from login node 02
        **common, "PATH": f"{bindir}:{LSF_TOP}/10.1/linux3.10-glibc2.17-x86_64/etc:"
                          f"/usr/local/bin:/usr/bin:{path}",
        "USER": "mkovacs", "LOGNAME": "mkovacs", "SHELL": "/bin/bash", "LANG": "en_US.UTF-8",
        "TERM": "xterm-256color", "HOSTNAME": "lsf-cn042", "SHLVL": "2", "TMPDIR": str(tmp),
        "SSH_CLIENT": "10.40.8.113 52218 22", "SSH_CONNECTION": "10.40.8.113 52218 10.40.1.2 22",
        "SSH_TTY": "/dev/pts/17", "MODULEPATH": "/opt/apps/modulefiles/Core:/etc/modulefiles",
        "LMOD_CMD": "/opt/apps/lmod/lmod/libexec/lmod", "LOADEDMODULES": "gcc/12.2.0",
        "LSB_JOBID": LSF_JOB, "LSB_BATCH_JID": LSF_JOB, "LSB_JOBNAME": "bash",
        "LSB_QUEUE": "interactive", "LSB_INTERACTIVE": "Y", "LSB_JOBINDEX": "0",
        "LSB_HOSTS": "lsf-cn042 lsf-cn042 lsf-cn042 lsf-cn042", "LSB_MCPU_HOSTS": "lsf-cn042 4",
        "LSB_DJOB_NUMPROC": "4", "LSB_MAX_NUM_PROCESSORS": "4", "LSB_SUB_HOST": "lsf-login02",
        "LSB_EXEC_CLUSTER": "hpc-eu", "LSB_JOBRES_PID": "338104", "LSB_ECHKPNT_RSH_CMD": "ssh",
        "LSB_DJOB_HOSTFILE": f"/home/.lsbatch/1764979012.{LSF_JOB}.hostfile",
        "LSB_TRAPSIGS": "trap # 15 10 12 2 1", "LSB_UNIXGROUP_INT": "mlops",
        "LSB_EFFECTIVE_RSRCREQ": "select[type == any] order[r15s:pg] ",
        "LSF_BINDIR": bindir, "LSF_ENVDIR": f"{LSF_TOP}/conf",
        "LSF_SERVERDIR": f"{LSF_TOP}/10.1/linux3.10-glibc2.17-x86_64/etc",
        "LSF_LIBDIR": f"{LSF_TOP}/10.1/linux3.10-glibc2.17-x86_64/lib",
        "LS_SUBCWD": "/gpfs/projects/mlops/mkovacs", "LS_EXECCWD": "/gpfs/projects/mlops/mkovacs",
        "LS_JOBPID": "338104", "CUDA_VISIBLE_DEVICES": "0,1",
        # the team's env-lsf.sh, sourced from ~/.bashrc
        "NCCL_SOCKET_IFNAME": "ib0", "NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_NET_GDR_LEVEL": "PHB",
        "NCCL_DEBUG": "INFO", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "3",
        "TORCH_NCCL_DUMP_ON_TIMEOUT": "1", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
        "HF_HOME": "/gpfs/scratch/mkovacs/hf", "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1", "OMP_PROC_BIND": "false", "PYTHONDONTWRITEBYTECODE": "1",
    }
    if venv:  # `source .venv/bin/activate` typed in the interactive job
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "lsf", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the LSF job (``bad_in="lsf"``) or from the Vast.ai notebook (``"vast"``)."""
    vast = vast_or_lsf_shell(0, d / "home" / "root-vast", venv)
    lsf = vast_or_lsf_shell(1, d / "home" / "mkovacs", venv)
    first, second = (vast, lsf) if bad_in == "lsf" else (lsf, vast)
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


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    if old not in text:
        raise Unavailable(f"{path.name} has no {old!r} to edit")
    path.write_text(text.replace(old, new))


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
    \"\"\"Train the wafer-defect classifier with DDP over gloo: each wafer is 12 steps of 6
    chamber sensors, embedded, passed through one attention layer (--heads) and pooled. Sizes
    come from configs/ddp.yaml; TRAIN_FRACTION (default 1) keeps the first part of the training
    split. Rank 0 prints each epoch's loss and the validation F1; --min-f1 refuses a model
    below it.\"\"\"
    import argparse
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


    class WaferNet(torch.nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.embed = torch.nn.Linear(6, dim)
            self.attn = torch.nn.MultiheadAttention(dim, heads, batch_first=True)
            self.head = torch.nn.Linear(dim, 2)

        def forward(self, x):
            h = torch.relu(self.embed(x))
            h, _ = self.attn(h, h, h, need_weights=False)
            return self.head(h.mean(1))


    def traces(n=1600, seed=17):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, 12, 6, generator=g)
        drift = x[:, 6:, 2].mean(1) - x[:, :6, 2].mean(1) + 0.5 * x[:, :, 4].max(1).values
        return x, (drift + 0.3 * torch.randn(n, generator=g) > 1.0).long()


    def f1(pred, y):
        tp = int(((pred == 1) & (y == 1)).sum())
        return 2 * tp / max(int((pred == 1).sum()) + int((y == 1).sum()), 1)


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--heads", type=int, default=4)
        p.add_argument("--min-f1", type=float, default=None)
        a = p.parse_args()
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        cfg = yaml.safe_load(open("configs/ddp.yaml"))
        x, y = traces()
        keep = int(1200 * float(os.environ.get("TRAIN_FRACTION", "1")))
        train = TensorDataset(x[:keep], y[:keep])
        sampler = DistributedSampler(train, num_replicas=world, rank=rank, seed=cfg["seed"])
        loader = DataLoader(train, batch_size=cfg["batch_size"] // world, sampler=sampler)
        torch.manual_seed(cfg["seed"])
        net = WaferNet(cfg["dim"], a.heads)
        model = DDP(net)
        opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
        for epoch in range(cfg["epochs"]):
            sampler.set_epoch(epoch)
            total, steps = 0.0, 0
            for xb, yb in loader:
                loss = F.cross_entropy(model(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total, steps = total + loss.item(), steps + 1
            t = torch.tensor([total / steps])
            dist.all_reduce(t)
            if rank == 0:
                print(f"epoch={epoch} loss={t.item() / world:.5f}")
        net.eval()
        with torch.no_grad():
            pred = net(x[1200:]).argmax(1)
        score = f1(pred, y[1200:])
        if rank == 0:
            print(f"val_f1={score:.4f} defects={int(y[1200:].sum())}")
            if a.min_f1 is not None and score < a.min_f1:
                raise RuntimeError(f"val_f1={score:.4f} is below --min-f1 {a.min_f1}: "
                                   "the fab keeps the current model")
        dist.barrier()
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

WAFER_YAML = "# etch chamber 3, lot history 2026-Q3\ndim: 32\nlr: 0.01\nbatch_size: 64\n" \
             "epochs: 3\nseed: 5\n"


def _wafer_job(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    return py, _repo(d / "wafer-ddp", {"train.py": WAFER_DDP, "configs/ddp.yaml": WAFER_YAML})


def heads_option_job(d: Path) -> Incident:
    """Job against job. The LSF job's launch line passes ``--heads 6`` (from a sweep over a
    model of width 48); this model embeds in 32, and every rank's attention layer refuses it
    (AssertionError: embed_dim must be divisible by num_heads). Kind: fail."""
    py, repo = _wafer_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(heads_option_job, Launch(argv, good, repo),
                     Launch((*argv, "--heads", "6"), bad, repo), ("command", "--heads"))


def train_fraction_from_notebook_metric_job(d: Path) -> Incident:
    """Job against job. The notebook's ``%env TRAIN_FRACTION=0.3`` (a quick look earlier in the
    session) is inherited by its ``!`` shell; the job trains on the first 30 per cent of the
    split. Both jobs train; the losses and the F1 move. Kind: metric."""
    py, repo = _wafer_job(d)
    good, bad = _shells(d, bad={"TRAIN_FRACTION": "0.3"}, bad_in="vast", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(train_fraction_from_notebook_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "TRAIN_FRACTION"))


def sampler_replicas_uncommitted_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--min-f1 0.999``, which this model never
    reaches: the good job trains and rank 0 keeps the current model. Between the jobs train.py
    (in git) got ``DistributedSampler(train, num_replicas=world - 1, ...)``, not committed ("keep
    the last rank for evaluation"); rank 1 refuses its place (ValueError: Invalid rank 1, rank
    should be in the interval [0, 0]) and the job stops. Kind: both-fail."""
    py, repo = _wafer_job(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--min-f1", "0.999")
    return _incident(sampler_replicas_uncommitted_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "wafer-ddp: train.py"),
                     between=lambda: _edit(repo / "train.py", "num_replicas=world,",
                                           "num_replicas=world - 1,"))


def wafer_ddp_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the LSF job and from the Vast.ai
    notebook: each job its own rendezvous and rank processes, the shells their own VAST_*,
    LSB_*, LSF_*, NCCL_*, CUDA_* and HF_* variables. Nothing planted. Kind: noise."""
    py, repo = _wafer_job(d)
    good, bad = _shells(d, bad_in="vast", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(wafer_ddp_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- c10d and engines


COORDINATOR = """
    \"\"\"Smoke test of the feature-extraction coordinator: it opens the c10d TCPStore the
    workers report to, sized from the slots the scheduler granted (LSB_DJOB_NUMPROC under LSF,
    one elsewhere), publishes the shard plan and runs shard 0 itself.\"\"\"
    import json
    import os
    import socket
    from datetime import timedelta

    import torch
    import torch.distributed as dist


    def main():
        slots = int(os.environ.get("LSB_DJOB_NUMPROC", "1"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        store = dist.TCPStore("127.0.0.1", port, world_size=slots, is_master=True,
                              wait_for_workers=True, timeout=timedelta(seconds=6))
        plan = {"shards": 8, "per_worker": 8 // slots}
        store.set("plan", json.dumps(plan))
        g = torch.Generator().manual_seed(2)
        spectra = torch.rand(plan["per_worker"], 256, generator=g)
        peaks = spectra.argmax(1).float().mean().item()
        store.set("done/0", str(peaks))
        print(f"workers={slots} shards={plan['shards']} mean_peak_bin={peaks:.3f}")


    if __name__ == "__main__":
        main()
    """


def store_sized_from_lsf_slots(d: Path) -> Incident:
    """The coordinator sizes its TCPStore from ``LSB_DJOB_NUMPROC``; in the ``bsub -Is -n 4``
    job that is 4, and the smoke test, run alone, waits for three workers nobody starts
    (DistStoreError: Timed out after ... seconds waiting for clients. 1/4 clients joined). In the
    notebook the variable is unset and it runs. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "spectra-coord", {"coordinator.py": COORDINATOR})
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "coordinator.py")
    return _incident(store_sized_from_lsf_slots, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "LSB_DJOB_NUMPROC"))


ENGINE = """
    \"\"\"Smoke test of the decoding engine: reserve the KV cache (KV_CACHE_GB, bf16), then
    decode 48 steps of a tiny GRU language model, writing each step's state into the cache.\"\"\"
    import os

    import torch


    def main():
        torch.set_num_threads(2)
        gb = float(os.environ.get("KV_CACHE_GB", "0.25"))
        cache = torch.empty(int(gb * 2**30) // 2, dtype=torch.bfloat16)
        torch.manual_seed(8)
        emb, cell = torch.nn.Embedding(96, 64), torch.nn.GRUCell(64, 64)
        out = torch.nn.Linear(64, 96)
        tok, h, text = torch.tensor([1]), torch.zeros(1, 64), []
        with torch.no_grad():
            for step in range(48):
                h = cell(emb(tok), h)
                cache[step * 64:(step + 1) * 64] = h[0].to(torch.bfloat16)
                tok = out(h).argmax(1)
                text.append(int(tok))
        print(f"cache_slots={cache.numel() // 64} tokens={len(text)} checksum={sum(text)}")


    if __name__ == "__main__":
        main()
    """


def kv_cache_from_cluster_script(d: Path) -> Incident:
    """The team's env-lsf.sh exports ``KV_CACHE_GB=640`` (sized for the eight-GPU nodes); the
    engine's smoke test asks the CPU allocator for that much and is refused, the error quoting
    bytes (DefaultCPUAllocator: can't allocate memory: you tried to allocate 687194767360
    bytes). In the notebook the default 0.25 is used. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "decode-engine", {"engine_smoke.py": ENGINE})
    good, bad = _shells(d, bad={"KV_CACHE_GB": "640"}, venv=_venv_of(py))
    argv = (py, "engine_smoke.py")
    return _incident(kv_cache_from_cluster_script, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "KV_CACHE_GB"))


SHARD_CHECK = """
    \"\"\"Check the ZeRO-style gradient sharding on one process: a gloo group over tcp://, the
    flat gradient reduce-scattered into this rank's shard, its norm printed.\"\"\"
    import socket

    import torch
    import torch.distributed as dist


    def main():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0,
                                world_size=1)
        g = torch.Generator().manual_seed(4)
        flat = torch.randn(4096, generator=g)
        shard = torch.empty(4096 // dist.get_world_size())
        dist.reduce_scatter_tensor(shard, flat)
        print(f"shard_numel={shard.numel()} shard_norm={shard.norm().item():.4f}")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """


def warnings_as_errors_from_lsf_module(d: Path) -> Incident:
    """The cluster's ``python/strict`` module, loaded in the LSF job's ~/.bashrc, exports
    ``PYTHONWARNINGS=error``; torch's deprecation notice for ``reduce_scatter_tensor`` becomes
    the error (FutureWarning: `torch.distributed.reduce_scatter_tensor` is deprecated). The
    notebook's shell has no such setting and the check runs. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "zero-shard-check", {"shard_check.py": SHARD_CHECK})
    good, bad = _shells(d, bad={"PYTHONWARNINGS": "error",
                                "LOADEDMODULES": "gcc/12.2.0:python/strict"}, venv=_venv_of(py))
    argv = (py, "shard_check.py")
    return _incident(warnings_as_errors_from_lsf_module, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "PYTHONWARNINGS"))


# --------------------------------------------------------------------------- a GPT-2 folder


MAKE_GPT2 = """
import sys
import torch
from transformers import GPT2Config, GPT2LMHeadModel
cfg = GPT2Config(vocab_size=256, n_positions=128, n_embd=32, n_layer=2, n_head=4,
                 initializer_range=0.35, bos_token_id=0, eos_token_id=0)
torch.manual_seed(13)
GPT2LMHeadModel(cfg).save_pretrained(sys.argv[1])
"""

MAINT_EVAL = """
    \"\"\"Score the maintenance-note language model (--model-path) on data/notes.txt: byte-level
    ids, 96 at a time. Prints the mean loss and the perplexity.\"\"\"
    import argparse
    import math

    import torch
    from transformers import GPT2LMHeadModel


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        torch.set_num_threads(2)
        model = GPT2LMHeadModel.from_pretrained(a.model_path).eval()
        ids = list(open("data/notes.txt", "rb").read())
        losses = []
        with torch.no_grad():
            for s in range(0, len(ids) - 96, 96):
                chunk = torch.tensor([ids[s:s + 96]])
                losses.append(model(input_ids=chunk, labels=chunk).loss.item())
        mean = sum(losses) / len(losses)
        print(f"chunks={len(losses)} loss={mean:.5f} perplexity={math.exp(mean):.3f}")


    if __name__ == "__main__":
        main()
    """


def _notes() -> str:
    parts = ["replaced seal on pump", "vibration high on fan", "recalibrated torque wrench",
             "filter clogged in line", "belt tension adjusted on conveyor"]
    return "".join(f"{parts[i % 5]} {i % 13}, tech {(i * 7) % 19}.\n" for i in range(90))


def _gpt2(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers")
    repo = _repo(d / "maint-notes-lm", {"evaluate.py": MAINT_EVAL, "data/notes.txt": _notes()})
    model = d / "models" / "maint-gpt2"
    _build(py, MAKE_GPT2, str(model))
    return py, repo, model


def _set_field(model: Path, field: str, value: object) -> None:
    cfg = json.loads((model / "config.json").read_text())
    cfg[field] = value
    (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def n_inner_edited_in_model_folder(d: Path) -> Incident:
    """Between the runs the model folder's config.json (outside git) got ``"n_inner": 96`` (it
    was null: four times 32); the saved MLP weights are 128 wide and transformers refuses the
    mismatch (size mismatch for transformer.h.0.mlp.c_fc.weight). Kind: fail."""
    py, repo, model = _gpt2(d)
    good, bad = _shells(d, bad_in="vast", venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(n_inner_edited_in_model_folder, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: n_inner"),
                     between=lambda: _set_field(model, "n_inner", 96))


def scale_attn_weights_off_metric(d: Path) -> Incident:
    """Between the runs the model folder's config.json got ``"scale_attn_weights": false``
    (copied from an experiment's folder); every weight still loads, the attention is no longer
    divided by the square root of the head size and the loss moves. Kind: metric."""
    py, repo, model = _gpt2(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(scale_attn_weights_off_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: scale_attn_weights"),
                     between=lambda: _set_field(model, "scale_attn_weights", False))


def maint_gpt2_noise(d: Path) -> Incident:
    """The maintenance-note evaluation, the same model folder, code and data, from the Vast.ai
    notebook and from the LSF job. Nothing planted. Kind: noise."""
    py, repo, model = _gpt2(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(maint_gpt2_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- a team package


LOTCODES = {
    "2.4.1": '''
        """The fab's lot codes (2.4): LLWWSSS -> (line, week, sequence)."""


        def parse(code):
            return code[:2], int(code[2:4]), int(code[4:])
        ''',
    "3.0.0": '''
        """The fab's lot codes (3.0): parse returns a LotCode."""
        from dataclasses import dataclass


        @dataclass(frozen=True)
        class LotCode:
            line: str
            week: int
            seq: int


        def parse(code):
            return LotCode(code[:2], int(code[2:4]), int(code[4:]))
        ''',
}

YIELD = """
    \"\"\"Weekly yield per production line from data/lots.csv (lot code, dies, good dies).\"\"\"
    import csv
    from collections import defaultdict

    from lotcodes import parse


    def main():
        dies, good = defaultdict(int), defaultdict(int)
        for row in csv.DictReader(open("data/lots.csv")):
            line, week, _ = parse(row["lot"])
            dies[line] += int(row["dies"])
            good[line] += int(row["good"])
        print(" ".join(f"yield_{k}={good[k] / dies[k]:.4f}" for k in sorted(dies)))


    if __name__ == "__main__":
        main()
    """


def _lots() -> str:
    pick = random.Random(26)
    rows = [f"{'AB'[i % 2]}{'C'}{10 + i % 40:02d}{i:03d},{400},{pick.randint(330, 398)}"
            for i in range(120)]
    return "\n".join(["lot,dies,good", *rows]) + "\n"


def lotcodes_major_in_lsf_venv(d: Path) -> Incident:
    """The yield report unpacks ``parse(code)``. The project venv rebuilt in the LSF job from
    the unpinned requirements got lotcodes 3.0.0, whose ``parse`` returns a dataclass (TypeError:
    cannot unpack non-iterable LotCode object); the notebook's venv has 2.4.1. Kind: fail."""
    repo = _repo(d / "fab-yield", {"yield_report.py": YIELD, "data/lots.csv": _lots()})
    envs = {}
    for side, version in (("vast", "2.4.1"), ("lsf", "3.0.0")):
        py = _venv(d / "venvs" / side, {"lotcodes": (version, LOTCODES[version]),
                                        "tabulate": ("0.9.0", None)})
        envs[side] = str(py.parent.parent)
    good, bad = _shells(d)
    good = {**good, "VIRTUAL_ENV": envs["vast"], "PATH": f"{envs['vast']}/bin:{good['PATH']}"}
    bad = {**bad, "VIRTUAL_ENV": envs["lsf"], "PATH": f"{envs['lsf']}/bin:{bad['PATH']}"}
    argv = ("python", "yield_report.py")
    return _incident(lotcodes_major_in_lsf_venv, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "lotcodes"))


# --------------------------------------------------------------------------- scikit-learn


SOLDER = """
    \"\"\"Classify solder joints (ok, bridge, void) from the AOI measurements: one-hot board
    side and paste lot, scaled numbers, then gradient boosting (configs/model.toml) or --model
    knn. --min-acc refuses to publish a weaker model.\"\"\"
    import argparse
    import csv
    import tomllib

    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.model_selection import train_test_split
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    NUM = ["height", "area", "volume", "offset_x", "offset_y"]
    CAT = ["side", "paste_lot"]


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model", choices=["gbm", "knn"], default="gbm")
        p.add_argument("--n-neighbors", type=int, default=15)
        p.add_argument("--min-acc", type=float, default=None)
        a = p.parse_args()
        cfg = tomllib.load(open("configs/model.toml", "rb"))
        rows = list(csv.DictReader(open("data/joints.csv")))
        x = [{**{k: float(r[k]) for k in NUM}, **{k: r[k] for k in CAT}} for r in rows]
        y = [r["label"] for r in rows]
        xtr, xte, ytr, yte = train_test_split(x, y, test_size=cfg["split"]["test_size"],
                                              random_state=cfg["split"]["seed"])
        xtr, xte = pd.DataFrame(xtr), pd.DataFrame(xte)
        prep = ColumnTransformer([
            ("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), CAT),
            ("num", StandardScaler(), NUM)])
        if a.model == "gbm":
            clf = GradientBoostingClassifier(random_state=0, **cfg["gbm"])
        else:
            clf = KNeighborsClassifier(n_neighbors=a.n_neighbors)
        model = make_pipeline(prep, clf).fit(xtr, ytr)
        pred = model.predict(xte)
        acc = accuracy_score(yte, pred)
        print(f"accuracy={acc:.4f} macro_f1={f1_score(yte, pred, average='macro'):.4f}")
        if a.min_acc is not None and acc < a.min_acc:
            raise SystemExit(f"accuracy={acc:.4f} is below --min-acc {a.min_acc}: not publishing")


    if __name__ == "__main__":
        main()
    """

SOLDER_TOML = """
    # solder-joint AOI classifier, line SMT-2
    [split]
    test_size = 0.3
    seed = 11

    [gbm]
    loss = "log_loss"
    n_estimators = 60
    learning_rate = 0.1
    max_depth = 3
    """


def _joints() -> str:
    pick = random.Random(33)
    rows = []
    for i in range(420):
        label = ["ok", "ok", "ok", "bridge", "void"][i % 5]
        vol = pick.gauss({"ok": 1.0, "bridge": 1.35, "void": 0.7}[label], 0.18)
        area = pick.gauss({"ok": 1.0, "bridge": 1.25, "void": 0.95}[label], 0.15)
        rows.append(f"{pick.gauss(0.12, 0.02):.4f},{area:.4f},{vol:.4f},"
                    f"{pick.gauss(0, 0.05):.4f},{pick.gauss(0, 0.05):.4f},"
                    f"{'top' if i % 3 else 'bottom'},P{i % 4},{label}")
    return "\n".join(["height,area,volume,offset_x,offset_y,side,paste_lot,label", *rows]) + "\n"


def _solder(d: Path) -> tuple[str, Path]:
    py = python_with("sklearn", "pandas", "tomllib")
    return py, _repo(d / "solder-aoi", {"fit.py": SOLDER, "configs/model.toml": SOLDER_TOML,
                                        "data/joints.csv": _joints()})


def exponential_loss_uncommitted_config(d: Path) -> Incident:
    """Between the runs configs/model.toml (in git) had ``loss = "log_loss"`` edited, not
    committed, to ``"exponential"`` (AdaBoost-like, tried for the binary line); there are three
    classes and scikit-learn refuses (ValueError: loss='exponential' is only suitable for a
    binary classification problem, you have n_classes=3). Kind: fail."""
    py, repo = _solder(d)
    good, bad = _shells(d, bad_in="vast", venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(exponential_loss_uncommitted_config, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "solder-aoi: configs/model.toml"),
                     between=lambda: _edit(repo / "configs" / "model.toml",
                                           'loss = "log_loss"', 'loss = "exponential"'))


def n_neighbors_one_metric(d: Path) -> Incident:
    """The LSF job's run passes ``--n-neighbors 1``, left on the command line from checking a
    single board; the nearest-neighbour model overfits. Both runs fit; the accuracy and the
    macro F1 move. Kind: metric."""
    py, repo = _solder(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "fit.py", "--model", "knn")
    return _incident(n_neighbors_one_metric, Launch(argv, good, repo),
                     Launch((*argv, "--n-neighbors", "1"), bad, repo),
                     ("command", "--n-neighbors"))


def stratify_uncommitted_metric(d: Path) -> Incident:
    """Between the runs fit.py (in git) got ``stratify=y`` in its ``train_test_split``, not
    committed; the held-out joints are another sample. Both runs fit; the accuracy and the macro
    F1 move. Kind: metric."""
    py, repo = _solder(d)
    good, bad = _shells(d, bad_in="vast", venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(stratify_uncommitted_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "solder-aoi: fit.py"),
                     between=lambda: _edit(repo / "fit.py", "random_state=cfg[\"split\"][\"seed\"])",
                                           "random_state=cfg[\"split\"][\"seed\"], stratify=y)"))


def onehot_sparse_uncommitted_both_fail(d: Path) -> Incident:
    """Both fail. Both runs ask for ``--min-acc 0.999``, which the classifier never reaches: the
    good run fits and does not publish. Between the runs fit.py (in git) had its encoder
    rewritten, not committed, from an old answer as ``OneHotEncoder(..., sparse=False)``, a
    keyword scikit-learn no longer has (TypeError: OneHotEncoder.__init__() got an unexpected
    keyword argument 'sparse'). Kind: both-fail."""
    py, repo = _solder(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "fit.py", "--min-acc", "0.999")
    return _incident(onehot_sparse_uncommitted_both_fail, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "solder-aoi: fit.py"),
                     between=lambda: _edit(repo / "fit.py", "sparse_output=False",
                                           "sparse=False"))


def solder_fit_noise(d: Path) -> Incident:
    """The solder-joint classifier, the same code, config and data, from the LSF job and from
    the Vast.ai notebook. Nothing planted. Kind: noise."""
    py, repo = _solder(d)
    good, bad = _shells(d, bad_in="vast", venv=_venv_of(py))
    argv = (py, "fit.py")
    return _incident(solder_fit_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


#: The twenty-sixth fresh batch, in the order it was written. Never tuned on.
FRESH26 = [
    heads_option_job, train_fraction_from_notebook_metric_job,
    sampler_replicas_uncommitted_both_fail_job, wafer_ddp_job_noise, store_sized_from_lsf_slots,
    kv_cache_from_cluster_script, warnings_as_errors_from_lsf_module,
    n_inner_edited_in_model_folder, scale_attn_weights_off_metric, maint_gpt2_noise,
    lotcodes_major_in_lsf_venv, exponential_loss_uncommitted_config, n_neighbors_one_metric,
    stratify_uncommitted_metric, onehot_sparse_uncommitted_both_fail, solder_fit_noise,
]

if __name__ == "__main__":  # build one incident and run its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH26 if b.__name__ in sys.argv[1:]] or FRESH26
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh26-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
