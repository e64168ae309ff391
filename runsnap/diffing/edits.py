"""Uncommitted edits ranked by whether the runs ran them.

An edited ``.py`` file is code only when a run imports it: ``[runtime.modules]`` records the
file each top-level module came from, in every traced process, and ``[runtime.submodules]``
the file of each submodule of the program's own packages (``lm.attention``). An edit to a
module a run imported (or to the script the command ran) is ``read`` evidence, as a variable
the program read is; an edit to a module neither traced run imported is ``unread``, as a
variable no process read: it ranks below every difference the runs show used. A failing
traceback through the edited file (:mod:`runsnap.diffing.failingpath`) and an error naming it
come first, in :func:`runsnap.diffing.evidence.gather`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from runsnap.diffing.result import Difference
from runsnap.diffing.runfacts import RunFacts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["SCRIPT", "edit_evidence", "ran_file"]


def _root(snap: Snapshot | None, repo: str) -> str:
    got = snap.records.git.repos.get(repo) if snap is not None else None
    return str(got.path or "") if got is not None else ""


def _script(snap: Snapshot, full: str) -> bool:
    """Whether the command ran ``full`` itself (``python train.py``)."""
    command = snap.records.command
    cwd = str(command.cwd or "")
    return any(os.path.normpath(os.path.join(cwd, str(arg))) == full
               for arg in command.argv if str(arg).endswith(".py"))


def edit_evidence(d: Difference, runs: Sequence[RunFacts], a: Snapshot | None, b: Snapshot | None
                  ) -> tuple[str, str] | None:
    """(kind, sentence) for an uncommitted edit to a ``.py`` file ``d`` (key ``REPO: PATH``):
    ``read`` when a run imported it or ran it as its script, ``unread`` when both runs were
    traced and neither did; None when the runs cannot say."""
    repo, _, path = d.key.partition(": ")
    root = _root(a, repo) or _root(b, repo)
    if not path.endswith(".py") or not root:
        return None
    full = os.path.normpath(os.path.join(root, path))
    for f, snap in zip(runs, (a, b), strict=False):
        mod = ran_file(f, snap, full)
        if mod:
            return "read", (f"{f.label} ran the edited file {path} as its script" if mod ==
                            SCRIPT else f"{f.label} imported {mod} from the edited file {path}")
    packages = [_in_package(f, full) for f in runs]
    if any(packages):
        # [runtime.modules] holds top-level modules, [runtime.submodules] the submodules of
        # the program's own packages, where capture recorded them: a traced run that noted
        # other submodules of this package and not this one did not import it; otherwise the
        # runs cannot say
        if all(f.traced and top and _noted(_submodules(snap), top)
               for f, snap, top in zip(runs, (a, b), packages, strict=False)):
            return "unread", (f"neither run imported {path} ([runtime.submodules] of both "
                              "traced runs): the edit did not run")
        return None
    if runs and all(f.traced and f.modules for f in runs):
        return "unread", (f"neither run imported {path} ([runtime.modules] of both traced "
                          "runs): the edit did not run")
    return None


#: What :func:`ran_file` says of the script the command ran itself.
SCRIPT = "(its script)"


def ran_file(f: RunFacts, snap: Snapshot | None, full: str) -> str:
    """The module the run (its facts ``f``, its snapshot ``snap``) imported from the Python
    file ``full`` (a top-level module, ``[runtime.modules]``, or a submodule of its own
    package, ``[runtime.submodules]``), :data:`SCRIPT` when the command ran that file itself,
    else ``""``."""
    for mod, file in (*((m, str(r.file or "")) for m, r in f.imported()),
                      *_submodules(snap).items()):
        if file and os.path.normpath(file) == full:
            return mod
    return SCRIPT if snap is not None and _script(snap, full) else ""


def _in_package(f: RunFacts, full: str) -> str:
    """The package run ``f`` imported whose folder ``full`` lies in (``lm`` for
    ``lm/attention.py``, ``lm/__init__.py`` imported): a submodule, which
    ``[runtime.modules]`` does not list; "" when none."""
    for mod, row in f.imported():
        file = os.path.normpath(str(row.file or ""))
        if os.path.basename(file) == "__init__.py" and full.startswith(
                os.path.dirname(file) + os.sep):
            return mod
    return ""


def _submodules(snap: Snapshot | None) -> dict[str, str]:
    """``[runtime.submodules]``: the program's own submodules the run imported, and their
    files (none in a snapshot from before capture recorded them)."""
    got = snap.records.runtime.submodules if snap is not None else None
    return {str(k): str(v) for k, v in got.items()} if isinstance(got, Mapping) else {}


def _noted(submodules: Mapping[str, str], top: str) -> bool:
    """Whether capture noted submodules of package ``top`` (so one it did not note did not
    run), short of the 512 a process it notes at most."""
    return len(submodules) < 512 and any(m.startswith(top + ".") for m in submodules)
