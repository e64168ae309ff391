"""The benchmark's input builders and harness, at a very small scale (the benchmark itself is
``python benchmarks/run.py``, never part of the test suite)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import runsnap
from benchmarks import inputs
from benchmarks.harness import Case, Check, Command, render, run_case


def test_generated_venv_is_accepted_by_importlib_metadata_and_the_probe(tmp_path: Path) -> None:
    venv = inputs.build_venv(tmp_path, n_dists=5, with_pip=False, log=lambda m: None)
    assert venv.count == 7  # five generated, two editable installs
    listed = subprocess.run(
        [str(venv.python), "-c",
         "import importlib.metadata as m; print(sorted(d.metadata['Name'] for d in m.distributions()))"],
        capture_output=True, text=True, check=True).stdout
    assert "alpha-lib" in listed and "rsbench-alpha-000" in listed
    snap = runsnap.capture([str(venv.python), "-c", "pass"], cwd=tmp_path,
                           env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert snap["packages"]["count"] == 7
    assert snap["packages"]["distributions"]["alpha-lib"]["editable"] is True
    repos = snap["git"]["repos"]
    assert {r["roles"][0] for r in repos.values()} == {
        "editable install of alpha-lib", "editable install of beta-lib"}
    assert repos["alpha-lib"]["dirty"] is True


def test_repo_models_and_snapshots_builders(tmp_path: Path) -> None:
    repo = inputs.build_repo(tmp_path, n_files=12, large_diff_kib=4, log=lambda m: None)
    status = inputs.git(repo, "status", "--porcelain")
    modified = [line[3:] for line in status.splitlines() if line.startswith(" M ")]
    assert len(modified) == 12 + 1 and "data/table.csv" in modified  # every file, the big one
    assert "?? scratch/" in status
    target, draft = inputs.build_models(tmp_path, tokenizer_lines=10, log=lambda m: None)
    assert (target / "config.json").is_file() and (draft / "model.safetensors").stat().st_size > 10**9
    (a, b), ranks = inputs.build_snapshots(tmp_path, n_ranks=3, diff_kib=2, log=lambda m: None)
    assert runsnap.load(a) != runsnap.load(b)
    assert [runsnap.load(p)["env"]["vars"]["RANK"] for p in ranks] == ["0", "1", "2"]


def test_harness_measures_interleaved_and_renders(tmp_path: Path) -> None:
    def build(_bench: object) -> list[Command]:
        return [Command("subject", [sys.executable, "-c", "pass"]),
                Command("peer", steps=[["true"], ["true"]])]

    case = Case("9", "smoke", build,
                lambda m: [Check("ratio", m["subject"].median_ms / m["peer"].median_ms, "x", 1e9)])
    result = run_case(case, None, rounds=2)
    assert result.failed == "" and [len(m.seconds) for m in result.measured.values()] == [2, 2]
    text = render([result])
    assert "| subject |" in text and "| peer |" in text and "ratio" in text and "met" in text
