"""The parts of a ``runsnap report`` as data: blocks (paragraphs, tables, code, lists, folded
details) grouped in prioritised parts, the whole a :class:`ReportDoc`, which
:mod:`runsnap.render.bugreport` lays out within its size budget."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runsnap.base.jsonform import json_form
from runsnap.base.records import FrozenRecord
from runsnap.snapshot import Snapshot


class Block(FrozenRecord):
    """One piece of a part. ``kind``: ``para`` (plain text), ``table`` (``header`` and
    ``rows``; ``code`` marks columns shown as code), ``code`` (``lines``), ``items`` (a list),
    ``details`` (``title`` and ``blocks``, folded in Markdown), ``diff`` (``diff``: the result of
    comparing A and B, laid out by the diff's own renderer)."""

    kind: str
    text: str = ""
    header: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    code: tuple[int, ...] = ()
    lines: tuple[str, ...] = ()
    title: str = ""
    blocks: tuple[Block, ...] = ()
    diff: Any = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the fields this kind uses."""
        return json_form(self, ("kind", "text", "header", "rows", "lines", "title", "blocks",
                                "diff"), skip_empty=True)


def para(text: str) -> Block:
    """A paragraph of plain text."""
    return Block("para", text=text)


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], code: Sequence[int] = ()) -> Block:
    """A table; cells become text (``None``: empty)."""
    return Block("table", header=tuple(header),
                 rows=tuple(tuple("" if c is None else str(c) for c in r) for r in rows),
                 code=tuple(code))


def code(lines: Sequence[str]) -> Block:
    """A code block, shown as it is (made safe by the renderer)."""
    return Block("code", lines=tuple(lines))


def items(texts: Sequence[str]) -> Block:
    """A bulleted list of plain text."""
    return Block("items", lines=tuple(texts))


def details(title: str, blocks: Sequence[Block]) -> Block:
    """Blocks folded under a title."""
    return Block("details", title=title, blocks=tuple(blocks))


class Part(FrozenRecord):
    """A section of the report."""

    key: str
    title: str
    blocks: tuple[Block, ...]
    priority: int
    """Lower is more important; the budget trims the highest first (a part with a
    :attr:`shorter` form is shortened, then that form has its own priority). 0: never."""
    how: str = ""
    """How to get this part in full when it was trimmed."""
    shorter: Part | None = None
    """A smaller form, tried before the part is dropped."""


class ReportDoc(FrozenRecord):
    """The report before layout: a title, the parts in reading order, and the snapshots."""

    title: str
    parts: tuple[Part, ...]
    paths: tuple[str, ...]
    names: tuple[str, ...]
    scrubbed: str
    """What the report says about secrets (how they were scrubbed, where)."""
    snapshots: tuple[Snapshot, ...] = ()
    """The snapshots as scrubbed for this report (what ``--attach`` writes)."""
