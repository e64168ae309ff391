"""Behaviour beyond the exit status: the numbers a run printed (``[outcome] metrics``), recorded
as the output streams by, and compared by diff when both runs ended alike."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from runsnap.launch.metrics import MAX_METRICS, MetricWatch, parse_metric, scan
from runsnap.snapshot import load
from tests.conftest import run_runsnap

TRAIN = """
import sys
lr = float(sys.argv[1])
loss = 6.0
for step in range(5):
    loss -= lr * loss
    print(f"step={step} loss={loss:.4f} tokens_per_s={800 + step}", flush=True)
print(f"eval: accuracy: {1 - loss / 10:.4f}")
print("done")
"""


def _env(tmp: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(tmp)}


def _capture(tmp: Path, name: str, *args: str, options: tuple[str, ...] = (),
             threads: str = "") -> Path:
    """``threads``: the run's ``OMP_NUM_THREADS`` (two runs of other thread counts are not
    exact again: the noise threshold applies, runsnap/diffing/loaded.py)."""
    prog = tmp / "train.py"
    prog.write_text(TRAIN)
    out = tmp / f"{name}.toml"
    env = {**_env(tmp), **({"OMP_NUM_THREADS": threads} if threads else {})}
    res = run_runsnap("capture", *options, "-o", str(out), "--", sys.executable, str(prog),
                      *args, cwd=tmp, env=env)
    assert res.returncode == 0, res.stderr
    return out


def test_the_last_value_of_each_metric_is_recorded(tmp_path: Path) -> None:
    snap = load(_capture(tmp_path, "a", "0.1", options=("--metric", r"acc=accuracy: ([\d.]+)")))
    metrics = snap["outcome"]["metrics"]
    assert metrics["loss"] == 3.5429 and metrics["step"] == 4.0
    assert metrics["tokens_per_s"] == 804.0 and metrics["acc"] == metrics["accuracy"] == 0.6457


def test_a_malformed_metric_is_one_line_and_status_2(tmp_path: Path) -> None:
    res = run_runsnap("capture", "--metric", "loss", "--", sys.executable, "-c", "pass",
                      cwd=tmp_path, env=_env(tmp_path))
    assert res.returncode == 2
    assert res.stderr == ("runsnap: --metric loss: expected NAME=REGEX "
                          "(e.g. tps=([0-9.]+) tok/s)\n")


def test_the_projects_own_metrics_come_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.runsnap]\nmetrics = ["final=^done()$", "first_loss=loss=([0-9.]+)"]\n')
    metrics = load(_capture(tmp_path, "a", "0.1"))["outcome"]["metrics"]
    assert metrics["first_loss"] == 3.5429  # the last match of the user's pattern
    assert "final" not in metrics  # a match that is no number records nothing


def _diff(a: Path, b: Path) -> dict:
    res = run_runsnap("diff", "--format", "json", str(a), str(b), cwd=a.parent,
                      env=_env(a.parent))
    assert res.returncode in (0, 1), res.stderr
    return json.loads(res.stdout)


def test_both_exit_0_and_the_loss_differs(tmp_path: Path) -> None:
    report = _diff(_capture(tmp_path, "a", "0.1"), _capture(tmp_path, "b", "0.02"))
    outcome = {d["key"]: d for d in report["differences"] if d["section"] == "outcome"
               and not d["hidden"]}
    assert report["differ"] is True
    assert outcome["metric loss"]["a"] == 3.5429 and outcome["metric loss"]["b"] == 5.4235
    assert "beyond noise threshold (1%)" in outcome["metric loss"]["reason"]
    # throughput moved by far less than its noise threshold: not a difference
    assert "metric tokens_per_s" not in outcome
    text = run_runsnap("diff", str(tmp_path / "a.toml"), str(tmp_path / "b.toml"),
                       cwd=tmp_path, env={**_env(tmp_path), "COLUMNS": "80"}).stdout
    block = text.split("Outcome (what happened)")[1].split("\n\n")[0]
    assert "metric loss" in block and "metric accuracy" in block


def test_within_noise_no_metric_differs(tmp_path: Path) -> None:
    # other thread counts: the work splits otherwise, a float sum may round otherwise
    report = _diff(_capture(tmp_path, "a", "0.1", threads="1"),
                   _capture(tmp_path, "b", "0.1001", threads="2"))
    assert not [d for d in report["differences"] if d["key"].startswith("metric ")
                and not d["hidden"]]


def test_on_the_cpu_alone_with_the_same_threads_a_move_within_noise_is_said(
        tmp_path: Path) -> None:
    # runs that give their metrics exactly again: still noise by the threshold, but said, with
    # the experiment that tells (runsnap/diffing/loaded.py moved_exactly)
    report = _diff(_capture(tmp_path, "a", "0.1", threads="2"),
                   _capture(tmp_path, "b", "0.1001", threads="2"))
    assert not [d for d in report["differences"] if d["key"].startswith("metric ")
                and not d["hidden"]]
    words = report["verdict"]
    assert "accuracy moved 0.031%, loss moved 0.054%, within the noise threshold" in words, words
    assert "runsnap why runs GOOD once more to tell" in words


def test_a_tolerance_per_metric_counts_a_move_below_the_default(tmp_path: Path) -> None:
    """lr 0.1 against 0.1001: the loss moves by 0.02%, noise by default (1%); with a
    tolerance of 0 (bit-exact CPU runs), given on the command line or in pyproject.toml, it is
    a difference, and the other metrics keep their default."""
    a = _capture(tmp_path, "a", "0.1", threads="1")
    b = _capture(tmp_path, "b", "0.1001", threads="2")  # not exact again: 1% by default
    res = run_runsnap("diff", "--format", "json", "--metric-tolerance", "loss=0", str(a), str(b),
                      cwd=tmp_path, env=_env(tmp_path))
    shown = {d["key"]: d for d in json.loads(res.stdout)["differences"] if not d["hidden"]}
    assert res.returncode == 1 and "metric loss" in shown, res.stdout
    assert "beyond your tolerance for loss (0%)" in shown["metric loss"]["reason"]
    assert "metric accuracy" not in shown  # moved too, within the default 1%
    (tmp_path / "pyproject.toml").write_text(
        '[tool.runsnap.diff]\nmetric-tolerance = { "*" = 0.5, loss = 0 }\n')
    shown = {d["key"] for d in _diff(a, b)["differences"] if not d["hidden"]}
    assert "metric loss" in shown and "metric accuracy" not in shown
    res = run_runsnap("diff", "--metric-tolerance", "1e-9", str(a), str(b), cwd=tmp_path,
                      env=_env(tmp_path))  # the command line's "*" before the file's
    assert "metric accuracy" in res.stdout


def test_a_malformed_tolerance_is_one_line_and_status_2(tmp_path: Path) -> None:
    a = _capture(tmp_path, "a", "0.1")
    res = run_runsnap("diff", "--metric-tolerance", "loss=tight", str(a), str(a),
                      cwd=tmp_path, env=_env(tmp_path))
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith("runsnap: --metric-tolerance loss=tight: expected [NAME=]TOL")


#: A training script's output as the tools users run print it: tqdm's bars (the percent is
#: no metric; the postfix's loss is), HF Trainer 5's log dicts (values as strings), a JSON
#: line, and an HTTP server's access log (a query string's numbers are no metric).
PRINTS = """
import http.server, json, sys, threading, urllib.request
from tqdm import tqdm

for _ in tqdm(range(3), desc="Loading weights", file=sys.stderr):
    pass
bar = tqdm(range(4), desc="train", file=sys.stderr)
for step in bar:
    bar.set_postfix(loss=0.5 - step / 10)
print({'loss': '4.854', 'grad_norm': '12.31', 'learning_rate': '4.5e-05', 'epoch': '0.25'})
print(json.dumps({"step": 40, "eval_loss": 3.25, "eval_runtime": "1.5"}), flush=True)

class Serve(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()

server = http.server.HTTPServer(("127.0.0.1", 0), Serve)
threading.Thread(target=server.serve_forever, daemon=True).start()
urllib.request.urlopen(f"http://127.0.0.1:{server.server_port}/generate?ids=5,6&top_k=3").read()
"""


def test_log_dicts_and_json_lines_are_metrics_progress_bars_and_urls_are_not(
        tmp_path: Path) -> None:
    prog = tmp_path / "prints.py"
    prog.write_text(PRINTS)
    out = tmp_path / "p.toml"
    res = run_runsnap("capture", "-o", str(out), "--", sys.executable, str(prog), cwd=tmp_path,
                      env=_env(tmp_path))
    assert res.returncode == 0, res.stderr
    snap = load(out)
    assert "GET /generate?ids=5,6" in json.dumps(snap["outcome"]["stderr"]["tail"])
    metrics = snap["outcome"]["metrics"]
    assert {k: metrics.get(k) for k in ("loss", "grad_norm", "learning_rate", "epoch",
                                        "eval_loss", "eval_runtime")} == {
        "loss": 4.854, "grad_norm": 12.31, "learning_rate": 4.5e-05, "epoch": 0.25,
        "eval_loss": 3.25, "eval_runtime": 1.5}
    assert not {"weights", "train", "ids", "top_k"} & set(metrics), metrics


def test_memory_stays_bounded_whatever_the_run_prints() -> None:
    watch = MetricWatch()
    for i in range(50):
        watch.feed(b"\n".join(b"k%d_%d=%d" % (i, j, j) for j in range(100)))
    assert len(watch.values) == MAX_METRICS and watch.dropped > 0


def test_identities_and_clocks_are_not_metrics() -> None:
    found = scan([b"pid=4242 port: 8000 rank=3 seed=7 at 12:30:05 loss=1.5",
                  b"version: 1.2.3 Uvicorn running on http://127.0.0.1:30000 lr: 3e-4"])
    assert found == {"loss": 1.5, "lr": 3e-4}


def test_a_source_files_line_in_a_log_prefix_is_no_metric() -> None:
    """torch's c10d warnings carry glog's prefix, the source file and line that printed them
    (as a real torchrun job's rank printed it, fresh14 ``ctr-ddp-job-noise``): a place, not a
    measure; it gave ``Utils.hpp = 137`` in one run only, and the outcomes differed by it."""
    got = scan([b"[W1205 16:28:27.846690601 Utils.hpp:137] Warning: Environment variable "
                b"TORCH_NCCL_TRACE_BUFFER_SIZE is deprecated; use TORCH_FR_BUFFER_SIZE instead "
                b"(function operator())\n", b"I1205 trainer.cc:88] step=12 loss: 0.25\n",
                b"model.py: 3 layers, auc=0.91\n"])
    assert got == {"step": 12.0, "loss": 0.25, "auc": 0.91}


def test_an_exceptions_message_is_no_metric() -> None:
    """pydantic's ``ValidationError: 1 validation error for ServeSettings`` (its first error
    line, as a real run prints it) is an exception's class and message; a metric that ends in
    ``error`` (``val_error``, ``mean_abs_error``) still is one."""
    got = scan([b"pydantic_core._pydantic_core.ValidationError: 1 validation error for "
                b"ServeSettings\n", b"ValueError: 3 rows had no label\n",
                b"epoch=2 val_error=0.31 mean_abs_error: 0.2\n"])
    assert got == {"epoch": 2.0, "val_error": 0.31, "mean_abs_error": 0.2}


def test_a_user_metric_needs_a_name_and_a_pattern() -> None:
    name, pattern = parse_metric(r"ttft=TTFT ([\d.]+) ms")
    assert scan([b"TTFT 12.5 ms", b"TTFT 13.25 ms"], [(name, pattern)])["ttft"] == 13.25


def test_a_real_hf_trainer_log_gives_its_metrics_and_its_bars_none() -> None:
    """Recorded from a real run (transformers 5.25.0, torch 2.13.0+cpu: a one-layer GPT-2
    trained by ``Trainer`` for 8 steps, evaluated every 4): the log dicts on stdout, tqdm's
    bars (``\\r``-separated, ``it/s``) on stderr, fed as the streams arrive, in chunks."""
    recorded = Path(__file__).parent / "recorded"
    watch = MetricWatch()
    for name in ("hf_trainer5.stdout", "hf_trainer5.stderr"):
        data = (recorded / name).read_bytes()
        for i in range(0, len(data), 512):
            watch.feed(data[i:i + 512])
    assert watch.values["loss"] == 3.884 and watch.values["eval_loss"] == 3.888
    assert watch.values["train_loss"] == 3.895 and watch.values["learning_rate"] == 0.000125
    assert watch.values["epoch"] == 2.0 and watch.values["train_runtime"] == 5.227
    assert set(watch.values) == {
        "epoch", "eval_loss", "eval_runtime", "eval_samples_per_second", "eval_steps_per_second",
        "grad_norm", "learning_rate", "loss", "train_loss", "train_runtime",
        "train_samples_per_second", "train_steps_per_second"}
