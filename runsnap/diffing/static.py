"""Static evidence for runs that were not traced: which installed package reads a variable.

When neither run was traced, :func:`who_reads_for` gives the diagnosis (:mod:`evidence`, kind
``static``) a look-up into the installed code of the runs' interpreter: the distributions a
snapshot lists, searched with ``who-reads`` (:func:`runsnap.whoreads.search.who_reads`) where they are
installed on this machine (the same machine, or the same image). Declarations, reads and
names in shared libraries count; mentions (messages, comments) do not. The one other look at
this machine besides ``git log``; ``compare(..., static=False)`` turns it off.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from runsnap.knowledge.packages import normalize_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["readers_of", "who_reads_for"]

#: Kinds of who-reads places that say a package reads the variable.
READS = ("declaration", "read", "library")


def _metadata_dir(location: str, name: str, version: str) -> str | None:
    """The metadata folder of ``name`` ``version`` under ``location``, if present: its
    ``.dist-info`` (``name-version.dist-info``), or the ``.egg-info`` of a legacy install
    (``name-version-py3.11.egg-info``, what pip 23.0 without ``wheel``, Debian 12's, makes
    of a project with no ``pyproject.toml``)."""
    want = normalize_name(name)
    try:
        entries = os.listdir(location)
    except OSError:
        return None
    for entry in entries:
        if entry.endswith(".dist-info"):
            dist, _, ver = entry[: -len(".dist-info")].rpartition("-")
        elif entry.endswith(".egg-info"):
            dist, _, rest = entry[: -len(".egg-info")].partition("-")
            ver = rest.partition("-")[0]
        else:
            continue
        if normalize_name(dist) == want and ver == version:
            return entry
    return None


def _installed(snap: Snapshot) -> list[dict[str, Any]]:
    out = []
    for name, d in snap.records.packages.distributions.items():
        if not d.location:
            continue
        meta = _metadata_dir(str(d.location), str(name), str(d.version or ""))
        if meta is not None:
            out.append({"name": name, "version": d.version or "",
                        "location": d.location, "metadata_dir": meta})
    return out


def who_reads_for(a: Snapshot, b: Snapshot) -> Callable[[str], Sequence[str]] | None:
    """``name -> places`` over the installed distributions of B (then A), or None when either
    run was traced (the trace says more) or none is installed here."""
    for snap in (a, b):
        if snap.records.runtime.traced:
            return None
    return readers_of(b) or readers_of(a)


class Readers:
    """``name -> places`` (static readers of an environment variable) over some installed
    distributions, each name searched once; :meth:`prefetch` searches many names in one pass
    over the files (a diff of 20,000 variables reads each file once, not once a variable)."""

    def __init__(self, dists: list[dict[str, Any]]) -> None:
        self.dists = dists
        self.known: dict[str, tuple[str, ...]] = {}

    def prefetch(self, names: Iterable[str]) -> None:
        """Search every name of ``names`` not searched yet, together."""
        todo = [n for n in dict.fromkeys(names) if n not in self.known]
        if not todo:
            return
        # deferred: runsnap.whoreads.search, ~11 ms measured under load; only prefetch() needs it
        from runsnap.whoreads.search import who_reads

        try:
            hits = who_reads(todo, dists=self.dists)
        except (OSError, ValueError):
            hits = []
        found: dict[str, list[str]] = {n: [] for n in todo}
        for h in hits:
            if h.kind in READS and h.name in found:
                found[h.name].append(f"{h.dist} {h.version}  {h.path}"
                                     f"{':' + str(h.line) if h.line else ''}  {h.kind}")
        for name, places in found.items():
            self.known[name] = tuple(places)

    def __call__(self, name: str) -> tuple[str, ...]:
        if name not in self.known:
            self.prefetch([name])
        return self.known.get(name, ())


def readers_of(snap: Any) -> Readers | None:
    """``name -> places`` over the distributions ``snap`` lists that are installed here (for
    ``check``'s known names too), or None when none is."""
    dists = _installed(snap)
    if not dists:
        return None
    return Readers(dists)
