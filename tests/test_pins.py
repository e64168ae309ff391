"""Pinned baselines (issue 38, item 3): ``runsnap pin`` / ``unpin`` by a real ``runsnap``
process over real captures; ``ls`` marks them, ``gc`` keeps them, ``@pinned`` names them."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import run_runsnap


def _env() -> dict[str, str]:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("RUNSNAP_DIR", None)
    return env


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Four real runs in ./.runsnap, oldest first: run0 (exit 0), run1 (exit 1), run2, run3."""
    code = "import os, sys; sys.exit(int(os.environ.get('KNOB', '0')))"
    for i in range(4):
        r = run_runsnap("capture", "--label", f"run{i}", "--", sys.executable, "-c", code,
                        cwd=tmp_path, env={**_env(), "KNOB": str(i % 2)})
        assert r.returncode == i % 2, r.stderr
    return tmp_path / ".runsnap"


def test_a_pinned_snapshot_is_marked_kept_by_gc_and_named_at_pinned(folder: Path) -> None:
    cwd = folder.parent
    r = run_runsnap("pin", "@run0", cwd=cwd, env=_env())
    assert r.returncode == 0 and r.stdout.startswith("pinned ") and "run0" in r.stdout, r.stderr
    again = run_runsnap("pin", "@4", cwd=cwd, env=_env())  # the same file, by position
    assert again.returncode == 0 and "already pinned" in again.stdout

    rows = run_runsnap("ls", cwd=cwd, env=_env()).stdout.splitlines()
    assert [r for r in rows if "(pinned)" in r] == [next(r for r in rows if "run0" in r)]
    data = json.loads(run_runsnap("ls", "--format", "json", cwd=cwd, env=_env()).stdout)
    assert [d["label"] for d in data if d["pinned"]] == ["run0"]

    # @pinned: the pinned baseline against the last run, as any diff names its snapshots
    diff = run_runsnap("diff", "@pinned", "@1", "--format", "json", cwd=cwd, env=_env())
    assert diff.returncode == 1, diff.stderr
    sides = json.loads(diff.stdout)
    assert [sides["a"]["label"], sides["b"]["label"]] == ["run0", "run3"]

    r = run_runsnap("gc", "--keep", "1", cwd=cwd, env=_env())
    assert r.returncode == 0 and "removed 2 snapshots" in r.stderr, r.stderr
    left = sorted(p.name.split("-", 1)[1] for p in folder.glob("*.toml"))
    assert left == ["run0.toml", "run3.toml"]
    r = run_runsnap("gc", "--older-than", "0s", cwd=cwd, env=_env())
    assert r.returncode == 0 and "removed 1 snapshot " in r.stderr, r.stderr
    assert [p.name.split("-", 1)[1] for p in folder.glob("*.toml")] == ["run0.toml"]

    r = run_runsnap("unpin", "@pinned", cwd=cwd, env=_env())
    assert r.returncode == 0 and r.stdout.startswith("unpinned "), r.stderr
    r = run_runsnap("diff", "@pinned", "@1", cwd=cwd, env=_env())
    assert r.returncode == 2 and r.stderr == (
        "runsnap: @pinned: no snapshot is pinned in .runsnap (runsnap pin @N)\n")
    r = run_runsnap("gc", "--older-than", "0s", cwd=cwd, env=_env())
    assert r.returncode == 0 and not list(folder.glob("*.toml"))


def test_pin_refuses_what_is_no_snapshot_of_the_folder(folder: Path, tmp_path: Path) -> None:
    cwd = folder.parent
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_bytes(next(folder.glob("*run1.toml")).read_bytes())
    for args, message in ((("pin", str(elsewhere)), "not in .runsnap"),
                          (("pin", "@9"), ".runsnap holds 4 snapshots"),
                          (("unpin", "@nolabel"), "no snapshot labelled 'nolabel'"),
                          (("pin",), "Missing argument")):
        r = run_runsnap(*args, cwd=cwd, env=_env())
        assert r.returncode == 2 and message in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr
    notsnap = folder / "notes.toml"
    notsnap.write_text("x = 1\n")
    r = run_runsnap("pin", str(notsnap), cwd=cwd, env=_env())
    assert r.returncode == 2 and "not a runsnap snapshot" in r.stderr
    assert not (folder / "pins").exists()
