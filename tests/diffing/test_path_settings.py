"""An interpreter setting that decides ``sys.path`` (runsnap/diffing/pathsettings.py, the probe's
``sys.path`` in runsnap/capturing/context.py): two real launches of a script that imports a
module beside it, one from a shell that sets ``PYTHONSAFEPATH=1`` (an image's hardening), which
keeps the script's folder off ``sys.path`` (CPython 3.11+)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from runsnap.capturing import run
from runsnap.diffing import compare
from tests.diffing.conftest import write_script

pytestmark = pytest.mark.skipif(sys.version_info < (3, 11), reason="PYTHONSAFEPATH is 3.11+")


def test_pythonsafepath_is_the_cause_with_the_sys_path_it_made(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    app = tmp_path / "scoring"
    app.mkdir()
    write_script(app, "features.py", "def build(x):\n    return [x, x * x]\n")
    script = write_script(app, "score.py", """
        from features import build
        print("score", sum(build(3)))
        """)
    argv = [sys.executable, str(script)]
    a = run(argv, env=base_env, cwd=tmp_path, output=tmp_path / "a.toml").snapshot
    b = run(argv, env={**base_env, "PYTHONSAFEPATH": "1", "PYTHONUNBUFFERED": "1"},
            cwd=tmp_path, output=tmp_path / "b.toml").snapshot
    assert b["outcome"]["first_error"] == "ModuleNotFoundError: No module named 'features'"
    # the probe lists the child's sys.path: the script's folder first in A only, and nothing
    # of the interpreter's own entries lost in B
    pa, pb = a["packages"]["sys_path"], b["packages"]["sys_path"]
    assert pa[0] == str(app.resolve()) and pa[1:] == pb, (pa, pb)
    report = compare(a, b)
    top = report.candidates[0]
    assert (top.key, report.confidence) == ("PYTHONSAFEPATH", "confident"), report.verdict()
    assert [r.key for r in top.related if r.section == "packages"] == ["sys.path"]
    assert "names features, which A imported from" in top.reason, top.reason
