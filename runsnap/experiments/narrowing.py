"""A cause proven as a whole environment (another venv, picked by ``PATH`` or named as the
interpreter), narrowed to the packages of it the evidence names.

``why`` proves a venv switch by applying ``PATH`` (or the interpreter): true, but the user
then asks which of the venv's packages did it. Where the diff ties a few packages to the
switch (their versions differ, the error names them: the switch's ``related``), both
interpreters are one Python (same version and implementation, so an installed copy of one
serves the other) and each package's other copy is still installed as recorded
(:mod:`runsnap.experiments.overlay`), two more launches try those packages alone: GOOD's
launch with BAD's copies first on ``PYTHONPATH`` must go bad, BAD's with GOOD's must go good.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from runsnap.experiments.applying import Change
from runsnap.experiments.overlay import why_not

if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["MOST", "venv_packages"]

#: At most this many packages are tried together; more, and the environment is the answer.
MOST = 3

#: ``[packages]`` keys that say the environment itself differs.
_ENVIRONMENT = frozenset({"prefix", "interpreter"})


def _walk(diffs: Sequence[Any]) -> Iterator[Any]:
    for d in diffs:
        yield d
        yield from _walk(d.related)


def venv_packages(top: Any, good: Snapshot, bad: Snapshot) -> tuple[Change, ...]:
    """The package changes to try alone where ``top`` (the proven difference) is another
    environment; none where it is not, or where they cannot be applied honestly."""
    path = tuple(top.path)
    if top.section != "packages" or path[1:2] == () or path[1] not in _ENVIRONMENT:
        return ()
    g, b = good.records.packages, bad.records.packages
    if not g.python_version or (g.python_version, g.implementation) != (b.python_version,
                                                                        b.implementation):
        return ()
    names = {*g.distributions, *b.distributions}
    found = {tuple(d.path): d for d in _walk(top.related) if d.section == "packages"
             and len(d.path) == 2 and d.path[1] in names}
    if not found or len(found) > MOST:
        return ()
    if any(why_not(good, bad, str(d.path[1]), d.a, d.b) for d in found.values()):
        return ()
    return tuple(Change(p, "packages", d.key, d.a, d.b, d.score) for p, d in found.items())
