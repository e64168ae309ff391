r"""The TOML writer of snapshots.

The layout is tomli-w's (``multiline_strings=True``): plain values first, then sub-tables;
a list of tables as ``[[array.of.tables]]`` unless every item fits on one inline line;
arrays one item per line. Two differences, both measured (benchmarks/RESULTS.md):

* speed: tomli-w escapes strings one character at a time, slow on a large git diff; here one
  regular expression does it;
* multi-line text is written as a literal string (``'''...'''``) whenever TOML allows it
  (no ``'''``, no carriage return, no control character but tab): it needs no escapes, so
  it reads as the text itself, and tomllib parses it much faster than an escaped multi-line
  basic string, so a large diff does not slow every load. Other text with a newline
  is a multi-line basic string in which ``\r`` is escaped, so CRLF line ends survive
  (tomli-w turns ``\r\n`` into ``\n`` there).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from runsnap.base.patterns import on_use

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["table_chunks"]

_ESCAPE = on_use(r'[\x00-\x1f\x7f"\\]')
_ESCAPE_ML = on_use(r'[\x00-\x08\x0b-\x1f\x7f"\\]')  # keeps \t and \n as they are
# Control characters a literal string cannot hold (all but tab and newline), for str.translate:
# deleting them and comparing lengths is faster than a regular expression search.
_NOT_IN_LITERAL = dict.fromkeys([*range(0x00, 0x09), *range(0x0b, 0x20), 0x7f])
_SHORT = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"',
          "\\": "\\\\"}
_INLINE_MAX = 100


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    return _SHORT.get(ch) or f"\\u{ord(ch):04x}"


def _string(s: str) -> str:
    r"""A TOML string for ``s``: basic on one line; literal, else basic, on several.

    >>> print(_string('say "hi"'))
    "say \"hi\""
    >>> print(_string("a\nb"))
    '''
    a
    b'''
    >>> _string("a\r\nb").splitlines()[1]  # a multi-line basic string: CR escaped
    'a\\r'
    """
    if "\n" not in s:
        if s.isprintable() and '"' not in s and "\\" not in s:
            return f'"{s}"'  # nothing to escape (most strings: tested at C speed)
        return f'"{_ESCAPE.sub(_escape, s)}"'
    if "'''" not in s and not s.endswith("'") and len(s.translate(_NOT_IN_LITERAL)) == len(s):
        return f"'''\n{s}'''"
    return f'"""\n{_ESCAPE_ML.sub(_escape, s)}"""'


def _key(k: str) -> str:
    """``k`` bare when it may be (``[A-Za-z0-9_-]+``), else quoted.

    >>> [_key(k) for k in ("numpy", "rs-bench_1", "a.b", "", "é", "-")]
    ['numpy', 'rs-bench_1', '"a.b"', '""', '"é"', '-']
    """
    # the bare-key test without a regular expression (every key of a snapshot passes here)
    if k.isascii() and k.replace("_", "a").replace("-", "a").isalnum():
        return k
    return f'"{_ESCAPE.sub(_escape, k)}"'


def _value(v: Any, level: int = 0) -> str:
    if isinstance(v, str):
        return _string(v)
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, Mapping):
        return _inline_table(v)
    if isinstance(v, (list, tuple)):
        if not v:
            return "[]"
        pad = "    " * (level + 1)
        items = ",\n".join(pad + _value(x, level + 1) for x in v)
        return f"[\n{items},\n{'    ' * level}]"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def _inline_table(t: Mapping[str, Any]) -> str:
    if not t:
        return "{}"
    return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in t.items()) + " }"


def _fits_inline(t: Mapping[str, Any]) -> bool:
    text = _inline_table(t)
    return len(text) + 5 <= _INLINE_MAX and "\n" not in text


def _one_line(v: Any) -> str:
    """``v`` on one line: strings escaped, tables and arrays inline."""
    if isinstance(v, str):
        return f'"{_ESCAPE.sub(_escape, v)}"'
    if isinstance(v, Mapping):
        if not v:
            return "{}"
        return "{ " + ", ".join(f"{_key(k)} = {_one_line(x)}" for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_one_line(x) for x in v) + "]"
    return _value(v)


def table_chunks(table: Mapping[str, Any], name: str, in_array: bool = False,
                 one_line: frozenset[str] = frozenset()) -> list[str]:
    """The TOML text of ``table`` (named ``name``) in pieces. Tables named in ``one_line`` are
    written one entry a line (each value inline), arrays named there one item a line: a
    snapshot's bulk loader parses a line it has seen before only once."""
    if name in one_line and not in_array:
        return [f"[{name}]\n", *(f"{_key(k)} = {_one_line(v)}\n" for k, v in table.items())]
    plain: list[str] = []
    tables: list[tuple[str, Any, bool]] = []
    # the full name only where a table or array one entry a line is a child of this table
    # (none in a capture's sections: this loop runs for every key of every table)
    prefix = f"{name}." if name else ""
    named_here = any(n.startswith(prefix) and "." not in n[len(prefix):] for n in one_line)
    for k, v in table.items():
        full = f"{prefix}{_key(k)}" if named_here else ""
        if full in one_line and isinstance(v, Mapping):
            tables.append((k, v, False))
        elif full in one_line and isinstance(v, (list, tuple)):
            # one space: a line that began with "[" would look like a table's header
            items = "".join(f" {_one_line(x)},\n" for x in v)
            plain.append(f"{_key(k)} = [\n{items}]\n" if v else f"{_key(k)} = []\n")
        elif isinstance(v, Mapping):
            tables.append((k, v, False))
        elif (isinstance(v, (list, tuple)) and v and all(isinstance(x, Mapping) for x in v)
              and not all(_fits_inline(x) for x in v)):
            tables.extend((k, x, True) for x in v)
        else:
            plain.append(f"{_key(k)} = {_value(v)}\n")
    out: list[str] = []
    if in_array or (name and (plain or not tables)):
        out.append(f"[[{name}]]\n" if in_array else f"[{name}]\n")
    out.extend(plain)
    for k, v, arr in tables:
        if out:
            out.append("\n")
        out.extend(table_chunks(v, f"{name}.{_key(k)}" if name else _key(k), arr, one_line))
    return out
