"""Evidence from the runs: the demo incident launched for real, ranked by what the run did.

The ``[runtime]`` tables below have the shape the tracing hook writes (docs/schema.md, issue
11); until a test traces for real they are written here from what the demo launcher reads.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from runsnap.capturing import run
from runsnap.diffing import compare
from runsnap.snapshot import Snapshot
from tests.conftest import asset

FLAG = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
NOISE = {"NCCL_IB_DISABLE": ("1", "0"), "NCCL_P2P_LEVEL": ("NVL", None),
         "NCCL_ALGO": (None, "Ring"), "SGLANG_ENABLE_SPEC_V2": ("0", "false"),
         "TERM": ("xterm-256color", "screen"), "OLDPWD": ("/home/u", "/srv"),
         "SSH_CLIENT": ("10.0.0.1 5000 22", "10.0.0.2 6000 22")}


def _launch(tmp_path: Path, name: str, steps: str, env: dict[str, str]) -> Snapshot:
    argv = [sys.executable, str(asset("demo", "launch_server.py")),
            "--model-path", str(asset("models", "kimi-k2.5-target")),
            "--speculative-algorithm", "EAGLE3", "--speculative-num-steps", steps,
            "--speculative-draft-model-path", str(asset("models", "kimi-k2.5-eagle3-draft"))]
    full = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **env}
    # not traced here: these tests give each run the [runtime] they need (tests/tracing traces
    # the same incident for real)
    return run(argv, env=full, cwd=tmp_path, output=tmp_path / f"{name}.toml",
               trace=False).snapshot


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory) -> tuple[Snapshot, Snapshot]:
    tmp = tmp_path_factory.mktemp("incident")
    env_a = {k: a for k, (a, _) in NOISE.items() if a is not None}
    env_b = {k: b for k, (_, b) in NOISE.items() if b is not None}
    good = _launch(tmp, "good", "2", {**env_a, FLAG: "1"})
    bad = _launch(tmp, "bad", "3", env_b)
    assert good["outcome"]["exit_status"] == 0 and bad["outcome"]["exit_status"] == 1
    return good, bad


def _traced(snap: Snapshot, env: dict[str, Any]) -> Snapshot:
    runtime = {"traced": True, "native": "not observed: no interposer", "env": env,
               "modules": {}}
    return snap.replace(sections={**snap.sections, "runtime": runtime})


def _flag_read(set_: bool) -> dict[str, Any]:
    """The read the demo launcher makes, as the tracing hook records it."""
    table: dict[str, Any] = {"set": set_, "reads": 1, "bulk": False, "python": True,
                             "native": False, "pids": [100], "sites": [{"stack": [
                                 "demo_sglang/srt/environ.py:33 in get",
                                 "demo_sglang/srt/configs/model_config.py:48 in "
                                 "_derive_context_length",
                                 "demo_sglang/srt/configs/model_config.py:33 in __init__",
                                 "launch_server.py:57 in main"]}]}
    if set_:
        table["value"] = "1"
    return table


def test_the_traceback_is_recorded(incident):
    tb = incident[1]["outcome"]["traceback"]
    assert tb["type"] == "ValueError" and tb["message"].endswith(f"set the env var {FLAG}=1")
    assert [(Path(f["file"]).name, f["function"]) for f in tb["frames"][-2:]] == [
        ("model_config.py", "__init__"), ("model_config.py", "_derive_context_length")]


def test_untraced_the_error_message_names_the_flag(incident):
    report = compare(*incident)
    first, second = report.counted[:2]
    assert (first.section, first.key, first.evidence_kind) == ("env", FLAG, "named")
    assert first.reason.startswith(f"the error of failing run B names {FLAG}: ")
    assert first.reason.endswith(f'set the env var {FLAG}=1"')
    assert (second.key, second.evidence_kind) == ("--speculative-num-steps", "name")
    assert first.score > second.score


def test_traced_the_flag_is_read_on_the_failing_path(incident):
    good, bad = incident
    good = _traced(good, {FLAG: _flag_read(True)})
    bad = _traced(bad, {FLAG: _flag_read(False)})
    report = compare(good, bad)
    first = report.counted[0]
    assert (first.key, first.evidence_kind, first.score) == (FLAG, "failing-path", 99)
    line = bad["outcome"]["traceback"]["frames"][-1]["line"]
    assert first.reason == (
        "read at demo_sglang/srt/configs/model_config.py:48 in _derive_context_length, the "
        f"function that raised ValueError at :{line} (failing run B); and the error of "
        f"failing run B names {FLAG}: \"…verriding this maximum, set the env var {FLAG}=1\"")
    assert first.corroborated
    kinds = {d.key: d.evidence_kind for d in report.differences}
    # Never read from Python, in a family read from Python: below everything with evidence.
    assert kinds["SGLANG_ENABLE_SPEC_V2"] == "unread"
    # Read natively (NCCL): a Python trace alone does not call them unread.
    assert kinds["NCCL_IB_DISABLE"] == "name" and kinds["NCCL_ALGO"] == "name"
    assert kinds["--speculative-num-steps"] == "name"
    with_evidence = [d for d in report.counted if d.evidence_kind not in ("name", "unread")]
    without = [d for d in report.counted if d.evidence_kind in ("name", "unread")]
    assert min(d.score for d in with_evidence) > max(d.score for d in without)


def test_a_read_high_above_the_raise_is_not_on_the_failing_path(incident):
    """A variable read in ``main`` (two of the program's frames above the one that raised)
    was read, but not on the failing path: every failing run passes through main."""
    good, bad = incident
    read_in_main = {"set": True, "value": "xterm", "reads": 1, "python": True,
                    "sites": [{"stack": ["launch_server.py:40 in main"]}]}
    good = _traced(good, {"NCCL_IB_DISABLE": dict(read_in_main, value="1")})
    bad = _traced(bad, {"NCCL_IB_DISABLE": dict(read_in_main, value="0")})
    report = compare(good, bad)
    d = next(d for d in report.counted if d.key == "NCCL_IB_DISABLE")
    assert d.evidence_kind == "read" and d.score in (91, 92, 93)
    assert report.counted[0].key == FLAG  # still named by the error


def test_the_value_named_by_the_error(tmp_path):
    """An option whose failing value the error quotes: the value reached the code that raised
    (failing-path, quoted), above a variable that is not."""
    script = tmp_path / "serve.py"
    script.write_text(
        "import argparse\n"
        "p = argparse.ArgumentParser(); p.add_argument('--max-batch', type=int)\n"
        "a = p.parse_args()\n"
        "slots = a.max_batch\n"
        "if slots > 256:\n"
        "    raise MemoryError(f'cannot reserve KV cache for 4096 tokens x {slots}')\n")
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    good = run([sys.executable, str(script), "--max-batch", "128"],
               env={**base, "VLLM_LOGGING_LEVEL": "INFO"}, cwd=tmp_path,
               output=tmp_path / "a.toml").snapshot
    bad = run([sys.executable, str(script), "--max-batch", "1024"],
              env={**base, "VLLM_LOGGING_LEVEL": "DEBUG"}, cwd=tmp_path,
              output=tmp_path / "b.toml").snapshot
    first = compare(good, bad).counted[0]
    assert (first.key, first.evidence_kind, first.quoted) == ("--max-batch", "failing-path", True)
    assert "names B's value 1024, from B's command line" in first.reason


def test_a_package_whose_code_raised(tmp_path):
    """The failing traceback runs through a package whose version differs."""
    site = tmp_path / "site"
    (site / "fastjson").mkdir(parents=True)
    (site / "fastjson" / "__init__.py").write_text(
        "def loads(text):\n    raise TypeError('unsupported: ' + text)\n")
    script = tmp_path / "app.py"
    script.write_text("import fastjson\nfastjson.loads('x')\n")
    snap = run([sys.executable, str(script)], cwd=tmp_path, output=tmp_path / "b.toml",
               env={"PATH": os.environ["PATH"], "PYTHONPATH": str(site)}).snapshot
    dist = {"version": "2.0", "location": str(site)}
    pkgs = dict(snap["packages"])
    b = snap.replace(sections={**snap.sections, "packages": {
        **pkgs, "distributions": {**(pkgs.get("distributions") or {}), "fastjson": dist}}})
    a_out = {"exit_status": 0, "status": "exited", "warnings": []}
    a = b.replace(sections={**b.sections, "outcome": a_out, "packages": {
        **pkgs, "distributions": {**(pkgs.get("distributions") or {}),
                                  "fastjson": {**dist, "version": "1.9"}}}})
    report = compare(a, b)
    d = next(d for d in report.counted if d.key == "fastjson")
    assert d.evidence_kind == "failing-path"
    assert d.reason.startswith("the failing traceback runs through fastjson's code: "
                               "fastjson/__init__.py:2 in loads (TypeError")
