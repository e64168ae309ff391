"""Text for people at a terminal: its width, lines cut or wrapped to it, untrusted text made safe.

Every text report runsnap prints goes through here, so the rules are one: a value from a
snapshot never reaches a terminal with its control characters (they are shown escaped), and
a line is cut (``…``) or wrapped at the terminal's width, colour codes not counted.

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

__all__ = ["clean", "fit", "visible_len", "width", "wrap"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


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


def clean(text: str) -> str:
    """``text`` with its control characters (escape sequences, carriage returns, bells)
    shown as escapes instead of acting on the terminal; tabs become spaces and newlines
    stay."""
    text = text.replace("\t", "    ")
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text) if _CONTROL.search(text) \
        else text


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
