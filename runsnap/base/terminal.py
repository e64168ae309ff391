"""Text for people at a terminal: its width, lines cut or wrapped to it, untrusted text made safe.

Every text report runsnap prints goes through here, so the rules are one: a value from a
snapshot never reaches a terminal with its control characters (they are shown escaped), and
a line is cut (``…``) or wrapped at the terminal's width, colour codes not counted.

The one sanitiser: a snapshot from a stranger can hold ``ESC ] 52 ; ...`` (writes the
clipboard), ``ESC ] 0 ;`` (retitles the window), CSI sequences (``ESC [ 2 J`` clears the
screen), a CR that overwrites the line before it, a LF that fakes a line of the report, C1
controls that some terminals obey, or bidirectional controls (U+202E, U+2066..U+2069,
U+200E/F, U+061C) that reorder what is read. :func:`neutralise` shows each as a visible escape
(``\\x1b``, ``\\r``, ``\\u202e``); :func:`clean` does the same but keeps newlines and turns tabs
into spaces (for multi-line text a renderer lays out); :func:`neutralise_data` and
:func:`neutralise_json` apply it to structures and JSON text. The renderers' own layout (their
newlines, their colours) is added afterwards.

    >>> fit("abcdefghij", 6), fit("abc", 6), fit("abcdefghij", 0)
    ('abcde…', 'abc', 'abcdefghij')
    >>> wrap("one two three four five six", 14, "  ")
    ['one two three', '  four five', '  six']
    >>> clean("ok\\x1b[2Jgone\\r")
    'ok\\\\x1b[2Jgone\\\\r'
"""

from __future__ import annotations

import os
import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    _T = TypeVar("_T")

__all__ = ["clean", "fit", "neutralise", "neutralise_data", "neutralise_json", "say",
           "utf8_text", "visible_len", "width", "wrap"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SHORT = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}
_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
#: Lone surrogates: what an undecodable byte N becomes in a ``surrogateescape`` string
#: (U+DC00 + N), shown as the byte (``\\xff``, as a snapshot's text spells it), and any other
#: surrogate by its code point. Neither can be written as UTF-8.
_SURROGATES: dict[int, str] = {
    **{c: f"\\u{c:04x}" for c in range(0xD800, 0xE000)},
    **{c: f"\\x{c - 0xDC00:02x}" for c in range(0xDC80, 0xDD00)},
}
_TABLE: dict[int, str] = {
    **{c: _SHORT.get(c, f"\\x{c:02x}") for c in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0))},
    **{c: f"\\u{c:04x}" for c in _BIDI},
    **_SURROGATES,
}
_TABLE_LINES = {**_TABLE, 0x09: "    "}
del _TABLE_LINES[0x0A]
# For JSON text: the same characters as JSON escapes (the data is unchanged, only spelled safely).
_JSON_TABLE: dict[int, str] = {c: f"\\u{c:04x}" for c in (0x7F, *range(0x80, 0xA0), *_BIDI,
                                                           *range(0xD800, 0xE000))}


def width(stream: object = None) -> int:
    """The width to fit text output to: ``COLUMNS`` when set (as click and ``shutil`` read
    it), else the terminal's when ``stream`` (default stdout) is one, else 0: no limit, so
    output written to a file or a pipe keeps whole lines (as ``git diff`` does)."""
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    stream = sys.stdout if stream is None else stream
    try:
        fd = stream.fileno()  # type: ignore[union-attr]
        if os.isatty(fd):
            return os.get_terminal_size(fd).columns
    except (AttributeError, OSError, ValueError):
        pass
    return 0


def say(line: str) -> None:
    """``line`` on stderr, as it is: runsnap's own word to the user (``runsnap: ...``). A
    stderr that cannot be written (closed: ``2>&-``; a full disk: ``2>/dev/full``) loses the
    line, never the run: the command still runs and its exit status is kept. From then on
    runsnap's own lines go nowhere; file descriptor 2 itself is left as it was given, so a
    command launched later gets the same stderr it would have had without runsnap."""
    try:
        sys.stderr.write(line)
        sys.stderr.flush()
    except OSError:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - kept till exit


def neutralise(text: str) -> str:
    r"""``text`` with every control character shown as an escape (newlines too).

    >>> neutralise("run\x1b]52;c;aGk=\x07 ok\r\nnext\u202e")
    'run\\x1b]52;c;aGk=\\x07 ok\\r\\nnext\\u202e'
    >>> neutralise("plain text, unchanged")
    'plain text, unchanged'
    """
    if text.isprintable():
        return text
    return text.translate(_TABLE)


def clean(text: str) -> str:
    """``text`` with its control characters (escape sequences, carriage returns, bells, C1
    and bidirectional controls) shown as escapes instead of acting on the terminal; tabs
    become spaces and newlines stay."""
    if text.isprintable():
        return text
    return text.translate(_TABLE_LINES)


def utf8_text(text: str) -> str:
    """``text`` that can be written as UTF-8: lone surrogates (bytes a snapshot held that were
    not UTF-8, decoded with ``surrogateescape``) written as escapes instead, ``\\xff`` for
    byte 0xff. Every command's output passes here last (:func:`runsnap.cli.boundary.finish`).

    >>> utf8_text("a\\udcffb"), utf8_text("plain")
    ('a\\\\xffb', 'plain')
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.translate(_SURROGATES)
    return text


def neutralise_json(text: str) -> str:
    """JSON text (control characters below 0x20 already escaped by :mod:`json`) with DEL, C1,
    bidirectional controls and lone surrogates written as ``\\uXXXX``: the same data, safe on
    a terminal and valid UTF-8."""
    return text if text.isascii() else text.translate(_JSON_TABLE)


def neutralise_data(value: _T) -> _T:
    """``value`` (plain data, records, tuples) with every string, keys included, passed
    through :func:`neutralise`; other values are kept as they are. Containers and records are
    copied where something in them changed, and shared where nothing did: treat the result
    as read-only."""
    return _walk(value)


def _walk(value: Any) -> Any:
    # What holds nothing to neutralise is given back as it is, not copied: a report of 32,768
    # ranks holds ~120,000 records and containers, nearly all plain.
    if isinstance(value, str):
        return neutralise(value)
    if isinstance(value, dict):
        items = [(_walk(k), _walk(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(),
                                                               strict=True)):
            return value
        return dict(items)
    if isinstance(value, (list, tuple)):
        walked = [_walk(v) for v in value]
        if all(w is v for w, v in zip(walked, value, strict=True)):
            return value
        if isinstance(value, list):
            return walked
        return type(value)(*walked) if hasattr(value, "_fields") else tuple(walked)
    fields = getattr(value, "field_names", None)
    if fields is not None and not isinstance(value, type):
        # a record (runsnap.base.records): the same kind of record, each field walked
        changed = {}
        for name in fields():
            old = getattr(value, name)
            new = _walk(old)
            if new is not old:
                changed[name] = new
        return value.replace(**changed) if changed else value
    return value


def visible_len(text: str) -> int:
    """The length of ``text`` on screen: colour codes count for nothing.

    >>> visible_len("\\x1b[31mred\\x1b[0m")
    3
    """
    return len(_ANSI.sub("", text)) if "\x1b" in text else len(text)


def fit(line: str, cols: int) -> str:
    """``line`` cut to ``cols`` visible characters, the last one ``…`` when cut (0: as is).
    Colour codes are kept whole and closed."""
    if cols <= 0 or visible_len(line) <= cols:
        return line
    out: list[str] = []
    seen = 0
    pos = 0
    coloured = False
    for m in _ANSI.finditer(line):
        chunk = line[pos:m.start()]
        room = cols - 1 - seen
        if len(chunk) > room:
            out.append(chunk[:max(room, 0)])
            seen = cols
            break
        out.append(chunk)
        seen += len(chunk)
        out.append(m.group())
        coloured = m.group() != "\x1b[0m"
        pos = m.end()
    else:
        out.append(line[pos:][:max(cols - 1 - seen, 0)])
    out.append("…")
    if coloured or "\x1b" in line:
        out.append("\x1b[0m")
    return "".join(out)


def wrap(text: str, cols: int, indent: str = "") -> list[str]:
    """``text`` in lines of at most ``cols`` characters, broken at spaces where it can be
    (a word longer than a line is broken inside), the lines after the first indented with
    ``indent``. ``cols`` 0: one line."""
    if cols <= 0 or len(text) <= cols:
        return [text]
    lines: list[str] = []
    line = ""
    room = cols
    for word in text.split(" "):
        candidate = f"{line} {word}" if line else word
        if len(candidate) <= room:
            line = candidate
            continue
        if line:
            lines.append(line)
            room = max(cols - len(indent), 10)
            line = word
        else:
            line = word
        while len(line) > room:
            lines.append(line[:room])
            line = line[room:]
            room = max(cols - len(indent), 10)
    if line:
        lines.append(line)
    return [lines[0], *(indent + ln for ln in lines[1:])]
