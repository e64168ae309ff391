"""What another value of one of collect_env's facts means for a run: score and reason, from
``fact-scores.tsv`` beside this module (diff's rules for ``[system]`` and ``[packages]`` facts
beyond the core ones: :mod:`runsnap.diffing.sections.facts`)."""

from __future__ import annotations

import functools

from runsnap.knowledge import rule_lines

__all__ = ["fact_names", "fact_rule"]


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, dict[str, tuple[int, str]]]:
    tables: dict[str, dict[str, tuple[int, str]]] = {}
    for table, name, score, reason in rule_lines("fact-scores.tsv"):
        tables.setdefault(table, {})[name] = (int(score), reason)
    return tables


def fact_rule(table: str, name: str, default: bool = False) -> tuple[int, str] | None:
    """``(score, reason)`` of ``name`` in ``table``; with ``default``, the table's ``*`` rule
    when ``name`` has none. None when neither is written.

    >>> fact_rule("library", "nccl")
    (70, 'another NCCL: collectives (all-reduce, all-gather) change')
    >>> fact_rule("tool", "make"), fact_rule("limit", "rtprio", default=True)
    (None, (30, 'another resource limit'))
    """
    rules = _table().get(table, {})
    return rules.get(name) or (rules.get("*") if default else None)


def fact_names(table: str) -> tuple[str, ...]:
    """The names ``table`` has a rule for (not its ``*``), in the file's order.

    >>> fact_names("tool")[:3]
    ('nvcc', 'cc', 'cxx')
    """
    return tuple(name for name in _table().get(table, {}) if name != "*")
