"""A capture stays clear of the standard-library modules that cost it the most CPU to import.

runsnap sits in front of every launch, so what ``runsnap capture`` imports is paid on every run
(figures in CHANGELOG.md). The captures here are real ones, in a real repository, in a fresh
interpreter started with ``-S``: the finder that an editable install (this checkout's) adds to
every interpreter imports pathlib at start-up, and a regular install has no such finder. The
source tree and the folder holding runsnap's dependencies are put on ``sys.path`` by hand.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
DEPENDENCIES = str(Path(psutil.__file__).resolve().parent.parent)

#: What a capture must never import: click (~30 ms, see runsnap/entry.py), dataclasses (~13 ms,
#: with inspect).
NEVER = ("click", "dataclasses", "inspect")

_CAPTURE = """
import sys
root, dependencies, *args = sys.argv[1:]
sys.path[:0] = [root, dependencies]
sys.argv = ["runsnap", "capture", *args]
from runsnap.entry import main
try:
    main()
finally:
    sys.stderr.write("\\nimported: %s\\n" % " ".join(sorted(m for m in WATCHED if m in sys.modules)))
"""


def imported_by_capture(repo: Path, out: Path, *args: str, watched: tuple[str, ...]) -> list[str]:
    """Which of ``watched`` a ``runsnap capture -o OUT ARGS`` in ``repo`` imported."""
    script = f"WATCHED = {watched!r}\n{_CAPTURE}"
    res = subprocess.run(
        [sys.executable, "-S", "-c", script, str(ROOT), DEPENDENCIES, "-o", str(out), *args],
        cwd=repo, capture_output=True, text=True, timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert out.read_text().rstrip().endswith("# end of runsnap snapshot")
    return res.stderr.rstrip().rpartition("imported:")[2].split()


@pytest.mark.parametrize("args", [["--no-run"], ["--", sys.executable, "-c", "pass"]],
                         ids=["no-run", "run"])
def test_a_capture_imports_none_of_the_costly_modules(
    tmp_path: Path, repo: Path, args: list[str]
) -> None:
    assert imported_by_capture(repo, tmp_path / "s.toml", *args, watched=NEVER) == []
