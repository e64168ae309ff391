"""Facts runsnap got wrong on a first afternoon (issue 27, item 3), each through real runs:
``CUDA_DEVICE_ORDER`` read as a device list, SGLang and Triton "version unknown" beside a
package list that names them, a dirty tree shown as ``False -> (flag)``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.conftest import git, make_repo, run_runsnap


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_", "NVIDIA_"))}
    return {**env, "COLUMNS": "200", **extra}


def _device_order_evidence(tmp_path: Path, a: dict[str, str], b: dict[str, str]) -> str:
    """The evidence lines of ``CUDA_DEVICE_ORDER`` in the diff of two real captures."""
    for label, extra in (("a", a), ("b", b)):
        r = run_runsnap("capture", "--label", label, "-o", str(tmp_path / f"{label}.toml"),
                        "--", sys.executable, "-c", "pass", cwd=tmp_path, env=_env(**extra))
        assert r.returncode == 0, r.stderr
    # both ran alike, so the variable is hidden as one that changed nothing: --all lists it
    r = run_runsnap("diff", str(tmp_path / "a.toml"), str(tmp_path / "b.toml"), "--format",
                    "json", "--all", cwd=tmp_path, env=_env())
    import json

    found = [d for d in json.loads(r.stdout)["differences"] if d["key"] == "CUDA_DEVICE_ORDER"]
    assert found, r.stdout
    return "\n".join(found[0]["evidence"])


def test_cuda_device_order_is_a_numbering_not_a_device_list(tmp_path: Path) -> None:
    said = _device_order_evidence(tmp_path, {}, {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert "names no device" not in said and "no GPU" not in said and "saw" not in said, said
    assert "device numbers in B: numbered in PCI bus order" in said, said


def test_the_same_device_list_under_another_numbering_is_said(tmp_path: Path) -> None:
    """Both runs list CUDA_VISIBLE_DEVICES=1; only the numbering differs: the same number can
    name another GPU, and the diff says so (it read the variable from the wrong table before)."""
    said = _device_order_evidence(tmp_path, {"CUDA_VISIBLE_DEVICES": "1"},
                                  {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert "both list CUDA_VISIBLE_DEVICES=1: under the other numbering" in said, said


def test_show_takes_sglang_and_triton_versions_from_the_package_list(
        tmp_path: Path, stack_venv: Path) -> None:
    snap = tmp_path / "s.toml"
    r = run_runsnap("capture", "--python", str(stack_venv / "bin" / "python"), "-o", str(snap),
                    cwd=tmp_path, env=_env())
    assert r.returncode == 0, r.stderr
    shown = run_runsnap("show", str(snap), cwd=tmp_path, env=_env()).stdout
    assert "version unknown" not in shown, shown
    assert "SGLang version" in shown and "0.5.23" in shown.split("SGLang version", 1)[1][:40]
    assert "Triton version" in shown and "3.8.0" in shown.split("Triton version", 1)[1][:40]


def test_a_dirty_tree_reads_as_words(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "work", {"train.py": "print(1)\n"})
    for label in ("clean", "dirty"):
        if label == "dirty":
            (repo / "train.py").write_text("print(2)\n")
        r = run_runsnap("capture", "--label", label, "-o", str(tmp_path / f"{label}.toml"),
                        "--", sys.executable, "train.py", cwd=repo, env=_env())
        assert r.returncode == 0, r.stderr
    git(repo, "status")
    r = run_runsnap("diff", str(tmp_path / "clean.toml"), str(tmp_path / "dirty.toml"),
                    "--all", cwd=repo, env=_env())
    assert "(flag)" not in r.stdout and "False" not in r.stdout, r.stdout
    assert "clean -> uncommitted changes" in r.stdout, r.stdout
