"""Terminal safety: a value from a snapshot never reaches a terminal or Markdown raw.

A snapshot from a stranger can hold ``ESC ] 52 ; ...`` (writes the clipboard), ``ESC ] 0 ;``
(retitles the window), CSI sequences, a CR that overwrites the line before it, a LF that fakes
a line of the report, C1 controls that some terminals obey, or bidirectional overrides that
reorder what is read. :func:`neutralise` shows each as a visible escape (``\\x1b``, ``\\r``,
``\\u202e``); the renderers' own layout (their newlines, their colours) is added afterwards.
"""

from __future__ import annotations

import copy
import dataclasses

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    _T = TypeVar("_T")

__all__ = ["neutralise", "neutralise_data", "neutralise_json"]

_SHORT = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}
_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_TABLE: dict[int, str] = {
    **{c: _SHORT.get(c, f"\\x{c:02x}") for c in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0))},
    **{c: f"\\u{c:04x}" for c in _BIDI},
}
# For JSON text: the same characters as JSON escapes (the data is unchanged, only spelled safely).
_JSON_TABLE: dict[int, str] = {c: f"\\u{c:04x}" for c in (0x7F, *range(0x80, 0xA0), *_BIDI)}


def neutralise(text: str) -> str:
    r"""``text`` with every control character shown as an escape.

    >>> neutralise("run\x1b]52;c;aGk=\x07 ok\r\nnext")
    'run\\x1b]52;c;aGk=\\x07 ok\\r\\nnext'
    >>> neutralise("plain text, unchanged")
    'plain text, unchanged'
    """
    if text.isprintable():
        return text
    return text.translate(_TABLE)


def neutralise_json(text: str) -> str:
    """JSON text (control characters below 0x20 already escaped by :mod:`json`) with DEL, C1
    and bidirectional controls written as ``\\uXXXX``: the same data, safe on a terminal."""
    return text if text.isascii() else text.translate(_JSON_TABLE)


def neutralise_data(value: _T) -> _T:
    """A copy of ``value`` (plain data, dataclass instances, tuples) with every string, keys
    included, passed through :func:`neutralise`; other values are kept as they are."""
    return _walk(value)


def _walk(value: Any) -> Any:
    if isinstance(value, str):
        return neutralise(value)
    if isinstance(value, dict):
        return {_walk(k): _walk(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v) for v in value]
    if isinstance(value, tuple):
        items = [_walk(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = copy.copy(value)
        for f in dataclasses.fields(value):
            object.__setattr__(out, f.name, _walk(getattr(value, f.name)))
        return out
    return value
