"""One change seen from three places: a folder on ``PYTHONPATH`` in one shell holds an older
copy of a package the venv has too. The package's version, its hidden second copy
(``packages X.shadowed``), the module the run imported from elsewhere and ``sys.path`` all
come from that variable: they are shown under it, and the verdict names it alone. Real venv,
real pip installs (``pip install --target`` for the folder), real traced launches."""

from __future__ import annotations

import venv
from pathlib import Path

from runsnap.capturing import run
from runsnap.diffing import compare
from tests.conftest import pip_install


def _project(root: Path, version: str, body: str) -> Path:
    src = root / f"colorlib-{version}"
    (src / "colorlib").mkdir(parents=True)
    (src / "colorlib" / "__init__.py").write_text(body)
    (src / "setup.py").write_text(
        "from setuptools import setup\n"
        f"setup(name='colorlib', version={version!r}, packages=['colorlib'])\n")
    return src


def test_an_older_copy_on_pythonpath_is_one_difference(tmp_path: Path,
                                                       base_env: dict[str, str]) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    pip_install(python, "--no-deps", str(_project(tmp_path / "src", "2.0",
                                                  "def shade(x):\n    return x * 2\n")),
                tmp=tmp_path)
    libs = tmp_path / "team-libs"
    pip_install(python, "--no-deps", "--target", str(libs),
                str(_project(tmp_path / "old", "1.0", "def paint(x):\n    return x\n")),
                tmp=tmp_path)
    app = tmp_path / "app.py"
    app.write_text("import colorlib\nprint('shade', colorlib.shade(3))\n")
    argv = [str(python), str(app)]
    a = run(argv, env=base_env, cwd=tmp_path, output=tmp_path / "a.toml").snapshot
    b = run(argv, env={**base_env, "PYTHONPATH": str(libs)}, cwd=tmp_path,
            output=tmp_path / "b.toml").snapshot
    assert (a["outcome"]["exit_status"], b["outcome"]["exit_status"]) == (0, 1)
    report = compare(a, b)
    top = report.counted[0]
    assert (top.section, top.key) == ("env", "PYTHONPATH"), report.verdict()
    under = {(d.section, d.key) for d in top.related}
    assert ("packages", "colorlib") in under, under
    package = next(d for d in top.related if d.key == "colorlib")
    assert ("packages", "colorlib.shadowed") in {(d.section, d.key) for d in package.related}
    assert all(d.key not in ("colorlib", "colorlib.shadowed") for d in report.counted[1:])
    assert (report.confidence, report.candidates[0].key) == ("confident", "PYTHONPATH"), \
        report.verdict()

