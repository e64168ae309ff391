"""A regular expression's substitution made only on the lines that can hold a match: a long
text (a git diff, a traceback) mostly has none of the needles a redaction pattern needs."""

from __future__ import annotations

import re

from runsnap.base.patterns import on_use

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["sub_lines", "sub_words"]

#: A text longer than this is substituted a piece of about this size at a time.
PIECE = 1 << 16


def sub_lines(rx: re.Pattern[str], repl: Callable[[re.Match[str]], str], text: str,
               needles: tuple[str, ...]) -> str:
    """``rx.sub(repl, text)`` for a pattern whose matches never cross a line and need one of
    ``needles`` on their line: only the lines holding one are searched (a long text, such as a
    git diff, mostly has none). The patterns' look-behinds see a newline or the start of the
    text, which neither of them matches, so each line gives what the whole text would.

    >>> sub_lines(re.compile(r"(?<!\\w)k=\\w+"), lambda m: "k=X", "k=1\\nj k=2\\nno", ("=",))
    'k=X\\nj k=X\\nno'
    >>> long = "k=0 a\\n" + "b\\n" * 3000 + "c k=1 d=2\\n" + "e\\n" * 9 + "k=3"
    >>> sub_lines(re.compile(r"k=\\w+"), lambda m: "k=X", long, ("=",)) == long.replace(
    ...     "k=0", "k=X").replace("k=1", "k=X").replace("k=3", "k=X")
    True
    """
    if len(text) < 4096 or "\n" not in text:
        return rx.sub(repl, text)
    lines: set[tuple[int, int]] = set()  # (start, end) of every line holding a needle
    for needle in needles:
        at = text.find(needle)
        while at >= 0:  # from one such line to the next, skipping the lines between
            lo = text.rfind("\n", 0, at) + 1
            hi = text.find("\n", at)
            hi = len(text) if hi < 0 else hi
            lines.add((lo, hi))
            at = text.find(needle, hi)
    parts, done = [], 0
    for lo, hi in sorted(lines):
        parts += [text[done:lo], rx.sub(repl, text[lo:hi])]
        done = hi
    return "".join(parts) + text[done:]


def sub_words(rx: re.Pattern[str], repl: Callable[[re.Match[str]], str], text: str,
              piece: int = PIECE) -> str:
    """``rx.sub(repl, text)`` for a pattern whose matches hold no whitespace and whose
    look-arounds take whitespace as the start or end of the text, made a piece at a time, each
    cut after a whitespace character: what a substitution holds while it runs (a new string
    for each match) then stays the size of a piece, whatever the length of a line (a 10 MB
    line of random words was 244,000 replacements held at once).

    >>> rx = re.compile(r"(?<!\\S)\\w{3}(?!\\S)")
    >>> text = "abc de fgh " * 9 + "ijk"
    >>> sub_words(rx, lambda m: m.group().upper(), text, 8) == rx.sub(lambda m: m.group().upper(), text)
    True
    """
    if len(text) <= piece:
        return rx.sub(repl, text)
    parts, lo, changed = [], 0, False
    while lo < len(text):
        hi = _after_space(text, lo + piece)
        part = text[lo:hi]
        out = rx.sub(repl, part)
        changed = changed or out is not part
        parts.append(out)
        lo = hi
    return "".join(parts) if changed else text


def _after_space(text: str, at: int) -> int:
    """The position after the first whitespace character of ``text`` from ``at`` on (the end
    when none is)."""
    if at >= len(text):
        return len(text)
    m = _SPACE.search(text, at)
    return m.end() if m else len(text)


_SPACE = on_use(r"\s")
