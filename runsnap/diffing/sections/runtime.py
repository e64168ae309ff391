"""What "different" means for ``[runtime]``: what the two runs read and imported.

Keys (``Difference.key``) and locators (``Difference.path``):

* ``env NAME``, ``("runtime", "env", NAME)``: read in one run and not the other (``added``:
  read only in B; ``removed``: only in A), or read in both with another value seen or set in
  one only (``changed``); the evidence lines say where each run read it. A bulk copy of the
  environment is not a read.
* ``env NAME sites``, ``("runtime", "env", NAME, "sites")``: read in both, from other
  functions (the innermost frame's file and function; line numbers alone moving is not a
  difference: the git diff shows edits).
* ``module NAME``, ``("runtime", "modules", NAME)``: imported in one run only, or from
  another file, origin, distribution or version.
* ``file PATH``, ``("runtime", "data_files", PATH)``: a data file opened in both runs with
  other content, or opened in one run only (:mod:`runsnap.diffing.datafiles`).
* ``traced``, ``native``, ``processes`` (``("runtime", KEY)``): the runs were traced
  differently, or ran another number of Python processes.

Run-specific facts (pids, counts, exact stacks) never make a difference by themselves.
Records are read through :func:`runsnap.snapshot.runtime.variable` (both stored forms); two
sections of schema 2 that number their stacks alike skip every variable whose stored line and
values are equal (the ranks of one job: almost all of them). When
only one run was traced, ``traced`` is the only difference: an untraced run read nothing
that could be compared.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runsnap.diffing import datafiles
from runsnap.diffing.result import Difference
from runsnap.diffing.rules import RankContext, Verdict
from runsnap.diffing.written import record, written
from runsnap.snapshot.records_host import ImportedModule, Runtime, VariableRead
from runsnap.snapshot.runtime import (
    differing,
    names,
    same_places,
    stored,
    value_seen,
    variable,
)

__all__ = ["compare", "score"]


def _variable(section: Mapping[str, Any], name: str) -> VariableRead | None:
    """What the run did with variable ``name`` (:func:`~runsnap.snapshot.runtime.variable`,
    either stored form) as a record, or ``None``."""
    got = variable(section, name)
    return record(VariableRead, got) if isinstance(got, Mapping) else None


def _read(entry: VariableRead | None) -> bool:
    return entry is not None and bool(entry.reads or entry.native)


def _shown(entry: VariableRead) -> str:
    if not entry.set:
        return "(unset: default taken)"
    return str(written(entry, "value", "(set)"))


def _places(entry: VariableRead) -> list[str]:
    """``file in func`` of each read site's innermost frame, in order, without repeats."""
    out: list[str] = []
    for site in entry.sites:
        stack = site.stack
        if stack:
            file_line, _, func = str(stack[0]).partition(" in ")
            place = f"{file_line.rsplit(':', 1)[0]} in {func}"
            if place not in out:
                out.append(place)
    return out


def _where(side: str, entry: VariableRead) -> str:
    places = _places(entry)
    how = "natively" if entry.native and not entry.reads else "at " + (
        ", ".join(places[:3]) if places else "an unknown place")
    return f"{side}: read {how}"


_NONE = object()  # no value held


def _values_only(sa: Mapping[str, Any], sb: Mapping[str, Any], few: list[str]
                 ) -> list[Difference]:
    """:func:`_env` of two sections whose records differ in the values seen alone
    (:func:`~runsnap.snapshot.runtime.differing` gave ``few``): B's records are A's but for
    the value, so only A's are built (once for every rank compared with the same A)."""
    out: list[Difference] = []
    for name in few:
        if stored(sa, name) == stored(sb, name):
            continue
        x = _variable(sa, name)
        if x is None or not _read(x):
            continue
        was_set, y = bool(x.set), value_seen(sb, name, _NONE)
        if x.value == (None if y is _NONE else y):
            continue
        shown = "(unset: default taken)" if not was_set else "(set)" if y is _NONE else str(y)
        out.append(Difference("runtime", f"env {name}", "changed", _shown(x), shown,
                              evidence=(_where("A", x), _where("B", x)),
                              path=("runtime", "env", name)))
    return out


def _env(sa: Mapping[str, Any], sb: Mapping[str, Any]) -> list[Difference]:
    out: list[Difference] = []
    # Ranks of one job store almost every record alike: those are never expanded.
    shortcut = same_places(sa, sb)
    few = differing(sa, sb) if shortcut else None
    if few is not None:
        return _values_only(sa, sb, few)
    for name in few if few is not None else sorted(set(names(sa)) | set(names(sb))):
        if shortcut and stored(sa, name) == stored(sb, name):
            continue
        x, y = _variable(sa, name), _variable(sb, name)
        rx, ry = _read(x), _read(y)
        if not rx and not ry:
            continue
        key = f"env {name}"
        path = ("runtime", "env", name)
        if rx and not ry and x is not None:
            out.append(Difference("runtime", key, "removed", _shown(x), None,
                                  evidence=(_where("A", x), "B: not read"), path=path))
            continue
        if ry and not rx and y is not None:
            out.append(Difference("runtime", key, "added", None, _shown(y),
                                  evidence=("A: not read", _where("B", y)), path=path))
            continue
        if x is None or y is None:
            continue
        if (bool(x.set), x.value) != (bool(y.set), y.value):
            out.append(Difference("runtime", key, "changed", _shown(x), _shown(y),
                                  evidence=(_where("A", x), _where("B", y)), path=path))
        pa, pb = _places(x), _places(y)
        if set(pa) != set(pb) and pa and pb:
            ev = tuple([f"A only: {p}" for p in pa if p not in pb]
                       + [f"B only: {p}" for p in pb if p not in pa])
            out.append(Difference("runtime", f"{key} sites", "changed", pa, pb, evidence=ev,
                                  path=(*path, "sites")))
    return out


_MODULE_FIELDS = ("file", "origin", "dist", "version")


def _modules(a: Mapping[str, ImportedModule], b: Mapping[str, ImportedModule]
             ) -> list[Difference]:
    out: list[Difference] = []
    for name in sorted(set(a) | set(b)):
        x, y = a.get(name), b.get(name)
        if x is not None and y is not None and x.raw == y.raw:
            continue  # the same import (each rank of a job: every module)
        key = f"module {name}"
        path = ("runtime", "modules", name)
        if y is None:
            if x is not None:
                out.append(Difference("runtime", key, "removed", dict(x.raw), None,
                                      evidence=("imported in A only",), path=path))
            continue
        if x is None:
            out.append(Difference("runtime", key, "added", None, dict(y.raw),
                                  evidence=("imported in B only",), path=path))
            continue
        ev = tuple(f"{f}: {fx} -> {fy}" for f in _MODULE_FIELDS
                   for fx, fy in ((getattr(x, f), getattr(y, f)),) if fx != fy)
        if ev:
            out.append(Difference("runtime", key, "changed", dict(x.raw), dict(y.raw),
                                  evidence=ev, path=path))
    return out


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Differences between two ``[runtime]`` sections (``{}`` when a snapshot has none)."""
    if not a and not b:
        return []
    xa, xb = record(Runtime, a), record(Runtime, b)
    ta, tb = bool(xa.traced), bool(xb.traced)
    if ta != tb:
        return [Difference("runtime", "traced", "changed", ta, tb, evidence=tuple(
            f"{side}: not traced ({s.reason or 'no [runtime]'})"
            for side, s, t in (("A", xa, ta), ("B", xb, tb)) if not t))]
    if not ta:
        return []
    out: list[Difference] = []
    na, nb = str(written(xa, "native")), str(written(xb, "native"))
    if na.startswith("observed") != nb.startswith("observed"):
        out.append(Difference("runtime", "native", "changed", na, nb))
    out += _env(a, b)
    if not (xa.has("modules") and xb.has("modules") and xa.raw["modules"] is xb.raw["modules"]):
        out += _modules(xa.modules, xb.modules)  # (a table shared by the bulk loader: equal)
    out += datafiles.compare(xa, xb)
    pa, pb = _processes(xa), _processes(xb)
    if pa != pb:
        out.append(Difference("runtime", "processes", "changed", pa, pb,
                              evidence=(f"Python processes: {pa} in A, {pb} in B",)))
    return out


def _processes(x: Runtime) -> int:
    """How many Python processes ran: the entries counted, not read, so that a stored form
    broken inside (a snapshot not checked by the loader) still counts and never raises."""
    listed = x.raw["processes"] if x.has("processes") else ()
    return len(listed) if isinstance(listed, (list, tuple)) else 0


def score(d: Difference, rules: RankContext) -> Verdict:
    """Provisional weights (the diagnosis from evidence, :mod:`runsnap.diffing.evidence`, is
    what ranks a variable by its reads): a module from another file or version (65), a
    variable read in one run only (60: the program took another path), a data file opened in
    both with other content (70), a module imported in one run only (45) or a file opened in
    one only (40), another value seen (40: the ``[env]`` difference is its cause), other
    read places (35), other process counts (30), tracing or native observation that differ
    (25, 20)."""
    part = d.path[1] if len(d.path) > 1 else d.key
    if part == "modules":
        if d.change == "changed":
            return 65, "the run imported this package from another file, origin or version", False
        return 45, f"imported in {'B' if d.change == 'added' else 'A'} only", False
    if part == "env":
        if len(d.path) > 3:
            return 35, "read from other places in the code", False
        if d.change == "changed":
            return 40, "the program saw another value", False
        return 60, (f"read in {'B' if d.change == 'added' else 'A'} only: the program took "
                    "another path"), False
    if part == "data_files":
        if d.change == "changed":
            return 70, "a file the program opened for reading has other content", False
        return 40, f"opened in {'B' if d.change == 'added' else 'A'} only", False
    if part == "processes":
        return 30, "another number of Python processes", False
    if part == "traced":
        return 25, "one run was traced and the other not: run-time evidence cannot be compared", \
            False
    return 20, f"differs in [{d.section}]", False
