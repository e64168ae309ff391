"""A folder variable under which the runs read only their own scratch
(runsnap/diffing/datafiles.py ``folder_unopened``): a job that stages its shard under
``TMPDIR`` (set by a batch system in one shell, unset in the other), reads it back and removes
it, decided where the shard went, not what was read; a file the run found there, written
before it, is what the folder held. (fresh13 ``label-smoothing-uncommitted-metric-job``: a PBS
job's ``TMPDIR``, read by the program, tied with the config edit that moved the loss.)

Real traced launches, real files."""

from __future__ import annotations

import sys
from pathlib import Path

from runsnap.capturing import run
from runsnap.diffing import compare
from tests.diffing.conftest import write_script

STAGE = """
    import json, os, subprocess, sys, tempfile

    scale = json.load(open("train.json"))["scale"]
    scratch = os.environ.get("TMPDIR") or tempfile.gettempdir()
    cache = os.path.join(scratch, "shard-cache.json")
    if os.path.exists(cache):  # a shard left by an earlier job: what the folder holds
        shard = json.load(open(cache))
    else:
        staged = os.path.join(scratch, f"shard-{os.getpid()}.json")
        # a worker stages the shard, as a job's loader does; this process reads it back
        subprocess.run([sys.executable, "-c", "import json, sys; "
                        "json.dump([1.0, 2.0, 3.0], open(sys.argv[1], 'w'))", staged],
                       check=True)
        shard = json.load(open(staged))
        os.remove(staged)
    print(f"loss={scale * sum(shard) / len(shard):.4f}")
    """


def _pair(tmp_path: Path, base_env: dict[str, str], left: str | None) -> object:
    app = write_script(tmp_path, "stage.py", STAGE)
    (tmp_path / "train.json").write_text('{"scale": 1.0}')
    scratch = tmp_path / "pbs-tmp"
    scratch.mkdir()
    a = run([sys.executable, str(app)], env=base_env, cwd=tmp_path,
            output=tmp_path / "a.toml").snapshot
    (tmp_path / "train.json").write_text('{"scale": 1.5}')  # the change that moves the loss
    if left is not None:
        (scratch / "shard-cache.json").write_text(left)
    b = run([sys.executable, str(app)], env={**base_env, "TMPDIR": str(scratch)}, cwd=tmp_path,
            output=tmp_path / "b.toml").snapshot
    return compare(a, b)


def test_a_scratch_folder_that_held_only_the_runs_own_temporaries_is_incidental(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    report = _pair(tmp_path, base_env, None)
    tmpdir = next(d for d in report.differences if d.key == "TMPDIR")  # type: ignore[attr-defined]
    assert tmpdir.evidence_kind == "incidental", (tmpdir.evidence_kind, tmpdir.reason)
    assert "was their own scratch" in tmpdir.reason
    assert report.confidence == "confident", report.verdict()  # type: ignore[attr-defined]
    assert "train.json" in report.candidates[0].key  # type: ignore[attr-defined]


def test_a_file_the_run_found_in_the_folder_keeps_the_folder_a_candidate(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    report = _pair(tmp_path, base_env, "[2.0, 4.0, 6.0]")
    tmpdir = next(d for d in report.differences if d.key == "TMPDIR")  # type: ignore[attr-defined]
    assert tmpdir.evidence_kind == "read", (tmpdir.evidence_kind, tmpdir.reason)
    assert any(c.key == "TMPDIR" for c in report.candidates)  # type: ignore[attr-defined]
