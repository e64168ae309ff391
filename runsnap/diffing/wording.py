"""Values in words, for the reports' lines: a value cut short to one line, equal values
grouped (by their frozen form: tables and lists compare by content)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runsnap.base.terminal import clean

__all__ = ["group_values", "short"]


def _frozen(value: Any) -> Any:
    """A hashable stand-in for a value made of plain data (equal values, equal stand-ins)."""
    if type(value) is str or value is None:
        return value
    if isinstance(value, Mapping):
        return ("{}", tuple((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("[]", tuple(_frozen(v) for v in value))
    if isinstance(value, float) and value != value:
        return ("nan",)
    return (type(value).__name__, value) if isinstance(value, (bool, int, float)) else value


def group_values(values: Sequence[Any]) -> list[tuple[Any, list[int]]]:
    """Each distinct value with the indexes holding it, largest group first (then first seen).
    Linear in the number of values.

    >>> group_values(["1", "2", "1", None])
    [('1', [0, 2]), ('2', [1]), (None, [3])]
    """
    index: dict[Any, int] = {}
    out: list[tuple[Any, list[int]]] = []
    for i, v in enumerate(values):
        k = _frozen(v)
        at = index.get(k)
        if at is None:
            index[k] = len(out)
            out.append((v, [i]))
        else:
            out[at][1].append(i)
    return sorted(out, key=lambda g: -len(g[1]))


def short(value: Any, limit: int = 80) -> str:
    """A value in one short line for reports.

    Booleans as TOML and JSON spell them (a command-line flag is worded by :func:`shown`).

    >>> short(None), short(True), short("x" * 100, 10), short(["a", "b"])
    ('(unset)', 'true', 'xxxxxxxxx…', 'a, b')
    """
    if value is None:
        text = "(unset)"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = value if value else '""'
    elif isinstance(value, (list, tuple)):
        text = ", ".join(short(v, limit) for v in value) or "[]"
    elif isinstance(value, Mapping):
        text = ", ".join(f"{k}={short(v, limit)}" for k, v in value.items()) or "{}"
    else:
        text = str(value)
    text = text.replace("\n", "⏎")
    if not text.isprintable():  # a value from a snapshot never acts on a terminal

        text = clean(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
