"""runsnap's performance benchmark: runsnap against the tools people run today, same run.

    python benchmarks/run.py                     # default: builds inputs once, ~3-4 minutes
    python benchmarks/run.py --quick             # fewer rounds, no torch: well under a minute
    python benchmarks/run.py --out benchmarks/RESULTS.md

Run it with the interpreter runsnap is installed in (``.venv/bin/python``): the ``runsnap``
console script next to it is what gets measured. Inputs are built into ``benchmarks/.work/``
(git-ignored) on first use and reused. Each case measures its subject and its peers
interleaved, round by round, and reports medians, interquartile ranges, peak memory and the
ratios between them; absolute times are not comparable between runs on a noisy machine,
ratios within one run are.

Adding a case: write a ``build(bench) -> [Command, ...]`` (subject first; raise ``Skip`` when
the feature is absent), optionally a ``checks(measured) -> [Check, ...]`` for its targets, and
append a :class:`Case` to :data:`CASES`.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import inputs  # noqa: E402
from benchmarks.harness import Case, Check, Command, Measured, Skip, render, run_case  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass
class Bench:
    """What every case builder gets: the inputs, the environment, how to call runsnap."""

    work: Path
    out: Path
    venv: inputs.Venv
    repo: Path
    models: tuple[Path, Path]
    snapshots: tuple[Path, Path]
    ranks: list[Path]
    rank_sets: dict[int, list[Path]]
    """The N-way case's jobs: size -> one snapshot per rank (see inputs.build_rank_set)."""
    runsnap: list[str]
    python: str
    """The interpreter runsnap runs in (for peers that measure Python itself)."""
    env: dict[str, str]
    quick: bool
    baseline: list[str] | None = None
    """runsnap from another source tree (``--baseline``), measured beside this one in case 1
    (and in cases 2, 7, 10 and 11)."""
    baseline_root: Path | None = None
    """That source tree."""
    real_sizes: tuple[int, ...] = (4096,)
    """The real-shaped N-way case's job sizes (``--real-ranks``)."""

    def run_help(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.runsnap, *args], env=self.env, cwd=self.repo,
                              capture_output=True, text=True)


def install_runsnap(work: Path, root: Path = ROOT, name: str = "runsnap-venv"
                    ) -> tuple[str, list[str]]:
    """runsnap from this working tree, laid out as a regular install: (python, runsnap argv).

    A venv whose ``.pth`` puts the working tree and the directory holding runsnap's
    dependencies on ``sys.path`` as plain entries, and a ``runsnap`` script like the one pip
    writes. A development install need not be the one measured (a setuptools one hooks an
    import finder into every interpreter start, ~20 ms, which users of a regular install never
    pay). The working tree is used as it is, so every run measures the current code.
    """
    import importlib.util

    venv = work / name
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(subprocess.check_output(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        text=True).strip())
    spec = importlib.util.find_spec("click")
    if spec is None or spec.origin is None:
        raise SystemExit("run this with the interpreter runsnap's dependencies are installed in")
    deps = Path(spec.origin).parent.parent
    (site / "runsnap_bench.pth").write_text(f"{root}\n{deps}\n")
    script = venv / "bin" / "runsnap"
    script.write_text(f"#!{py}\nimport sys\nfrom runsnap.cli import main\n"
                      "if __name__ == '__main__':\n    sys.exit(main())\n")
    script.chmod(0o755)
    return str(py), [str(script)]


def child_env(work: Path, venv: inputs.Venv) -> dict[str, str]:
    """A launch-like environment: the venv active, NCCL/SGLang/torchrun tuning variables."""
    env = {
        "PATH": f"{venv.path / 'bin'}:{os.environ.get('PATH', os.defpath)}",
        "VIRTUAL_ENV": str(venv.path),
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
        "RUNSNAP_KEY_FILE": str(work / "fingerprint.key"),
        "RUNSNAP_CACHE_DIR": str(work / "cache"),
        "HF_HOME": str(work / "hf-home"),
        "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7",
        "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500", "WORLD_SIZE": "8", "RANK": "0",
        "LOCAL_RANK": "0",
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1",
        "HF_TOKEN": "hf_" + "x" * 34,
        "WANDB_API_KEY": "0123456789abcdef0123456789abcdef01234567",
    }
    for i, name in enumerate(("DEBUG", "IB_HCA", "SOCKET_IFNAME", "IB_GID_INDEX", "NET_GDR_LEVEL",
                              "P2P_LEVEL", "MIN_NCHANNELS", "MAX_NCHANNELS", "BUFFSIZE",
                              "NVLS_ENABLE", "CUMEM_ENABLE", "ALGO", "PROTO")):
        env[f"NCCL_{name}"] = f"value{i}"
    for i in range(40):
        env[f"APP_SETTING_{i:02d}"] = f"setting-{i}"
    return env


# --------------------------------------------------------------------------- cases


def _capture_cmd(bench: Bench, name: str, *extra: str) -> list[str]:
    return [*bench.runsnap, "capture", "-o", str(bench.out / f"{name}.toml"), *extra]


def _fresh(bench: Bench, name: str) -> Any:
    """Remove the snapshot before each run: capture never overwrites one (it writes
    ``NAME.1.toml`` beside it), and ``[meta] collect_ms`` must come from this run's file."""
    path = bench.out / f"{name}.toml"
    return lambda: path.unlink(missing_ok=True)


def _collect_ms(bench: Bench, name: str) -> Any:
    path = bench.out / f"{name}.toml"

    def after(_launched: float) -> dict[str, float]:
        with open(path, "rb") as fh:
            meta = tomllib.load(fh).get("meta", {})
        return {f"collect_ms.{k}": float(v) for k, v in meta.get("collect_ms", {}).items()}

    return after


def _unseen(bench: Bench, name: str) -> tuple[Any, Any]:
    """(before, after) hooks: as :func:`_fresh`, and the scrubbed texts and clean digests
    runsnap keeps (docs/caches.md; the digests of whole clean sections would otherwise find the
    unchanged git section clean, diff and all) put aside, so that the capture meets its work
    tree's diff, and every other text, for the first time (the package probe's answer is
    kept); after it, the folder is put back as it was (what was put aside returns, what the
    capture wrote goes), so that the commands after it in the round, this tree's and the
    baseline's, find their caches as they left them."""
    fresh = _fresh(bench, name)
    kept_dir = Path(bench.env["RUNSNAP_CACHE_DIR"])
    aside = bench.work / "cache-aside"

    def before() -> None:
        fresh()
        aside.mkdir(exist_ok=True)
        for kept in [*kept_dir.glob("scrubbed-*.txt"), *kept_dir.glob("clean-*.bin")]:
            kept.replace(aside / kept.name)

    def after(_launched: float) -> dict[str, float]:
        # the folder as it was: what the unseen capture wrote goes (its clean-digest file holds
        # only what it saw: left in place, this tree's guarded capture met a cold cache every
        # round, ~25 ms of token rules compiled, while the baseline's, under another key,
        # stayed warm), and what was put aside comes back
        for made in [*kept_dir.glob("scrubbed-*.txt"), *kept_dir.glob("clean-*.bin")]:
            made.unlink()
        for kept in aside.iterdir():
            kept.replace(kept_dir / kept.name)
        return {}

    return before, after


def build_capture(bench: Bench) -> list[Command]:
    env, cwd = bench.env, str(bench.repo)
    models = [a for m in bench.models for a in ("--model", str(m))]
    git = shutil.which("git") or "git"
    unseen = _unseen(bench, "c1u")
    cmds = [
        Command("runsnap capture", _capture_cmd(bench, "c1", *models), env=env, cwd=cwd,
                before=_fresh(bench, "c1"), after=_collect_ms(bench, "c1")),
        Command("runsnap capture (diff not seen before)", _capture_cmd(bench, "c1u", *models),
                env=env, cwd=cwd, before=unseen[0], after=unseen[1]),
        # the pre-launch guard's rules on what was collected (models included), as before a
        # launch: --no-run keeps the child's own cost out
        Command("runsnap capture --no-run -- python -c pass (guard)",
                _capture_cmd(bench, "c1g", *models, "--no-run", "--",
                             str(bench.venv.python), "-c", "pass"),
                env=env, cwd=cwd, before=_fresh(bench, "c1g")),
        Command("pip freeze", [str(bench.venv.pip), "freeze"], env=env, cwd=cwd),
        Command("floor: python -c pass + git status + git diff", steps=[
            [str(bench.venv.python), "-c", "pass"],
            [git, "status", "--porcelain=v2", "--branch", "--untracked-files=all"],
            [git, "diff", "HEAD"],
        ], env=env, cwd=cwd),
    ]
    if bench.baseline:
        cmds.insert(2, Command("runsnap capture (baseline)",
                               [*bench.baseline, "capture", "-o", str(bench.out / "c0.toml"),
                                *models], env=env, cwd=cwd, before=_fresh(bench, "c0"),
                               after=_collect_ms(bench, "c0")))
        cmds.insert(4, Command("runsnap capture --no-run -- python -c pass (guard, baseline)",
                               [*bench.baseline, "capture", "-o", str(bench.out / "c0g.toml"),
                                *models, "--no-run", "--", str(bench.venv.python), "-c", "pass"],
                               env=env, cwd=cwd, before=_fresh(bench, "c0g")))
    if bench.venv.has_torch and not bench.quick:
        cmds.insert(3 + bool(bench.baseline), Command("python -m torch.utils.collect_env",
                               [str(bench.venv.python), "-m", "torch.utils.collect_env"],
                               env=env, cwd=cwd))
    return cmds


def checks_capture(m: dict[str, Measured]) -> list[Check]:
    cap = m["runsnap capture"].median_ms
    out = [Check("capture / pip freeze", cap / m["pip freeze"].median_ms, "x", 0.2),
           Check("capture / floor", cap / m["floor: python -c pass + git status + git diff"]
                 .median_ms, "x", 2.5)]
    guarded = m.get("runsnap capture --no-run -- python -c pass (guard)")
    if guarded is not None:
        out.append(Check("capture with the pre-launch guard / pip freeze",
                         guarded.median_ms / m["pip freeze"].median_ms, "x", 0.2))
    if "runsnap capture (diff not seen before)" in m:
        out.append(Check("capture of a diff not seen before / pip freeze",
                         m["runsnap capture (diff not seen before)"].median_ms
                         / m["pip freeze"].median_ms, "x", None))
    guarded_base = m.get("runsnap capture --no-run -- python -c pass (guard, baseline)")
    if guarded_base is not None:
        out.append(Check("baseline tree: capture with the pre-launch guard / pip freeze",
                         guarded_base.median_ms / m["pip freeze"].median_ms, "x", None))
    if "runsnap capture (baseline)" in m:
        out.append(Check("capture / baseline capture",
                         cap / m["runsnap capture (baseline)"].median_ms, "x", None))
    if "python -m torch.utils.collect_env" in m:
        out.append(Check("capture / collect_env",
                         cap / m["python -m torch.utils.collect_env"].median_ms, "x", None))
    return out


def notes_capture(m: dict[str, Measured]) -> list[str]:
    cap = m["runsnap capture"]
    parts = [f"{k.split('.', 1)[1]} {cap.extra_median(k):.1f}" for k in sorted(cap.extra)]
    out = ["per-collector medians from `[meta] collect_ms` (ms): " + ", ".join(parts)] if parts \
        else []
    base = m.get("runsnap capture (baseline)")
    if base is not None:
        out.append(f"this tree - baseline: median {cap.median_ms - base.median_ms:+.1f} ms, "
                   f"CPU {cap.cpu_ms - base.cpu_ms:+.1f} ms (same run, commands interleaved)")
    return out


_CHILD = ("import sys, time; t = time.time(); "
          "open(sys.argv[1], 'w').write(repr(t))")


def _has_wrapper(bench: Bench) -> bool:
    return "--no-run" in bench.run_help("capture", "--help").stdout


def build_wrapper(bench: Bench) -> list[Command]:
    if not _has_wrapper(bench):
        raise Skip("feature not present (`runsnap capture --help` has no --no-run: the launch "
                   "wrapper is not on this branch)")
    env, cwd = bench.env, str(bench.repo)
    py = str(bench.venv.python)
    marker = bench.out / "child-started"
    snap = bench.out / "c2.toml"

    def clear() -> None:
        for p in (marker, snap):
            p.unlink(missing_ok=True)

    def started(launched: float) -> dict[str, float]:
        t_child = float(marker.read_text())
        out = {"start_ms": (t_child - launched) * 1000}
        if snap.exists():
            out["outcome_after_child_ms"] = (snap.stat().st_mtime - t_child) * 1000
        return out

    cmds = [
        Command("runsnap capture -- python -c <child>",
                [*bench.runsnap, "capture", "-o", str(snap), "--", py, "-c", _CHILD, str(marker)],
                env=env, cwd=cwd, before=clear, after=started, ok=(0,)),
        Command("runsnap capture (no command)", _capture_cmd(bench, "c2-alone"), env=env, cwd=cwd,
                before=_fresh(bench, "c2-alone")),
        Command("python -c <child>", [py, "-c", _CHILD, str(marker)], env=env, cwd=cwd,
                before=clear, after=started),
    ]
    if bench.baseline:  # the same wrapped run by the baseline tree, for before/after
        cmds.append(Command("runsnap capture -- python -c <child> (baseline)",
                            [*bench.baseline, "capture", "-o", str(snap), "--", py, "-c", _CHILD,
                             str(marker)], env=env, cwd=cwd, before=clear, after=started))
    return cmds


def checks_wrapper(m: dict[str, Measured]) -> list[Check]:
    wrapped = m["runsnap capture -- python -c <child>"]
    bare = m["python -c <child>"]
    alone = m["runsnap capture (no command)"].median_ms
    ws, bs = wrapped.extra_median("start_ms"), bare.extra_median("start_ms")
    out = []
    if ws is not None and bs is not None:
        out.append(Check("child start delay (wrapped - bare python) / bare capture",
                         (ws - bs) / alone, "x", 1.2))
    oc = wrapped.extra_median("outcome_after_child_ms")
    if oc is not None:
        out.append(Check("outcome written after the child's last statement", oc, " ms", 30))
    base = m.get("runsnap capture -- python -c <child> (baseline)")
    boc = base.extra_median("outcome_after_child_ms") if base is not None else None
    if boc is not None:
        out.append(Check("outcome written after the child's last statement, baseline tree",
                         boc, " ms", None))
    return out


def _has_diff(bench: Bench) -> bool:
    return bench.run_help("diff", "--help").returncode == 0


_PARSE_ONLY = ("import sys\n"
               "try:\n    import tomllib\nexcept ImportError:\n    import tomli as tomllib\n"
               "import os\n"
               "for a in sys.argv[1:]:\n"
               "    names = sorted(os.path.join(a, n) for n in os.listdir(a)\n"
               "                   if n.endswith('.toml')) if os.path.isdir(a) else [a]\n"
               "    for p in names:\n"
               "        with open(p, 'rb') as fh: tomllib.load(fh)\n")
"""Parse every file named (a folder: every ``*.toml`` in it, as ``diff FOLDER`` reads it)."""


def build_diff(bench: Bench) -> list[Command]:
    if not _has_diff(bench):
        raise Skip("feature not present (`runsnap diff --help` fails: `runsnap diff` is not on "
                   "this branch)")
    a, b = (str(p) for p in bench.snapshots)
    return [
        Command("runsnap diff a b (1 MiB each)", [*bench.runsnap, "diff", a, b], env=bench.env,
                ok=(0, 1)),
        Command("python: parse both files only", [bench.python, "-c", _PARSE_ONLY, a, b],
                env=bench.env),
    ]


def checks_diff(m: dict[str, Measured]) -> list[Check]:
    return [Check("diff / parse-only", m["runsnap diff a b (1 MiB each)"].median_ms
                  / m["python: parse both files only"].median_ms, "x", 3.0)]


def build_startup(bench: Bench) -> list[Command]:
    return [
        Command("runsnap --version", [*bench.runsnap, "--version"], env=bench.env),
        Command("runsnap --help", [*bench.runsnap, "--help"], env=bench.env),
        Command('python -c "import click"', [bench.python, "-c", "import click"],
                env=bench.env),
    ]


def checks_startup(m: dict[str, Measured]) -> list[Check]:
    click = m['python -c "import click"'].median_ms
    return [Check("--version / import click", m["runsnap --version"].median_ms / click, "x", 1.3),
            Check("--help / import click", m["runsnap --help"].median_ms / click, "x", None)]


#: Job sizes of the N-way case: 32, 128 and 512 nodes of 8 GPUs.
NWAY_SIZES = (256, 1024, 4096)


def build_nway(bench: Bench) -> list[Command]:
    if not _has_diff(bench):
        raise Skip("feature not present (`runsnap diff` is not on this branch)")
    trial = bench.run_help("diff", *map(str, bench.ranks[:3]))
    if trial.returncode not in (0, 1):
        raise Skip(f"`runsnap diff` of 3 snapshots exited {trial.returncode}: N-way diff not "
                   f"supported ({trial.stderr.strip()[:120]})")
    folder_ok = bench.run_help("diff", str(bench.rank_sets[NWAY_SIZES[0]][0].parent))
    cmds = []
    for n in NWAY_SIZES:
        files = bench.rank_sets[n]
        # A folder where runsnap takes one (the way users call it); every file otherwise.
        subject = [str(files[0].parent)] if folder_ok.returncode in (0, 1) else list(map(str, files))
        cmds += [
            Command(f"runsnap diff ({n} rank snapshots)", [*bench.runsnap, "diff", *subject],
                    env=bench.env, ok=(0, 1)),
            Command(f"python: parse all {n} files only (tomllib)",
                    [bench.python, "-c", _PARSE_ONLY, *map(str, files)], env=bench.env),
        ]
    return cmds


def checks_nway(m: dict[str, Measured]) -> list[Check]:
    def t(n: int) -> float:
        return m[f"runsnap diff ({n} rank snapshots)"].median_ms

    def parse(n: int) -> float:
        return m[f"python: parse all {n} files only (tomllib)"].median_ms

    big, small = NWAY_SIZES[-1], NWAY_SIZES[0]
    out = [Check(f"{big}-way diff", t(big) / 1000, " s", 15.0)]
    out += [Check(f"{n}-way diff / tomllib parse of the same files", t(n) / parse(n), "x",
                  1.0 if n == big else None) for n in NWAY_SIZES]
    peak = m[f"runsnap diff ({big} rank snapshots)"].peak_mib
    if peak is not None:
        out.append(Check(f"{big}-way diff peak memory", peak, " MiB", 1024))
    # Linear growth: time per snapshot at the largest size against the smallest.
    out.append(Check(f"time per snapshot, {big} vs {small}", (t(big) / big) / (t(small) / small),
                     "x", 1.3))
    return out


#: Job size of the real-shaped N-way case (issue 26; 32,768 is measured by
#: ``--real-ranks 32768``, its parse-only peer takes tens of minutes).
REAL_SIZES = (4096,)


def _real_job(bench: Bench, n: int) -> list[Path]:
    from benchmarks import realranks

    root = bench.work / "snapshots" / f"real-{n}"
    stamp = root / ".stamp"
    want = f"v1 {n} {realranks.SOURCE.stat().st_size}"
    if stamp.exists() and stamp.read_text() == want:
        return sorted(root.glob("*.toml"))
    shutil.rmtree(root, ignore_errors=True)
    paths = realranks.write_job(root, n, log=None)
    stamp.write_text(want)
    return paths


def build_real_nway(bench: Bench) -> list[Command]:
    if not _has_diff(bench):
        raise Skip("feature not present (`runsnap diff` is not on this branch)")
    cmds = []
    for n in bench.real_sizes:
        files = _real_job(bench, n)
        cmds += [
            Command(f"runsnap diff ({n} real-shaped ranks)",
                    [*bench.runsnap, "diff", str(files[0].parent)], env=bench.env, ok=(0, 1)),
            Command(f"python: parse all {n} real-shaped files only (tomllib)",
                    [bench.python, "-c", _PARSE_ONLY, *map(str, files)], env=bench.env),
        ]
    return cmds


def checks_real_nway(m: dict[str, Measured]) -> list[Check]:
    out = []
    for label, x in m.items():
        if not label.startswith("runsnap diff ("):
            continue
        n = int(label.split("(")[1].split()[0])
        parse = m[f"python: parse all {n} real-shaped files only (tomllib)"].median_ms
        target = 0.15 if n <= 4096 else 0.2
        out.append(Check(f"{n}-way diff of real-shaped ranks / tomllib parse of the same files",
                         x.median_ms / parse, "x", target))
        out.append(Check(f"{n}-way diff of real-shaped ranks", x.median_ms / 1000, " s",
                         30.0 if n > 4096 else None))
        if x.peak_mib is not None:
            out.append(Check(f"{n}-way diff of real-shaped ranks, peak memory", x.peak_mib,
                             " MiB", 2048.0 if n > 4096 else None))
    return out


def build_real_pair(bench: Bench) -> list[Command]:
    if not _has_diff(bench):
        raise Skip("feature not present (`runsnap diff` is not on this branch)")
    files = _real_job(bench, bench.real_sizes[0])
    a, b = str(files[0]), str(files[1])
    return [
        Command("runsnap diff a b (two traced torch ranks)", [*bench.runsnap, "diff", a, b],
                env=bench.env, ok=(0, 1)),
        Command("python: parse both rank files only", [bench.python, "-c", _PARSE_ONLY, a, b],
                env=bench.env),
    ]


def checks_real_pair(m: dict[str, Measured]) -> list[Check]:
    return [Check("diff of two traced torch ranks / parse-only",
                  m["runsnap diff a b (two traced torch ranks)"].median_ms
                  / m["python: parse both rank files only"].median_ms, "x", 2.0)]


def notes_memory(m: dict[str, Measured]) -> list[str]:
    return [f"peak RSS of {label}: {x.peak_mib:.1f} MiB" for label, x in m.items()
            if label.startswith("runsnap") and x.peak_mib is not None]


#: Numbers of secret values of case 7, planted under neutral names (the subject: the largest).
SECRET_COUNTS = (10_000, 0, 1_250, 2_500, 5_000)


def _secret_values(n: int, seed: int) -> dict[str, str]:
    """``n`` variables with neutral names holding credentials: half in providers' formats
    (found by their rules), half opaque random strings (found by their shape)."""
    import random
    import string

    rng = random.Random(seed)
    alnum = string.ascii_letters + string.digits
    out = {}
    for i in range(n):
        body = "".join(rng.choice(alnum) for _ in range(36))
        value = (f"hf_{body[:34]}" if i % 4 == 0 else f"ghp_{body}" if i % 4 == 1
                 else body[:32] if i % 4 == 2 else f"{body}{body[:8]}==")
        out[f"SETTING_{i:05d}"] = value
    return out


def build_secrets(bench: Bench) -> list[Command]:
    """Case 7: capture with 0 to 10,000 secret values under neutral names, in a folder that is
    no git work tree and names no model, so that redaction is what grows."""
    import tempfile

    cwd = tempfile.mkdtemp(prefix="runsnap-bench-secrets-")
    cmds = []
    for n in SECRET_COUNTS:
        env = {**bench.env, **_secret_values(n, seed=n), "GIT_CEILING_DIRECTORIES": cwd}
        name = f"s{n}"
        cmds.append(Command(f"runsnap capture ({n:,} secrets under neutral names)",
                            _capture_cmd(bench, name), env=env, cwd=cwd,
                            before=_fresh(bench, name)))
        if bench.baseline and n in (0, 10_000):
            base = bench.out / f"{name}-base.toml"
            cmds.append(Command(f"baseline: runsnap capture ({n:,} secrets under neutral names)",
                                [*bench.baseline, "capture", "-o", str(base)], env=env, cwd=cwd,
                                before=lambda base=base: base.unlink(missing_ok=True)))
    return cmds


def checks_secrets(m: dict[str, Measured]) -> list[Check]:
    def t(n: int) -> float:
        return m[f"runsnap capture ({n:,} secrets under neutral names)"].median_ms

    def cpu(n: int) -> float:
        return m[f"runsnap capture ({n:,} secrets under neutral names)"].cpu_ms

    added = {n: t(n) - t(0) for n in SECRET_COUNTS if n}
    out = [Check("time added by 10,000 secrets", added[10_000] / 1000, " s", 1.0),
           Check("CPU time added by 10,000 secrets (what a loaded machine does not inflate)",
                 (cpu(10_000) - cpu(0)) / 1000, " s", 1.0)]
    out += [Check(f"time added per 1,000 secrets at {n:,}", added[n] / n * 1000, " ms", None)
            for n in sorted(added)]
    base = {n: m.get(f"baseline: runsnap capture ({n:,} secrets under neutral names)")
            for n in (0, 10_000)}
    if base[0] is not None and base[10_000] is not None:
        out += [Check("baseline tree: time added by 10,000 secrets",
                      (base[10_000].median_ms - base[0].median_ms) / 1000, " s", None),
                Check("baseline tree: CPU time added by 10,000 secrets",
                      (base[10_000].cpu_ms - base[0].cpu_ms) / 1000, " s", None)]
    # Linear growth: the time added per secret at 10,000 against 2,500 (quadratic: 4x).
    out.append(Check("time per secret, 10,000 vs 2,500",
                     (added[10_000] / 10_000) / max(added[2_500] / 2_500, 1e-9), "x", 1.5))
    return out


#: Megabytes of 71-byte lines relayed in case 10 (``--quick``: the smaller).
RELAY_MB = (200, 50)


def _relay_file(bench: Bench) -> Path:
    mb = RELAY_MB[bench.quick]
    path = bench.work / f"lines-{mb}.txt"
    if not path.exists():
        block = (b"x" * 70 + b"\n") * (10**6 // 71)
        with open(path, "wb") as fh:
            for _ in range(mb):
                fh.write(block)
    return path


def build_relay(bench: Bench) -> list[Command]:
    """Case 10 (issue 24): a wrapped command's output relayed by runsnap to a pipe, against a
    ``cat`` in runsnap's place, and runsnap's fixed cost (``capture -- true``) to subtract."""
    data = _relay_file(bench)
    env, cwd = bench.env, str(bench.repo)

    def piped(runsnap: list[str], name: str) -> list[str]:
        out = bench.out / f"{name}.toml"
        return ["sh", "-c", f"rm -f {out}; {' '.join(runsnap)} capture -o {out} -- cat {data} "
                f"| cat >/dev/null"]

    def alone(runsnap: list[str], name: str) -> list[str]:
        out = bench.out / f"{name}.toml"
        return ["sh", "-c", f"rm -f {out}; {' '.join(runsnap)} capture -o {out} -- true"]

    mb = RELAY_MB[bench.quick]
    cmds = [Command(f"runsnap capture -- cat {mb} MB, into a pipe", piped(bench.runsnap, "r10"),
                    env=env, cwd=cwd),
            Command(f"cat {mb} MB, through a cat into a pipe (a cat in runsnap's place)",
                    ["sh", "-c", f"cat {data} | cat | cat >/dev/null"], env=env, cwd=cwd),
            Command("runsnap capture -- true (fixed cost)", alone(bench.runsnap, "r10t"),
                    env=env, cwd=cwd)]
    if bench.baseline:
        cmds += [Command(f"baseline: runsnap capture -- cat {mb} MB, into a pipe",
                         piped(bench.baseline, "r10b"), env=env, cwd=cwd),
                 Command("baseline: runsnap capture -- true (fixed cost)",
                         alone(bench.baseline, "r10bt"), env=env, cwd=cwd)]
    return cmds


def checks_relay(m: dict[str, Measured]) -> list[Check]:
    subject, cat, fixed = (m[k] for k in m if not k.startswith("baseline"))
    net = max(subject.median_ms - fixed.median_ms, 1e-3)
    cpu_net = max(subject.cpu_ms - fixed.cpu_ms, 1e-3)
    out = [Check("relay speed / cat's (wall, runsnap's fixed cost removed), inverted: "
                 "runsnap's relay time / cat's", net / cat.median_ms, "x", 2.0),
           Check("relay CPU / the cat pipeline's CPU (fixed cost removed)",
                 cpu_net / max(cat.cpu_ms, 1e-3), "x", None)]
    base = [m[k] for k in m if k.startswith("baseline")]
    if len(base) == 2:
        out.append(Check("baseline tree: relay time / cat's (fixed cost removed)",
                         max(base[0].median_ms - base[1].median_ms, 1e-3) / cat.median_ms,
                         "x", None))
    return out


def notes_relay(m: dict[str, Measured]) -> list[str]:
    subject, cat, fixed = (m[k] for k in m if not k.startswith("baseline"))
    net = max(subject.median_ms - fixed.median_ms, 1e-3)
    return [f"relay at {cat.median_ms / net:.2f}x the speed of cat (target >= 0.5x: the "
            "check above is its inverse, target <= 2x)"]


def build_metrics(bench: Bench) -> list[Command]:
    """Case 11 (issue 22): the key=value metric extraction over a training log (100 MB;
    ``--quick``: 20 MB) against a plain Python line loop and ``grep -c`` over the same file."""
    mb = 20 if bench.quick else 100
    log = bench.work / f"train-{mb}.log"
    if not log.exists():
        from benchmarks.metrics import make_log

        make_log(log, mb)
    one = [bench.python, str(HERE / "metrics.py"), "--log", str(log), "--one"]
    cmds = [Command("metric extraction (MetricWatch)", [*one, "metrics"], env=bench.env),
            Command("python: for line in file: b'loss=' in line", [*one, "loop"], env=bench.env),
            # to a file: GNU grep stops at the first match when its output is /dev/null
            Command("grep -c loss=", ["sh", "-c", f"grep -c loss= {log} >{bench.out}/grep.out"],
                    env=bench.env),
            Command("StreamWatch (relay's scan: errors, warnings, tail, metrics)",
                    [*one, "watch"], env=bench.env)]
    if bench.baseline:
        root = bench.baseline_root
        env = {**bench.env, "PYTHONPATH": str(root)}
        cmds += [Command("baseline: metric extraction (MetricWatch)", [*one, "metrics"], env=env),
                 Command("baseline: StreamWatch", [*one, "watch"], env=env)]
    return cmds


def checks_metrics(m: dict[str, Measured]) -> list[Check]:
    ext, loop = m["metric extraction (MetricWatch)"], m["python: for line in file: b'loss=' in line"]
    out = [Check("metric extraction / python line loop", ext.median_ms / loop.median_ms, "x",
                 1.5),
           Check("metric extraction / grep -c", ext.median_ms / m["grep -c loss="].median_ms, "x",
                 None)]
    base = m.get("baseline: metric extraction (MetricWatch)")
    if base is not None:
        out.append(Check("baseline tree: metric extraction / python line loop",
                         base.median_ms / loop.median_ms, "x", None))
    return out


#: The cases, in order. Later features add their own entry (subject against its own peer).
def build_why(bench: Bench) -> list[Command]:
    """The README's demo captured good and bad (traced, as a user captures), then ``runsnap
    why`` (BAD the newest, GOOD found in the folder; the evidence is confident, so nothing is
    launched) against the plain ``runsnap diff`` of the same two files."""
    if bench.run_help("why", "--help").returncode != 0:
        raise Skip("feature not present (`runsnap why` is not on this branch)")
    where = bench.work / "why-demo"
    store = where / ".runsnap"
    # the README's shell, not the benchmark's (whose generated variables include NCCL_* and
    # SGLANG_* ones): the bad launch must fail as the demo's does
    env = {k: bench.env[k] for k in ("PATH", "HOME", "LANG", "RUNSNAP_KEY_FILE",
                                     "RUNSNAP_CACHE_DIR") if k in bench.env}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    if not (store / "bad.toml").exists():
        where.mkdir(parents=True, exist_ok=True)
        if not (where / "fixtures").exists():
            (where / "fixtures").symlink_to(ROOT / "fixtures")
        demo = ["python3", "fixtures/demo/launch_server.py", "--model-path",
                "fixtures/models/kimi-k2.5-target", "--speculative-algorithm", "EAGLE3",
                "--speculative-draft-model-path", "fixtures/models/kimi-k2.5-eagle3-draft",
                "--speculative-num-steps"]
        for label, extra, steps in (
                ("good", {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1",
                          "NCCL_IB_DISABLE": "1", "NCCL_MIN_NCHANNELS": "4"}, "2"),
                ("bad", {"NCCL_IB_DISABLE": "0", "NCCL_ALGO": "Ring"}, "3")):
            subprocess.run([*bench.runsnap, "capture", "--label", label, "-o",
                            str(store / f"{label}.toml"), "--", *demo, steps],
                           env={**env, **extra}, cwd=where, capture_output=True,
                           timeout=300)
            time.sleep(0.01)
    return [
        Command("runsnap why (README demo: confident, nothing launched)",
                [*bench.runsnap, "why"], env=env, cwd=str(where), ok=(0,)),
        Command("runsnap diff .runsnap/good.toml .runsnap/bad.toml (the same two)",
                [*bench.runsnap, "diff", ".runsnap/good.toml", ".runsnap/bad.toml"],
                env=env, cwd=str(where), ok=(1,)),
    ]


def checks_why(m: dict[str, Measured]) -> list[Check]:
    why, diff = m.values()
    return [Check("why / diff (wall)", why.median_ms / diff.median_ms, "x", 1.2),
            Check("why / diff (CPU)", why.cpu_ms / max(diff.cpu_ms, 1e-3), "x", None)]


CASES: list[Case] = [
    Case("1", "capture with no command vs pip freeze, collect_env and the floor", build_capture,
         checks_capture, notes=notes_capture),
    Case("2", "the launch wrapper's added cost before the child starts and after it exits",
         build_wrapper, checks_wrapper),
    Case("3", "diff of two 1 MiB snapshots vs a process that only parses both", build_diff,
         checks_diff, notes=notes_memory),
    Case("4", "start-up: --version and --help vs importing click", build_startup,
         checks_startup),
    Case("5", "N-way diff of 256, 1,024 and 4,096 rank snapshots vs parsing them with tomllib",
         build_nway, checks_nway, repeat=lambda n: max(3, n // 4), notes=notes_memory),
    Case("7", "secrets under neutral names: capture with 0 to 10,000, the growth of its time",
         build_secrets, checks_secrets, repeat=lambda n: max(3, n // 2)),
    Case("8", "N-way diff of real-shaped rank snapshots (a real traced torch rank, varied as "
         "ranks vary; benchmarks/realranks.py) vs parsing them with tomllib", build_real_nway,
         checks_real_nway, repeat=lambda n: 1 if n > 3 else n, notes=notes_memory),
    Case("9", "diff of two traced torch rank snapshots (schema 2) vs a process that only "
         "parses both", build_real_pair, checks_real_pair, notes=notes_memory),
    Case("10", "relay throughput: 71-byte lines through runsnap to a pipe vs a cat in its place",
         build_relay, checks_relay, repeat=lambda n: max(3, n // 2), notes=notes_relay),
    Case("11", "metric extraction over a training log vs a Python line loop and grep -c",
         build_metrics, checks_metrics, repeat=lambda n: max(3, n // 3)),
    Case("12", "runsnap why on a confident incident (the README demo) vs runsnap diff of the "
         "same two snapshots", build_why, checks_why),
]
# Case 6 (peak memory) is the "peak RSS" column of every table and the notes under 1, 3, 5.


# --------------------------------------------------------------------------- main


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as fh:
            kib = int(next(ln for ln in fh if ln.startswith("MemTotal")).split()[1])
        mem = f", {kib / 1024 / 1024:.0f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        pass
    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    return (f"{platform.node()}: {cpu}, {os.cpu_count()} logical CPUs{mem}; "
            f"{platform.system()} {platform.release()}; Python {platform.python_version()}; "
            f"{git_version}")


NOTES_HEADING = "## Notes (hand-written"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="5 rounds, no collect_env peer, no torch install (well under a minute)")
    ap.add_argument("--repeat", type=int, default=None, help="rounds per case (default 11)")
    ap.add_argument("--no-torch", action="store_true",
                    help="do not install torch (~50 s, ~900 MB, once) for the collect_env peer")
    ap.add_argument("--real-ranks", type=int, action="append", default=[], metavar="N",
                    help="job sizes of case 8 (default: 4096)")
    ap.add_argument("--only", action="append", default=[], metavar="CASE",
                    help="run only this case number (repeatable)")
    ap.add_argument("--work", type=Path, default=HERE / ".work", help="input cache directory")
    ap.add_argument("--out", type=Path, default=None, help="also write the report here (Markdown)")
    ap.add_argument("--baseline", type=Path, default=None, metavar="TREE",
                    help="also measure runsnap from this source tree in case 1 (e.g. a git "
                         "worktree of main), to measure a change in the same run")
    args = ap.parse_args(argv)
    rounds = args.repeat or (5 if args.quick else 11)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    t_build = time.perf_counter()
    venv = inputs.build_venv(work, with_torch=not (args.quick or args.no_torch), log=log)
    repo = inputs.build_repo(work, log=log)
    models = inputs.build_models(work, log=log)
    pair, ranks = inputs.build_snapshots(work, log=log)
    rank_sets = {n: inputs.build_rank_set(work, n, log=log) for n in NWAY_SIZES}
    out = work / "out"
    out.mkdir(exist_ok=True)
    log(f"inputs ready in {time.perf_counter() - t_build:.1f}s")
    python, runsnap = install_runsnap(work)
    baseline = (install_runsnap(work, args.baseline.resolve(), "baseline-venv")[1]
                if args.baseline else None)
    bench = Bench(work=work, out=out, venv=venv, repo=repo, models=models, snapshots=pair,
                  ranks=ranks, rank_sets=rank_sets, runsnap=runsnap, python=python, env=child_env(work, venv),
                  quick=args.quick, baseline=baseline,
                  baseline_root=args.baseline.resolve() if args.baseline else None,
                  real_sizes=tuple(args.real_ranks) or REAL_SIZES)

    load_before = os.getloadavg()
    t0 = time.perf_counter()
    results = []
    for case in CASES:
        if args.only and case.key not in args.only:
            continue
        log(f"case {case.key}: {case.title}")
        results.append(run_case(case, bench, rounds, progress=log))
    elapsed = time.perf_counter() - t0
    load_after = os.getloadavg()

    command = "python benchmarks/run.py " + " ".join(argv if argv is not None else sys.argv[1:])
    sizes = {p.name: p.stat().st_size for p in pair}
    header = [
        "# runsnap benchmark results",
        "",
        f"- date: {_dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {machine()}",
        f"- command: `{command.strip()}` ({rounds} rounds after one warm-up round, commands "
        f"interleaved; measured in {elapsed:.0f}s)",
        f"- load average before / after: {load_before[0]:.2f} / {load_after[0]:.2f} "
        "(other work shares this machine)",
        f"- inputs: venv of {venv.count} distributions ({'with' if venv.has_torch else 'without'}"
        f" torch; 2 editable git checkouts), a {_count_files(repo)}-file git repository with "
        f"history and a dirty state ({_diff_size(repo) // 1024} KiB diff), 2 model directories "
        f"(64 + 1 sparse weight files), snapshots of {sizes[pair[0].name] // 1024} and "
        f"{sizes[pair[1].name] // 1024} KiB; jobs of "
        f"{', '.join(f'{n:,}' for n in NWAY_SIZES)} rank snapshots of "
        f"{rank_sets[NWAY_SIZES[0]][0].stat().st_size // 1024} KiB each (8 ranks a host, each "
        "with its own [meta], [outcome] and launcher variables)",
        f"- runsnap: this working tree, run as a regular install ({' '.join(bench.runsnap)}; "
        "see `install_runsnap` in run.py)",
        "",
        "Ratios are between medians of the same run; \"subject / this\" divides the case's first "
        "command by each row.",
        "",
    ]
    report = "\n".join(header) + render(results)
    print(report)
    if args.out:
        # Hand-written notes below NOTES_HEADING in the old file survive a new run.
        old = args.out.read_text() if args.out.exists() else ""
        notes = old[old.index(NOTES_HEADING):] if NOTES_HEADING in old else ""
        args.out.write_text(report.rstrip() + "\n\n" + notes if notes else report)
        log(f"wrote {args.out}")
    return 1 if any(r.failed for r in results) else 0


def _count_files(repo: Path) -> int:
    out = subprocess.run(["git", "-C", str(repo), "ls-files"], capture_output=True, text=True)
    return len(out.stdout.splitlines())


def _diff_size(repo: Path) -> int:
    out = subprocess.run(["git", "-C", str(repo), "diff", "HEAD"], capture_output=True)
    return len(out.stdout)


if __name__ == "__main__":
    sys.exit(main())
