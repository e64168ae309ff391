"""The one reader of ``[runtime]`` everything else goes through, in either stored form.

Schema 1 wrote one table per variable (``[runtime.env.NAME]``, ``[[runtime.env.NAME.sites]]``)
with every field, every read site's whole stack, and pids everywhere: a traced torch rank reads
~470 variables, ~460 of them unset, and its snapshot was ~300 KB, almost all of it
``[runtime]``. Schema 2 stores the same facts compactly (docs/runtime.md, "Stored form"):

* ``frames``: every distinct stack frame once; ``stacks``: each distinct stack once, as frame
  numbers (innermost first), one stack a line;
* ``[runtime.vars]``: one line a variable, fields left out where they hold their usual value
  (unset, no reads, the only process, the only access path) and a read site that says nothing
  beyond its stack written as the stack's number;
* ``[runtime.values]`` / ``[runtime.other_values]``: the values seen, apart from the records,
  so that ranks of one job (which differ in ``RANK`` and in their pids) write the very same
  ``[runtime.vars]`` lines, which the bulk loader parses once for all of them.

:func:`runsnap.snapshot.runtime_write.compact` writes it (the capture path, which imports only
:mod:`runsnap.snapshot.runtime_form`, never this module and its record classes).
:func:`variables` gives the records of schema 1, from either form: code that reads
``[runtime]`` calls it (or :func:`variable`, :func:`bulk_sites`) and never looks at the stored
keys. The section is read as its declared record (:func:`record`): a declared field of the
wrong type (``stacks`` that is no array) is one :class:`~runsnap.errors.SnapshotError` naming
it, which :func:`runsnap.snapshot.load` raises first. A snapshot from someone else is untrusted:
within what the declaration leaves free (a variable's stored line, a stack's frame numbers) a
wrong number or type gives a record with less in it, never an exception.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from runsnap.snapshot.records_host import Runtime
from runsnap.snapshot.runtime_form import ONE_LINE, SITE_KEYS, VAR_KEYS, is_compact

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    #: What the readers take: the section as written (a mapping), or already as its record.
    Section = Runtime | Mapping[str, Any] | None

__all__ = [
    "ONE_LINE",
    "SITE_KEYS",
    "VAR_KEYS",
    "bulk_sites",
    "differing",
    "is_compact",
    "names",
    "raw_vars",
    "read_by_name",
    "record",
    "same_places",
    "stored",
    "value_seen",
    "variable",
    "variables",
]

_EMPTY: Mapping[str, Any] = {}
_CACHE_MAX = 16
_NONE = Runtime(None, "", "[runtime] ")

#: id of a section's mapping -> (the mapping, its record): a section is never changed once
#: loaded, and the N-way diff asks one rank's section many questions in a row.
_MADE: dict[int, tuple[Mapping[str, Any], Runtime]] = {}


def record(runtime: Section) -> Runtime:
    """``runtime`` as its declared record (:class:`~runsnap.snapshot.records_host.Runtime`),
    made once for the last few sections asked about. A declared field of the wrong type is one
    :class:`~runsnap.errors.SnapshotError` naming it (``[runtime] stacks: expected an array``);
    :func:`runsnap.snapshot.load` has refused such a snapshot already.

    >>> record({"traced": True, "values": {"RANK": "3"}}).values["RANK"]
    '3'
    """
    if isinstance(runtime, Runtime):
        return runtime
    if not runtime:
        return _NONE
    hit = _MADE.get(id(runtime))
    if hit is not None and hit[0] is runtime:
        return hit[1]
    made = Runtime(runtime, "", "[runtime] ")
    if len(_MADE) >= _CACHE_MAX:
        _MADE.pop(next(iter(_MADE)))
    _MADE[id(runtime)] = (runtime, made)  # kept alive: its id stays its own
    return made


def raw_vars(runtime: Section) -> Mapping[str, Any]:
    """The stored per-variable entries as they are (schema 1: its ``env``, as written): for
    identity checks only."""
    rt = record(runtime)
    if rt.has("vars"):
        return rt.vars
    return {name: entry.raw for name, entry in rt.env.items()}


# -- reading -------------------------------------------------------------------------------

_CACHE: dict[int, tuple[Mapping[str, Any], Mapping[str, Mapping[str, Any]]]] = {}


def variables(runtime: Section) -> Mapping[str, Mapping[str, Any]]:
    """Variable name -> its record as schema 1 wrote it (``set``, ``reads``, ``bulk_reads``,
    ``bulk``, ``python``, ``native``, ``pids``, ``via``, ``value``, ``other_values``,
    ``native_reads``, ``written``, ``sites`` with whole stacks and pids), from either form.
    Entries of the stored form that are not tables are left out. Do not change what it
    returns."""
    rt = record(runtime)
    if not rt.has("vars"):
        return {str(k): v.raw for k, v in rt.env.items()}
    hit = _CACHE.get(id(rt.raw))
    if hit is not None and hit[0] is rt.raw:
        return hit[1]
    out = _Records(_Context(rt))
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[id(rt.raw)] = (rt.raw, out)
    return out


class _Records(Mapping[str, "Mapping[str, Any]"]):
    """The records of a compact section, each built when first asked for: the N-way diff
    asks a rank's section for the few variables that differ, not for all ~500."""

    def __init__(self, ctx: _Context) -> None:
        self._ctx = ctx
        self._names: list[str] | None = None
        self._made: dict[str, Mapping[str, Any] | None] = {}

    def __getitem__(self, name: str) -> Mapping[str, Any]:
        if name not in self._made:
            self._made[name] = self._ctx.record(name) if isinstance(name, str) else None
        rec = self._made[name]
        if rec is None:
            raise KeyError(name)
        return rec

    def __contains__(self, name: object) -> bool:
        try:
            self[name]  # type: ignore[index]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        if self._names is None:
            self._names = [n for n in self._ctx.names() if self._ctx.has(n)]
        return iter(self._names)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return repr(dict(self))


def variable(runtime: Section, name: str) -> Mapping[str, Any] | None:
    """The record of one variable (as in :func:`variables`), or ``None``."""
    rt = record(runtime)
    if not rt.has("vars"):
        entry = rt.env.get(name)
        return None if entry is None else entry.raw
    return variables(rt).get(name)


def bulk_sites(runtime: Section) -> list[Mapping[str, Any]]:
    """``bulk_sites`` rows with whole stacks, from either form."""
    rt = record(runtime)
    rows = rt.bulk_sites
    if not rt.has("vars"):
        return [r.raw for r in rows]
    ctx = _Context(rt)
    return [{**r.raw, "stack": ctx.stack(r.stack)} for r in rows]


def names(runtime: Section) -> list[str]:
    """Every variable :func:`variables` has a record for, without building the records."""
    rt = record(runtime)
    if not rt.has("vars"):
        return list(variables(rt))
    return _Context(rt).names()


_READ: dict[tuple[int, int], tuple[Any, Any, frozenset[str]]] = {}


def read_by_name(runtime: Section) -> frozenset[str]:
    """The variables some process read by name, from Python or natively (a record whose
    ``reads``, ``native`` or ``python`` is true), without building the records; the same
    stored tables (two ranks of a job read by the bulk loader) answer at once.

    >>> sorted(read_by_name({"vars": {"A": [1], "B": {"bulk_reads": 1, "python": False}},
    ...                      "native_reads": {"C": 1}}))
    ['A', 'C']
    """
    rt = record(runtime)
    if not rt.has("vars"):
        return frozenset(n for n, e in rt.env.items() if e.reads or e.native or e.python)
    stored_vars, natives = rt.vars, rt.native_reads
    key = (id(stored_vars), id(natives))
    hit = _READ.get(key)
    if hit is not None and hit[0] is stored_vars and hit[1] is natives:
        return hit[2]
    out = set()
    for n in _Context(rt).names():
        c = stored_vars.get(n)
        if c is None and n in natives:
            c = _EMPTY
        elif isinstance(c, list):
            c = {"sites": c}
        if not isinstance(c, Mapping):
            continue
        line = _Line(c, n in natives)
        if line.reads or line.native or line.python:
            out.add(n)
    got = frozenset(out)
    if len(_READ) >= _CACHE_MAX:
        _READ.pop(next(iter(_READ)))
    _READ[key] = (stored_vars, natives, got)  # kept alive: their ids stay theirs
    return got


def value_seen(runtime: Section, name: str, default: Any = None) -> Any:
    """The value the record of ``name`` holds (``value``: what the run saw set), ``default``
    when it holds none; without building the record.

    >>> value_seen({"vars": {"RANK": [1]}, "values": {"RANK": "3"}}, "RANK")
    '3'
    """
    rt = record(runtime)
    if not rt.has("vars"):
        entry = rt.env.get(name)
        return entry.value if entry is not None and entry.has("value") else default
    return rt.values.get(name, default)


def stored(runtime: Section, name: str) -> tuple[Any, ...]:
    """What the stored form of schema 2 holds about ``name``, as it is: two sections for which
    :func:`same_places` holds have equal records of ``name`` (but for pids) when these are
    equal."""
    rt = record(runtime)
    return (rt.vars.get(name), rt.native_reads.get(name), rt.values.get(name),
            rt.other_values.get(name))


def same_places(a: Section, b: Section) -> bool:
    """Whether two compact sections number their stacks alike, so that equal ``vars`` entries
    (and equal values) mean equal records but for pids."""
    ra, rb = record(a), record(b)
    return (ra.has("vars") and rb.has("vars") and _same(ra.files, rb.files)
            and _same(ra.frames, rb.frames) and _same(ra.stacks, rb.stacks))


def _same(x: Any, y: Any) -> bool:
    return x is y or x == y


def differing(a: Section, b: Section) -> list[str] | None:
    """For two sections for which :func:`same_places` holds and whose ``vars`` and
    ``native_reads`` are equal (the ranks of one job): the only variables whose records can
    differ but for pids (another value seen), sorted. ``None`` when that cannot be said."""
    ra, rb = record(a), record(b)
    if not (same_places(ra, rb) and _same(ra.vars, rb.vars)
            and _same(ra.native_reads, rb.native_reads)):
        return None
    out: set[str] = set()
    for x, y in ((ra.values, rb.values), (ra.other_values, rb.other_values)):
        if not _same(x, y):
            out.update(str(n) for n in set(x) | set(y) if x.get(n) != y.get(n))
    return sorted(out)


def _int(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


#: (stacks, frames, files) -> their stacks as text, by index: the ranks of one job (read by
#: the bulk loader) share these tables, so a stack is written out once for all of them.
_STACKS: dict[tuple[int, int, int],
              tuple[Sequence[Any], Sequence[Any], Sequence[Any], dict[int, list[str]]]] = {}


def _stacks_of(stacks: Sequence[Any], frames: Sequence[Any], files: Sequence[Any]
               ) -> dict[int, list[str]]:
    key = (id(stacks), id(frames), id(files))
    hit = _STACKS.get(key)
    if hit is not None and hit[0] is stacks and hit[1] is frames and hit[2] is files:
        return hit[3]
    if len(_STACKS) >= _CACHE_MAX:
        _STACKS.pop(next(iter(_STACKS)))
    made: dict[int, list[str]] = {}
    _STACKS[key] = (stacks, frames, files, made)  # kept alive: their ids stay theirs
    return made


_DERIVED: Any = object()

#: What the writer (:func:`runsnap.snapshot.runtime_write.compact`) leaves out of a variable's
#: line in ``[runtime.vars]``: the value it stands for, or ``_DERIVED`` where that follows from
#: the line's other fields (:class:`_Line`).
_LEFT_OUT: Mapping[str, Any] = {
    "sites": None, "reads": _DERIVED, "bulk_reads": 0, "native": _DERIVED, "python": _DERIVED,
    "bulk": _DERIVED, "set": False, "via": _DERIVED, "procs": None, "pids": None,
    "written": False}


class _Line:
    """One variable's line in ``[runtime.vars]`` with what the writer left out filled in: the
    one place that reads a line's fields (its record, :func:`read_by_name` and the order of
    :meth:`_Context.names` all take them from here). ``native``: whether the variable has a
    line in ``native_reads``, which a line that does not say otherwise stands for."""

    __slots__ = ("bulk", "bulk_reads", "native", "pids", "pids_given", "procs", "python",
                 "reads", "set", "sites", "via", "written")

    def __init__(self, c: Mapping[str, Any], native: bool) -> None:
        got = {**_LEFT_OUT, **c}
        self.sites: list[Any] | None = got["sites"] if isinstance(got["sites"], list) else None
        reads = got["reads"]
        self.reads: Any = len(self.sites or ()) if reads is _DERIVED else reads
        self.bulk_reads: Any = got["bulk_reads"]
        self.native: Any = native if got["native"] is _DERIVED else got["native"]
        python, bulk, via = got["python"], got["bulk"], got["via"]
        self.python: Any = bool(self.reads) or "sites" in c if python is _DERIVED else python
        self.bulk: Any = (not self.reads and bool(self.bulk_reads) and not self.native
                          if bulk is _DERIVED else bulk)
        if via is _DERIVED:
            via = "get" if self.sites else None
        self.via: list[Any] = [via] if isinstance(via, str) else list(via) if isinstance(
            via, list) else []
        self.set = bool(got["set"])
        self.procs: Any = got["procs"]
        self.pids: Any = got["pids"]
        self.pids_given = "procs" in c or "pids" in c
        self.written = bool(got["written"])


class _Context:
    """Expands the compact records of one section."""

    def __init__(self, rt: Runtime) -> None:
        self.runtime = rt
        self.files: Sequence[Any] = rt.files
        self.frames: Sequence[Any] = rt.frames
        self.stacks: Sequence[Any] = rt.stacks
        self.pids = [p.pid for p in rt.processes]
        self.every = sorted(p for p in self.pids if p is not None)
        self.natives: Mapping[str, Any] = rt.native_reads
        self.values: Mapping[str, Any] = rt.values
        self.others: Mapping[str, Any] = rt.other_values
        self._stack_cache = _stacks_of(self.stacks, self.frames, self.files)

    def stack(self, k: Any) -> list[str]:
        i = _int(k)
        if i is None or not 0 <= i < len(self.stacks):
            return []
        hit = self._stack_cache.get(i)
        if hit is None:
            ids = self.stacks[i] if isinstance(self.stacks[i], list) else []
            hit = [self._frame(self.frames[f]) for f in ids
                   if _int(f) is not None and 0 <= f < len(self.frames)]
            self._stack_cache[i] = hit
        return list(hit)

    def _frame(self, f: Any) -> str:
        if isinstance(f, list) and len(f) in (2, 3):
            i = _int(f[0])
            file = self.files[i] if i is not None and 0 <= i < len(self.files) else "?"
            return f"{file}:{f[1]} in {f[2] if len(f) == 3 else '<module>'}"
        return str(f)

    def _pid(self, i: Any) -> Any:
        i = _int(i)
        return self.pids[i] if i is not None and 0 <= i < len(self.pids) else None

    def names(self) -> list[str]:
        """Every variable, in the order schema 1 wrote them: read from Python first."""
        stored = self.runtime.vars
        names = [str(n) for n in stored] + [str(n) for n in self.natives if n not in stored]
        return sorted(names, key=lambda n: (not self._read(n, stored.get(n)), n))

    def _read(self, name: str, c: Any) -> bool:
        if isinstance(c, list):
            return bool(c)
        if not isinstance(c, Mapping):
            return name in self.natives
        line = _Line(c, name in self.natives)
        return bool(line.reads or line.native)

    def has(self, name: str) -> bool:
        """Whether :meth:`record` gives a record for ``name`` (without building it)."""
        c = self.runtime.vars.get(name)
        return isinstance(c, (Mapping, list)) or (c is None and name in self.natives)

    def record(self, name: str) -> dict[str, Any] | None:
        c: Any = self.runtime.vars.get(name)
        if c is None and name in self.natives:
            c = _EMPTY
        elif isinstance(c, list):
            c = {"sites": c}
        if not isinstance(c, Mapping):
            return None
        line = _Line(c, name in self.natives)
        if line.pids_given:
            found = [self._pid(i) for i in (line.procs if isinstance(line.procs, list) else [])]
            found += line.pids if isinstance(line.pids, list) else []
            pids = sorted(p for p in found if isinstance(p, int) and not isinstance(p, bool))
        else:
            pids = list(self.every)
        via = line.via
        rec: dict[str, Any] = {
            "set": line.set, "reads": line.reads, "bulk_reads": line.bulk_reads,
            "bulk": line.bulk, "python": line.python, "native": line.native, "pids": pids,
        }
        if via:
            rec["via"] = via
        if name in self.values:
            rec["value"] = self.values[name]
        if name in self.others:
            rec["other_values"] = self.others[name]
        if name in self.natives:
            rec["native_reads"] = self.natives[name]
        if line.written:
            rec["written"] = True
        rec.update((k, v) for k, v in c.items() if k not in VAR_KEYS and k != "procs")
        if line.sites is not None:
            one_pid = pids[0] if len(pids) == 1 else None
            one_via = via[0] if len(via) == 1 else None
            rows = []
            for s in line.sites:
                # a site's fields left out are its variable's: the writer's rule, inverted
                site = {"stack": None, "pid": one_pid, "via": one_via, "set": line.set,
                        "reads": line.reads, **(s if isinstance(s, Mapping) else {"stack": s})}
                row: dict[str, Any] = {"stack": self.stack(site["stack"])}
                row["pid"] = self._pid(site["proc"]) if "proc" in site else site["pid"]
                row["via"], row["set"], row["reads"] = site["via"], site["set"], site["reads"]
                row.update((k, v) for k, v in site.items() if k not in SITE_KEYS)
                rows.append(row)
            rec["sites"] = rows
        return rec
