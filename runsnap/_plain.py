"""Two small bases for the record classes a capture builds, in place of :mod:`dataclasses`.

Importing :mod:`dataclasses` costs every capture ~13 ms of CPU (it imports :mod:`inspect`), and
each decorated class ~1 ms more (its methods are generated and compiled at import), so the
classes on the capture path (:class:`~runsnap.snapshot.Snapshot`,
:class:`~runsnap.context.CaptureContext`, :class:`~runsnap.launch.LaunchResult` ...) are written
out by hand: each has ``__slots__`` and an explicit ``__init__``, and takes from here the
``__eq__`` and ``__repr__`` the dataclass decorator generated (and, for a frozen one, the
``__hash__`` and the refusal to assign). ``runsnap.diffing`` is not on the capture path and
keeps its dataclasses.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

__all__ = ["FrozenRecord", "Record"]


class Record:
    """``==`` and ``repr`` over the attributes a subclass names, as a dataclass makes them.

    ``_repr_fields``: the constructor's parameters, in order (``repr`` shows them);
    ``_eq_fields``: the attributes ``==`` compares. ``==`` holds only between instances of the
    same class; anything else is ``NotImplemented``.
    """

    __slots__ = ()
    _repr_fields: ClassVar[tuple[str, ...]] = ()
    _eq_fields: ClassVar[tuple[str, ...]] = ()

    def _eq_key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._eq_fields)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record) or other.__class__ is not self.__class__:
            return NotImplemented
        return self._eq_key() == other._eq_key()

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._repr_fields)
        return f"{self.__class__.__qualname__}({args})"


class FrozenRecord(Record):
    """A :class:`Record` that cannot change: assigning or deleting an attribute raises
    :class:`AttributeError`. ``__init__`` sets the attributes with ``object.__setattr__``.

    Hashable over ``_eq_fields`` like a frozen dataclass, and copied or pickled through its
    constructor (``_repr_fields`` are its parameters).
    """

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: {type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: {type(self).__name__} is frozen")

    def __hash__(self) -> int:
        return hash(self._eq_key())

    def __reduce__(self) -> tuple[Any, ...]:
        return self.__class__, tuple(getattr(self, name) for name in self._repr_fields)
