"""The base of the frozen records a snapshot's sections are read as
(:mod:`runsnap.snapshot.records`, generated from the declarations of
:mod:`runsnap.snapshot.shapes`).

A section is written as a plain mapping (collectors, redaction, the writer and ``show`` keep it
so); readers take it as a record: ``snap.records.git.repos["."].commit``. As pipx turns its
on-disk ``_RawPackageInfo`` into a frozen ``PackageInfo`` in one place, a record's fields are
read from its mapping in one place, :meth:`SectionRecord.__getattr__`, each the first time it
is asked for, then kept: every declared field becomes an attribute (a declared record within
becomes a record, a list or table of them a tuple or a table of records), an absent field its
typed default (``None``; an empty tuple, table or record), and a value of the wrong type one
:class:`~runsnap.errors.SnapshotError` naming the file, the section and the field.
:func:`runsnap.snapshot.load` has already checked the whole document against ``schema.json``,
written from the same declarations, so a loaded snapshot never raises here; a snapshot built in
memory is checked as it is read (:meth:`Sections.all` reads every field at once).

Leaves stay the objects read (a list of strings, a table of values): typed read-only
(``Sequence``, ``Mapping``), not copied, so reading a record costs no more than reading the
mapping, and what is printed from it is what was written.
"""

from __future__ import annotations

import keyword
import sys

from runsnap.errors import SnapshotError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any, ClassVar, TypeVar

    _R = TypeVar("_R", bound="SectionRecord")

__all__ = ["ANY", "LIST", "RECORD", "RECORDS", "RECORD_TABLE", "SCALAR", "TABLE", "SectionRecord",
           "OtherSection", "Sections", "field_specs"]

#: The kinds of field a generated record declares (``_fields``: attribute, key, kind, the
#: accepted types or the record class, whether ``None`` is accepted).
SCALAR, LIST, TABLE, RECORD, RECORDS, RECORD_TABLE, ANY = range(7)

_ABSENT: Any = object()
_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
          list: "an array", dict: "a table", type(None): "nothing"}


def _found(value: Any) -> str:
    """What a value of the wrong type is, in the words of the error.

    >>> _found(3), _found([1])
    ('an integer', 'an array')
    """
    return _NAMES.get(type(value), type(value).__name__)


def _is(value: Any, types: tuple[type, ...]) -> bool:
    """``isinstance``, where ``True`` is not an integer and an integer is a number.

    >>> _is(True, (int,)), _is(3, (float,)), _is(3, (str,))
    (False, True, False)
    """
    if type(value) is bool:
        return bool in types
    return isinstance(value, types) or (float in types and type(value) is int)


class _RecordType(type):
    """Gives a record class the slots of its annotated fields, so the generated module says
    each field once; what each field is (:func:`field_specs`) is read from the annotations when
    the class is first read, not when it is imported."""

    def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> _RecordType:
        annotations: dict[str, str] = ns.get("__annotations__", {})
        ns.setdefault("__slots__", tuple(a for a in annotations if not a.startswith("_")))
        return super().__new__(mcs, name, bases, ns)


def field_specs(cls: type) -> dict[str, tuple[str, int, Any, bool]]:
    """A record class's fields: attribute -> (key, kind, the accepted types or the record
    class, whether ``None`` is accepted), from its annotations and its bases' (a reader's
    record that adds a field it derives keeps the declared ones), each read in the grammar of
    the generator (:func:`_spec`) in its own module; made once a class."""
    specs: dict[str, tuple[str, int, Any, bool]] | None = cls.__dict__.get("_specs")
    if specs is None:
        specs = {}
        for klass in reversed(cls.__mro__):
            scope = vars(sys.modules[klass.__module__])
            specs.update({attr: (_key(attr), *_spec(ann, scope))
                          for attr, ann in klass.__dict__.get("__annotations__", {}).items()
                          if not attr.startswith("_") and isinstance(klass, _RecordType)
                          and klass is not SectionRecord})
        type.__setattr__(cls, "_specs", specs)
    return specs


_SCALARS = {"str": str, "int": int, "float": float, "bool": bool}


def _key(attr: str) -> str:
    """The written key of an attribute: ``from_`` is ``from`` (a keyword of Python)."""
    return attr[:-1] if attr.endswith("_") and (keyword.iskeyword(attr[:-1]) or attr in
                                                 ("raw_", "has_")) else attr


def _top(annotation: str) -> list[str]:
    """The members of a union at its top level.

    >>> _top("Sequence[int | None] | Mapping[str, Any] | None")
    ['Sequence[int | None]', 'Mapping[str, Any]', 'None']
    """
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(annotation):
        depth += (ch == "[") - (ch == "]")
        if ch == "|" and depth == 0:
            parts.append(annotation[start:i].strip())
            start = i + 1
    return [*parts, annotation[start:].strip()]


def _spec(annotation: str, scope: Mapping[str, Any]) -> tuple[int, Any, bool]:
    """``(kind, argument, optional)`` of a generated annotation; ``scope``: the module's names,
    where the records it holds are found.

    >>> _spec("bool | str | None", {}), _spec("Sequence[str]", {})
    ((0, (<class 'bool'>, <class 'str'>), True), (1, None, False))
    """
    members = _top(annotation)
    optional = "None" in members
    rest = [m for m in members if m != "None"]

    def record(name: str) -> Any:
        found = scope.get(name)
        return found if isinstance(found, type) and issubclass(found, SectionRecord) else None

    if all(m in _SCALARS for m in rest):
        return SCALAR, tuple(_SCALARS[m] for m in rest), True
    if len(rest) > 1 or rest[0] == "Any":
        return ANY, None, True
    one = rest[0]
    if record(one):
        return RECORD, record(one), optional
    if one.startswith("tuple[") and record(one[6:-6]):
        return RECORDS, record(one[6:-6]), optional
    if one.startswith("Mapping[str, ") and record(one[13:-1]):
        return RECORD_TABLE, record(one[13:-1]), optional
    return (LIST if one.startswith("Sequence[") else TABLE), None, optional


class SectionRecord(metaclass=_RecordType):
    """One declared record of a section, read from its mapping (frozen; ``==`` compares what
    was written; false when nothing was).

    ``raw`` is the mapping as written (fields not declared included: a build's facts of a
    package runsnap does not name); :meth:`has` tells a field written from one left out."""

    __slots__ = ("_raw", "_at", "_path")
    _raw: Mapping[str, Any]
    _at: str
    _path: str
    _specs: ClassVar[dict[str, tuple[str, int, Any, bool]]]

    def __init__(self, raw: Mapping[str, Any] | None = None, path: str = "", at: str = "") -> None:
        put = object.__setattr__
        put(self, "_raw", {} if raw is None else raw)
        put(self, "_path", path)
        put(self, "_at", at)

    def __getattr__(self, name: str) -> Any:
        """A field read for the first time: converted from the mapping and kept (a record
        costs what its reader reads: a diff that asks a thousand ranks for one field builds
        nothing else)."""
        spec = field_specs(type(self)).get(name)
        if spec is None:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}")
        key, kind, arg, optional = spec
        value = self._raw.get(key, _ABSENT)
        path = f"{self._path}.{key}" if self._path else key
        if value is _ABSENT or (value is None and optional):
            made = _default(kind, arg, optional, path, self._at)
        else:
            made = _read(value, kind, arg, path, self._at)
        object.__setattr__(self, name, made)
        return made

    def check(self) -> None:
        """Read every field at every depth: :class:`~runsnap.errors.SnapshotError` here for
        the first value of the wrong type."""
        for attr, (_key, kind, _arg, _optional) in field_specs(type(self)).items():
            value = getattr(self, attr)
            if kind == RECORD and value is not None:
                value.check()
            for inner in value if kind == RECORDS else value.values() if kind == RECORD_TABLE \
                    else ():
                inner.check()

    @property
    def raw(self) -> Mapping[str, Any]:
        """The mapping as written."""
        return self._raw

    def has(self, key: str) -> bool:
        """Whether the field ``key`` was written (even as an empty value)."""
        return key in self._raw

    def __bool__(self) -> bool:
        return bool(self._raw)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return bool(self._raw == other._raw)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self._raw)!r})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: {type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: {type(self).__name__} is frozen")


def _default(kind: int, arg: Any, optional: bool, path: str, at: str) -> Any:
    """An absent field's typed default: ``None`` where the declaration allows it, else empty."""
    if optional or kind in (SCALAR, ANY):
        return None
    if kind == RECORD:
        return arg(None, path, at)
    return () if kind in (LIST, RECORDS) else {}


class _WrongType(SnapshotError):
    """A value of the wrong type, at ``where`` (the file and the section first when the
    record was read through :class:`Sections`; a record built directly says the field)."""

    def __init__(self, where: str, expected: str, value: Any) -> None:
        super().__init__(f"{where}: expected {expected}, found {_found(value)}")


def _read(value: Any, kind: int, arg: Any, path: str, at: str) -> Any:
    """A written value as its declaration reads it; :class:`_WrongType` when it does not fit."""
    where = at + path
    if kind == SCALAR:
        if not _is(value, arg):
            raise _WrongType(where, " or ".join(_NAMES[t] for t in arg), value)
        return value
    if kind == ANY:
        return value
    if kind in (LIST, RECORDS) and not isinstance(value, list):
        raise _WrongType(where, "an array", value)
    if kind in (TABLE, RECORD, RECORD_TABLE) and not isinstance(value, dict):
        raise _WrongType(where, "a table", value)
    if kind == RECORD:
        return arg(value, path, at)
    if kind == RECORDS:
        return tuple(_record(v, arg, f"{path}[{i}]", at) for i, v in enumerate(value))
    if kind == RECORD_TABLE:
        return {k: _record(v, arg, f"{path}.{k}", at) for k, v in value.items()}
    return value


def _record(value: Any, cls: type[SectionRecord], path: str, at: str) -> SectionRecord:
    if not isinstance(value, dict):
        raise _WrongType(at + path, "a table", value)
    return cls(value, path, at)


class OtherSection(SectionRecord):
    """A section no declaration covers (one a newer runsnap, or a tool of its own, wrote: the
    schema lets any table stand as a section): only ``errors``, the list docs/schema.md
    promises every section, is declared; the rest is read as written (``raw``)."""

    errors: Sequence[str]


class Sections:
    """The declared sections of one snapshot as records, each built on first use and kept
    (``snap.records``), each field converted when first read: a reader of ``[env]`` pays
    nothing for ``[packages]``."""

    __slots__ = ("_meta", "_sections", "_file", "_built")
    _records: ClassVar[dict[str, type[SectionRecord]]] = {}

    def __init__(self, meta: Mapping[str, Any], sections: Mapping[str, Mapping[str, Any]],
                 file: str | None = None) -> None:
        self._meta, self._sections, self._file = meta, sections, file
        self._built: dict[str, SectionRecord] = {}

    def _section(self, name: str, cls: type[_R]) -> _R:
        built = self._built.get(name)
        if built is None:
            raw = self._meta if name == "meta" else self._sections.get(name)
            at = f"{self._file}: [{name}] " if self._file else f"[{name}] "
            built = self._built[name] = cls(raw, "", at)
        return built  # type: ignore[return-value]

    def all(self) -> tuple[SectionRecord, ...]:
        """Every declared section's record, every field read: a value of the wrong type raises
        :class:`~runsnap.errors.SnapshotError` here."""
        made = tuple(self._section(name, cls) for name, cls in self._records.items())
        for record in made:
            record.check()
        return made

    def named(self, name: str) -> SectionRecord:
        """Section ``name`` as its declared record (the one ``snap.records.NAME`` gives), or as
        an :class:`OtherSection` when no declaration covers it."""
        cls = self._records.get(name)
        if cls is not None:
            return self._section(name, cls)
        at = f"{self._file}: [{name}] " if self._file else f"[{name}] "
        return OtherSection(self._sections.get(name), "", at)

    @classmethod
    def read(cls, name: str, raw: Mapping[str, Any]) -> SectionRecord:
        """Section ``name`` read from ``raw`` (a section of no snapshot at hand: the diff
        compares sections as written) as its declared record or an :class:`OtherSection`."""
        return cls._records.get(name, OtherSection)(raw, "", f"[{name}] ")
