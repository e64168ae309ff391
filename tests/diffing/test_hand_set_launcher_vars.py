"""A launcher's variable that is noise by name (``RANK``: which process of a job this is) is
noise only where a launcher set it. ``RANK=1`` left exported in a terminal, read by a
program launched by hand, is a setting like any other: the run waits for a rank 0 that never
comes (fresh25 ``rank-left-exported-in-vterm``, scored untouched: the cause hidden as noise)."""

from __future__ import annotations

import sys
from pathlib import Path

import runsnap
from runsnap.capturing import run

APP = """
import os

rank = int(os.environ.get("RANK", "0"))
if rank != 0:
    raise TimeoutError(f"rank {rank}: no rendezvous with rank 0 within 1 s")
print("score=0.91")
"""


def test_a_rank_exported_by_hand_is_the_cause_not_noise(tmp_path: Path,
                                                       base_env: dict[str, str]) -> None:
    app = tmp_path / "score.py"
    app.write_text(APP)
    run([sys.executable, str(app)], env={**base_env, "SHLVL": "1"}, cwd=tmp_path,
        output=tmp_path / "a.toml")
    run([sys.executable, str(app)], env={**base_env, "SHLVL": "2", "RANK": "1"}, cwd=tmp_path,
        output=tmp_path / "b.toml")
    report = runsnap.diff(runsnap.load(tmp_path / "a.toml"), runsnap.load(tmp_path / "b.toml"))
    shown = [(d.key, d.score, d.hidden) for d in report.differences]
    assert report.differences[0].key == "RANK" and not report.differences[0].hidden, shown
    assert report.to_dict()["confidence"] == "confident", report.verdict()
    # the shell's own noise stays noise
    assert next(d for d in report.differences if d.key == "SHLVL").hidden, shown


def test_ranks_a_launcher_set_stay_noise(tmp_path: Path, base_env: dict[str, str]) -> None:
    """Two processes of one job launched by hand the way torch.distributed documents it
    (``RANK`` and ``WORLD_SIZE`` exported per process): which rank each is decided nothing."""
    app = tmp_path / "score.py"
    app.write_text("import os\nprint('score=0.91')\n"
                   "raise SystemExit(int(os.environ.get('FAIL', '0')))\n")
    job = {**base_env, "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"}
    run([sys.executable, str(app)], env={**job, "RANK": "0"}, cwd=tmp_path,
        output=tmp_path / "a.toml")
    run([sys.executable, str(app)], env={**job, "RANK": "1", "FAIL": "3"}, cwd=tmp_path,
        output=tmp_path / "b.toml")
    report = runsnap.diff(runsnap.load(tmp_path / "a.toml"), runsnap.load(tmp_path / "b.toml"))
    assert next(d for d in report.differences if d.key == "RANK").hidden
    assert report.differences[0].key == "FAIL", [(d.key, d.score) for d in report.differences]
