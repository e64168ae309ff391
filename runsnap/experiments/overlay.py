"""Another version of one installed package, applied to a trial without touching any venv.

Where GOOD and BAD imported other versions of a package (``pydantic`` 2.14 from the shared
venv, 1.10 from the project's venv, where ``pip install -r requirements-legacy.txt`` put it
between the runs), and the other run's copy is still installed where its snapshot recorded it,
a trial gets that copy through an overlay: a folder of its own, under the trial's folder,
holding links to the package's top-level modules and its ``.dist-info`` (as the copy's
``RECORD`` lists them), put first on ``PYTHONPATH``. Python searches ``PYTHONPATH`` before
site-packages, so the program imports, and ``importlib.metadata`` reports, that version; the
user's environments are never written.

It is done only where it is honest; otherwise :func:`why_not` says precisely why, in words
the user acts on:

* both runs had the package (runsnap does not install one, nor take one away);
* the recorded folder still holds that version (``pip install -U`` in place replaces it);
* the copy's ``RECORD`` lists its files, none of them a ``.pth`` and no top-level folder
  shared with other distributions (a namespace package: a link would hide their parts); an
  editable install (its ``.pth`` puts a checkout on the path), or a copy without a
  ``RECORD``, is linked by what the run imported from there (``[runtime.modules]``), as it is
  now: the proof's launches tell whether that still gives the run's result;
* the interpreter honours ``PYTHONPATH`` (not ``-I`` or ``-E``).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from runsnap.base.argv import is_python_name

if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["installed_copy", "overlay_env", "why_not"]


def _normal(name: str) -> str:
    """A distribution's name as PEP 503 compares it.

    >>> _normal("Pydantic_Core")
    'pydantic-core'
    """
    return re.sub(r"[-_.]+", "-", name).lower()


def _dist_info(folder: str, name: str, version: str) -> str | None:
    """The ``.dist-info`` folder of ``name`` ``version`` in ``folder``, or None."""
    try:
        entries = os.listdir(folder)
    except OSError:
        return None
    for entry in entries:
        if not entry.endswith(".dist-info"):
            continue
        stem, _, found = entry[: -len(".dist-info")].rpartition("-")
        if _normal(stem) == _normal(name) and found == version:
            return os.path.join(folder, entry)
    return None


#: How many bytes of a copy's Python sources are hashed against its ``RECORD`` (every file's
#: size is compared): enough for the modules of most packages, bounded for a large one.
HASH_BUDGET = 16 * 1024 * 1024


def _changed(folder: str, row: Sequence[str], budget: list[int]) -> bool:
    """Whether the file of a ``RECORD`` row differs from what was installed: its size, and
    for a Python source within the budget, its sha256."""
    path, digest, size = (list(row) + ["", ""])[:3]
    full = os.path.join(folder, path)
    try:
        if size and os.path.getsize(full) != int(size):
            return True
        if not digest.startswith("sha256=") or not path.endswith(".py") or budget[0] <= 0:
            return False
        with open(full, "rb") as fh:
            data = fh.read()
    except (OSError, ValueError):
        return True
    budget[0] -= len(data)
    found = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return found != digest[len("sha256="):]


def _top_levels(dist_info: str) -> list[str] | str:
    """The top-level packages and modules a copy installed in its folder (from its
    ``RECORD``, as paths), or why an overlay cannot carry them (a file no longer as installed
    among them too)."""
    try:
        with open(os.path.join(dist_info, "RECORD"), encoding="utf-8", newline="") as fh:
            rows = list(csv.reader(fh))
    except OSError:
        return f"{os.path.basename(dist_info)} has no RECORD: its files are not known"
    folder = os.path.dirname(dist_info)
    out: list[str] = []
    budget = [HASH_BUDGET]
    for row in rows:
        path = row[0] if row else ""
        if not path or path.startswith(("../", "/")):
            continue  # scripts in bin/, data outside site-packages: not imported
        if "__pycache__" not in path and _changed(folder, row, budget):
            return (f"{path} in {folder} is no longer as {os.path.basename(dist_info)} "
                    "installed it (replaced or edited in place): install that version in a "
                    "venv of its own to try it")
        top = path.split("/", 1)[0]
        if top.endswith(".pth"):
            return f"it is installed through {top} (an editable install): a link cannot " \
                   "reproduce what the .pth does"
        if top in out or top == os.path.basename(dist_info) or top == "__pycache__":
            continue
        out.append(top)
    listed = {row[0] for row in rows if row}
    for top in out:
        full = os.path.join(folder, top)
        if os.path.isdir(full) and not os.path.exists(os.path.join(full, "__init__.py")) \
                and _others(folder, top, listed):
            return (f"{top}/ holds files of other distributions (a namespace package): a link "
                    "to it would hide their parts")
    return [os.path.join(folder, top) for top in out]


def _others(folder: str, top: str, listed: set[str]) -> bool:
    """Whether folder ``top`` (no ``__init__.py``: a namespace package, or a folder of shared
    libraries such as ``numpy.libs``) holds a file its distribution's ``RECORD`` does not
    list: another distribution's part of the namespace."""
    for root, dirs, files in os.walk(os.path.join(folder, top)):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel = os.path.relpath(root, folder)
        if any(f"{rel}/{name}" not in listed for name in files):
            return True
    return False


def installed_copy(snap: Snapshot, name: str, version: str) -> tuple[str, list[str]] | str:
    """Where ``snap`` imported ``name`` ``version`` from, still installed there now: its
    ``.dist-info`` folder and its top-level packages and modules (paths: an editable
    install's lie in its checkout); or why not, in words."""
    dist = snap.records.packages.distributions.get(name)
    where = str(dist.location or "") if dist is not None else ""
    if not where:
        return f"the snapshot did not record where {name} {version} was installed"
    info = _dist_info(where, name, version)
    if info is None:
        return (f"{name} {version} is no longer installed in {where} (replaced in place?): "
                f"install it in a venv of its own to try it")
    if dist is not None and dist.editable and dist.source:
        return _or_why(info, _imported_tops(snap, name, str(dist.source), "its checkout"))
    tops = _top_levels(info)
    if isinstance(tops, str) and not os.path.exists(os.path.join(info, "RECORD")):
        # no RECORD (a hand-made or legacy install): what the run imported from there
        tops = _imported_tops(snap, name, where, f"{os.path.basename(info)} (it has no RECORD)")
    return _or_why(info, tops)


def _or_why(info: str, tops: list[str] | str) -> tuple[str, list[str]] | str:
    return tops if isinstance(tops, str) else (info, tops)


def _imported_tops(snap: Snapshot, name: str, root: str, what: str) -> list[str] | str:
    """The top-level packages and modules of distribution ``name`` that the run imported from
    under ``root`` (``[runtime.modules]``): an editable install's checkout, which its ``.pth``
    put on the path, or a folder whose copy lists no files; linked as a copy's would be."""
    out = []
    under = os.path.join(os.path.realpath(root), "")
    for module in snap.records.runtime.modules.values():
        file = str(module.file or "")
        if module.dist != name or not os.path.realpath(file).startswith(under):
            continue
        top = os.path.dirname(file) if os.path.basename(file) == "__init__.py" else file
        if not os.path.exists(top):
            return f"{top}, which the run imported {name} from, is gone"
        out.append(top)
    return out or f"the run imported none of {name}'s modules from {what}"


def _ignores_pythonpath(snap: Snapshot) -> bool:
    """Whether the launch's Python runs with ``-I`` or ``-E`` (``PYTHONPATH`` ignored)."""
    argv = [str(a) for a in snap.records.command.argv]
    if not argv or not is_python_name(os.path.basename(argv[0])):
        return False
    for arg in argv[1:]:
        if not arg.startswith("-") or arg in ("-m", "-c"):
            break
        if arg[1:2] != "-" and ("I" in arg[1:] or "E" in arg[1:]):
            return True
    return False


def why_not(good: Snapshot, bad: Snapshot, name: str, a: Any, b: Any) -> str:
    """Why package ``name`` (GOOD's version ``a``, BAD's ``b``) cannot be applied by an
    overlay either way (the proof reverts it in BAD's launch too); "" when it can."""
    if not (isinstance(a, str) and isinstance(b, str)):
        return (f"{name} is installed in one run only (runsnap does not install packages, "
                "nor take one away)")
    if any(_ignores_pythonpath(s) for s in (good, bad)):
        return "the interpreter runs with -I or -E: PYTHONPATH, which carries it, is ignored"
    for snap, version in ((bad, b), (good, a)):
        found = installed_copy(snap, name, version)
        if isinstance(found, str):
            return found
    return ""


def overlay_env(env: Mapping[str, str], chosen: Sequence[tuple[str, str]], source: Snapshot,
                folder: str) -> dict[str, str]:
    """``env`` with an overlay of ``chosen`` (name, version) copies, as ``source`` imported
    them, made in ``folder`` and put first on ``PYTHONPATH``."""
    os.makedirs(folder, exist_ok=True)
    for name, version in chosen:
        found = installed_copy(source, name, version)
        if isinstance(found, str):
            raise ValueError(f"packages {name}: {found}")
        info, tops = found
        for target in (info, *tops):
            link = os.path.join(folder, os.path.basename(target))
            if not os.path.lexists(link):
                os.symlink(target, link)
    out = dict(env)
    out["PYTHONPATH"] = os.pathsep.join(p for p in (folder, env.get("PYTHONPATH", "")) if p)
    return out
