"""Python installations the tests build for themselves, so that what a test asserts about a
child interpreter does not hang on the interpreter the suite happens to run under.

Debian's and Ubuntu's ``/usr/bin/python3`` import a ``sitecustomize.py`` from their standard
library (the apport hook), so every venv made from them is an interpreter runsnap calls
customised, and never caches its probe (:func:`runsnap.base.cache.store_probe`). A test about
the cache, run from such a venv, made its child venvs from that base and saw every probe run.

:func:`plain_base` is the suite's base interpreter with a standard library of its own: every
entry of the real one linked, less any ``sitecustomize`` or ``usercustomize`` module, and with
one planted when the test asks for a customised base. A venv made from it (:func:`venv_on`)
finds that library through its ``pyvenv.cfg`` ``home``, as any venv finds its base's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

__all__ = ["customised", "plain_base", "venv_on"]

#: Modules ``site`` imports by name at start-up when anything on ``sys.path`` provides them.
CUSTOMISE = ("sitecustomize", "usercustomize")


def _is_customise(name: str) -> bool:
    """Whether the directory entry ``name`` provides a ``sitecustomize``/``usercustomize``
    module (a file of any suffix, or a package folder)."""
    return name.split(".", 1)[0] in CUSTOMISE


def plain_base(root: Path, sitecustomize: str | None = None) -> Path:
    """A Python installation at ``root`` running this suite's base interpreter (its real
    binary, linked) on a copy of its standard library made of links, with no customisation
    module; ``sitecustomize``: the text of one planted in that library, as Debian plants its
    own. Returns the installation's ``bin/pythonX.Y``, ready for ``-m venv``."""
    real_base = Path(sys.base_prefix)
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    bases = {k: str(real_base) for k in ("base", "installed_base", "platbase",
                                         "installed_platbase")}  # not this venv's
    stdlib, platstdlib = (Path(sysconfig.get_path(k, vars=bases)) for k in ("stdlib",
                                                                           "platstdlib"))
    for lib in dict.fromkeys((stdlib, platstdlib)):  # one folder, or lib and lib64
        mirror = root / lib.relative_to(real_base)
        mirror.mkdir(parents=True, exist_ok=True)
        for entry in lib.iterdir():
            if not _is_customise(entry.name):
                (mirror / entry.name).symlink_to(entry)
    if sitecustomize is not None:
        (root / stdlib.relative_to(real_base) / "sitecustomize.py").write_text(sitecustomize)
    python = root / "bin" / version
    python.parent.mkdir(exist_ok=True)
    python.symlink_to(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))
    return python


def venv_on(base: Path, env_dir: Path) -> tuple[Path, Path]:
    """A real venv (no pip: fast) at ``env_dir`` whose base is ``base`` (a :func:`plain_base`):
    its python and site-packages."""
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(env_dir)], check=True)
    py = env_dir / "bin" / "python"
    site = Path(subprocess.check_output(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
    ).strip())
    return py, site


def customised(python: Path) -> list[str]:
    """The customisation modules ``python`` imports at start-up (their files), as runsnap's
    probe finds them: in ``sys.modules`` once ``site`` has run."""
    code = ("import sys\n"
            f"for m in {CUSTOMISE!r}:\n"
            "    if m in sys.modules: print(getattr(sys.modules[m], '__file__', m))\n")
    out = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True,
                         env={"PATH": os.environ["PATH"], "HOME": str(python.parent)})
    return out.stdout.splitlines()
