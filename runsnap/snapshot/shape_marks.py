"""The marks a section declaration (:mod:`runsnap.snapshot.shapes`) puts on a field for its
part of ``schema.json``: a shared definition, a description, a least value, the shape of
undeclared entries; and the field types several sections share."""

from __future__ import annotations

from typing import Annotated, Any

__all__ = ["Doc", "Errors", "Extra", "Minimum", "OptionValue", "Ref"]


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


Errors = Annotated[list[str], Ref("errors")]
"""What went wrong while collecting the section, one sentence each."""
OptionValue = Annotated[str | bool | int | float | list[str | bool | int | float | None] | None,
                        Ref("optionValue")]
"""A long option's value: a string, ``true`` for a bare flag, a list when given more than once."""
