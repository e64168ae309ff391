"""``runsnap diff A B ...`` with no option runs without click (:mod:`runsnap.cli.fast`):
the same report, exit status and errors as through the click command, which still reads
every command line with an option in it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks.realranks import write_job
from runsnap.cli.fast import plain_diff
from runsnap.commands.diff import DiffRequest
from tests.conftest import run_runsnap
from tests.test_entry import _WATCH


def test_a_diff_with_no_option_is_the_click_commands_without_click(tmp_path: Path) -> None:
    paths = [str(p) for p in write_job(tmp_path / "job", 12, log=None)]  # rank 9 failed
    for args in (paths[:2], paths[8:10], [str(tmp_path / "job"), paths[0]], paths[:4]):
        plain = run_runsnap("diff", *args, cwd=tmp_path)
        clicked = run_runsnap("diff", "--format", "text", *args, cwd=tmp_path)
        assert (plain.returncode, plain.stdout, plain.stderr) == \
            (clicked.returncode, clicked.stdout, clicked.stderr), args
    assert run_runsnap("diff", *paths[8:10], cwd=tmp_path).returncode == 1
    missing = run_runsnap("diff", paths[0], str(tmp_path / "nope.toml"), cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr.startswith("runsnap: ")
    res = subprocess.run([sys.executable, "-c", _WATCH, "diff", *paths[:2]], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert "click imported: False" in res.stderr, res.stderr
    res = subprocess.run([sys.executable, "-c", _WATCH, "diff", "--all", *paths[:2]],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "click imported: True" in res.stderr, res.stderr


def test_options_and_their_variables_are_left_to_click() -> None:
    assert plain_diff(["a", "b"], {}) == DiffRequest(snapshots=("a", "b"), snap_dir=".runsnap")
    assert plain_diff(["a", "b"], {"RUNSNAP_DIR": ""}) == DiffRequest(snapshots=("a", "b"))
    for args, env in ((["a", "-q", "b"], {}), (["a", "--", "b"], {}), (["a"], {}), ([], {}),
                      (["a", "b"], {"RUNSNAP_FORMAT": "json"}), (["a", ""], {})):
        assert plain_diff(args, env) is None, (args, env)
