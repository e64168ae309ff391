"""The one-line TOML values runsnap writes, read without :mod:`tomllib`: plain scalars, flat
arrays and inline tables in the forms whose meaning is plain (no escapes, no leading zeros, no
exponents). The bulk loader (:mod:`runsnap.diffing.bulkload`) reads most lines of thousands of
ranks with these and gives tomllib the rest, once per distinct line.

>>> compound('[5, 104, "f"]', 0), compound('{ via = "getenv", sites = [184] }', 0)
((True, [5, 104, 'f']), (True, {'via': 'getenv', 'sites': [184]}))
>>> compound('[1, 2', 0), compound('{ a = 1, a = 2 }', 0)
((False, None), (False, None))
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["PLAIN_KEY", "SCALAR", "compound"]

# One-line values parsed without tomllib, in the forms whose meaning is plain (no escapes, no
# leading zeros, no exponents): what runsnap writes for most values. Anything else goes to
# tomllib, once per distinct line.
SCALAR = re.compile(r'"([^"\\\x00-\x1f\x7f]*)"|(-?(?:0|[1-9][0-9]{0,17}))|'
                     r"(-?(?:0|[1-9][0-9]{0,15})\.[0-9]{1,17})|(true)|(false)|(\[\])")
PLAIN_KEY = re.compile(r'([A-Za-z0-9_-]+|"[^"\\\x00-\x1f\x7f]*") = ')

# Flat arrays and inline tables of such values, as runsnap writes them (``[5, 104, "f"]``,
# ``{ via = "getenv", sites = [184] }``): read without tomllib, an item at a time (the rest,
# and anything TOML would reject, is tomllib's).
_ITEM = re.compile(r'"[^"\\\x00-\x1f\x7f]*"|-?(?:0|[1-9][0-9]{0,17})(?![.0-9eE_])|'
                   r"-?(?:0|[1-9][0-9]{0,15})\.[0-9]{1,17}(?![.0-9eE_])|true|false")
_INLINE_KEY = re.compile(r"([A-Za-z0-9_-]+) = ")


def _plain(text: str) -> Any:
    """The value of one item that :data:`_ITEM` matched."""
    if text[0] == '"':
        return text[1:-1]
    if text == "true" or text == "false":
        return text == "true"
    return float(text) if "." in text else int(text)


def _items(text: str, at: int) -> tuple[list[Any], int] | None:
    """The flat array that opens at ``text[at]`` (``[``) and where it ends, or ``None``."""
    out: list[Any] = []
    at += 1
    if text.startswith("]", at):
        return out, at + 1
    match = _ITEM.match
    while True:
        m = match(text, at)
        if m is None:
            return None
        out.append(_plain(m[0]))
        at = m.end()
        if text.startswith("]", at):
            return out, at + 1
        if not text.startswith(", ", at):
            return None
        at += 2


def compound(text: str, at: int) -> tuple[bool, Any]:
    """``(True, value)`` of a flat array or inline table at ``text[at:]`` (the whole rest),
    ``(False, None)`` when it is not one of runsnap's plain forms."""
    if text.startswith("[", at):
        got = _items(text, at)
        return (True, got[0]) if got is not None and got[1] == len(text) else (False, None)
    if not (text.startswith("{ ", at) and text.endswith(" }")):
        return False, None
    table: dict[str, Any] = {}
    end = len(text) - 2
    at += 2
    while True:
        k = _INLINE_KEY.match(text, at)
        if k is None:
            return False, None
        at = k.end()
        value: Any
        if text.startswith("[", at):
            got = _items(text, at)
            if got is None:
                return False, None
            value, at = got
        else:
            m = _ITEM.match(text, at)
            if m is None:
                return False, None
            value, at = _plain(m[0]), m.end()
        if k[1] in table or at > end:
            return False, None  # a key given twice: TOML's to reject
        table[k[1]] = value
        if at == end:
            return True, table
        if not text.startswith(", ", at):
            return False, None
        at += 2
