"""The facts of a snapshot (what show, reports and Markdown share), from a real capture."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import runsnap
from runsnap.render.show import summary_lines
from runsnap.views.facts import facts
from tests.conftest import asset, make_repo


def test_facts_of_a_real_capture(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    (repo / "new.txt").write_text("x")
    env = {"PATH": os.environ["PATH"], "NCCL_ALGO": "Ring", "HF_TOKEN": "hf_" + "a" * 34,
           "OTHER": "1"}
    model = asset("models", "kimi-k2.5-target")
    snap = runsnap.capture([sys.executable, "-m", "srv", "--model-path", str(model), "--tp", "8"],
                           env=env, cwd=repo, label="good")
    f = facts(snap)
    assert (f.label, f.argv[1:3], f.option_count) == ("good", ("-m", "srv"), 2)
    assert f.executable == sys.executable and not f.outcome and not f.outcome_missing
    proj = f.repos["proj"]
    assert (proj.dirty, proj.untracked_count, tuple(proj.roles)) == (True, 1, ("cwd",))
    assert f.variable_count == 4 and f.secret_count == 1
    assert sorted(k for k, _v in f.notable_env) == ["HF_TOKEN", "NCCL_ALGO"]
    assert dict(f.notable_env)["HF_TOKEN"].startswith("<redacted:")
    [m] = f.models
    assert (m.source, m.max_positions) == ("--model-path", 262144)
    lines = summary_lines(f)
    assert "  NCCL_ALGO=Ring" in lines and lines[0].endswith("[good]")
