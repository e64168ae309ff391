"""A start-up setting of the whole stack read at a package's import (runsnap/diffing/evidence.py,
``on_failing_path(imports=False)``): ``PATH``, read in the module body of an installed package
whose function then raised, is no path to that failure when both runs resolved the same
executables, nor is a variable that differs between any two shells (``XDG_RUNTIME_DIR``); the
option that made the run fail is the cause. (An XGBoost run read ``PATH`` in
``core.py`` at import and failed in ``_validate_features`` on an edited CSV: ``PATH``, changed by
a container's shell, was named with confidence.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import runsnap
from runsnap.capturing import run
from tests.conftest import pip_install

LIB = '''
import os

#: where the native library is searched for, read at import (as xgboost's core.py does)
SEARCH = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p]
#: a runtime folder for its sockets, read at import (as gunicorn's config.py does)
RUNTIME = os.environ.get("XDG_RUNTIME_DIR")


def validate(columns):
    expected = ["seats", "tickets"]
    if columns != expected:
        raise ValueError(f"feature_names mismatch: {expected} {columns}")
'''

APP = """
import sys
import scorelib


def main():
    scorelib.validate(sys.argv[sys.argv.index("--columns") + 1].split(","))


main()
"""


def _venv(root: Path) -> Path:
    proj = root / "proj"
    (proj / "scorelib").mkdir(parents=True)
    (proj / "scorelib" / "__init__.py").write_text(LIB)
    (proj / "setup.py").write_text(textwrap.dedent("""
        from setuptools import setup
        setup(name="scorelib", version="1.0", packages=["scorelib"])
    """))
    env = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    pip_install(env / "bin" / "python", "--no-deps", str(proj), tmp=root)
    return env / "bin" / "python"


def test_path_read_at_an_import_is_not_the_failing_path(tmp_path: Path,
                                                        base_env: dict[str, str]) -> None:
    python = _venv(tmp_path)
    app = tmp_path / "app.py"
    app.write_text(APP)
    empty = tmp_path / "opt-tools"  # a folder with no programs: the same executables resolve
    empty.mkdir()
    path = f"{python.parent}:/usr/bin:/bin"
    run([str(python), str(app), "--columns", "seats,tickets"],
        env={**base_env, "PATH": path, "XDG_RUNTIME_DIR": "/run/user/1004"},
        cwd=tmp_path, output=tmp_path / "a.toml")
    run([str(python), str(app), "--columns", "seats,tickets_30d"],
        env={**base_env, "PATH": f"{empty}:{path}"}, cwd=tmp_path, output=tmp_path / "b.toml")
    report = runsnap.diff(runsnap.load(tmp_path / "a.toml"), runsnap.load(tmp_path / "b.toml"))
    counted = [d for d in report.differences if not d.hidden and d.section != "outcome"]
    assert (counted[0].section, counted[0].key) == ("command", "--columns"), [
        (d.section, d.key, d.score, d.evidence_kind) for d in counted]
    for name in ("PATH", "XDG_RUNTIME_DIR"):  # a stack setting; one that differs in any shell
        diff = next(d for d in report.differences if d.key == name)
        assert diff.evidence_kind != "failing-path", diff.reason
    assert report.to_dict()["confidence"] == "confident"


#: The library's own setting, read in its module body when the program imports it.
LIB_SETTING = '''
import os

CACHE = os.environ.get("SCORELIB_CACHE", "/tmp/scorelib")


def validate(columns):
    expected = ["seats", "tickets"]
    if columns != expected:
        raise ValueError(f"feature_names mismatch: {expected} {columns}")
'''

#: Imports the library and calls it from the same module body, two lines apart.
FLAT_APP = """
import sys
import scorelib
scorelib.validate(sys.argv[sys.argv.index("--columns") + 1].split(","))
"""


def test_a_read_in_an_import_is_not_made_by_the_line_that_imported(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    """The program's module body imports scorelib (line 3: its body reads SCORELIB_CACHE) and
    then calls it (line 4: it raises). The body is on both stacks, but the read was scorelib's
    decision at its import, not the program's on its way to the raise: it counts as a read at
    the import of a package on the failing traceback (97), below the option the error quotes
    (it was "read at flat.py:3 in <module>, which called validate", 98, first)."""
    python = _venv(tmp_path)
    site = next((python.parent.parent / "lib").glob("python*/site-packages"))
    (site / "scorelib" / "__init__.py").write_text(LIB_SETTING)
    app = tmp_path / "flat.py"
    app.write_text(FLAT_APP)
    env = {**base_env, "PATH": f"{python.parent}:/usr/bin:/bin"}
    run([str(python), str(app), "--columns", "seats,tickets"],
        env={**env, "SCORELIB_CACHE": "/data/a"}, cwd=tmp_path, output=tmp_path / "a.toml")
    run([str(python), str(app), "--columns", "seats,tickets_30d"],
        env={**env, "SCORELIB_CACHE": "/data/b"}, cwd=tmp_path, output=tmp_path / "b.toml")
    report = runsnap.diff(runsnap.load(tmp_path / "a.toml"), runsnap.load(tmp_path / "b.toml"))
    counted = [d for d in report.differences if not d.hidden and d.section != "outcome"]
    assert (counted[0].section, counted[0].key) == ("command", "--columns"), [
        (d.section, d.key, d.score, d.evidence_kind) for d in counted]
    cache = next(d for d in report.differences if d.key == "SCORELIB_CACHE")
    assert cache.reason.startswith("read at import of scorelib"), cache.reason  # 97, not 98
