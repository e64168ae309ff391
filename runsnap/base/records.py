"""Two small bases for the record classes a capture builds, in place of :mod:`dataclasses`.

Importing :mod:`dataclasses` imports :mod:`inspect`, and each decorated class has its methods
generated and compiled at import: a cost on every capture (measured in benchmarks/RESULTS.md).
So the records on the capture path (:class:`~runsnap.snapshot.Snapshot`,
:class:`~runsnap.launch.LaunchResult`, :class:`~runsnap.launch.LaunchSpec` ...) derive from
:class:`Record` or :class:`FrozenRecord`, and declare their fields once, as a dataclass would::

    class Result(FrozenRecord):
        argv: tuple[str, ...]
        \"\"\"What was run.\"\"\"
        returncode: int = 0
        errors: list[str] = field(default_factory=list)
        key: bytes = field(default=b"", repr=False)

Everything else is derived from that one declaration: ``__slots__``, ``__init__`` (the fields in
order, as positional or keyword arguments, defaults filled in, then ``__post_init__`` if the
class has one), ``__repr__``, ``__eq__`` and, for a frozen record, ``__hash__``, the refusal
to assign and pickling. Annotated names that
start with ``_`` are private slots: not parameters, not shown, not compared. A class may still
write its own ``__init__`` (it then sets every slot itself). A diff's records
(:mod:`runsnap.diffing`) are records too: ``runsnap diff a b`` is timed against a parse of the
two files (benchmarks/RESULTS.md, "Real scale"), and :mod:`dataclasses` with :mod:`inspect`
and fourteen generated classes was a fifth of it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, ClassVar, TypeVar, dataclass_transform

    _R = TypeVar("_R", bound="_Base")
else:
    def dataclass_transform(**_kwargs):
        return lambda cls: cls

__all__ = ["FrozenRecord", "Record", "field"]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


_MISSING: Any = _Missing()


class _Field:
    """What :func:`field` declares about one field."""

    __slots__ = ("default", "factory", "repr", "compare")

    def __init__(self, default: Any, factory: Any, repr: bool, compare: bool) -> None:
        self.default, self.factory, self.repr, self.compare = default, factory, repr, compare


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None,
          repr: bool = True, compare: bool = True) -> Any:
    """Declare a field with a default made fresh for each record (``default_factory``), or one
    left out of ``repr`` or ``==``."""
    return _Field(default, default_factory, repr, compare)


class _RecordType(type):
    """Builds ``__slots__`` and the field tables from a record class's annotations."""

    def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> _RecordType:
        annotations: dict[str, Any] = ns.get("__annotations__", {})
        own: list[str] = []
        private: list[str] = []
        specs: dict[str, _Field] = {}
        for attr, kind in annotations.items():
            if "ClassVar" in str(kind):
                continue
            (private if attr.startswith("_") else own).append(attr)
            value = ns.pop(attr, _MISSING)
            specs[attr] = value if isinstance(value, _Field) else _Field(value, None, True, True)
        if "__slots__" not in ns:
            ns["__slots__"] = (*own, *private)
        cls = super().__new__(mcs, name, bases, ns)
        inherited: dict[str, _Field] = {}
        for base in reversed(cls.__mro__[1:]):
            inherited.update(getattr(base, "_specs", {}))
        all_specs = {**inherited, **{k: v for k, v in specs.items() if k in own}}
        derived = {
            "_specs": all_specs,
            "_fields": tuple(all_specs),
            "_repr_fields": tuple(k for k, s in all_specs.items() if s.repr),
            "_eq_fields": tuple(k for k, s in all_specs.items() if s.compare),
            "_post_init": getattr(cls, "__post_init__", None),
        }
        for attr, value in derived.items():
            if attr not in ns:  # a class with its own __init__ may say otherwise
                setattr(cls, attr, value)
        init = next(vars(k)["__init__"] for k in cls.__mro__ if "__init__" in vars(k))
        if "__init__" not in ns and getattr(init, "_derived", False):
            # not written by hand: an __init__ of its own, replaced at its first use
            type.__setattr__(cls, "__init__", _first_init)
        return cls


def _first_init(self: Any, *args: Any, **kwargs: Any) -> None:
    """A record class's first ``__init__``: puts one compiled for its fields in its place
    (:func:`_compiled_init`), then builds the record with it. The first call of each class
    pays the compilation (~0.1 ms), and only classes that are used do: a diff of 32,768 ranks
    builds ~650,000 records, where the generic :meth:`_Base.__init__` cost ~3 s."""
    cls = type(self)
    made = _compiled_init(cls) if cls.__dict__.get("__init__") is _first_init else None
    if made is None:
        _Base.__init__(self, *args, **kwargs)
        return
    type.__setattr__(cls, "__init__", made)
    made(self, *args, **kwargs)


_first_init._derived = True  # type: ignore[attr-defined]


def _compiled_init(cls: type[_Base]) -> Callable[..., None] | None:
    """An ``__init__`` for ``cls``'s fields, as :mod:`dataclasses` writes one (``None``: a
    field without a default follows one with a default, which only the generic one takes)."""
    params, body = [], []
    scope: dict[str, Any] = {"_set": object.__setattr__, "_MISSING": _MISSING}
    defaults = False
    for i, name in enumerate(cls._fields):
        spec = cls._specs[name]
        if spec.factory is not None:
            scope[f"_f{i}"] = spec.factory
            params.append(f"{name}=_MISSING")
            body.append(f"    if {name} is _MISSING:\n        {name} = _f{i}()")
        elif spec.default is not _MISSING:
            scope[f"_d{i}"] = spec.default
            params.append(f"{name}=_d{i}")
        elif defaults:
            return None
        else:
            params.append(name)
        defaults = defaults or spec.factory is not None or spec.default is not _MISSING
        body.append(f"    _set(self, {name!r}, {name})")
    if cls._post_init is not None:
        body.append("    self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body or ["    pass"])
    exec(source, scope)  # noqa: S102 - names are the class's own identifiers
    made: Callable[..., None] = scope["__init__"]
    made.__qualname__ = f"{cls.__qualname__}.__init__"
    made._derived = True  # type: ignore[attr-defined]
    return made


class _Base(metaclass=_RecordType):
    """What :class:`Record` and :class:`FrozenRecord` share (two bases, so type checkers see
    one mutable and one frozen kind of record)."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _repr_fields: ClassVar[tuple[str, ...]] = ()
    _eq_fields: ClassVar[tuple[str, ...]] = ()
    _specs: ClassVar[dict[str, _Field]] = {}
    _post_init: ClassVar[Callable[[Any], None] | None] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__} takes {len(fields)} arguments, "
                            f"{len(args)} given")
        for name, value in zip(fields, args, strict=False):
            if name in kwargs:
                raise TypeError(f"{type(self).__name__} got {name!r} twice")
            object.__setattr__(self, name, value)
        for name in fields[len(args):]:
            if name in kwargs:
                value = kwargs.pop(name)
            else:
                spec = self._specs[name]
                if spec.factory is not None:
                    value = spec.factory()
                elif spec.default is not _MISSING:
                    value = spec.default
                else:
                    raise TypeError(f"{type(self).__name__} needs {name!r}")
            object.__setattr__(self, name, value)
        if kwargs:
            raise TypeError(f"{type(self).__name__} has no field {next(iter(kwargs))!r}")
        if self._post_init is not None:
            self._post_init()

    __init__._derived = True  # type: ignore[attr-defined]

    def _eq_key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._eq_fields)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Base) or other.__class__ is not self.__class__:
            return NotImplemented
        return self._eq_key() == other._eq_key()

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._repr_fields)
        return f"{self.__class__.__qualname__}({args})"

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The declared fields, in order (the parameters of ``__init__``)."""
        return cls._fields

    def replace(self: _R, **changes: Any) -> _R:
        """A copy with the fields named in ``changes`` replaced."""
        values = {name: getattr(self, name) for name in self._fields}
        values.update(changes)
        return self.__class__(**values)


@dataclass_transform(field_specifiers=(field,))
class Record(_Base):
    """A record with ``__init__``, ``==`` and ``repr`` derived from its declared fields.

    ``==`` holds only between instances of the same class; anything else is ``NotImplemented``.
    """

    __slots__ = ()


@dataclass_transform(field_specifiers=(field,), frozen_default=True)
class FrozenRecord(_Base):
    """A :class:`Record` that cannot change: assigning or deleting an attribute raises
    :class:`AttributeError` (use :meth:`replace` for a changed copy).

    Hashable over the compared fields like a frozen dataclass, and copied or pickled through
    its constructor.
    """

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: {type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: {type(self).__name__} is frozen")

    def __hash__(self) -> int:
        return hash(self._eq_key())

    def __reduce__(self) -> tuple[Any, ...]:
        return self.__class__, tuple(getattr(self, name) for name in self._fields)
