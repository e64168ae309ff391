"""Both runs failed, otherwise: the one that got past the point where the other failed says
nothing of why the runs parted (runsnap/diffing/runfacts.py ``went_further``). Two real traced
launches of a program in a real git repository; the lines compare through B's uncommitted
diff (``committed_line``)."""

from __future__ import annotations

import sys
from pathlib import Path

from runsnap.capturing import run
from runsnap.diffing import compare
from runsnap.diffing.runfacts import RunFacts, went_further
from tests.conftest import make_repo

TRAIN = '''import os
import socket


def build(width):
    if width % 8:
        raise ValueError(f"width {width} must be a multiple of 8")
    return width


def upload():
    timeout = float(os.environ.get("UPLOAD_TIMEOUT", "5"))
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nobody listens there now: the results service is down
    socket.create_connection(("127.0.0.1", port), timeout=timeout)


def main():
    width = build(64)
    print("trained width", width)
    upload()


main()
'''


def test_the_run_that_got_further_fails_where_the_other_never_came(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    """A trains and then fails to upload (the results service is down: both would); B, with
    an uncommitted edit, fails building the model, before the upload. A's failing path reads
    UPLOAD_TIMEOUT, which the shells set apart: no evidence, since B never got there. The edit
    B's traceback runs through is the cause (the two were tied before)."""
    repo = make_repo(tmp_path / "proj", {"train.py": TRAIN})
    argv = [sys.executable, "train.py"]
    a = run(argv, env={**base_env, "UPLOAD_TIMEOUT": "5"}, cwd=repo,
            output=tmp_path / "a.toml").snapshot
    edited = TRAIN.replace("    width = build(64)\n",
                           "    # narrower, to fit the new box\n    width = build(60)\n")
    (repo / "train.py").write_text(edited)
    b = run(argv, env={**base_env, "UPLOAD_TIMEOUT": "30"}, cwd=repo,
            output=tmp_path / "b.toml").snapshot
    assert a["outcome"]["first_error"].startswith("ConnectionRefusedError")
    assert b["outcome"]["first_error"] == "ValueError: width 60 must be a multiple of 8"
    assert went_further(RunFacts.of(a, "A"), RunFacts.of(b, "B")) == "A"
    report = compare(a, b)
    top = report.candidates[0]
    assert (top.section, top.key, report.confidence) == (
        "git", "proj: train.py", "confident"), report.verdict()
    timeout = next(d for d in report.counted if d.key == "UPLOAD_TIMEOUT")
    assert timeout.evidence_kind != "failing-path", timeout.reason


def test_a_file_changed_in_both_runs_says_nothing(tmp_path: Path,
                                                   base_env: dict[str, str]) -> None:
    """Where both runs ran an edited copy, their lines are no common measure: no verdict on
    who went further."""
    repo = make_repo(tmp_path / "proj", {"train.py": TRAIN})
    argv = [sys.executable, "train.py"]
    (repo / "train.py").write_text("# a note\n" + TRAIN)
    a = run(argv, env=base_env, cwd=repo, output=tmp_path / "a.toml").snapshot
    (repo / "train.py").write_text("# a note\n" + TRAIN.replace("build(64)", "build(60)"))
    b = run(argv, env=base_env, cwd=repo, output=tmp_path / "b.toml").snapshot
    assert went_further(RunFacts.of(a, "A"), RunFacts.of(b, "B")) == ""
