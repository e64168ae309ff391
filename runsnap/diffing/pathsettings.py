"""An interpreter setting that decides ``sys.path``, with the ``sys.path`` it made.

The interpreter reads ``PYTHON*`` variables at its start-up; such a read is evidence of how
Python ran, not of a decision of the program (incidental, :mod:`runsnap.diffing.attribution`),
unless what it decides differs. A few decide which folders are searched for modules, as CPython
documents it (Doc/library/sys_path_init.rst, Doc/using/cmdline.rst, v3.11-3.13):
``PYTHONSAFEPATH`` keeps the script's folder (or the working directory) off the front of
``sys.path``, ``PYTHONNOUSERSITE`` the user's site-packages, ``PYTHONUSERBASE`` moves it,
``PYTHONHOME`` and ``PYTHONPLATLIBDIR`` move the standard library. Where one of them differs and
the runs' ``sys.path`` differs too, :func:`by_path_setting` (a grouper of
:mod:`runsnap.diffing.grouping`) puts ``sys.path`` under the variable: one change, the setting
and what it did, ranked by the stronger evidence of the two (``No module named 'features'``
where the other run imported ``features`` from its script's folder:
:func:`runsnap.diffing.searchpaths.search_path_evidence`). ``PYTHONPATH`` is judged by its own
entries (``by_search_path``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runsnap.diffing.grouprecord import Group
from runsnap.diffing.result import Difference

__all__ = ["PATH_SETTINGS", "by_path_setting"]

#: Interpreter variables that decide ``sys.path``, and what each does to it.
PATH_SETTINGS = {
    "PYTHONSAFEPATH": "keeps the script's folder (or the working directory) off sys.path",
    "PYTHONNOUSERSITE": "keeps the user's site-packages off sys.path",
    "PYTHONUSERBASE": "moves the user's site-packages on sys.path",
    "PYTHONHOME": "moves the standard library on sys.path",
    "PYTHONPLATLIBDIR": "moves the platform library folder on sys.path",
}


def by_path_setting(diffs: Sequence[Difference], a: Any, b: Any) -> list[Group]:
    """``sys.path`` under the one interpreter setting of :data:`PATH_SETTINGS` that differs,
    when ``sys.path`` differs too (two such settings: nothing, the runs cannot say which)."""
    path = next((d for d in diffs if d.section == "packages" and d.key == "sys.path"), None)
    settings = [d for d in diffs if d.section == "env" and d.key in PATH_SETTINGS]
    if path is None or len(settings) != 1:
        return []
    var = settings[0]
    return [Group(var, (path,), lines=(f"{var.key} {PATH_SETTINGS[var.key]}: the runs' "
                                       f"sys.path differs with it",))]
