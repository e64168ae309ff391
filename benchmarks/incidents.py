"""The diagnosis corpus: incidents with a planted cause, each two real runs of a small program.

Every incident builds a small real program (and, where it needs them, real virtual
environments, git repositories and model directories) in a folder, and gives the two launches
to capture: a good one and a bad one that differ in the planted cause *and* in the noise two
real shells differ in (SSH session, tmux pane, OLDPWD, terminal) plus tuning variables of the
families that rank high by name (``NCCL_*``, ``OMP_*``, ``TORCH_*``, ``SGLANG_*``). The ranker
is judged on where the planted cause lands (benchmarks/diagnosis.py, tests/test_diagnosis.py).

An incident is a function ``build(folder) -> Incident``; :data:`INCIDENTS` lists them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import venv
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo" / "launch_server.py"
MODELS = ROOT / "fixtures" / "models"


#: In a job's argv (``torchrun --nproc-per-node 2 --no-python RANKS_RUNSNAP capture -o
#: RANKS_FOLDER/{host}-{rank}.toml -- python train.py``): where the launcher starts runsnap for each
#: rank, and the folder the ranks write into. The corpus runner (benchmarks/diagnosis.py) puts
#: there the runsnap under test (``PYTHON -m runsnap``) and a folder of its own, runs such a launch
#: as it is, not under ``runsnap capture``, and compares the two jobs folder to folder.
RANKS_RUNSNAP = "<runsnap>"
RANKS_FOLDER = "<rank-snapshots>"


@dataclass(frozen=True)
class Launch:
    """One launch: argv, environment, working directory."""

    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: Path


@dataclass(frozen=True)
class Incident:
    """Two launches and the cause planted between them."""

    name: str
    what: str
    good: Launch
    bad: Launch
    cause: tuple[tuple[str, str], ...]
    """Acceptable ``(section, key)`` of the planted cause; empty: nothing should count."""

    between: Callable[[], None] | None = field(default=None, compare=False)
    """Run after the good launch and before the bad one (edit a file, make a commit)."""


def shell(n: int, home: Path) -> dict[str, str]:
    """The environment of interactive shell number ``n`` on a GPU node: what two real shells
    differ in (session, pane, previous directory, terminal) and tuning variables that people
    carry around from one launch script to the next."""
    tuning = [
        {"NCCL_IB_DISABLE": "1", "NCCL_P2P_LEVEL": "NVL", "NCCL_MIN_NCHANNELS": "4",
         "OMP_NUM_THREADS": "8", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
         "SGLANG_DISABLE_OUTLINES_DISK_CACHE": "1", "CUDA_DEVICE_MAX_CONNECTIONS": "1"},
        {"NCCL_IB_DISABLE": "0", "NCCL_ALGO": "Ring", "NCCL_NVLS_ENABLE": "0",
         "OMP_NUM_THREADS": "16", "TORCH_NCCL_BLOCKING_WAIT": "1", "NCCL_DEBUG": "WARN",
         "SGLANG_ENABLE_SPEC_V2": "0", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
    ][n % 2]
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "USER": "alice", "LOGNAME": "alice", "SHELL": "/bin/bash", "LANG": "C.UTF-8",
        "TERM": ["xterm-256color", "tmux-256color"][n % 2],
        "SHLVL": str(1 + n % 2),
        "OLDPWD": ["/home/alice", "/data/ckpt"][n % 2],
        "SSH_CLIENT": f"10.1.0.{7 + n} {51000 + n} 22",
        "SSH_CONNECTION": f"10.1.0.{7 + n} {51000 + n} 10.1.2.3 22",
        "SSH_TTY": f"/dev/pts/{3 + n}",
        "XDG_SESSION_ID": str(400 + n),
        "TMUX_PANE": f"%{n}",
        "HISTSIZE": "100000",
        "LS_COLORS": ["di=01;34", "di=01;36:ln=01;35"][n % 2],
        "EDITOR": ["vim", "nvim"][n % 2],
        "HF_HOME": str(home / ".cache" / "huggingface"),
        "PYTHONUNBUFFERED": "1",
        **tuning,
    }


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd)}
    return subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=cwd, env=env,
                          check=True, capture_output=True, text=True).stdout


def _venv(path: Path, dists: dict[str, tuple[str, str | None]]) -> Path:
    """A real venv (no pip) with distributions ``name -> (version, package source or None)``."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(path)
    py = path / "bin" / "python"
    site = Path(subprocess.check_output(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        text=True).strip())
    for name, (version, source) in dists.items():
        info = site / f"{name}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\n"
                                       f"Version: {version}\n")
        (info / "INSTALLER").write_text("pip\n")
        if source is not None:
            _write(site / name / "__init__.py", source)
            (info / "top_level.txt").write_text(name + "\n")
    return py


# --------------------------------------------------------------------------- incidents


def seed_flag_vs_option(d: Path) -> Incident:
    """The seed incident: the flag and --speculative-num-steps changed; the flag matters."""
    argv = (sys.executable, str(DEMO), "--model-path", str(MODELS / "kimi-k2.5-target"),
            "--speculative-algorithm", "EAGLE3",
            "--speculative-draft-model-path", str(MODELS / "kimi-k2.5-eagle3-draft"),
            "--speculative-num-steps")
    good = {**shell(0, d), "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}
    return Incident("seed-flag-vs-option", seed_flag_vs_option.__doc__ or "", Launch((*argv, "2"), good, d),
                    Launch((*argv, "3"), shell(1, d), d),
                    (("env", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"),))


def option_is_the_cause(d: Path) -> Incident:
    """An option asks for more than fits; the error quotes its value, not its name."""
    app = _write(d / "serve.py", """
        import argparse, os
        p = argparse.ArgumentParser()
        p.add_argument("--max-running-requests", type=int, default=64)
        p.add_argument("--mem-fraction-static", type=float, default=0.8)
        a = p.parse_args()
        def reserve_kv_cache(slots):
            budget = int(81920 * a.mem_fraction_static)
            if slots * 96 > budget:
                raise MemoryError(f"cannot reserve KV cache: {slots} requests x 96 MiB > "
                                  f"{budget} MiB available")
            return slots
        reserve_kv_cache(a.max_running_requests)
        print("ready")
        """)
    base = (sys.executable, str(app), "--mem-fraction-static", "0.85")
    return Incident("option-is-the-cause", option_is_the_cause.__doc__ or "",
                    Launch((*base, "--max-running-requests", "256"), shell(0, d), d),
                    Launch((*base, "--max-running-requests", "1024"),
                           {**shell(1, d), "SGLANG_ENABLE_TORCH_COMPILE": "1"}, d),
                    (("command", "--max-running-requests"),))


def read_in_spawned_worker(d: Path) -> Incident:
    """A variable read only in a worker started with multiprocessing (spawn); the worker's
    error does not name it."""
    app = _write(d / "launcher.py", """
        import multiprocessing as mp, os, sys
        def kv_dtype():
            return os.environ.get("APP_KV_CACHE_DTYPE", "auto")
        def init_cache(rank):
            dtype = kv_dtype()
            if dtype not in ("auto", "bf16"):
                raise RuntimeError(f"rank {rank}: no kernel for this cache layout")
        def worker(rank):
            init_cache(rank)
        if __name__ == "__main__":
            ctx = mp.get_context("spawn")
            p = ctx.Process(target=worker, args=(0,))
            p.start(); p.join()
            sys.exit(p.exitcode)
        """)
    return Incident("read-in-spawned-worker", read_in_spawned_worker.__doc__ or "",
                    Launch((sys.executable, str(app)), shell(0, d), d),
                    Launch((sys.executable, str(app)),
                           {**shell(1, d), "APP_KV_CACHE_DTYPE": "fp8_e5m2"}, d),
                    (("env", "APP_KV_CACHE_DTYPE"),))


def message_does_not_name_it(d: Path) -> Incident:
    """A variable read through a settings helper; the error is a KeyError far from its name."""
    _write(d / "myapp" / "__init__.py", "")
    _write(d / "myapp" / "settings.py", """
        import os
        def flag(name, default=""):
            return os.getenv(name, default)
        """)
    _write(d / "myapp" / "tokenizer.py", """
        from myapp.settings import flag
        TEMPLATES = {"default": "{q}"}
        def build_tokenizer():
            mode = flag("MYAPP_TEMPLATE_MODE", "default")
            return TEMPLATES[mode]
        """)
    app = _write(d / "main.py", """
        from myapp.tokenizer import build_tokenizer
        build_tokenizer()
        print("ok")
        """)
    return Incident("message-does-not-name-it", message_does_not_name_it.__doc__ or "",
                    Launch((sys.executable, str(app)), shell(0, d), d),
                    Launch((sys.executable, str(app)),
                           {**shell(1, d), "MYAPP_TEMPLATE_MODE": "chatml"}, d),
                    (("env", "MYAPP_TEMPLATE_MODE"),))


def shadowed_by_pythonpath(d: Path) -> Incident:
    """A stale source checkout on PYTHONPATH shadows the installed package."""
    py = _venv(d / "venv", {"fastfmt": ("2.1.0", "def render(x):\n    return str(x)\n")})
    _write(d / "checkout" / "fastfmt" / "__init__.py", "def render_v1(x):\n    return x\n")
    app = _write(d / "app.py", "import fastfmt\nprint(fastfmt.render(3))\n")
    good = {**shell(0, d), "VIRTUAL_ENV": str(d / "venv")}
    bad = {**shell(1, d), "VIRTUAL_ENV": str(d / "venv"), "PYTHONPATH": str(d / "checkout")}
    return Incident("shadowed-by-pythonpath", shadowed_by_pythonpath.__doc__ or "",
                    Launch((str(py), str(app)), good, d), Launch((str(py), str(app)), bad, d),
                    (("env", "PYTHONPATH"),))


def venv_switch_one_package(d: Path) -> Incident:
    """Another venv: many packages differ, one of them (imported, on the failing path) matters."""
    common = {"colorama": ("0.4.6", None), "idna": ("3.7", None)}
    _venv(d / "venv-a", {**common, "certifi": ("2024.2.2", None),
                                "tinyjson": ("1.4.0", "def dumps(x, indent=None):\n"
                                                      "    return repr(x)\n")})
    _venv(d / "venv-b", {**common, "certifi": ("2025.1.31", None),
                                "urllib3": ("2.2.1", None),
                                "tinyjson": ("2.0.0", "def dumps(x):\n    return repr(x)\n")})
    app = _write(d / "app.py", """
        import tinyjson
        print(tinyjson.dumps({"a": 1}, indent=2))
        """)
    path = os.environ.get("PATH", os.defpath)
    good = {**shell(0, d), "VIRTUAL_ENV": str(d / "venv-a"), "PATH": f"{d / 'venv-a/bin'}:{path}"}
    bad = {**shell(1, d), "VIRTUAL_ENV": str(d / "venv-b"), "PATH": f"{d / 'venv-b/bin'}:{path}"}
    return Incident("venv-switch-one-package", venv_switch_one_package.__doc__ or "",
                    Launch(("python", str(app)), good, d), Launch(("python", str(app)), bad, d),
                    (("packages", "tinyjson"), ("packages", "interpreter")))


def config_field(d: Path) -> Incident:
    """A config.json field edited in place between two launches (same directory)."""
    model = d / "model"
    config = json.loads((MODELS / "kimi-k2.5-eagle3-draft" / "config.json").read_text())
    _write(model / "config.json", json.dumps(config, indent=2))
    app = _write(d / "serve.py", """
        import argparse, json, os
        p = argparse.ArgumentParser()
        p.add_argument("--model-path"); p.add_argument("--context-length", type=int)
        a = p.parse_args()
        cfg = json.load(open(os.path.join(a.model_path, "config.json")))
        limit = cfg["max_position_embeddings"]
        if a.context_length > limit:
            raise ValueError(f"requested context {a.context_length} is longer than {limit}")
        print("ready")
        """)

    def edit() -> None:
        cfg = json.loads((model / "config.json").read_text())
        cfg["max_position_embeddings"] = 32768
        (model / "config.json").write_text(json.dumps(cfg, indent=2))

    argv = (sys.executable, str(app), "--model-path", str(model), "--context-length", "65536")
    return Incident("config-field", config_field.__doc__ or "",
                    Launch(argv, shell(0, d), d), Launch(argv, shell(1, d), d),
                    (("models", "--model-path: max_position_embeddings"),), between=edit)


def misspelled_nccl(d: Path) -> Incident:
    """NCCL_P2P_DISABLE=1 in the good shell, NCCL_P2P_DISABEL=1 (a typo) in the bad one."""
    app = _write(d / "allreduce.py", """
        import os, sys
        def init_p2p():
            if os.environ.get("NCCL_P2P_DISABLE") != "1":
                sys.stderr.write("NCCL WARN Cuda failure 'peer access is not supported "
                                 "between these two devices'\\n")
                sys.stderr.write("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
                                 "unhandled cuda error\\n")
                sys.exit(1)
        init_p2p()
        print("allreduce ok")
        """)
    return Incident("misspelled-nccl", misspelled_nccl.__doc__ or "",
                    Launch((sys.executable, str(app)), {**shell(0, d), "NCCL_P2P_DISABLE": "1"},
                           d),
                    Launch((sys.executable, str(app)), {**shell(1, d), "NCCL_P2P_DISABEL": "1"},
                           d),
                    (("env", "NCCL_P2P_DISABLE"), ("env", "NCCL_P2P_DISABEL")))


def noise_only(d: Path) -> Incident:
    """Two shells, the same launch, the same result: nothing should count."""
    app = _write(d / "ok.py", "print('fine')\n")
    a, b = shell(0, d), shell(0, d)
    b.update({"TERM": "screen", "SSH_CLIENT": "10.9.9.9 40000 22", "OLDPWD": "/tmp",
              "SHLVL": "3", "TMUX_PANE": "%7", "XDG_SESSION_ID": "999", "SSH_TTY": "/dev/pts/9",
              "SSH_CONNECTION": "10.9.9.9 40000 10.1.2.3 22", "LS_COLORS": "di=00"})
    return Incident("noise-only", noise_only.__doc__ or "",
                    Launch((sys.executable, str(app)), a, d),
                    Launch((sys.executable, str(app)), b, d), ())


def another_commit(d: Path) -> Incident:
    """The code is at another commit; the new commit's function raises."""
    repo = d / "proj"
    _write(repo / "engine" / "__init__.py", "")
    _write(repo / "engine" / "sched.py", "def plan(n):\n    return list(range(n))\n")
    app = _write(repo / "run.py", "from engine.sched import plan\nprint(len(plan(4)))\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "first")

    def commit() -> None:
        _write(repo / "engine" / "sched.py", """
            def plan(n):
                chunks = n // 0 if n > 2 else 1
                return list(range(chunks))
            """)
        _git(repo, "commit", "-qam", "faster planning")

    return Incident("another-commit", another_commit.__doc__ or "",
                    Launch((sys.executable, str(app)), shell(0, d), repo),
                    Launch((sys.executable, str(app)), shell(1, d), repo),
                    (("git", "proj.commit"),), between=commit)


def uncommitted_change(d: Path) -> Incident:
    """The bad run has an uncommitted edit to a module it imports."""
    repo = d / "svc"
    _write(repo / "svc" / "__init__.py", "")
    _write(repo / "svc" / "limits.py", "def batch_limit():\n    return 32\n")
    app = _write(repo / "main.py", "from svc.limits import batch_limit\n"
                                   "assert batch_limit() > 0\nprint('ok')\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "first")

    def edit() -> None:
        _write(repo / "svc" / "limits.py", "def batch_limit():\n    return int('32k')\n")

    return Incident("uncommitted-change", uncommitted_change.__doc__ or "",
                    Launch((sys.executable, str(app)), shell(0, d), repo),
                    Launch((sys.executable, str(app)), shell(1, d), repo),
                    (("git", "svc: svc/limits.py"),), between=edit)


def visible_devices(d: Path) -> Incident:
    """CUDA_VISIBLE_DEVICES leaves one GPU where tensor parallelism needs two."""
    app = _write(d / "tp.py", """
        import os, sys
        def device_count():
            seen = os.environ.get("CUDA_VISIBLE_DEVICES", "0,1,2,3")
            return len([x for x in seen.split(",") if x.strip()])
        def init_tp(tp):
            if device_count() < tp:
                raise RuntimeError(f"tensor parallel size {tp} needs {tp} GPUs")
        init_tp(2)
        print("ok")
        """)
    return Incident("visible-devices", visible_devices.__doc__ or "",
                    Launch((sys.executable, str(app)),
                           {**shell(0, d), "CUDA_VISIBLE_DEVICES": "0,1"}, d),
                    Launch((sys.executable, str(app)),
                           {**shell(1, d), "CUDA_VISIBLE_DEVICES": "2"}, d),
                    (("env", "CUDA_VISIBLE_DEVICES"),))


def bad_value(d: Path) -> Incident:
    """A boolean variable set to a value its reader cannot parse (SGLang's EnvBool)."""
    argv = (sys.executable, str(DEMO), "--model-path", str(MODELS / "kimi-k2.5-target"),
            "--speculative-algorithm", "EAGLE3",
            "--speculative-draft-model-path", str(MODELS / "kimi-k2.5-eagle3-draft"))
    return Incident("bad-value", bad_value.__doc__ or "",
                    Launch(argv, {**shell(0, d),
                                  "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "true"}, d),
                    Launch(argv, {**shell(1, d),
                                  "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "ture"}, d),
                    (("env", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"),))


def warning_names_it(d: Path) -> Incident:
    """Both runs succeed; one warns about the variable it was given (a deprecated name)."""
    app = _write(d / "train.py", """
        import os, warnings
        def setup():
            if os.environ.get("TORCH_CUDNN_V8_API_DISABLED"):
                warnings.warn("TORCH_CUDNN_V8_API_DISABLED is deprecated and ignored; "
                              "results may differ", FutureWarning)
        setup()
        print("loss 0.42")
        """)
    return Incident("warning-names-it", warning_names_it.__doc__ or "",
                    Launch((sys.executable, str(app)), shell(0, d), d),
                    Launch((sys.executable, str(app)),
                           {**shell(1, d), "TORCH_CUDNN_V8_API_DISABLED": "1"}, d),
                    (("env", "TORCH_CUDNN_V8_API_DISABLED"),))


def worker_then_launcher(d: Path) -> Incident:
    """A scheduler process fails on a variable and prints its traceback; then the launcher
    raises its own error ("see the errors above"), as SGLang's launch_server does."""
    app = _write(d / "launch.py", """
        import multiprocessing as mp, os, sys, traceback
        def chunked_prefill_size():
            return int(os.environ.get("SRV_CHUNKED_PREFILL_SIZE", "8192"))
        def init_memory_pool():
            size = chunked_prefill_size()
            if size % 64:
                raise AssertionError("page table is not aligned")
        def run_scheduler(pipe):
            try:
                init_memory_pool()
                pipe.send("ready")
            except Exception:
                sys.stderr.write("[TP0] Scheduler hit an exception: " + traceback.format_exc())
                pipe.send("failed")
        def launch():
            ctx = mp.get_context("spawn")
            reader, writer = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=run_scheduler, args=(writer,))
            proc.start()
            if reader.recv() != "ready":
                proc.join()
                raise RuntimeError("Initialization failed. Please see the error messages above.")
            proc.join()
        if __name__ == "__main__":
            launch()
            print("server ready")
        """)
    return Incident("worker-then-launcher", worker_then_launcher.__doc__ or "",
                    Launch((sys.executable, str(app)), shell(0, d), d),
                    Launch((sys.executable, str(app)),
                           {**shell(1, d), "SRV_CHUNKED_PREFILL_SIZE": "1000"}, d),
                    (("env", "SRV_CHUNKED_PREFILL_SIZE"),))


#: Every incident of the corpus.
INCIDENTS: list[Callable[[Path], Incident]] = [
    seed_flag_vs_option, option_is_the_cause, read_in_spawned_worker, message_does_not_name_it,
    shadowed_by_pythonpath, venv_switch_one_package, config_field, misspelled_nccl, noise_only,
    another_commit, uncommitted_change, visible_devices, bad_value, warning_names_it,
    worker_then_launcher,
]
