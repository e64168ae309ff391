"""How ``diff`` compares each declared field, read from the marks of the declarations
(:class:`~runsnap.snapshot.shape_marks.Compare`, :class:`~runsnap.snapshot.shape_marks.NotCompared`).

The comparers read the table :mod:`runsnap.snapshot.compared`, which :func:`write_table`
generates from the declarations (``python -m runsnap.snapshot.shapes`` writes it with
``schema.json``): a diff then pays nothing for :mod:`typing`'s evaluation of the declarations.
``tests/test_shapes.py`` fails when the table differs from the marks, or when a declared field
carries neither mark (:func:`unmarked`).
"""

from __future__ import annotations

import os
import textwrap
import typing
from collections.abc import Iterator, Mapping
from typing import Annotated, Any

from runsnap.snapshot.shape_marks import Compare, NotCompared

__all__ = ["TABLE", "fields_of", "mark_of", "table_of", "unmarked", "write_table"]

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compared.py")


def mark_of(hint: Any) -> Compare | NotCompared | None:
    """The comparison mark a field's annotation carries (the last one, ``None`` when none).

    >>> mark_of(Annotated[int, NotCompared("a count")]).because
    'a count'
    >>> mark_of(int) is None
    True
    """
    if typing.get_origin(hint) is not Annotated:
        return None
    marks = [m for m in hint.__metadata__ if isinstance(m, (Compare, NotCompared))]
    return marks[-1] if marks else None


def _records(hint: Any) -> Iterator[type]:
    """The declared records a field's value holds (itself, its list items, its table's values)."""
    if typing.is_typeddict(hint):
        yield hint
        return
    for arg in typing.get_args(hint):
        if not isinstance(arg, (Compare, NotCompared)) and arg is not Any:
            yield from _records(arg)


def fields_of(shape: type) -> dict[str, Any]:
    """A declaration's fields and their annotations (marks included)."""
    return typing.get_type_hints(shape, include_extras=True)


def _walk(shape: type, where: str) -> Iterator[tuple[str, str, Any]]:
    """``(where, field, annotation)`` for every field of ``shape`` and of the records its
    fields marked ``Compare(fields=True)`` hold (``where``: ``git.repos`` for each repository)."""
    for field, hint in fields_of(shape).items():
        yield where, field, hint
        mark = mark_of(hint)
        if isinstance(mark, Compare) and mark.fields:
            for record in _records(hint):
                yield from _walk(record, f"{where}.{field}")


def unmarked(declared: Mapping[str, type]) -> list[str]:
    """The declared fields that carry neither :class:`Compare` nor :class:`NotCompared`."""
    return [f"{where}.{field}" for name, shape in declared.items()
            for where, field, hint in _walk(shape, name) if mark_of(hint) is None]


def table_of(declared: Mapping[str, type]) -> dict[str, dict[str, Any]]:
    """``{"by_declaration": {where: {field: (score, reason)}}, "not_compared": {where: [field]}}``."""
    by: dict[str, dict[str, tuple[int, str]]] = {}
    left: dict[str, list[str]] = {}
    for name, shape in declared.items():
        for where, field, hint in _walk(shape, name):
            mark = mark_of(hint)
            if isinstance(mark, Compare) and mark.score is not None:
                by.setdefault(where, {})[field] = (mark.score, mark.reason or "")
            elif isinstance(mark, NotCompared):
                left.setdefault(where, []).append(field)
    return {"by_declaration": by, "not_compared": left}


_HEAD = '''"""How ``diff`` compares the declared fields: GENERATED from the marks of
``runsnap/snapshot/shapes*.py`` by ``python -m runsnap.snapshot.shapes``; do not edit
(``tests/test_shapes.py`` fails when it differs from the marks)."""

from __future__ import annotations

__all__ = ["BY_DECLARATION", "NOT_COMPARED"]

#: Where a record sits (a section; ``git.repos`` for each repository) -> field -> (score,
#: reason): the fields compared leaf by leaf from the declaration alone.
'''


def _literal(text: str, indent: int) -> str:
    """``text`` as adjacent string literals, so no line of the table is over 110 characters."""
    parts = textwrap.wrap(text, 64, drop_whitespace=False) or [""]
    return ("\n" + " " * indent).join(repr(p) for p in parts)


def write_table(declared: Mapping[str, type], path: str = TABLE) -> str:
    """The table module's text for ``declared``, written to ``path`` and returned."""
    table = table_of(declared)
    lines = [_HEAD + "BY_DECLARATION: dict[str, dict[str, tuple[int, str]]] = {"]
    for where, fields in sorted(table["by_declaration"].items()):
        lines.append(f"    {where!r}: {{")
        for field, (score, reason) in sorted(fields.items()):
            lines.append(f"        {field!r}: ({score}, {_literal(reason, 12)}),")
        lines.append("    },")
    lines += ["}", "", "#: Where -> the fields diff leaves out (their reasons are in the declarations).",
              "NOT_COMPARED: dict[str, frozenset[str]] = {"]
    for where, fields in sorted(table["not_compared"].items()):
        names = textwrap.fill(", ".join(repr(f) for f in sorted(fields)), 90,
                              subsequent_indent=" " * 8)
        lines.append(f"    {where!r}: frozenset({{\n        {names},\n    }}),")
    text = "\n".join([*lines, "}", ""])
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return text
