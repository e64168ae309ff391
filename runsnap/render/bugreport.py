"""``runsnap report`` laid out as GitHub-flavoured Markdown, plain text or JSON, within a size
budget (GitHub refuses an issue body over 65,536 characters).

Every value is made safe on the way out: control characters are shown escaped
(:func:`runsnap.base.terminal.clean`), Markdown's own characters are escaped in text and tables,
and code blocks get a fence longer than any run of backticks inside them, so nothing from a
snapshot can end a block or inject HTML.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from runsnap.base.terminal import clean, neutralise_json, wrap
from runsnap.base.terminal import fit as cut
from runsnap.render.diff import render as render_diff
from runsnap.render.html_docs import render_report
from runsnap.render.style import no_autolinks
from runsnap.views.bugreport import Block, Part, ReportDoc, para

__all__ = ["FORMATS", "GITHUB_LIMIT", "MIN_CHARS", "render", "fit"]

#: GitHub's limit on an issue or comment body.
GITHUB_LIMIT = 65536
#: The smallest budget: the title, the command, the outcome's first lines and the notes.
MIN_CHARS = 2000
FORMATS = ("markdown", "text", "json", "html")

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~&])")


def md_escape(text: str) -> str:
    """Plain text for Markdown: its special characters escaped, control characters shown, and
    what GitHub would link, mention or reference in a code span
    (:func:`~runsnap.render.style.no_autolinks`).

    >>> md_escape("a_b <x> | *y*")
    'a\\\\_b \\\\<x\\\\> \\\\| \\\\*y\\\\*'
    """
    return no_autolinks(clean(text).replace("\n", " "), _escaped)


def _escaped(text: str) -> str:
    return _MD_SPECIAL.sub(r"\\\1", text)


def md_code_span(text: str) -> str:
    """Text as an inline code span (pipes escaped for tables), on one line."""
    t = clean(text).replace("\n", "⏎").replace("|", "\\|")
    if not t:
        return ""
    ticks = max((len(m) for m in re.findall(r"`+", t)), default=0)
    fence = "`" * (ticks + 1)
    pad = " " if t.startswith("`") or t.endswith("`") or ticks else ""
    return f"{fence}{pad}{t}{pad}{fence}"


def _fence(lines: Sequence[str]) -> list[str]:
    body = [clean(line) for line in lines]
    ticks = max((len(m) for line in body for m in re.findall(r"`{3,}", line)), default=2)
    fence = "`" * max(3, ticks + 1)
    return [fence, *body, fence]


def _md_blocks(blocks: Sequence[Block]) -> list[str]:
    out: list[str] = []
    for b in blocks:
        if b.kind == "para":
            out += [md_escape(b.text), ""]
        elif b.kind == "code":
            out += [*_fence(b.lines), ""]
        elif b.kind == "items":
            out += [f"- {md_escape(t)}" for t in b.lines] + [""]
        elif b.kind == "table":
            header = [md_escape(h) or " " for h in b.header]
            out.append("| " + " | ".join(header) + " |")
            out.append("|" + "|".join("---" for _ in header) + "|")
            for row in b.rows:
                cells = [md_code_span(c) if i in b.code else md_escape(c)
                         for i, c in enumerate(row)]
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
        elif b.kind == "details":
            out += [f"<details><summary>{md_escape(b.title)}</summary>", "",
                    *_md_blocks(b.blocks), "</details>", ""]
        elif b.kind == "diff":
            out += [render_diff(b.diff, "markdown").rstrip("\n"), ""]
    return out


def _text_blocks(blocks: Sequence[Block], indent: str = "") -> list[str]:
    out: list[str] = []
    for b in blocks:
        if b.kind == "para":
            out += [indent + clean(b.text), ""]
        elif b.kind == "code":
            out += [f"{indent}    {clean(line)}" for line in b.lines] + [""]
        elif b.kind == "items":
            out += [f"{indent}  - {clean(t)}" for t in b.lines] + [""]
        elif b.kind == "table":
            widths = [max([len(clean(h))] + [len(clean(r[i])) for r in b.rows])
                      for i, h in enumerate(b.header)]
            if any(h for h in b.header):
                heads = zip(b.header, widths, strict=False)
                out.append(indent + "  ".join(clean(h).ljust(w) for h, w in heads).rstrip())
            for row in b.rows:
                out.append(indent + "  ".join(clean(c).ljust(w) for c, w in zip(row, widths, strict=False))
                           .rstrip())
            out.append("")
        elif b.kind == "details":
            out += [indent + clean(b.title) + ":", *_text_blocks(b.blocks, indent + "  ")]
        elif b.kind == "diff":
            out += [render_diff(b.diff, "text").rstrip("\n"), ""]
    return out


def _notes(doc: ReportDoc, trimmed: Sequence[Part], attach: Sequence[str], fmt: str,
           limit: int) -> list[Block]:
    notes = [para(doc.scrubbed)]
    if attach:
        notes.append(para("Attach " + ", ".join(attach) + " to the issue (drag the files into "
                          "the comment box): the full snapshots, scrubbed the same way."))
    if trimmed:
        what = "; ".join(f"{p.title.lower()} ({'shortened' if p.blocks else 'left out'}; "
                         f"in full: {p.how or 'the snapshot'})" for p in trimmed)
        notes.append(para(f"Trimmed to fit {limit:,} characters: {what}. "
                          + ("" if attach else "`runsnap report --attach DIR` writes the full "
                             "snapshots as files GitHub accepts.")))
    return notes


def _layout(doc: ReportDoc, parts: Sequence[Part], notes: Sequence[Block], fmt: str) -> str:
    if fmt == "markdown":
        lines = [f"## {md_escape(doc.title)}", ""]
        for p in parts:
            if p.blocks:
                lines += [f"### {md_escape(p.title)}", "", *_md_blocks(p.blocks)]
        lines += ["---", "", *_md_blocks(notes)]
    else:
        lines = [clean(doc.title), "=" * min(len(doc.title), 100), ""]
        for p in parts:
            if p.blocks:
                lines += [clean(p.title), "-" * len(p.title), *_text_blocks(p.blocks)]
        lines += ["--", *_text_blocks(notes)]
    return "\n".join(lines).rstrip("\n") + "\n"


def fit(doc: ReportDoc, fmt: str = "markdown", limit: int = GITHUB_LIMIT,
        attach: Sequence[str] = ()) -> tuple[str, list[Part]]:
    """The report in ``fmt`` (``markdown`` or ``text``) within ``limit`` characters, and the
    parts trimmed: least important first, each shortened before it is dropped; then whatever
    was trimmed but fits again after a bigger cut is put back, most important first."""
    parts = list(doc.parts)
    steps: list[tuple[int, Part]] = []  # (index, the part before it was trimmed)

    def attempt() -> str:
        trimmed = {}
        for i, _ in steps:
            trimmed[doc.parts[i].key] = parts[i].replace(title=doc.parts[i].title)
        notes = _notes(doc, list(trimmed.values()), attach, fmt, limit)
        return _layout(doc, parts, notes, fmt)

    text = attempt()
    while len(text) > limit:
        cands = [i for i, p in enumerate(parts) if p.priority > 0 and p.blocks]
        if not cands:
            return _squeeze(text, limit), [parts[i] for i, _ in steps]
        i = max(cands, key=lambda j: (parts[j].priority, j))
        steps.append((i, parts[i]))
        short = parts[i].shorter
        parts[i] = short if short is not None else parts[i].replace(blocks=())
        text = attempt()
    n = len(steps) - 1
    while n >= 0:  # put back what fits again, most important first
        i, before = steps[n]
        if not any(j == i for j, _ in steps[n + 1:]):  # no later cut of the same part
            now = parts[i]
            parts[i] = before
            removed = steps.pop(n)
            candidate = attempt()
            if len(candidate) <= limit:
                text = candidate
            else:
                parts[i] = now
                steps.insert(n, removed)
        n -= 1
    return text, list({i: parts[i] for i, _ in steps}.values())


def _squeeze(text: str, limit: int) -> str:
    """The last resort when even the essential parts overflow: cut, and close what was open."""
    cut = text[: max(0, limit - 200)]
    fences = re.findall(r"^(`{3,})", cut, re.M)
    tail = "\n" + fences[-1] if len(fences) % 2 else ""
    note = ("\n\n(cut here to fit: attach the full snapshot, `runsnap report --attach DIR`)\n")
    return (cut + tail + note)[:limit]


def fit_width(text: str, width: int) -> str:
    """The text report fitted to a terminal ``width`` (0: as it is): prose is wrapped under
    its own indent; tables, code and rules, whose columns a wrap would scramble, are cut.

    >>> print(fit_width("A heading long enough to wrap" + chr(10) + "=" * 20, 16))
    A heading long
      enough to wrap
    ================

    A code block under a paragraph that promises it "in full" (the first error) is wrapped,
    never cut:

    >>> err = "    ValueError: the knob is bad, see docs"
    >>> print(fit_width(chr(10).join(["First error (in full):", "", err, "Traceback:", err]), 28))
    First error (in full):
    <BLANKLINE>
        ValueError: the knob is
          bad, see docs
    Traceback:
        ValueError: the knob is…
    """
    if width <= 0:
        return text

    out: list[str] = []
    whole = False  # under a paragraph that promises a block "in full": its lines wrap
    for line in text.split("\n"):
        body = line.lstrip(" ")
        lead = line[: len(line) - len(body)]
        if body and len(lead) < 4:  # prose: a new paragraph
            whole = body.endswith("(in full):")
        if len(line) <= width:
            out.append(line)
        elif set(body) <= set("=-"):
            out.append(line[:width])
        elif len(lead) >= 4 and whole:
            out += [lead + part for part in wrap(body, max(width - len(lead), 20), "  ")]
        elif "  " in body or len(lead) >= 4:  # a table's columns or a code line
            out.append(cut(line, width))
        else:
            out += [lead + part for part in wrap(body, max(width - len(lead), 20), "  ")]
    return "\n".join(out)


def render(doc: ReportDoc, fmt: str = "markdown", limit: int = GITHUB_LIMIT,
           attach: Sequence[str] = (), width: int = 0) -> str:
    """The report as text in ``fmt`` (one of :data:`FORMATS`). JSON is never trimmed.
    ``width``: a terminal's, for ``text`` (:func:`fit_width`)."""
    if fmt == "json":
        return neutralise_json(json.dumps({
            "format": "runsnap-report/1", "title": doc.title, "snapshots": list(doc.paths),
            "scrubbed": doc.scrubbed, "attach": list(attach),
            "parts": [{"key": p.key, "title": p.title, "priority": p.priority,
                       "blocks": [b.to_dict() for b in p.blocks]} for p in doc.parts],
        }, indent=2, ensure_ascii=False) + "\n")
    if fmt == "html":  # a page has no size limit: nothing trimmed
        return render_report(doc, attach)
    text = fit(doc, fmt, limit, attach)[0]
    return fit_width(text, width) if fmt == "text" else text
