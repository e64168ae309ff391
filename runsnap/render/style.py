"""What every renderer shares: terminal styling that means something, Markdown cells and
fences that keep a snapshot's text inert."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runsnap.diffing.result import short

__all__ = ["LIKELY", "Style", "cell", "fence", "md_text"]

#: Differences scoring at least this are "most likely causes".
LIKELY = 60


class Style:
    """ANSI styling that is a no-op when colour is off (``NO_COLOR``, not a terminal, ``-o``).

    >>> Style(False).bold("x"), Style(True).bold("x")
    ('x', '\\x1b[1mx\\x1b[0m')
    """

    def __init__(self, color: bool) -> None:
        self.color = color

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color and text else text

    def bold(self, text: str) -> str:
        """Bold."""
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        """Faint, for reasons and evidence."""
        return self._wrap("2", text)

    def red(self, text: str) -> str:
        """Bad: an error, a failure exit, a signal."""
        return self._wrap("31", text)

    def green(self, text: str) -> str:
        """Good: a clean exit."""
        return self._wrap("32", text)

    def yellow(self, text: str) -> str:
        """Attention without judgement: scores, notes, the odd one out."""
        return self._wrap("33", text)

    def score(self, n: int) -> str:
        """A score marked by how likely it is to matter (never red or green: a likely cause
        is neither good nor bad)."""
        text = f"{n:>3}"
        return self._wrap("1;33", text) if n >= 80 else self.yellow(text) if n >= LIKELY \
            else text

    def outcome(self, key: str, value: Any, text: str) -> str:
        """An outcome value coloured by what it means: green for a clean exit, red for a
        failure exit, a signal or an error; anything else as it is.

        >>> st = Style(True)
        >>> st.outcome("exit_status", 0, "0"), st.outcome("first_error", "E: x", "E: x")
        ('\\x1b[32m0\\x1b[0m', '\\x1b[31mE: x\\x1b[0m')
        >>> st.outcome("exit_status", None, "(unset)")
        '(unset)'
        """
        if value is None or value == "" or value == []:
            return text
        if key == "exit_status" and isinstance(value, int):
            return self.green(text) if value == 0 else self.red(text)
        if key == "status":
            return self.green(text) if value == "exited" else self.red(text)
        if key in ("first_error", "error", "signal", "signal_number", "traceback"):
            return self.red(text)
        return text


def cell(value: Any, limit: int = 60) -> str:
    """A value as a Markdown table cell: a code span, pipes escaped; absence in italics.

    >>> cell(None), cell("a|b"), cell("x`y")
    ('*(unset)*', '`a\\\\|b`', '``x`y``')
    """
    if value is None:
        return "*(unset)*"
    text = short(value, limit).replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_text(text: str) -> str:
    """Text for a Markdown table cell or heading: pipes escaped, on one line."""
    return text.replace("|", "\\|").replace("\n", " ")


def fence(lines: Sequence[str]) -> list[str]:
    """A fenced code block around ``lines`` (four backticks when a line holds three)."""
    mark = "````" if any("```" in line for line in lines) else "```"
    return [mark, *lines, mark]
