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
from pathlib import Path

import runsnap
from runsnap.capturing import run
from tests.conftest import pip_install, venv_with_package

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


def test_path_read_at_an_import_is_not_the_failing_path(tmp_path: Path,
                                                        base_env: dict[str, str]) -> None:
    python = venv_with_package(tmp_path, "scorelib", LIB)
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
    python = venv_with_package(tmp_path, "scorelib", LIB)
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


#: A package of two parts, each reading its own setting at import (as torch's
#: ``_functorch/config.py`` reads ``CI`` and ``distributed`` code reads its own): the failure is
#: raised in the serving part.
PARTS = {
    "scorelib/__init__.py": "from scorelib import tuning, serve\n",
    "scorelib/tuning/__init__.py": "from scorelib.tuning.config import WORKERS\n",
    "scorelib/tuning/config.py": 'import os\nWORKERS = os.environ.get("SCORELIB_TUNING", "2")\n',
    "scorelib/serve/__init__.py": ('import os\nPORT = os.environ.get("SCORELIB_PORT", "8000")\n'
                                   "from scorelib.serve.check import validate\n"),
    "scorelib/serve/check.py": (
        "def validate(columns):\n"
        '    expected = ["seats", "tickets"]\n'
        "    if columns != expected:\n"
        '        raise ValueError(f"feature_names mismatch: {expected} {columns}")\n'),
}

PARTS_APP = """
import sys
import scorelib


def main():
    scorelib.serve.validate(sys.argv[sys.argv.index("--columns") + 1].split(","))


main()
"""


def test_a_read_at_import_counts_only_for_its_own_part_of_the_package(
        tmp_path: Path, base_env: dict[str, str]) -> None:
    """SCORELIB_PORT, read at the import of ``scorelib/serve``, whose ``check.py`` raised, is
    on the failing path (97); SCORELIB_TUNING, read at the import of ``scorelib/tuning``, is
    not: another part of the package read it for itself (in a dist-backend job, torch's
    ``_functorch/config.py`` read ``CI`` and was named with a c10d error, 97, first)."""
    proj = tmp_path / "proj"
    for rel, text in PARTS.items():
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        (proj / rel).write_text(text)
    (proj / "setup.py").write_text(
        "from setuptools import setup\nsetup(name='scorelib', version='1.0', "
        "packages=['scorelib', 'scorelib.tuning', 'scorelib.serve'])\n")
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    pip_install(python, "--no-deps", str(proj), tmp=tmp_path)
    app = tmp_path / "parts.py"
    app.write_text(PARTS_APP)
    env = {**base_env, "PATH": f"{python.parent}:/usr/bin:/bin"}
    run([str(python), str(app), "--columns", "seats,tickets"],
        env={**env, "SCORELIB_TUNING": "2", "SCORELIB_PORT": "8000"}, cwd=tmp_path,
        output=tmp_path / "a.toml")
    run([str(python), str(app), "--columns", "seats,tickets_30d"],
        env={**env, "SCORELIB_TUNING": "4", "SCORELIB_PORT": "8001"}, cwd=tmp_path,
        output=tmp_path / "b.toml")
    report = runsnap.diff(runsnap.load(tmp_path / "a.toml"), runsnap.load(tmp_path / "b.toml"))
    port = next(d for d in report.differences if d.key == "SCORELIB_PORT")
    tuning = next(d for d in report.differences if d.key == "SCORELIB_TUNING")
    assert port.evidence_kind == "failing-path", port.reason
    assert port.reason.startswith("read at import of scorelib (scorelib/serve/__init__.py"), \
        port.reason
    assert tuning.evidence_kind != "failing-path", tuning.reason
