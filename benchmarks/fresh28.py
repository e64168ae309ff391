"""A twenty-eighth fresh held-out batch of diagnosis incidents, written from the outside (issue 41).

**Never tuned on.** Written by someone who read neither runsnap's ranker and evidence code
(``runsnap/diffing/``, ``runsnap/knowledge/``, ``runsnap/checks/``, ``runsnap/experiments/``,
``docs/ranking.md``, ``docs/diff.md``, ``docs/why.md``) nor any figure of the other halves: only
the incident format (benchmarks/incidents.py), how third-party incidents are written
(benchmarks/thirdparty.py, benchmarks/fresh24.py and fresh26.py, for their format), how they are
run and scored (benchmarks/corpus.py, benchmarks/diagnosis.py), the README, the snapshot
reference (docs/schema.md) for the names of the keys and docs/launchers.md for how a torchrun
job captures one snapshot per rank. They form the corpus's ``fresh28`` half; report it, never
change the ranker to fit it, and never change an incident after seeing its score (except to
repair an incident whose bad launch does not fail or differ for the planted reason, said in the
commit).

Sixteen incidents, each a small real program on this CPU-only build of torch:

- torchrun gloo jobs compared **job to job** (one snapshot per rank, ``runsnap capture -o
  JOB/{host}-{rank}.toml`` started by torchrun for each rank), a seismic phase picker (a 1-D
  convolution over three-component waveforms) trained with DDP: ``GLOO_SOCKET_IFNAME=ens8``
  from the TPU VM's ~/.bashrc (fail), an uncommitted ``pool: max`` in the git-tracked
  configs/picker.yaml (metric), ``CKPT_DIR=gs://...`` from the TPU VM's launch script on top of
  a quality gate the good job already misses (both fail), and the same job from both shells
  (noise);
- the c10d store and torch settings on the CPU: a rendezvous smoke test whose client store
  dials ``MASTER_ADDR`` exported for the TPU pod's worker 0 (fail), a load forecaster that
  picks its device from ``PJRT_DEVICE`` (fail) and its default dtype from ``XLA_USE_BF16``
  (metric), the same forecaster with an uncommitted ``reduction="none"`` in its loss (fail),
  and ``TORCH_FORCE_WEIGHTS_ONLY_LOAD=1`` from the cluster's site profile against a checkpoint
  that holds its argparse namespace (fail);
- a tiny Llama model folder under transformers: ``num_key_value_heads`` edited to 4 (fail),
  ``hidden_act`` edited to ``gelu`` (metric), and its evaluation from both shells (noise);
- the rest: a team package ``gridtariff`` a minor version apart in the two venvs (metric), an
  XGBoost churn model: ``tree_method: gpu_hist`` in the git-ignored params.yaml (fail),
  ``--target Churned`` on top of a missed gate (both fail) and the same fit from both shells
  (noise).

The shells are :func:`ood_or_tpu_shell`: shell 0 a Slurm batch script submitted from Open
OnDemand's job composer (non-interactive bash under ``sbatch``: ``SLURM_*``, ``SBATCH_*``, the
composer's job folder under ~/ondemand, the per-user nginx's ``ONDEMAND_*``/``OOD_*``, Lmod's
``MODULEPATH``/``LOADEDMODULES``, the script's ``NCCL_*``/``OMP_*``/``TORCH_*``/``HF_*`` and
Slurm's ``CUDA_VISIBLE_DEVICES``), shell 1 an SSH session on a Google Cloud TPU VM (``gcloud
compute tpus tpu-vm ssh``: ``SSH_*``, the ``t1v-n-*`` host name, ``TPU_*``, ``XLA_FLAGS``,
``LIBTPU_INIT_ARGS``, the launch script's ``HF_*``/``TORCH_*``/``OMP_*``). The thread counts that
change float reductions are pinned alike. The planted side is either: some incidents work in
the batch job and fail on the TPU VM, others the reverse.

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

SLURM_JOB = "5531208"
TPU_HOST = "t1v-n-4f2a9c1e-w-0"


def ood_or_tpu_shell(n: int, home: Path, venv: str = "") -> dict[str, str]:
    """The environment of shell ``n`` (0 or 1), ``home`` the user's home folder: 0 a Slurm batch
    script submitted from Open OnDemand's job composer, 1 an SSH session on a Google Cloud TPU VM
    (``venv`` the interpreter's virtual environment, first on ``PATH``); each with its own
    tuning."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    common = {"HOME": str(home), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    if n % 2 == 0:  # main_job.sh from the job composer, `sbatch` by the per-user nginx
        jobdir = f"{home}/ondemand/data/sys/myjobs/projects/default/7"
        env = {
            **common, "PATH": f"/apps/lmod/cuda/12.2/bin:/apps/lmod/gcc/12.3.0/bin:{path}",
            "USER": "rsaito", "LOGNAME": "rsaito", "SHELL": "/bin/bash", "LANG": "en_US.UTF-8",
            "PWD": jobdir, "SHLVL": "2", "ENVIRONMENT": "BATCH", "TMPDIR": f"/tmp/job.{SLURM_JOB}",
            "SLURM_JOB_ID": SLURM_JOB, "SLURM_JOBID": SLURM_JOB, "SLURM_JOB_NAME": "main_job.sh",
            "SLURM_JOB_PARTITION": "gpu-a40", "SLURM_JOB_ACCOUNT": "seismo-lab",
            "SLURM_SUBMIT_DIR": jobdir, "SLURM_SUBMIT_HOST": "ondemand01.hpc.example.edu",
            "SLURM_JOB_NODELIST": "gpu-a40-019", "SLURMD_NODENAME": "gpu-a40-019",
            "SLURM_NNODES": "1", "SLURM_NTASKS": "1", "SLURM_CPUS_ON_NODE": "8",
            "SLURM_CPUS_PER_TASK": "8", "SLURM_MEM_PER_NODE": "64000", "SLURM_GPUS_ON_NODE": "2",
            "SLURM_JOB_GPUS": "2,3", "SLURM_TASKS_PER_NODE": "1", "SLURM_CLUSTER_NAME": "granite",
            "SLURM_JOB_QOS": "normal", "SLURM_EXPORT_ENV": "ALL", "SLURM_GTIDS": "0",
            "SLURM_TOPOLOGY_ADDR": "gpu-a40-019", "SLURM_WORKING_CLUSTER": "granite:slurm01:6817:9984:109",
            "SBATCH_ACCOUNT": "seismo-lab", "SBATCH_TIMELIMIT": "04:00:00",
            "ONDEMAND_VERSION": "4.0.2", "OOD_PORTAL": "ondemand", "OOD_DASHBOARD_TITLE": "Granite OnDemand",
            "PASSENGER_APP_ENV": "production", "NGINX_STAGE_USER": "rsaito",
            "MODULEPATH": "/apps/lmod/modulefiles/Core:/apps/lmod/modulefiles/Linux",
            "LMOD_CMD": "/usr/share/lmod/lmod/libexec/lmod", "LOADEDMODULES": "gcc/12.3.0:cuda/12.2",
            "CUDA_HOME": "/apps/lmod/cuda/12.2", "CUDA_VISIBLE_DEVICES": "0,1",
            # what main_job.sh exports before `srun`
            "NCCL_SOCKET_IFNAME": "ib0", "NCCL_IB_HCA": "mlx5_0", "NCCL_DEBUG": "WARN",
            "NCCL_CROSS_NIC": "0", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "OMP_PLACES": "cores",
            "TORCH_NCCL_BLOCKING_WAIT": "0", "CUDA_LAUNCH_BLOCKING": "0",
            "HF_HOME": "/scratch/rsaito/hf", "HF_DATASETS_CACHE": "/scratch/rsaito/hf/datasets",
            "HF_HUB_OFFLINE": "1", "PYTHONNOUSERSITE": "1",
        }
    else:  # `gcloud compute tpus tpu-vm ssh seismo-v5e --zone us-west4-a`, login bash
        env = {
            **common, "PATH": f"{home}/.local/bin:/usr/local/bin:/usr/bin:{path}",
            "USER": "rsaito_example_edu", "LOGNAME": "rsaito_example_edu", "SHELL": "/bin/bash",
            "LANG": "C.UTF-8", "TERM": "xterm-256color", "HOSTNAME": TPU_HOST, "SHLVL": "1",
            "MOTD_SHOWN": "pam", "XDG_SESSION_ID": "3", "XDG_SESSION_TYPE": "tty",
            "XDG_RUNTIME_DIR": "/run/user/2001", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/2001/bus",
            "SSH_CLIENT": "35.235.244.33 41870 22", "SSH_CONNECTION": "35.235.244.33 41870 10.130.0.7 22",
            "SSH_TTY": "/dev/pts/0", "LESSOPEN": "| /usr/bin/lesspipe %s",
            "TPU_NAME": "seismo-v5e", "TPU_ACCELERATOR_TYPE": "v5litepod-8",
            "TPU_WORKER_ID": "0", "TPU_SKIP_MDS_QUERY": "1",
            # ~/launch_env.sh, sourced from ~/.bashrc
            "XLA_FLAGS": "--xla_dump_to=/tmp/xla_dump --xla_dump_hlo_as_text",
            "LIBTPU_INIT_ARGS": "--xla_tpu_enable_data_parallel_all_reduce_opt=true",
            "TF_CPP_MIN_LOG_LEVEL": "1", "XLA_IR_DEBUG": "0", "XLA_HLO_DEBUG": "0",
            "TORCH_DISTRIBUTED_DEBUG": "OFF", "TORCH_SHOW_CPP_STACKTRACES": "0",
            "OMP_DYNAMIC": "false", "HF_HOME": "/mnt/disks/persist/hf",
            "HF_HUB_ENABLE_HF_TRANSFER": "0", "TOKENIZERS_PARALLELISM": "false",
        }
    if venv:  # `source ~/venvs/seismo/bin/activate` in the script or in ~/.bashrc
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = f"{venv}/bin:{env['PATH']}"
    return env


def _shells(d: Path, good: dict[str, str] | None = None, bad: dict[str, str] | None = None,
            bad_in: str = "tpu", venv: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """The good and the bad launch's environments (plus ``good`` and ``bad``): the bad one from
    the TPU VM (``bad_in="tpu"``) or from the OnDemand batch job (``"ood"``)."""
    ood = ood_or_tpu_shell(0, d / "home" / "rsaito", venv)
    tpu = ood_or_tpu_shell(1, d / "home" / "rsaito_example_edu", venv)
    first, second = (ood, tpu) if bad_in == "tpu" else (tpu, ood)
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


PICKER_DDP = """
    \"\"\"Train the seismic phase picker with DDP over gloo: each window is 64 samples of a
    three-component waveform; a 1-D convolution (configs/picker.yaml: channels, kernel, pool)
    says whether a P arrival is in it. Rank 0 prints each epoch's loss and the validation
    accuracy, saves the weights under CKPT_DIR (default checkpoints/) and, with --min-acc,
    refuses a model below it.\"\"\"
    import argparse
    import os

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import yaml
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


    class Picker(torch.nn.Module):
        def __init__(self, channels, kernel, pool):
            super().__init__()
            self.conv = torch.nn.Conv1d(3, channels, kernel, padding=kernel // 2)
            self.pool = pool
            self.head = torch.nn.Linear(channels, 2)

        def forward(self, x):
            h = torch.relu(self.conv(x))
            h = h.amax(2) if self.pool == "max" else h.mean(2)
            return self.head(h)


    def windows(n=1400, seed=23):
        g = torch.Generator().manual_seed(seed)
        x = 0.6 * torch.randn(n, 3, 64, generator=g)
        y = (torch.rand(n, generator=g) < 0.4).long()
        onset = torch.randint(8, 56, (n,), generator=g)
        for i in range(n):
            if y[i]:
                t = int(onset[i])
                x[i, :, t:] += torch.linspace(1.2, 0.2, 64 - t) * torch.sign(torch.randn(3, 1, generator=g))
        return x, y


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--min-acc", type=float, default=None)
        a = p.parse_args()
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        cfg = yaml.safe_load(open("configs/picker.yaml"))
        x, y = windows()
        train = TensorDataset(x[:1000], y[:1000])
        sampler = DistributedSampler(train, num_replicas=world, rank=rank, seed=cfg["seed"])
        loader = DataLoader(train, batch_size=cfg["batch_size"] // world, sampler=sampler)
        torch.manual_seed(cfg["seed"])
        net = Picker(cfg["channels"], cfg["kernel"], cfg["pool"])
        model = DDP(net)
        opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9)
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
            acc = (net(x[1000:]).argmax(1) == y[1000:]).float().mean().item()
        if rank == 0:
            print(f"val_acc={acc:.4f} picks={int(y[1000:].sum())}")
            folder = os.environ.get("CKPT_DIR", "checkpoints")
            if not folder.startswith("gs://"):
                os.makedirs(folder, exist_ok=True)
            torch.save(net.state_dict(), f"{folder}/picker.pt")
            if a.min_acc is not None and acc < a.min_acc:
                raise RuntimeError(f"val_acc={acc:.4f} is below --min-acc {a.min_acc}: "
                                   "the network keeps the deployed picker")
        dist.barrier()
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """

PICKER_YAML = "# P-wave picker, network UW, 100 Hz windows\nchannels: 16\nkernel: 7\npool: mean\n" \
              "lr: 0.05\nbatch_size: 50\nepochs: 3\nseed: 9\n"


def _picker_job(d: Path) -> tuple[str, Path]:
    py = python_with("torch", "yaml")
    return py, _repo(d / "seismic-picker", {"train.py": PICKER_DDP,
                                            "configs/picker.yaml": PICKER_YAML},
                     "__pycache__/\ncheckpoints/\n")


def gloo_ifname_from_tpu_bashrc_job(d: Path) -> Incident:
    """Job against job. The TPU VM's ~/launch_env.sh exports ``GLOO_SOCKET_IFNAME=ens8`` (the
    VM's NIC, copied from the multi-host TPU notes); this machine has no such interface and
    every rank's gloo group refuses it (RuntimeError: ... Unable to find address for: ens8).
    The OnDemand batch job has no such setting. Kind: fail."""
    py, repo = _picker_job(d)
    good, bad = _shells(d, bad={"GLOO_SOCKET_IFNAME": "ens8"}, venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(gloo_ifname_from_tpu_bashrc_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "GLOO_SOCKET_IFNAME"))


def pool_max_uncommitted_metric_job(d: Path) -> Incident:
    """Job against job. Between the jobs configs/picker.yaml (in git) had ``pool: mean`` edited,
    not committed, to ``pool: max`` (trying to sharpen the onsets); both jobs train, the losses
    and the validation accuracy move. Kind: metric."""
    py, repo = _picker_job(d)
    good, bad = _shells(d, bad_in="ood", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(pool_max_uncommitted_metric_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "seismic-picker: configs/picker.yaml"),
                     between=lambda: _edit(repo / "configs" / "picker.yaml", "pool: mean",
                                           "pool: max"))


def ckpt_dir_gcs_both_fail_job(d: Path) -> Incident:
    """Job against job; both fail. Both jobs pass ``--min-acc 0.995``, which this picker never
    reaches: the good job trains, saves and rank 0 keeps the deployed model. The TPU VM's
    launch script exports ``CKPT_DIR=gs://seismo-ckpt/picker`` (torch_xla writes there through
    gcsfs); plain ``torch.save`` takes it for a local path (RuntimeError: Parent directory
    gs://seismo-ckpt/picker does not exist). Kind: both-fail."""
    py, repo = _picker_job(d)
    good, bad = _shells(d, bad={"CKPT_DIR": "gs://seismo-ckpt/picker"}, venv=_venv_of(py))
    argv = _torchrun(py, "train.py", "--min-acc", "0.995")
    return _incident(ckpt_dir_gcs_both_fail_job, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "CKPT_DIR"))


def picker_ddp_job_noise(d: Path) -> Incident:
    """Job against job, the same code and settings, from the TPU VM and from the OnDemand batch
    job: each job its own rendezvous and rank processes, the shells their own SLURM_*, OOD_*,
    TPU_*, XLA_*, NCCL_*, CUDA_* and HF_* variables. Nothing planted. Kind: noise."""
    py, repo = _picker_job(d)
    good, bad = _shells(d, bad_in="ood", venv=_venv_of(py))
    argv = _torchrun(py, "train.py")
    return _incident(picker_ddp_job_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- c10d and torch settings


RENDEZVOUS = """
    \"\"\"Smoke test of the training rendezvous on one host: open the c10d TCPStore on a free
    port, connect to it as a worker would (MASTER_ADDR, default this host), publish the run's
    plan and read it back.\"\"\"
    import json
    import os
    from datetime import timedelta

    import torch
    import torch.distributed as dist


    def main():
        server = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                               timeout=timedelta(seconds=6))
        addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
        client = dist.TCPStore(addr, server.port, is_master=False, timeout=timedelta(seconds=6))
        plan = {"stations": 48, "shards": 4, "seed": 3}
        client.set("plan", json.dumps(plan))
        back = json.loads(server.get("plan"))
        g = torch.Generator().manual_seed(back["seed"])
        work = torch.rand(back["stations"], generator=g).sum().item()
        print(f"store_keys={server.num_keys()} shards={back['shards']} work={work:.4f}")


    if __name__ == "__main__":
        main()
    """


def master_addr_from_tpu_launch_script(d: Path) -> Incident:
    """The TPU VM's launch script exports ``MASTER_ADDR=10.130.0.4`` (worker 0 of the pod it was
    written for); the rendezvous smoke test's worker store dials it and gives up
    (DistNetworkError: The client socket has timed out after 6000ms while trying to connect to
    (10.130.0.4, PORT)). The batch job has no MASTER_ADDR and dials this host. Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "rdzv-smoke", {"rdzv_smoke.py": RENDEZVOUS})
    good, bad = _shells(d, bad={"MASTER_ADDR": "10.130.0.4"}, venv=_venv_of(py))
    argv = (py, "rdzv_smoke.py")
    return _incident(master_addr_from_tpu_launch_script, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "MASTER_ADDR"))


FORECAST = """
    \"\"\"Fit the substation load forecaster: the next hour's load from the last 24, a small MLP
    trained full-batch for 150 steps. The device and the dtype follow the accelerator settings
    (PJRT_DEVICE: an XLA device; XLA_USE_BF16=1: bfloat16). Prints the validation MAE.\"\"\"
    import math
    import os

    import torch
    import torch.nn.functional as F


    def series(n=1200):
        g = torch.Generator().manual_seed(41)
        t = torch.arange(n, dtype=torch.float32)
        daily = torch.sin(2 * math.pi * t / 24) + 0.4 * torch.sin(2 * math.pi * t / 168)
        return 3.0 + daily + 0.15 * torch.randn(n, generator=g)


    def main():
        torch.set_num_threads(2)
        device = torch.device("xla" if os.environ.get("PJRT_DEVICE") else "cpu")
        if os.environ.get("XLA_USE_BF16") == "1":
            torch.set_default_dtype(torch.bfloat16)
        load = series()
        x = torch.stack([load[i:i + 24] for i in range(len(load) - 24)])
        y = load[24:].unsqueeze(1)
        x, y = x.to(device, torch.get_default_dtype()), y.to(device, torch.get_default_dtype())
        torch.manual_seed(6)
        net = torch.nn.Sequential(torch.nn.Linear(24, 32), torch.nn.Tanh(),
                                  torch.nn.Linear(32, 1)).to(device)
        opt = torch.optim.Adam(net.parameters(), lr=0.01)
        for step in range(150):
            pred = net(x[:900])
            loss = F.mse_loss(pred, y[:900])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            mae = (net(x[900:]) - y[900:]).abs().mean().float().item()
        print(f"train_mse={loss.float().item():.5f} val_mae={mae:.5f}")


    if __name__ == "__main__":
        main()
    """


def _forecast(d: Path) -> tuple[str, Path]:
    py = python_with("torch")
    return py, _repo(d / "load-forecast", {"forecast.py": FORECAST})


def pjrt_device_exported_on_tpu_vm(d: Path) -> Incident:
    """On the TPU VM ``export PJRT_DEVICE=TPU`` (from the torch_xla quickstart) is in ~/.bashrc;
    the forecaster asks for an XLA device from a torch built without it (RuntimeError: PyTorch
    is not linked with support for xla devices). The batch job trains on the CPU. Kind:
    fail."""
    py, repo = _forecast(d)
    good, bad = _shells(d, bad={"PJRT_DEVICE": "TPU"}, venv=_venv_of(py))
    argv = (py, "forecast.py")
    return _incident(pjrt_device_exported_on_tpu_vm, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "PJRT_DEVICE"))


def xla_use_bf16_metric(d: Path) -> Incident:
    """The TPU VM's launch script exports ``XLA_USE_BF16=1``; the forecaster trains in bfloat16
    on the CPU. Both runs fit; the training MSE and the validation MAE move. Kind: metric."""
    py, repo = _forecast(d)
    good, bad = _shells(d, bad={"XLA_USE_BF16": "1"}, venv=_venv_of(py))
    argv = (py, "forecast.py")
    return _incident(xla_use_bf16_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "XLA_USE_BF16"))


def reduction_none_uncommitted(d: Path) -> Incident:
    """Between the runs forecast.py (in git) got ``reduction="none"`` in its loss, not committed
    (the start of per-hour weights); backward gets a tensor, not a number (RuntimeError: grad
    can be implicitly created only for scalar outputs). Kind: fail."""
    py, repo = _forecast(d)
    good, bad = _shells(d, bad_in="ood", venv=_venv_of(py))
    argv = (py, "forecast.py")
    return _incident(reduction_none_uncommitted, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("git", "load-forecast: forecast.py"),
                     between=lambda: _edit(repo / "forecast.py", "F.mse_loss(pred, y[:900])",
                                           "F.mse_loss(pred, y[:900], reduction=\"none\")"))


MAKE_CKPT = """
import argparse
import sys
import torch
torch.manual_seed(12)
net = torch.nn.Sequential(torch.nn.Linear(16, 24), torch.nn.ReLU(), torch.nn.Linear(24, 4))
args = argparse.Namespace(lr=0.003, epochs=4, classes=["quiet", "P", "S", "noise"])
torch.save({"model": net.state_dict(), "args": args, "epoch": 4}, sys.argv[1])
"""

RESUME = """
    \"\"\"Resume the event-type classifier from checkpoints/last.pt (weights, the argparse
    namespace it was trained with, the epoch) and train two more epochs on the new catalogue.\"\"\"
    import torch
    import torch.nn.functional as F


    def main():
        torch.set_num_threads(2)
        ckpt = torch.load("checkpoints/last.pt", weights_only=False)
        args = ckpt["args"]
        net = torch.nn.Sequential(torch.nn.Linear(16, 24), torch.nn.ReLU(),
                                  torch.nn.Linear(24, len(args.classes)))
        net.load_state_dict(ckpt["model"])
        g = torch.Generator().manual_seed(77)
        x = torch.randn(600, 16, generator=g)
        y = (x[:, :4].argmax(1) + (x[:, 5] > 1.2).long()) % len(args.classes)
        opt = torch.optim.Adam(net.parameters(), lr=args.lr)
        for epoch in range(ckpt["epoch"], ckpt["epoch"] + 2):
            for s in range(0, 600, 100):
                loss = F.cross_entropy(net(x[s:s + 100]), y[s:s + 100])
                opt.zero_grad()
                loss.backward()
                opt.step()
            print(f"epoch={epoch} loss={loss.item():.5f}")


    if __name__ == "__main__":
        main()
    """


def weights_only_forced_by_site_module(d: Path) -> Incident:
    """The cluster's ``pytorch/2.13`` module, loaded by the OnDemand job script, exports
    ``TORCH_FORCE_WEIGHTS_ONLY_LOAD=1`` (site hardening); the resume script's checkpoint holds
    its argparse namespace and torch refuses it despite ``weights_only=False``
    (UnpicklingError: Weights only load failed ... argparse.Namespace). The TPU VM resumes.
    Kind: fail."""
    py = python_with("torch")
    repo = _repo(d / "event-classifier", {"resume.py": RESUME}, "__pycache__/\ncheckpoints/\n")
    (repo / "checkpoints").mkdir(exist_ok=True)
    _build(py, MAKE_CKPT, str(repo / "checkpoints" / "last.pt"))
    good, bad = _shells(d, bad={"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "1",
                                "LOADEDMODULES": "gcc/12.3.0:cuda/12.2:pytorch/2.13"},
                        bad_in="ood", venv=_venv_of(py))
    argv = (py, "resume.py")
    return _incident(weights_only_forced_by_site_module, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("env", "TORCH_FORCE_WEIGHTS_ONLY_LOAD"))


# --------------------------------------------------------------------------- a Llama folder


MAKE_LLAMA = """
import sys
import torch
from transformers import LlamaConfig, LlamaForCausalLM
cfg = LlamaConfig(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                  hidden_act="silu", initializer_range=0.3, bos_token_id=0, eos_token_id=0,
                  pad_token_id=0, tie_word_embeddings=False)
torch.manual_seed(29)
LlamaForCausalLM(cfg).save_pretrained(sys.argv[1])
"""

STATION_EVAL = """
    \"\"\"Score the station-log language model (--model-path) on data/station_log.txt: byte-level
    ids, 80 at a time. Prints the mean loss and the perplexity.\"\"\"
    import argparse
    import math

    import torch
    from transformers import LlamaForCausalLM


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--model-path", required=True)
        a = p.parse_args()
        torch.set_num_threads(2)
        model = LlamaForCausalLM.from_pretrained(a.model_path).eval()
        ids = list(open("data/station_log.txt", "rb").read())
        losses = []
        with torch.no_grad():
            for s in range(0, len(ids) - 80, 80):
                chunk = torch.tensor([ids[s:s + 80]])
                losses.append(model(input_ids=chunk, labels=chunk).loss.item())
        mean = sum(losses) / len(losses)
        print(f"chunks={len(losses)} loss={mean:.5f} perplexity={math.exp(mean):.3f}")


    if __name__ == "__main__":
        main()
    """


def _station_log() -> str:
    parts = ["gain check ok on BHZ", "GPS lock lost", "battery at 12.4 V", "vault door opened",
             "sensor recentred after drift", "telemetry gap"]
    return "".join(f"STA{(i * 5) % 17:02d} {parts[i % 6]}, day {i % 31}.\n" for i in range(80))


def _llama(d: Path) -> tuple[str, Path, Path]:
    py = python_with("torch", "transformers")
    repo = _repo(d / "station-log-lm", {"evaluate.py": STATION_EVAL,
                                        "data/station_log.txt": _station_log()})
    model = d / "models" / "station-llama"
    _build(py, MAKE_LLAMA, str(model))
    return py, repo, model


def _set_field(model: Path, field: str, value: object) -> None:
    cfg = json.loads((model / "config.json").read_text())
    cfg[field] = value
    (model / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def kv_heads_edited_in_model_folder(d: Path) -> Incident:
    """Between the runs the model folder's config.json (outside git) got
    ``"num_key_value_heads": 4`` (it was 2: grouped-query attention); the saved k_proj and
    v_proj weights are 16 wide and transformers refuses the mismatch (RuntimeError: You set
    `ignore_mismatched_sizes` to `False`, ... model.layers.0.self_attn.k_proj.weight). Kind:
    fail."""
    py, repo, model = _llama(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(kv_heads_edited_in_model_folder, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: num_key_value_heads"),
                     between=lambda: _set_field(model, "num_key_value_heads", 4))


def hidden_act_gelu_metric(d: Path) -> Incident:
    """Between the runs the model folder's config.json got ``"hidden_act": "gelu"`` (it was
    ``silu``, rewritten by a conversion script); every weight still loads, the MLP's gate is
    another function and the loss moves. Kind: metric."""
    py, repo, model = _llama(d)
    good, bad = _shells(d, bad_in="ood", venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(hidden_act_gelu_metric, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("models", "--model-path: hidden_act"),
                     between=lambda: _set_field(model, "hidden_act", "gelu"))


def station_llama_noise(d: Path) -> Incident:
    """The station-log evaluation, the same model folder, code and data, from the OnDemand
    batch job and from the TPU VM. Nothing planted. Kind: noise."""
    py, repo, model = _llama(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "evaluate.py", "--model-path", str(model))
    return _incident(station_llama_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


# --------------------------------------------------------------------------- a team package


GRIDTARIFF = {
    "1.3.0": '''
        """The utility's time-of-use tariff (1.3): peak 17:00-20:00."""
        PEAK, OFFPEAK = 0.41, 0.17


        def rate(hour):
            return PEAK if 17 <= hour < 20 else OFFPEAK
        ''',
    "1.4.0": '''
        """The utility's time-of-use tariff (1.4): the 2027 schedule, peak 16:00-21:00."""
        PEAK, OFFPEAK = 0.41, 0.17


        def rate(hour):
            return PEAK if 16 <= hour < 21 else OFFPEAK
        ''',
}

STATION_COST = """
    \"\"\"The seismic stations' monthly power bill from data/power.csv (station, hour, kWh).\"\"\"
    import csv
    from collections import defaultdict

    from gridtariff import rate


    def main():
        cost, energy = defaultdict(float), defaultdict(float)
        for row in csv.DictReader(open("data/power.csv")):
            kwh = float(row["kwh"])
            cost[row["station"]] += kwh * rate(int(row["hour"]))
            energy[row["station"]] += kwh
        total = sum(cost.values())
        print(f"stations={len(cost)} kwh={sum(energy.values()):.1f} cost={total:.2f}")


    if __name__ == "__main__":
        main()
    """


def _power() -> str:
    pick = random.Random(28)
    rows = [f"STA{s:02d},{h},{pick.uniform(0.4, 1.6):.3f}" for s in range(12) for h in range(24)
            for _ in range(3)]
    return "\n".join(["station,hour,kwh", *rows]) + "\n"


def gridtariff_minor_in_tpu_venv(d: Path) -> Incident:
    """The power report prices each hour with ``gridtariff.rate``. The venv rebuilt on the TPU
    VM from the unpinned requirements got gridtariff 1.4.0 (the next year's schedule, a longer
    peak); the batch job's venv has 1.3.0. Both runs finish; the cost moves. Kind: metric."""
    repo = _repo(d / "station-power", {"power_report.py": STATION_COST, "data/power.csv": _power()})
    envs = {}
    for side, version in (("ood", "1.3.0"), ("tpu", "1.4.0")):
        py = _venv(d / "venvs" / side, {"gridtariff": (version, GRIDTARIFF[version]),
                                        "tzdata": ("2025.2", None)})
        envs[side] = str(py.parent.parent)
    good, bad = _shells(d)
    good = {**good, "VIRTUAL_ENV": envs["ood"], "PATH": f"{envs['ood']}/bin:{good['PATH']}"}
    bad = {**bad, "VIRTUAL_ENV": envs["tpu"], "PATH": f"{envs['tpu']}/bin:{bad['PATH']}"}
    argv = ("python", "power_report.py")
    return _incident(gridtariff_minor_in_tpu_venv, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("packages", "gridtariff"))


# --------------------------------------------------------------------------- XGBoost


CHURN = """
    \"\"\"Which seismometer-network subscribers (the data service's customers) will not renew:
    one-hot plan and region, then XGBoost with the settings of the git-ignored params.yaml.
    --target names the label column; --min-auc refuses to publish a weaker model.\"\"\"
    import argparse

    import pandas as pd
    import xgboost as xgb
    import yaml
    from sklearn.metrics import accuracy_score, roc_auc_score
    from sklearn.model_selection import train_test_split


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--target", default="churned")
        p.add_argument("--min-auc", type=float, default=None)
        a = p.parse_args()
        params = yaml.safe_load(open("params.yaml"))
        frame = pd.read_csv("data/subscribers.csv")
        y = frame.pop(a.target)
        x = pd.get_dummies(frame.drop(columns=["account"]), columns=["plan", "region"],
                           dtype=float)
        xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.25, random_state=params["seed"])
        model = xgb.XGBClassifier(n_estimators=params["n_estimators"],
                                  max_depth=params["max_depth"],
                                  learning_rate=params["learning_rate"],
                                  tree_method=params["tree_method"], n_jobs=2,
                                  random_state=params["seed"])
        model.fit(xtr, ytr)
        prob = model.predict_proba(xte)[:, 1]
        auc = roc_auc_score(yte, prob)
        print(f"auc={auc:.4f} accuracy={accuracy_score(yte, prob > 0.5):.4f}")
        if a.min_auc is not None and auc < a.min_auc:
            raise SystemExit(f"auc={auc:.4f} is below --min-auc {a.min_auc}: not publishing")


    if __name__ == "__main__":
        main()
    """

CHURN_PARAMS = """
    # laptop and cluster settings, not in git
    seed: 21
    n_estimators: 80
    max_depth: 4
    learning_rate: 0.1
    tree_method: hist
    """


def _subscribers() -> str:
    pick = random.Random(82)
    rows = []
    for i in range(500):
        plan = ["basic", "pro", "archive"][i % 3]
        tickets, months = pick.randint(0, 9), pick.randint(1, 60)
        usage = pick.gauss({"basic": 2.0, "pro": 6.0, "archive": 1.0}[plan], 1.2)
        risk = 0.35 * tickets - 0.04 * months - 0.3 * usage + pick.gauss(0, 1.0)
        rows.append(f"A{i:04d},{plan},{['us-w', 'us-e', 'eu', 'jp'][i % 4]},{tickets},"
                    f"{months},{usage:.3f},{int(risk > -1.2)}")
    return "\n".join(["account,plan,region,tickets,months,usage_gb,churned", *rows]) + "\n"


def _churn(d: Path) -> tuple[str, Path, Path]:
    py = python_with("xgboost", "sklearn", "pandas", "yaml")
    repo = _repo(d / "subscriber-churn", {"churn.py": CHURN, "data/subscribers.csv": _subscribers()},
                 "__pycache__/\nparams.yaml\n")
    return py, repo, _write(repo / "params.yaml", CHURN_PARAMS)


def gpu_hist_in_ignored_params(d: Path) -> Incident:
    """Between the runs the git-ignored params.yaml had ``tree_method: hist`` rewritten as
    ``gpu_hist`` (copied from the GPU partition's copy); XGBoost 3 no longer knows it
    (XGBoostError: Invalid Input: 'gpu_hist', valid values are: {'approx', 'auto', 'exact',
    'hist'}). Kind: fail."""
    py, repo, params = _churn(d)
    good, bad = _shells(d, bad_in="ood", venv=_venv_of(py))
    argv = (py, "churn.py")
    return _incident(gpu_hist_in_ignored_params, Launch(argv, good, repo),
                     Launch(argv, bad, repo), ("runtime", f"file {params.resolve()}"),
                     between=lambda: _edit(params, "tree_method: hist", "tree_method: gpu_hist"))


def target_option_both_fail(d: Path) -> Incident:
    """Both fail. Both runs ask for ``--min-auc 0.99``, which the model never reaches: the good
    run fits and does not publish. The TPU VM's run passes ``--target Churned``, the column's
    name in last year's export (KeyError: 'Churned'). Kind: both-fail."""
    py, repo, _ = _churn(d)
    good, bad = _shells(d, venv=_venv_of(py))
    argv = (py, "churn.py", "--min-auc", "0.99")
    return _incident(target_option_both_fail, Launch(argv, good, repo),
                     Launch((*argv, "--target", "Churned"), bad, repo), ("command", "--target"))


def churn_fit_noise(d: Path) -> Incident:
    """The churn model, the same code, params.yaml and data, from the TPU VM and from the
    OnDemand batch job. Nothing planted. Kind: noise."""
    py, repo, _ = _churn(d)
    good, bad = _shells(d, bad_in="ood", venv=_venv_of(py))
    argv = (py, "churn.py")
    return _incident(churn_fit_noise, Launch(argv, good, repo), Launch(argv, bad, repo))


#: The twenty-eighth fresh batch, in the order it was written. Never tuned on.
FRESH28 = [
    gloo_ifname_from_tpu_bashrc_job, pool_max_uncommitted_metric_job, ckpt_dir_gcs_both_fail_job,
    picker_ddp_job_noise, master_addr_from_tpu_launch_script, pjrt_device_exported_on_tpu_vm,
    xla_use_bf16_metric, reduction_none_uncommitted, weights_only_forced_by_site_module,
    kv_heads_edited_in_model_folder, hidden_act_gelu_metric, station_llama_noise,
    gridtariff_minor_in_tpu_venv, gpu_hist_in_ignored_params, target_option_both_fail,
    churn_fit_noise,
]

if __name__ == "__main__":  # build one incident and run its launches, to check it by hand
    import shlex
    import tempfile

    chosen = [b for b in FRESH28 if b.__name__ in sys.argv[1:]] or FRESH28
    for build in chosen:
        folder = Path(tempfile.mkdtemp(prefix=f"fresh28-{build.__name__}-"))
        inc = build(folder)
        print(inc.name, folder, inc.cause)
        for launch in (inc.good, inc.bad):
            print("  cd", shlex.quote(str(launch.cwd)), "&&", shlex.join(launch.argv))
