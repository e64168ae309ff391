"""A small table of a model's config edited in more than one field: ``rope_parameters`` given
``rope_type: linear`` and ``factor: 4.0`` together, ``quantization_config``'s ``bits`` and
``group_size``. The fields of such a table make one setting (the scaling, the quantization
scheme): neither takes effect without the other, and listed as two causes they tie, so the
verdict stays undecided between two halves of one edit.

:func:`by_table` (a grouper of :mod:`runsnap.diffing.grouping`) puts every changed field of
such a table under the one ranked first: one change, ranked once, the other fields listed with
it. A table counts as one setting where, in each run that has it, it holds at most
:data:`SMALL` entries and none of them is a table itself; a model's ``text_config`` (dozens of
fields, tables inside) is a model of its own, whose fields are decisions of their own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runsnap.diffing.grouprecord import Group
from runsnap.diffing.result import Difference
from runsnap.diffing.walk import dotted

__all__ = ["SMALL", "by_table"]

#: A table of at most this many entries, none a table, is one setting.
SMALL = 12


def _at(config: Any, parts: Sequence[str]) -> Any:
    """The value at ``parts`` (text, a list index in decimal) in ``config``, or None."""
    here = config
    for p in parts:
        if isinstance(here, Mapping):
            here = here.get(p)
        elif isinstance(here, list) and p.isdigit() and int(p) < len(here):
            here = here[int(p)]
        else:
            return None
    return here


def one_setting(table: Any) -> bool:
    """Whether ``table`` is small and flat enough to be one setting (see the module's text).

    >>> one_setting({"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0})
    True
    >>> one_setting({"hidden_size": 64, "rope_scaling": {"factor": 2.0}})
    False
    """
    return (isinstance(table, Mapping) and 0 < len(table) <= SMALL
            and not any(isinstance(v, Mapping) for v in table.values()))


def _config(snap: Any, src: str) -> Any:
    model = snap.records.models.models.get(src)
    return model.config.raw if model is not None and model.config else None


def by_table(diffs: Sequence[Difference], a: Any, b: Any) -> list[Group]:
    """The changed fields of each small table of a model's config, under the one ranked
    first (see the module's text)."""
    tables: dict[tuple[str, ...], list[Difference]] = {}
    for d in diffs:
        if d.section == "models" and len(d.path) >= 5 and d.path[2] == "config":
            tables.setdefault(tuple(d.path[:-1]), []).append(d)
    out: list[Group] = []
    for parent, fields in tables.items():
        if len(fields) < 2:
            continue
        src, parts = parent[1], parent[3:]
        found = [_at(_config(s, src), parts) for s in (a, b)]
        if not any(found) or not all(t is None or one_setting(t) for t in found):
            continue
        out.append(Group(fields[0], tuple(fields[1:]), lines=(
            f"{dotted(tuple(parts))}: {len(fields)} fields of one small table, one setting",)))
    return out
