"""The marks a section declaration (:mod:`runsnap.snapshot.shapes`) puts on a field for its
part of ``schema.json``: a shared definition, a description, a least value, the shape of
undeclared entries; how ``diff`` compares it (:class:`Compare`, :class:`NotCompared`); and the
field types several sections share."""

from __future__ import annotations

from typing import Annotated, Any

__all__ = ["Compare", "Doc", "Errors", "Extra", "Minimum", "NotCompared", "OptionValue", "Ref"]


class Ref:
    """A field whose shape is a shared definition of ``schema.json`` (``$defs``)."""

    def __init__(self, name: str) -> None:
        self.name = name


class Doc:
    """A field's description, written into ``schema.json`` (``description``)."""

    def __init__(self, text: str) -> None:
        self.text = text


class Minimum:
    """The least value of a number field (``minimum``)."""

    def __init__(self, least: int) -> None:
        self.least = least


class Extra:
    """The shape of the entries a table holds beside its declared fields
    (``additionalProperties``): build facts of packages runsnap does not know by name."""

    def __init__(self, shape: Any) -> None:
        self.shape = shape


class Compare:
    """A field ``diff`` compares.

    With ``score`` and ``reason``, the declaration is the rule: every leaf of the field that
    differs is a difference, scored so (:mod:`runsnap.diffing.sections` reads the table
    :mod:`runsnap.snapshot.compared` generated from these marks). Without them, the section's
    comparer has a rule of its own for the field (its docstring says which). ``fields``: the
    field holds records (``dict[str, GitRepo]``) that the comparer reads field by field, so each
    of their fields carries a mark of its own."""

    def __init__(self, score: int | None = None, reason: str | None = None, *,
                 fields: bool = False) -> None:
        self.score, self.reason, self.fields = score, reason, fields


class NotCompared:
    """A field ``diff`` leaves out, and why (another field says the same, it differs on every
    run...)."""

    def __init__(self, because: str) -> None:
        self.because = because


Errors = Annotated[list[str], Ref("errors"), Compare()]
"""What went wrong while collecting the section, one sentence each."""
OptionValue = Annotated[str | bool | int | float | list[str | bool | int | float | None] | None,
                        Ref("optionValue")]
"""A long option's value: a string, ``true`` for a bare flag, a list when given more than once."""
