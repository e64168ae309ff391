"""Realistic inputs for the benchmark, built once into a cache directory and reused.

* a virtual environment with many distributions (generated ``*.dist-info`` exactly as pip
  writes them, so ``pip freeze`` and ``importlib.metadata`` accept them) and two real editable
  installs of git checkouts; optionally torch;
* a git repository of about 3,000 files with history and a dirty state (20 modified files,
  untracked files, one large diff);
* two model directories with real-shaped configs, side files and (sparse) weight files;
* snapshots for the diff cases: two of about 1 MiB, and 256 rank snapshots.

Standard library and runsnap only. Every builder is deterministic (seeded) and writes a
``.done`` stamp holding its parameters, so a second run reuses what is there.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_MODELS = ROOT / "fixtures" / "models"

_WORDS = (
    "alpha bravo cobalt delta ember flux garnet harbor iris jade kelp lumen maple nova onyx "
    "pixel quartz raven sable tidal umber vector willow xenon yarrow zephyr amber basalt cedar "
    "dune"
).split()

_GIT_ID = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` with a fixed identity and no user configuration."""
    env = {**os.environ, **_GIT_ID, "HOME": str(cwd)}
    out = subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=cwd, env=env,
                         check=True, capture_output=True, text=True)
    return out.stdout


def _stamp_ok(path: Path, params: dict[str, Any]) -> bool:
    stamp = path / ".done"
    return stamp.is_file() and stamp.read_text() == json.dumps(params, sort_keys=True)


def _stamp(path: Path, params: dict[str, Any]) -> None:
    (path / ".done").write_text(json.dumps(params, sort_keys=True))


def _fresh(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)


# --------------------------------------------------------------------------- venv


@dataclass(frozen=True)
class Venv:
    """The benchmark's virtual environment."""

    path: Path
    python: Path
    pip: Path
    site: Path
    editables: tuple[Path, ...]
    has_torch: bool
    count: int
    """Distributions installed (pip's own and the generated ones included)."""


def _metadata(name: str, version: str, rng: random.Random) -> str:
    """A METADATA file shaped like a real wheel's: ~25 header lines, then a long description."""
    deps = rng.sample(_WORDS, 4)
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {name}",
        f"Version: {version}",
        f"Summary: The {name} library for benchmarking runsnap",
        f"Home-page: https://example.com/{name}",
        "Author: Bench Author",
        "Author-email: bench@example.com",
        "License: Apache-2.0",
        f"Project-URL: Source, https://github.com/example/{name}",
        f"Project-URL: Documentation, https://{name}.readthedocs.io",
        "Classifier: Development Status :: 5 - Production/Stable",
        "Classifier: Intended Audience :: Developers",
        "Classifier: License :: OSI Approved :: Apache Software License",
        "Classifier: Operating System :: OS Independent",
        "Classifier: Programming Language :: Python :: 3",
        "Classifier: Programming Language :: Python :: 3.10",
        "Classifier: Programming Language :: Python :: 3.11",
        "Classifier: Programming Language :: Python :: 3.12",
        "Classifier: Topic :: Scientific/Engineering :: Artificial Intelligence",
        "Requires-Python: >=3.8",
        "Description-Content-Type: text/markdown",
        *(f"Requires-Dist: rsbench-{d}-x>=1.0; extra == \"all\"" for d in deps),
        "Provides-Extra: all",
    ]
    body = "\n".join(
        f"{name} paragraph {i}: " + " ".join(rng.choices(_WORDS, k=40)) for i in range(12)
    )
    return "\n".join(lines) + "\n\n# " + name + "\n\n" + body + "\n"


def _write_dist(site: Path, name: str, version: str, rng: random.Random) -> None:
    """A distribution as pip installs it from a wheel: package, dist-info, RECORD."""
    mod = name.replace("-", "_")
    pkg = site / mod
    pkg.mkdir()
    files = {f"{mod}/__init__.py": f'"""{name}."""\n__version__ = "{version}"\n'}
    for sub in rng.sample(_WORDS, 3):
        files[f"{mod}/{sub}.py"] = f"def {sub}():\n    return {rng.randint(0, 999)}\n" * 20
    for rel, text in files.items():
        (site / rel).write_text(text)
    info_rel = f"{mod}-{version}.dist-info"
    info = site / info_rel
    info.mkdir()
    meta = {
        "METADATA": _metadata(name, version, rng),
        "WHEEL": "Wheel-Version: 1.0\nGenerator: bdist_wheel (0.43.0)\nRoot-Is-Purelib: true\n"
                 "Tag: py3-none-any\n",
        "INSTALLER": "pip\n",
        "top_level.txt": mod + "\n",
    }
    for fname, text in meta.items():
        (info / fname).write_text(text)
    import base64
    import hashlib

    record = []
    for rel in [*files, *(f"{info_rel}/{f}" for f in meta)]:
        data = (site / rel).read_bytes()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{rel},sha256={digest},{len(data)}")
    record.append(f"{info_rel}/RECORD,,")
    (info / "RECORD").write_text("\n".join(record) + "\n")


def _editable_source(path: Path, name: str) -> None:
    """A small project in a git checkout with history and an origin remote."""
    _fresh(path)
    mod = name.replace("-", "_")
    (path / "pyproject.toml").write_text(
        "[build-system]\nrequires = [\"setuptools>=64\"]\nbuild-backend = \"setuptools.build_meta\"\n\n"
        f"[project]\nname = \"{name}\"\nversion = \"0.3.0\"\n\n"
        f"[tool.setuptools]\npackages = [\"{mod}\"]\n"
    )
    (path / mod).mkdir()
    git(path, "init", "-q")
    for i in range(3):
        for j in range(10):
            (path / mod / f"m{j}.py").write_text(f"VALUE = {i * 100 + j}\n" * (20 + i))
        (path / mod / "__init__.py").write_text(f"REVISION = {i}\n")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"{name} change {i}")
    git(path, "remote", "add", "origin", f"https://github.com/example/{name}.git")
    (path / mod / "m0.py").write_text("VALUE = 'edited'\n")  # a dirty editable checkout


def _write_editable(site: Path, name: str, version: str, src: Path, rng: random.Random) -> None:
    """An editable install exactly as pip leaves one for a PEP 660 build: a dist-info whose
    ``direct_url.json`` says ``dir_info.editable`` and a ``__editable__`` .pth naming the checkout
    (written directly: building it with pip needs ``wheel``, which this machine may not have)."""
    mod = name.replace("-", "_")
    info_rel = f"{mod}-{version}.dist-info"
    info = site / info_rel
    info.mkdir()
    pth = f"__editable__.{mod}-{version}.pth"
    files = {
        f"{info_rel}/METADATA": _metadata(name, version, rng),
        f"{info_rel}/WHEEL": "Wheel-Version: 1.0\nGenerator: setuptools (75.0.0)\n"
                             "Root-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info_rel}/INSTALLER": "pip\n",
        f"{info_rel}/REQUESTED": "",
        f"{info_rel}/top_level.txt": mod + "\n",
        f"{info_rel}/direct_url.json": json.dumps(
            {"dir_info": {"editable": True}, "url": src.as_uri()}),
        pth: str(src) + "\n",
    }
    for rel, text in files.items():
        (site / rel).write_text(text)
    (info / "RECORD").write_text("".join(f"{rel},,\n" for rel in [*files, f"{info_rel}/RECORD"]))


def build_venv(work: Path, n_dists: int = 150, with_torch: bool = False,
               log: Any = print, with_pip: bool = True) -> Venv:
    """The venv: pip, ``n_dists`` generated distributions, two editable installs, torch if asked."""
    path = work / "venv"
    params: dict[str, Any] = {"n": n_dists, "v": 2, "py": sys.version.split()[0]}
    if not with_pip:
        params["pip"] = False
    python = path / "bin" / "python"
    if not _stamp_ok(path, params):
        log(f"building venv with {n_dists} generated distributions in {path} ...")
        _fresh(path)
        subprocess.run([sys.executable, "-m", "venv", *([] if with_pip else ["--without-pip"]),
                        str(path)], check=True)
        site = Path(subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            text=True).strip())
        rng = random.Random(5)
        for i in range(n_dists):
            name = f"rsbench-{_WORDS[i % len(_WORDS)]}-{i:03d}"
            _write_dist(site, name, f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}",
                        rng)
        srcs = work / "src"
        srcs.mkdir(exist_ok=True)
        for name in ("alpha-lib", "beta-lib"):
            _editable_source(srcs / name, name)
            _write_editable(site, name, "0.3.0", srcs / name, rng)
        _stamp(path, params)
    if with_torch and not _has_torch(python):
        log("installing torch==2.13.0 into the benchmark venv (CPU wheel) ...")
        subprocess.run([str(path / "bin" / "pip"), "install", "-q", "torch==2.13.0"], check=True)
    site = Path(subprocess.check_output(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        text=True).strip())
    count = sum(1 for e in os.listdir(site) if e.endswith(".dist-info"))
    return Venv(path=path, python=python, pip=path / "bin" / "pip", site=site,
                editables=(work / "src" / "alpha-lib", work / "src" / "beta-lib"),
                has_torch=_has_torch(python), count=count)


def _has_torch(python: Path) -> bool:
    site_check = "import importlib.util,sys; sys.exit(importlib.util.find_spec('torch') is None)"
    return python.exists() and subprocess.run([str(python), "-c", site_check]).returncode == 0


# --------------------------------------------------------------------------- git repository


def _source_file(rng: random.Random, n_funcs: int) -> str:
    out = ['"""Generated module."""', "", "import os", ""]
    for i in range(n_funcs):
        a, b = rng.sample(_WORDS, 2)
        out += [f"def {a}_{b}_{i}(x, y={rng.randint(0, 99)}):",
                f"    \"\"\"Combine {a} and {b}.\"\"\"",
                f"    if x > {rng.randint(0, 999)}:",
                f"        return os.environ.get('{a.upper()}_{b.upper()}', x + y)",
                f"    return x * {rng.randint(2, 9)} - y", ""]
    return "\n".join(out) + "\n"


def build_repo(work: Path, n_files: int = 3000, large_diff_kib: int = 300,
               log: Any = print) -> Path:
    """A repository of ``n_files`` files, five commits, and a realistic dirty state."""
    path = work / "repo"
    params = {"n": n_files, "large": large_diff_kib, "v": 1}
    if _stamp_ok(path, params):
        return path
    log(f"building a {n_files}-file git repository in {path} ...")
    _fresh(path)
    rng = random.Random(7)
    files: list[Path] = []
    per_dir = 50
    for i in range(n_files):
        d = path / "src" / f"pkg{i // per_dir:02d}"
        d.mkdir(parents=True, exist_ok=True)
        f = d / f"mod_{i:04d}.py"
        f.write_text(_source_file(rng, rng.randint(4, 30)))
        files.append(f)
    big = path / "data" / "table.csv"
    big.parent.mkdir()
    rows = (large_diff_kib * 1024) // 40
    big.write_text("".join(f"{i},{rng.random():.8f},{rng.choice(_WORDS)}\n" for i in range(rows)))
    (path / ".gitignore").write_text("*.pyc\n__pycache__/\n/build/\n.runsnap/\n")
    (path / "README.md").write_text("# bench repo\n")
    git(path, "init", "-q")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial import")
    for c in range(4):  # history
        for f in rng.sample(files, min(40, len(files))):
            f.write_text(_source_file(rng, rng.randint(4, 30)))
        git(path, "commit", "-q", "-am", f"change {c}")
    git(path, "tag", "v1.0")
    git(path, "remote", "add", "origin", "https://github.com/example/bench-repo.git")
    # The dirty state: 20 modified files, one large diff, untracked files.
    for f in rng.sample(files, min(20, len(files))):
        with f.open("a") as fh:
            fh.write(f"\n\ndef patched_{rng.randint(0, 9999)}():\n    return 'local edit'\n")
    big.write_text("".join(f"{i},{rng.random():.8f},{rng.choice(_WORDS)}\n" for i in range(rows)))
    scratch = path / "scratch"
    scratch.mkdir()
    for i in range(12):
        (scratch / f"notes_{i}.txt").write_text("note " * rng.randint(10, 4000))
    (scratch / "dump.bin").write_bytes(os.urandom(2 * 1024 * 1024))  # too big to hash
    (path / "build").mkdir()
    (path / "build" / "ignored.o").write_bytes(b"\0" * 1000)
    _stamp(path, params)
    return path


# --------------------------------------------------------------------------- models


def build_models(work: Path, log: Any = print, tokenizer_lines: int = 160_000
                 ) -> tuple[Path, Path]:
    """A Kimi-K2.5-shaped target and its EAGLE-3 draft: configs, side files, sparse weights."""
    root = work / "models"
    params: dict[str, Any] = {"v": 1}
    if tokenizer_lines != 160_000:
        params["tok"] = tokenizer_lines
    target, draft = root / "kimi-k2.5", root / "kimi-k2.5-eagle3"
    if _stamp_ok(root, params):
        return target, draft
    log(f"building model directories in {root} ...")
    _fresh(root)
    rng = random.Random(11)
    for src, dst, shards in ((FIXTURE_MODELS / "kimi-k2.5-target", target, 64),
                             (FIXTURE_MODELS / "kimi-k2.5-eagle3-draft", draft, 1)):
        dst.mkdir()
        for name in ("config.json", "generation_config.json", "tokenizer_config.json"):
            if (src / name).is_file():
                shutil.copy(src / name, dst / name)
        names = ([f"model-{i:05d}-of-{shards:05d}.safetensors" for i in range(1, shards + 1)]
                 if shards > 1 else ["model.safetensors"])
        for n in names:  # sparse: sizes are real, the disk is not used
            with (dst / n).open("wb") as fh:
                fh.truncate(rng.randint(4_000_000_000, 5_000_000_000) if shards > 1
                            else 2_400_000_000)
        if shards > 1:
            weight_map = {f"language_model.model.layers.{layer}.mlp.experts.{e}.{w}.weight":
                          rng.choice(names) for layer in range(8) for e in range(48)
                          for w in ("gate_proj", "up_proj", "down_proj")}
            (dst / "model.safetensors.index.json").write_text(json.dumps(
                {"metadata": {"total_size": 1_000_000_000_000}, "weight_map": weight_map},
                indent=2))
            (dst / "tiktoken.model").write_text("".join(
                f"{os.urandom(6).hex()} {i}\n" for i in range(tokenizer_lines)))
            (dst / "chat_template.jinja").write_text("{% for m in messages %}{{ m }}{% endfor %}\n")
    _stamp(root, params)
    return target, draft


# --------------------------------------------------------------------------- snapshots


def _big_sections(rng: random.Random, n_vars: int, n_pkgs: int, diff_kib: int,
                  cfg_keys: int) -> dict[str, Any]:
    env = {f"NCCL_VAR_{i:03d}" if i % 3 == 0 else f"APP_SETTING_{i:03d}":
           f"value-{rng.randint(0, 10**9)}" for i in range(n_vars)}
    env.update(PATH="/usr/local/bin:/usr/bin:/bin", HOME="/home/bench", RANK="0", LOCAL_RANK="0",
               SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN="1")
    dists = {f"dist-{i:03d}": {"version": f"{i % 7}.{i % 13}.{i % 5}",
                               "location": "/opt/venv/lib/python3.11/site-packages"}
             for i in range(n_pkgs)}
    diff_lines = []
    size = 0
    i = 0
    while size < diff_kib * 1024:
        line = f"+    value_{i} = compute({rng.randint(0, 10**6)}, '{rng.choice(_WORDS)}')\n"
        diff_lines.append(line)
        size += len(line)
        i += 1
    diff = "diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n@@ -1,3 +1,9 @@\n"
    diff += "".join(diff_lines)

    def config(prefix: str) -> dict[str, Any]:
        return {f"{prefix}_key_{k:02d}": (rng.randint(0, 10**6) if k % 3 else f"v{k}")
                for k in range(cfg_keys)}

    return {
        "command": {"argv": ["python", "-m", "sglang.launch_server", "--model-path", "/m/t"],
                    "cwd": "/work", "executable": "/opt/venv/bin/python",
                    "executable_real": "/usr/bin/python3.11",
                    "options": {"model-path": "/m/t"}, "errors": []},
        "env": {"count": len(env), "vars": dict(sorted(env.items())), "errors": []},
        "packages": {"interpreter": "/opt/venv/bin/python", "count": len(dists),
                     "distributions": dists, "errors": []},
        "git": {"repos": {"work": {"path": "/work", "commit": "a" * 40, "branch": "main",
                                    "dirty": True, "diff": diff, "diff_bytes": len(diff),
                                    "changed": [{"path": f"src/f{j}.py", "status": ".M"}
                                                for j in range(20)], "errors": []}},
                "errors": []},
        "models": {"models": {
            "--model-path": {"path": "/m/t", "config": config("target"), "errors": []},
            "--speculative-draft-model-path": {"path": "/m/d", "config": config("draft"),
                                               "errors": []}},
            "errors": []},
        "system": {"host": "node-00", "os": "Ubuntu 22.04", "errors": []},
    }


def _meta(i: int, host: str) -> dict[str, Any]:
    return {"runsnap_version": "bench", "captured_at": f"2026-01-01T00:00:{i % 60:02d}.000+00:00",
            "label": f"bench-{i}", "host": host, "id": f"{i:032x}", "fingerprint_key": "bench",
            "redacted": [], "collect_ms": {}}


def build_snapshots(work: Path, log: Any = print, n_ranks: int = 256, diff_kib: int = 960
                    ) -> tuple[tuple[Path, Path], list[Path]]:
    """Two ~1 MiB snapshots that differ in a few places, and ``n_ranks`` rank snapshots."""
    from runsnap.snapshot import Snapshot

    root = work / "snapshots"
    params: dict[str, Any] = {"v": 2}
    if (n_ranks, diff_kib) != (256, 960):
        params.update(ranks=n_ranks, diff=diff_kib)
    pair = (root / "big-a.toml", root / "big-b.toml")
    ranks = [root / "ranks" / f"rank-{r:03d}.toml" for r in range(n_ranks)]
    if _stamp_ok(root, params):
        return pair, ranks
    log(f"writing benchmark snapshots in {root} ...")
    _fresh(root)
    (root / "ranks").mkdir()
    a = _big_sections(random.Random(3), 500, 400, diff_kib, 60)
    b = json.loads(json.dumps(a))
    b["env"]["vars"].pop("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN")
    b["env"]["vars"]["NCCL_VAR_003"] = "changed"
    b["packages"]["distributions"]["dist-010"]["version"] = "9.9.9"
    b["models"]["models"]["--model-path"]["config"]["target_key_01"] = -1
    b["git"]["repos"]["work"]["diff"] = b["git"]["repos"]["work"]["diff"].replace("value_7 ", "VALUE_7 ")
    Snapshot(meta=_meta(1, "node-00"), sections=a).save(pair[0])
    Snapshot(meta=_meta(2, "node-00"), sections=b).save(pair[1])
    base = _big_sections(random.Random(4), 150, 150, 8, 60)
    for r, path in enumerate(ranks):
        s = json.loads(json.dumps(base))
        host = f"node-{r // 8:02d}"
        s["env"]["vars"].update(RANK=str(r), LOCAL_RANK=str(r % 8), GROUP_RANK=str(r // 8))
        s["system"]["host"] = host
        if r == 137 % n_ranks:  # the odd one
            s["env"]["vars"]["NCCL_VAR_003"] = "odd"
            s["packages"]["distributions"]["dist-020"]["version"] = "0.0.1"
        Snapshot(meta=_meta(r, host), sections=s).save(path)
    _stamp(root, params)
    return pair, ranks


def build_rank_set(work: Path, n_ranks: int, log: Any = print, per_node: int = 8) -> list[Path]:
    """``n_ranks`` snapshots of one job's ranks, ``per_node`` to a host, as ``srun runsnap
    capture -o snaps/{job}/{host}-{rank}.toml -- ...`` writes them: each with its rank's
    launcher variables, its host, its own [meta] and [outcome]. Odd ones out: rank 137 (a
    variable and a package version) and every rank of the 8th node (NCCL_IB_HCA)."""
    from runsnap.snapshot import Snapshot, dumps

    root = work / "snapshots" / f"ranks-{n_ranks}"
    params: dict[str, Any] = {"v": 1, "ranks": n_ranks, "per_node": per_node}
    paths = [root / f"node-{r // per_node:03d}-{r:05d}.toml" for r in range(n_ranks)]
    if _stamp_ok(root, params):
        return paths
    log(f"writing {n_ranks} rank snapshots in {root} ...")
    _fresh(root)
    base = _big_sections(random.Random(4), 150, 150, 8, 60)
    base["env"]["vars"]["NCCL_IB_HCA"] = "mlx5_0"
    text = json.dumps(base)
    for r, path in enumerate(paths):
        s = json.loads(text)
        node = r // per_node
        host = f"node-{node:03d}"
        rank_vars = {"RANK": str(r), "LOCAL_RANK": str(r % per_node), "GROUP_RANK": str(node),
                     "WORLD_SIZE": str(n_ranks), "LOCAL_WORLD_SIZE": str(per_node),
                     "SLURM_JOB_ID": "4242", "SLURM_PROCID": str(node), "SLURM_NODEID": str(node),
                     "TORCHELASTIC_RUN_ID": "4242"}
        s["env"]["vars"].update(rank_vars)
        s["system"]["host"] = host
        if node == 7 % max(1, n_ranks // per_node):
            s["env"]["vars"]["NCCL_IB_HCA"] = "mlx5_1"
        if r == 137 % n_ranks:
            s["env"]["vars"]["NCCL_VAR_003"] = "odd"
            s["packages"]["distributions"]["dist-020"]["version"] = "0.0.1"
        s["outcome"] = {"status": "exited", "exit_status": 0, "pid": 10000 + r,
                        "started_at": f"2026-01-01T00:00:{r % 60:02d}.000+00:00",
                        "duration_s": 100.0 + r / 1000, "errors": []}
        meta = _meta(r, host)
        meta["launcher"] = {"name": "torchrun", "rank": r, "local_rank": r % per_node,
                            "world_size": n_ranks, "node_rank": node, "job": "4242",
                            "vars": rank_vars}
        path.write_text(dumps(Snapshot(meta=meta, sections=s)))
    _stamp(root, params)
    return paths
