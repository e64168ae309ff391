"""Two tables that mirror each other: a classifier's ``id2label`` and ``label2id`` (the same
labels, one keyed by index, the other by name) change together when someone adds a class; a
tokenizer's ``vocab`` and its inverse, a config's ``name_to_id`` and ``id_to_name`` as well.
Listed as two causes they tie, and the verdict stays undecided between two views of one edit.

:func:`by_mirror` (a grouper of :mod:`runsnap.diffing.grouping`) puts the second under the
first wherever, in both runs, one table is the other inverted (keys and values compared as
text: JSON keys are strings, the values numbers) and the tables are of one source (the same
model option, the same file): one change, ranked once, the mirror listed with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runsnap.diffing.grouprecord import Group
from runsnap.diffing.result import Difference

__all__ = ["by_mirror", "inverted"]


def inverted(table: Any, other: Any) -> bool:
    """Whether ``other`` is ``table`` inverted, keys and values as text; two absent tables
    mirror each other too (both added in one run).

    >>> inverted({"0": "neg", "1": "pos"}, {"neg": 0, "pos": 1})
    True
    >>> inverted({"0": "neg", "1": "pos"}, {"neg": 1, "pos": 0})
    False
    >>> inverted(None, None), inverted({}, {})
    (True, False)
    """
    if table is None or other is None:
        return table is None and other is None
    if not isinstance(table, Mapping) or not isinstance(other, Mapping) or not table:
        return False
    if len(table) != len(other):
        return False
    flipped = {_text(v): _text(k) for k, v in table.items()}
    return len(flipped) == len(table) and flipped == {_text(k): _text(v)
                                                      for k, v in other.items()}


def _text(value: Any) -> str:
    return str(value).strip()


def _source(d: Difference) -> tuple[str, str]:
    """The section and what the field belongs to (``--model-path`` of ``--model-path: x``)."""
    return d.section, d.key.rpartition(": ")[0] if ": " in d.key else ""


def by_mirror(diffs: Sequence[Difference], a: Any, b: Any) -> list[Group]:
    """Each changed table with the table that mirrors it in both runs (see the module's
    text); the one ranked first is the cause."""
    tables = [d for d in diffs if d.change in ("changed", "added", "removed")
              and (isinstance(d.a, Mapping) or isinstance(d.b, Mapping))]
    out: list[Group] = []
    taken: set[int] = set()
    for i, d in enumerate(tables):
        if id(d) in taken:
            continue
        for m in tables[i + 1:]:
            if (id(m) not in taken and _source(m) == _source(d)
                    and inverted(d.a, m.a) and inverted(d.b, m.b)):
                taken.update((id(d), id(m)))
                name = d.key.rpartition(": ")[2]
                other = m.key.rpartition(": ")[2]
                out.append(Group(d, (m,), lines=(
                    f"{other} is {name} inverted in both runs: one edit, ranked once",)))
                break
    return out
