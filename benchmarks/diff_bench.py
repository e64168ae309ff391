"""Benchmark: diff two ~1 MiB snapshots (500 variables, 400 packages, two 60-key model configs,
a large uncommitted git diff), from files on disk to a rendered report.

    .venv/bin/python benchmarks/diff_bench.py [--repeat N]

Both snapshots start from one real capture of this machine; the big sections are filled in
with generated, real-shaped data, and B differs from A in 20 variables, 12 packages, 6 config
fields, 10 files of the git diff and 3 untracked files. Prints the median of N runs of each
step (load both, compare, render text / json), of the whole in-process, and of a whole
``python -m runsnap diff A B`` process (interpreter start-up included).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import runsnap  # noqa: E402
from runsnap.diffing import compare  # noqa: E402
from runsnap.diffing.render import render  # noqa: E402
from runsnap.snapshot import load  # noqa: E402


def patch(path: str, lines: int, salt: str) -> str:
    body = "\n".join(f"+    value_{i} = compute_{i}(x, y, z)  # {salt}" for i in range(lines))
    return (f"diff --git a/{path} b/{path}\nindex 1234567..89abcde 100644\n--- a/{path}\n"
            f"+++ b/{path}\n@@ -1,3 +1,{lines + 3} @@\n def f():\n{body}\n     return 0\n")


def config(seed: int) -> dict[str, Any]:
    text = {f"field_{i}": i * seed if i % 3 else {"nested": i, "list": [i, i + 1]}
            for i in range(40)}
    text.update(max_position_embeddings=262144 // seed, rope_scaling={"factor": 64.0 / seed})
    return {"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25",
            **{f"top_{i}": f"v{i}" for i in range(17)}, "text_config": text}


def build(base: runsnap.Snapshot, variant: int) -> runsnap.Snapshot:
    env = {f"VAR_{i:03d}_SOME_SETTING": f"/opt/value/{i}/" + "x" * 60 for i in range(470)}
    env.update({f"NCCL_SETTING_{i}": str(i) for i in range(30)})
    if variant:
        env.update({f"VAR_{i:03d}_SOME_SETTING": "changed" for i in range(0, 400, 20)})
    site = "/venv/lib/python3.11/site-packages"
    dists = {f"package-{i}": {"version": f"1.{i}.0", "location": site} for i in range(400)}
    if variant:
        for i in range(0, 400, 34):
            dists[f"package-{i}"] = {**dists[f"package-{i}"], "version": f"1.{i}.1"}
    files = [f"src/pkg/module_{i:03d}.py" for i in range(200)]
    diff = "".join(patch(f, 112, "b" if variant and n % 20 == 0 else "a")
                   for n, f in enumerate(files))
    repo = {"path": "/nonexistent/repo", "roles": ["cwd"], "commit": "a" * 40, "describe": "v1",
            "bare": False, "shallow": False, "branch": "main", "detached": False, "upstream": "",
            "ahead": 0, "behind": 0, "dirty": True,
            "changed": [{"path": f, "status": ".M"} for f in files],
            "untracked_count": 3, "untracked": [
                {"path": f"scratch_{i}.py", "size": 10 + variant, "sha256": str(variant) * 64}
                for i in range(3)],
            "diff_bytes": len(diff), "diff_sha256": str(variant) * 64, "diff": diff,
            "remotes": {}, "errors": []}
    models = {f"--model-path{'' if m == 0 else '-draft'}": {
        "sources": ["--model-path"], "given": f"/m/{m}", "path": f"/m/{m}", "real_path": f"/m/{m}",
        "config": config(1 + variant if m == 0 else 2),
        "files_sha256": {"tokenizer.json": "0" * 64},
        "weights": {f"model-{k:05d}.safetensors": 5_000_000_000 for k in range(64)},
        "weights_count": 64, "weights_bytes": 320_000_000_000, "errors": []} for m in range(2)}
    sections = dict(base.sections)
    sections["env"] = {"count": len(env), "vars": env, "errors": []}
    sections["packages"] = {**base["packages"], "count": len(dists), "distributions": dists}
    sections["git"] = {"repos": {"repo": repo}, "errors": []}
    sections["models"] = {"models": models, "errors": []}
    return dataclasses.replace(base, sections=sections, meta={**base.meta, "label": f"v{variant}"})


def median_ms(fn: Any, repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    base = runsnap.capture([sys.executable, "-c", "pass"])
    with tempfile.TemporaryDirectory() as tmp:
        pa = build(base, 0).save(Path(tmp) / "a.toml").path
        pb = build(base, 1).save(Path(tmp) / "b.toml").path
        sizes = [p.stat().st_size for p in (pa, pb)]
        t_load, (a, b) = median_ms(lambda: (load(pa), load(pb)), args.repeat)
        t_cmp, report = median_ms(lambda: compare(a, b), args.repeat)
        t_text, _ = median_ms(lambda: render(report, "text"), args.repeat)
        t_json, _ = median_ms(lambda: render(report, "json"), args.repeat)
        t_all, _ = median_ms(lambda: render(compare(load(pa), load(pb)), "text"), args.repeat)
        cli = [sys.executable, "-m", "runsnap", "diff", str(pa), str(pb)]
        t_cli, proc = median_ms(lambda: subprocess.run(cli, capture_output=True, cwd=tmp),
                                args.repeat)
        assert proc.returncode == 1, proc.stderr
    print(json.dumps({
        "snapshot_bytes": sizes, "differences": len(report.differences),
        "counted": len(report.counted), "repeat": args.repeat,
        "median_ms": {"load_both": round(t_load, 1), "compare": round(t_cmp, 1),
                      "render_text": round(t_text, 1), "render_json": round(t_json, 1),
                      "load_compare_render": round(t_all, 1),
                      "cli_process": round(t_cli, 1)},
    }, indent=2))


if __name__ == "__main__":
    main()
