"""``runsnap show`` and ``runsnap report`` as self-contained HTML pages, from the same records the
text and Markdown renderers read: the snapshot's summary then each section folded
(:func:`render_show`), the bug report's parts in order, each a heading with its blocks, a diff
laid out by :func:`runsnap.render.html_diff.render_html`'s parts (:func:`render_report`).
Nothing is trimmed: a page has no 65,536-character limit."""

from __future__ import annotations

from collections.abc import Sequence

from runsnap.base.terminal import neutralise_data
from runsnap.render.html_diff import body_html
from runsnap.render.html_page import Anchors, esc, page, pre
from runsnap.views.report_blocks import Block, ReportDoc

__all__ = ["render_report", "render_show"]


def render_show(summary: str, sections: Sequence[tuple[str, str]]) -> str:
    """The page of one snapshot: its ``summary`` (the text ``runsnap show`` prints), then every
    section of ``sections`` (name, text) folded, each an anchor (``#section.env``)."""
    lines = summary.splitlines()
    title = lines[0] if lines else "runsnap snapshot"
    body = [f'<h1 class="verdict" id="verdict">{esc(title)}</h1>', pre(lines[1:])]
    ids = Anchors()
    for name, text in sections:
        rows = text.rstrip("\n").splitlines()
        if rows:
            anchor = ids.make(("section", name))
            body += [f'<details id="{esc(anchor)}"><summary>{esc(name)} ({len(rows)} lines)'
                     "</summary>", pre(rows), "</details>"]
    return page(title, body)


def _table(b: Block) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in b.header) if any(b.header) else ""
    rows = "".join("<tr>" + "".join(
        f"<td><code>{esc(c)}</code></td>" if i in b.code else f"<td>{esc(c)}</td>"
        for i, c in enumerate(r)) + "</tr>" for r in b.rows)
    return f"<table>{f'<tr>{head}</tr>' if head else ''}{rows}</table>"


def _blocks(blocks: Sequence[Block]) -> list[str]:
    out: list[str] = []
    for b in blocks:
        if b.kind == "para":
            out.append(f"<p>{esc(b.text)}</p>")
        elif b.kind == "code":
            out.append(pre(b.lines))
        elif b.kind == "items":
            out.append("<ul>" + "".join(f"<li>{esc(t)}</li>" for t in b.lines) + "</ul>")
        elif b.kind == "table":
            out.append(_table(b))
        elif b.kind == "details":
            out += [f"<details><summary>{esc(b.title)}</summary>", *_blocks(b.blocks),
                    "</details>"]
        elif b.kind == "diff":
            out += _diff(b)
    return out


def _diff(b: Block) -> list[str]:
    """A diff inside the report: the diff page's body, its headings one level down."""
    return ['<div class="embedded">', *body_html(neutralise_data(b.diff), level=3)[1], "</div>"]


def render_report(doc: ReportDoc, attach: Sequence[str] = ()) -> str:
    """The bug report as a page: the title, each part under its heading, then the notes."""
    body = [f'<h1 class="verdict" id="verdict">{esc(doc.title)}</h1>']
    for p in doc.parts:
        if p.blocks:
            body += [f'<section id="{esc(p.key)}"><h2>{esc(p.title)}</h2>', *_blocks(p.blocks),
                     "</section>"]
    body += ["<hr>", f"<p>{esc(doc.scrubbed)}</p>"]
    if attach:
        body.append(f"<p>Attach {esc(', '.join(attach))} to the issue: the full snapshots, "
                    "scrubbed the same way.</p>")
    return page(doc.title, body)
