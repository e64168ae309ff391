"""The environment in ``torch.utils.collect_env``'s order (:mod:`runsnap.views.hostsummary`), as
text for terminals and as GitHub-flavoured Markdown for bug reports. Every value from a snapshot
is untrusted: control characters never reach the terminal, Markdown's special characters are
escaped.
"""

from __future__ import annotations

import re

from runsnap.render.style import no_autolinks
from runsnap.views.hostsummary import Groups

__all__ = ["fenced", "render_markdown", "render_text"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _clean(value: object) -> str:
    """A value as one line of safe text (control characters shown as ``?``)."""
    return _CONTROL.sub("?", str(value))


def render_text(groups: Groups, indent: str = "  ") -> list[str]:
    """Lines ``Label: value`` under each group title."""
    lines: list[str] = []
    for title, rows in groups:
        lines.append(f"{indent}{title}")
        width = max(len(label) for label, _ in rows)
        lines += [f"{indent}  {_clean(label).ljust(width)}  {_clean(value)}"
                  for label, value in rows]
    return lines


def _md(text: str) -> str:
    """Text for a Markdown table cell: pipes, backslashes, HTML and emphasis escaped, what
    GitHub would link or mention in a code span (:func:`~runsnap.render.style.no_autolinks`).

    >>> _md("a|b <x> *y*")
    'a\\\\|b &lt;x&gt; \\\\*y\\\\*'
    """
    return no_autolinks(_clean(text), _escaped)


def _escaped(text: str) -> str:
    text = text.replace("\\", "\\\\").replace("|", "\\|")
    text = text.replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([*_`\[\]#!])", r"\\\1", text)


def fenced(text: str) -> list[str]:
    """``text`` as a Markdown code block whose fence no line of it can close.

    >>> fenced("a ``` b")
    ['````', 'a ``` b', '````']
    """
    lines = [_CONTROL.sub("?", line) for line in text.splitlines()] or [""]
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, *lines, fence]


def render_markdown(groups: Groups, title: str = "Environment", level: int = 2) -> str:
    """GitHub-flavoured Markdown: one table per group, long groups folded in ``<details>``."""
    out = [f"{'#' * level} {_md(title)}", ""]
    for group, rows in groups:
        table = ["| | |", "|---|---|", *(f"| {_md(label)} | {_md(value)} |"
                                         for label, value in rows)]
        if len(rows) > 12:
            out += [f"<details><summary>{_md(group)} ({len(rows)})</summary>", "", *table, "",
                    "</details>", ""]
        else:
            out += [f"{'#' * (level + 1)} {_md(group)}", "", *table, ""]
    return "\n".join(out)
