"""Start runsnap itself in a trial's environment, however this runsnap was installed.

A trial runs ``runsnap capture`` (or :mod:`runsnap.experiments.quicktrial`) with the trial's own
environment and working directory: the program must see the trial's ``PYTHONPATH``, and
runsnap must not (a trial that puts click 7 on ``PYTHONPATH`` would otherwise break runsnap
instead of the program). So runsnap runs isolated (``python -I``: no ``PYTHONPATH``, no user
site, not the working folder) and is handed the import path of the runsnap that starts it
(``sys.path`` of this process, made absolute): a wheel in a venv, an editable or ``PYTHONPATH``
checkout, ``python -m runsnap`` from a source tree, pipx and a zipapp all import the same
runsnap, with the same dependencies, in the trial.

Its own words (messages, a traceback when it cannot start) go to a file of their own
(``own``), so the trial's log holds only what the program printed: the relay of the program's
output writes to file descriptors 1 and 2 directly, runsnap's lines go through ``sys.stderr``.

    >>> argv = runsnap_argv("runsnap", ["--version"], own="/tmp/t.runsnap.txt")
    >>> argv[1:3], argv[5:]
    (['-I', '-c'], ['/tmp/t.runsnap.txt', 'runsnap', '--version'])
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

__all__ = ["BOOT", "import_path", "runsnap_argv"]

#: The code ``python -I -c`` runs: the import path, then runsnap's own stderr, then the module
#: as ``python -m`` would run it. stdlib only: nothing of runsnap is importable before it.
BOOT = (
    "import json, runpy, sys\n"
    "paths, own, module = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]\n"
    "sys.path[:] = paths\n"
    "if own:\n"
    "    sys.stderr = open(own, 'a', encoding='utf-8', errors='backslashreplace', buffering=1)\n"
    "sys.argv = [module, *sys.argv[4:]]\n"
    "runpy.run_module(module, run_name='__main__', alter_sys=True)\n"
)


def import_path() -> list[str]:
    """This process's ``sys.path``, each entry absolute (``""`` is the folder runsnap started
    in), without repeats: where this runsnap and its dependencies were found."""
    here = os.getcwd()
    out: list[str] = []
    for entry in sys.path:
        full = os.path.normpath(os.path.join(here, entry)) if entry != "" else here
        if full not in out:
            out.append(full)
    return out


def runsnap_argv(module: str, args: Sequence[str], *, own: str = "") -> list[str]:
    """The command that runs ``python -m MODULE ARGS`` with this runsnap, isolated from the
    trial's environment; ``own``: the file its own stderr goes to ("" leaves it as given)."""
    return [sys.executable, "-I", "-c", BOOT, json.dumps(import_path()), own, module, *args]
