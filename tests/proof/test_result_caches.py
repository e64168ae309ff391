"""A program whose Hugging Face ``datasets`` cache holds BAD's result: every launch of ``why``
gets an empty cache of its own, so the trial that applies only the option which is part of
the cache's fingerprint no longer loads BAD's result and goes bad, and the option that made
the result wrong is found.

Seen in the diagnosis corpus (fresh4 ``datasets-num-proc-metric``, benchmarks/RESULTS.md):
``why`` found ``--writer-batch-size`` in 13 launches. Real ``datasets``, real launches traced
by ``runsnap capture``."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tests.proof.conftest import capture, child
from tests.proof.conftest import runsnap as run_runsnap

pytest.importorskip("datasets", reason="datasets is not installed (pip install -e '.[test]')")

#: Numbers rows with a module-level counter: with ``--num-proc 2`` each worker counts from 0
#: and ids repeat. ``num_proc`` is not part of the map's fingerprint; the writer batch is.
DEDUP = """\
import argparse, itertools
from datasets import load_dataset

NEXT = itertools.count()

def assign(example):
    return {"uid": next(NEXT)}

p = argparse.ArgumentParser()
p.add_argument("--num-proc", type=int, default=None)
p.add_argument("--writer-batch-size", type=int, default=1000)
a = p.parse_args()
ds = load_dataset("csv", data_files="rows.csv", split="train")
ds = ds.map(assign, num_proc=a.num_proc, writer_batch_size=a.writer_batch_size)
print(f"unique_ids={len(set(ds['uid']))}")
"""


@pytest.mark.slow
def test_a_trial_never_loads_a_result_another_launch_left_in_the_datasets_cache(
        tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text("text\n" + "".join(f"row {i}\n" for i in range(40)))
    prog = child(tmp_path / "dedup.py", DEDUP)
    home = tmp_path / "home"
    env = {"HOME": str(home), "HF_HUB_OFFLINE": "1", "HF_DATASETS_CACHE": None,
           "HF_HOME": None, "XDG_CACHE_HOME": None}
    store = tmp_path / ".runsnap"
    capture(store / "good.toml", [sys.executable, str(prog)], env)
    time.sleep(0.01)
    capture(store / "bad.toml", [sys.executable, str(prog), "--num-proc", "2",
                                 "--writer-batch-size", "10"], env)
    cache = home / ".cache" / "huggingface" / "datasets"
    assert any(cache.rglob("cache-*.arrow")), "the runs left no map result in the cache"
    proc = run_runsnap("why", "--prove", "--yes", "--format", "json", cwd=tmp_path,
                       env=None, timeout=600)
    out = json.loads(proc.stdout)
    assert out["status"] in ("proven", "found"), out["message"]
    assert [f"{c['section']} {c['key']}" for c in out["cause"]] == ["command --num-proc"], out
    trials = Path(out["bisect"]["folder"] if out["bisect"] else
                  next(store.glob("bisect-*")))
    own = sorted(p.name for p in trials.glob("*-caches"))
    assert own, "no launch had a cache of its own"
    assert all(any((trials / name / "datasets").rglob("*.arrow")) for name in own[:1])
    # the runs' cache is left as it was: no trial wrote its results there
    assert not any(p.stat().st_mtime > (store / "bad.toml").stat().st_mtime
                   for p in cache.rglob("cache-*.arrow"))
