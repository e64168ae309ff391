"""``runsnap gc`` and what ``ls`` says the folder holds (issue 27, item 8): real captures and a
real bisection's folder, removed by a real ``runsnap`` process."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.conftest import run_runsnap


def _folder(tmp_path: Path) -> Path:
    env = {**os.environ}
    env.pop("RUNSNAP_DIR", None)
    code = "import os, sys; sys.exit(int(os.environ.get('KNOB', '0')))"
    for i in range(4):
        r = run_runsnap("capture", "--label", f"run{i}", "--", sys.executable, "-c", code,
                        cwd=tmp_path, env={**env, "KNOB": str(i % 2)})
        assert r.returncode == i % 2, r.stderr
    r = run_runsnap("bisect", "@run0", "@run1", "--recheck", "1", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return tmp_path / ".runsnap"


def _env() -> dict[str, str]:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("RUNSNAP_DIR", None)
    return env


def test_ls_says_what_the_folder_holds_and_gc_removes_what_is_asked(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    bisects = [p for p in folder.iterdir() if p.name.startswith("bisect-")]
    assert len(bisects) == 1
    r = run_runsnap("ls", cwd=tmp_path, env=_env())
    assert r.returncode == 0
    assert ".runsnap: 4 snapshots (" in r.stderr and ", 1 bisect folder (" in r.stderr, r.stderr
    # at 80 columns the line is wrapped, not cut: its end says how to free the folder
    narrow = run_runsnap("ls", cwd=tmp_path, env={**_env(), "COLUMNS": "80"})
    lines = narrow.stderr.splitlines()
    assert all(len(ln) <= 80 for ln in lines) and "…" not in narrow.stderr, narrow.stderr
    assert "runsnap gc --bisect removes them)" in " ".join(ln.strip() for ln in lines)

    dry = run_runsnap("gc", "--keep", "2", "--dry-run", cwd=tmp_path, env=_env())
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.count("would remove") == 2 and "run1" in dry.stdout and "run0" in dry.stdout
    assert len(list(folder.glob("*.toml"))) == 4  # nothing removed

    r = run_runsnap("gc", "--keep", "2", cwd=tmp_path, env=_env())
    assert r.returncode == 0 and "removed 2 snapshots" in r.stderr, r.stderr
    left = run_runsnap("ls", cwd=tmp_path, env=_env()).stdout
    assert "run3" in left and "run2" in left and "run1" not in left
    assert bisects[0].is_dir()  # snapshots only, unless --bisect

    r = run_runsnap("gc", "--bisect", cwd=tmp_path, env=_env())
    assert r.returncode == 0 and "removed 1 bisect folder" in r.stderr, r.stderr
    assert not bisects[0].exists() and len(list(folder.glob("*.toml"))) == 2

    r = run_runsnap("gc", "--older-than", "2000-01-01", cwd=tmp_path, env=_env())
    assert r.returncode == 0 and "removed 0 snapshots" in r.stderr
    r = run_runsnap("gc", "--older-than", "0s", cwd=tmp_path, env=_env())
    assert r.returncode == 0 and "removed 2 snapshots" in r.stderr, r.stderr


def test_gc_needs_to_be_told_what_to_remove(tmp_path: Path) -> None:
    (tmp_path / ".runsnap").mkdir()
    for args, said in ((("gc",), "say what to remove"),
                       (("gc", "--older-than", "last tuesday"), "neither a date"),
                       (("gc", "--keep", "1", "--dir", str(tmp_path / "none")), "no such")):
        r = run_runsnap(*args, cwd=tmp_path, env=_env())
        assert r.returncode == 2 and said in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_gc_removes_only_the_bisect_folders_runsnap_made_and_none_in_use(tmp_path: Path) -> None:
    """Issue 37, class 4: a user's ``bisect-my-notes/`` (no ``bisect.json``) and the folder of
    a bisection still running (``running.pid`` naming a live process) stay; a finished real
    bisection's folder and one whose bisection died go."""
    import subprocess
    import time

    folder = _folder(tmp_path)
    (done,) = [p for p in folder.iterdir() if p.name.startswith("bisect-")]
    assert (done / "bisect.json").is_file() and not (done / "running.pid").exists()
    notes = folder / "bisect-my-notes"
    notes.mkdir()
    (notes / "ideas.txt").write_text("try NCCL_ALGO=Ring\n")
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        stat = Path(f"/proc/{live.pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[19]
        running, left = folder / "bisect-20261204T190000Z-0a0a", folder / "bisect-20261204T180000Z-0b0b"
        for path, pid, started in ((running, live.pid, stat.decode()), (left, dead.pid, "1")):
            path.mkdir()
            (path / "trial-04.log").write_text("running\n")
            (path / "running.pid").write_text(f"{pid} {started}\n")
        time.sleep(0.1)
        r = run_runsnap("gc", "--bisect", cwd=tmp_path, env=_env())
        assert r.returncode == 0 and "removed 2 bisect folders" in r.stderr, r.stderr
        assert not done.exists() and not left.exists()
        assert (notes / "ideas.txt").is_file() and (running / "trial-04.log").is_file()
    finally:
        live.kill()
        live.wait()
