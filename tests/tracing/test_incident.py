"""The demo incident traced for real: the read of the flag lands on the failing path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from runsnap.capturing import run
from runsnap.diffing import compare
from runsnap.snapshot.runtime import variables
from tests.conftest import asset

FLAG = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"


def _launch(tmp_path: Path, name: str, steps: str, env: dict[str, str]):
    argv = [sys.executable, str(asset("demo", "launch_server.py")),
            "--model-path", str(asset("models", "kimi-k2.5-target")),
            "--speculative-algorithm", "EAGLE3", "--speculative-num-steps", steps,
            "--speculative-draft-model-path", str(asset("models", "kimi-k2.5-eagle3-draft"))]
    full = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **env}
    return run(argv, env=full, cwd=tmp_path, output=tmp_path / f"{name}.toml").snapshot


def test_traced_incident_ranks_the_flag_first_from_its_read_site(tmp_path: Path) -> None:
    good = _launch(tmp_path, "good", "2", {FLAG: "1", "NCCL_ALGO": "Ring"})
    bad = _launch(tmp_path, "bad", "3", {})
    read_good = variables(good.get("runtime"))[FLAG]
    read_bad = variables(bad.get("runtime"))[FLAG]
    assert (read_good["set"], read_good["value"]) == (True, "1")
    assert read_bad["set"] is False and "value" not in read_bad
    stack = read_bad["sites"][0]["stack"]
    assert any(" in _derive_context_length" in frame for frame in stack), stack
    report = compare(good, bad)
    first = report.counted[0]
    assert (first.section, first.key, first.evidence_kind) == ("env", FLAG, "failing-path")
    assert "_derive_context_length" in first.reason
