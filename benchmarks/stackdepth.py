"""What keeping 16 stack frames per read site and opened file costs the traced child, against 8.

    python benchmarks/stackdepth.py --venv VENV [--rounds N]

``import transformers, torch`` in VENV, untraced, traced with the hook as it is, and traced
with a copy of the hook that keeps 8 frames (``_runsnap_trace_log.DEPTH``), interleaved round
after round; medians of the same run, as ratios against the untraced import.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runsnap.tracing import HOOK_DIR  # noqa: E402


def _hook_with_depth(depth: int) -> str:
    """A copy of the tracing hook that keeps ``depth`` frames."""
    folder = tempfile.mkdtemp(prefix=f"runsnap-hook{depth}-")
    shutil.copytree(HOOK_DIR, folder, dirs_exist_ok=True)
    log = Path(folder) / "_runsnap_trace_log.py"
    text = log.read_text()
    head, _, rest = text.partition("\nDEPTH = ")
    log.write_text(f"{head}\nDEPTH = {depth}\n{rest.split(chr(10), 1)[1]}")
    return folder


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--venv", required=True)
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    py = str(Path(args.venv).resolve() / "bin" / "python")
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), "LANG": "C.UTF-8"}
    hooks = {"traced, 8 frames": _hook_with_depth(8), "traced, as it is": HOOK_DIR}
    res: dict[str, list[float]] = {"untraced": [], **{name: [] for name in hooks}}
    for r in range(args.rounds):
        for name in res:
            env = dict(base)
            if name in hooks:
                env.update(RUNSNAP_TRACE_DIR=tempfile.mkdtemp(prefix="runsnap-depth-"),
                           RUNSNAP_TRACE_PYTHONPATH="", PYTHONPATH=hooks[name])
            start = time.perf_counter()
            subprocess.run([py, "-c", "import transformers, torch"], env=env, check=True,
                           capture_output=True)
            if r:  # round 0 warms the caches
                res[name].append(time.perf_counter() - start)
    plain = statistics.median(res["untraced"])
    for name, xs in res.items():
        print(f"{name}: median {statistics.median(xs) * 1000:.0f} ms, "
              f"{statistics.median(xs) / plain:.3f}x (n={len(xs)})")


if __name__ == "__main__":
    main()
