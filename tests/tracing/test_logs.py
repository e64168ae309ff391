"""Reading the hook's logs: a file parsed whole gives the records line-by-line parsing gives,
and a line cut short (a killed process, a short write) is left out, wherever it is."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from runsnap.tracing import HOOK_DIR
from runsnap.tracing.merge import read_logs


def _one_by_one(path: Path) -> list[tuple[object, ...]]:
    out = []
    for line in path.read_text().splitlines(keepends=True):
        try:
            rec = ast.literal_eval(line)
        except (ValueError, SyntaxError):
            continue
        if isinstance(rec, tuple) and rec:
            out.append(rec)
    return out


def _real_log(tmp_path: Path) -> Path:
    folder = tmp_path / "trace"
    folder.mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "RUNSNAP_TRACE_DIR": str(folder), "RUNSNAP_TRACE_PYTHONPATH": "",
           "PYTHONPATH": HOOK_DIR, "SOME_SETTING": "x'y\"z\\n"}
    code = "import os, json\nfor n in ('SOME_SETTING', 'NOPE'):\n    os.environ.get(n)\ndict(os.environ)"
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    (log,) = folder.iterdir()
    return log


def test_whole_file_parse_gives_the_line_by_line_records(tmp_path: Path) -> None:
    log = _real_log(tmp_path)
    python, _native = read_logs(str(log.parent))
    assert python == [_one_by_one(log)]
    kinds = {rec[0] for rec in python[0]}
    assert {"P", "S", "B", "M", "E"} <= kinds


def test_lines_cut_short_are_left_out_wherever_they_are(tmp_path: Path) -> None:
    log = _real_log(tmp_path)
    lines = log.read_text().splitlines(keepends=True)
    assert len(lines) > 6
    # a short write in the middle (the next record appended on the same line), and a kill
    # in the middle of the last line
    damaged = lines[:4] + [lines[4][:11] + lines[5]] + lines[6:] + [lines[3][:-7]]
    log.write_text("".join(damaged))
    python, _native = read_logs(str(log.parent))
    assert python == [_one_by_one(log)]
    assert len(python[0]) == len(lines) - 2
