"""A record's JSON form, written once for every record that has one (a diff's differences and
snapshots, a bisection's changes, a report's blocks).

A record here is a :mod:`runsnap.base.records` record: its fields are read from its
``field_names()``, so this module imports nothing.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["json_form", "plain"]


def plain(value: Any) -> Any:
    """``value`` as JSON holds it: a tuple or a list as a list (its items too), a record by its
    own ``to_dict``; anything else as it is.

    >>> plain((1, ("a", "b"), [2]))
    [1, ['a', 'b'], [2]]
    """
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    to_dict = getattr(value, "to_dict", None)
    if to_dict is not None and not isinstance(value, type):
        return to_dict()
    return value


def _empty(value: Any) -> bool:
    """None, or an empty string or container (never a number, a boolean or a record, whose truth
    value may mean something else: a diff report is false when the runs do not differ)."""
    return value is None or (isinstance(value, (str, tuple, list, dict)) and not value)


def json_form(record: Any, names: Sequence[str] = (), *, skip_empty: bool = False
              ) -> dict[str, Any]:
    """``record``'s fields in their JSON form (:func:`plain`): ``names`` in that order, or every
    field in the order declared; with ``skip_empty``, the empty ones left out.

    >>> from runsnap.base.records import Record
    >>> class R(Record):
    ...     key: str
    ...     path: tuple = ()
    ...     why: str = ""
    >>> json_form(R("x", ("env", "X")))
    {'key': 'x', 'path': ['env', 'X'], 'why': ''}
    >>> json_form(R("x"), skip_empty=True)
    {'key': 'x'}
    """
    out = {}
    for name in names or record.field_names():
        value = getattr(record, name)
        if not (skip_empty and _empty(value)):
            out[name] = plain(value)
    return out
