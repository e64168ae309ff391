"""What every renderer shares: terminal styling that means something, Markdown cells and
fences that keep a snapshot's text inert."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from runsnap.base.terminal import clean
from runsnap.diffing.result import short

__all__ = ["LIKELY", "Style", "cell", "code_span", "fence", "md_text", "no_autolinks"]

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


#: What GitHub turns into a link, a notification or a reference in an issue's text, outside
#: code (its autolink, mention and reference filters run on the rendered text, so a backslash
#: does not stop them): URLs and ``www.`` hosts, e-mail addresses, ``@user`` and
#: ``@org/team``, ``#123``, ``owner/repo#123``, ``GH-123``, and commit hashes (7 to 40 hex
#: digits, alone or after ``@``).
_AUTOLINKED = re.compile(
    r"(?i:[a-z][a-z0-9+.-]{0,30}://|www\.)[^\s<>`]*"
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
    r"|(?<![\w`])@[A-Za-z0-9][\w-]*(?:/[\w.-]+)?"
    r"|(?:[\w.-]+/[\w.-]+)?#\d+"
    r"|(?i:\bGH-\d+)"
    r"|(?<![\w./-])[0-9a-fA-F]{7,40}(?![\w./-])")
#: A code span in text runsnap wrote itself (``runsnap bisect``): already inert, kept.
_CODE = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)")
#: What makes HTML, a link or an image in Markdown text, or ends a table cell.
_MD_ACTIVE = re.compile(r"([\\`<>\[\]!|])")


def code_span(text: str) -> str:
    """``text`` as an inline code span, on one line, pipes escaped for tables (GitHub reads
    ``\\|`` inside a table's code span as a pipe); backticks in it get a longer fence.

    >>> code_span("@octocat"), code_span("a`b")
    ('`@octocat`', '``a`b``')
    """
    t = text.replace("\n", " ").replace("|", "\\|")
    ticks = max((len(m) for m in re.findall(r"`+", t)), default=0)
    pad = " " if t.startswith("`") or t.endswith("`") else ""
    return f"{'`' * (ticks + 1)}{pad}{t}{pad}{'`' * (ticks + 1)}"


def no_autolinks(text: str, escape: Callable[[str], str]) -> str:
    """``text`` for Markdown that GitHub renders with nothing active in it: ``escape`` applied
    to the plain parts, and whatever GitHub would link, mention or reference
    (:data:`_AUTOLINKED`) put in a code span, where none of its filters look.

    >>> no_autolinks("ask @octocat about #123 and GH-45", str)
    'ask `@octocat` about `#123` and `GH-45`'
    """
    out, pos = [], 0
    for m in _AUTOLINKED.finditer(text):
        out += [escape(text[pos:m.start()]), code_span(m.group())]
        pos = m.end()
    out.append(escape(text[pos:]))
    return "".join(out)


def md_text(text: str) -> str:
    """Text for Markdown (a table cell, a heading, a list item), on one line, that can make no
    HTML, link, image, mention or reference: backslashes, backticks, angle and square
    brackets, ``!`` and pipes escaped, GitHub's autolinked words in code spans
    (:func:`no_autolinks`), control characters shown. Code spans already in the text (runsnap's
    own: ``runsnap bisect``) are kept as they are.

    >>> md_text("<img src=x> @octocat | `runsnap bisect`")
    '\\\\<img src=x\\\\> `@octocat` \\\\| `runsnap bisect`'
    """
    text = clean(text).replace("\n", " ")
    out, pos = [], 0
    for m in _CODE.finditer(text):
        out += [no_autolinks(text[pos:m.start()], _escape_active), m.group().replace("|", "\\|")]
        pos = m.end()
    out.append(no_autolinks(text[pos:], _escape_active))
    return "".join(out)


def _escape_active(text: str) -> str:
    return _MD_ACTIVE.sub(r"\\\1", text)


def fence(lines: Sequence[str]) -> list[str]:
    """A fenced code block around ``lines`` (four backticks when a line holds three)."""
    mark = "````" if any("```" in line for line in lines) else "```"
    return [mark, *lines, mark]
