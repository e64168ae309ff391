"""A two-run diff report as one self-contained HTML page (``runsnap diff --format html``): the
same content, in the same order, as the text report (verdict, snapshots, outcome, most likely
causes in detail, the other differences by section, what was hidden), long parts folded in
``<details>``, and every difference an anchor named by its locator (``#env.NCCL_ALGO``).
N-way reports are :mod:`runsnap.render.html_many`'s."""

from __future__ import annotations

from collections.abc import Sequence

from runsnap.diffing.many_result import NReport
from runsnap.diffing.result import Difference, SnapInfo, shown
from runsnap.render.diff_parts import (
    WORDS,
    AnyReport,
    change_words,
    consequence_line,
    dedupe_keys,
    detailed,
    only_differing,
)
from runsnap.render.html_many import body_html as many_body
from runsnap.render.html_page import Anchors, esc, href, page, pre, val

__all__ = ["body_html", "render_html"]


def _snapshots(rows: Sequence[tuple[str, SnapInfo]]) -> list[str]:
    out = ["<table class=\"snaps\"><tr><th></th><th>snapshot</th><th>label</th><th>captured</th>"
           "<th>host</th></tr>"]
    for tag, s in rows:
        out.append(f"<tr><th>{tag}</th><td><code>{esc(s.path or '(not saved)')}</code></td>"
                   f"<td>{esc(s.label)}</td><td>{esc(s.time)}</td><td>{esc(s.host)}</td></tr>")
    out.append("</table>")
    return out


def _outcome(diffs: Sequence[Difference]) -> list[str]:
    rows = [d for d in diffs if d.section == "outcome" and not d.hidden]
    if not rows:
        return []
    out = ["<h2>Outcome (what happened)</h2>", "<table class=\"outcome\"><tr><th></th><th>A</th>"
           "<th>B</th></tr>"]
    for d in rows:
        cells = []
        for value in (d.a, d.b):
            if d.key in WORDS and value is not None:
                cells.append(pre(str(value).splitlines()))
            elif d.key == "warnings":
                cells.append(f"{len(value or [])} warnings")
            else:
                cells.append(val(value))
        out.append(f"<tr><th>{esc(d.key)}</th><td>{cells[0]}</td><td>{cells[1]}</td></tr>")
    out.append("</table>")
    warned = [e for d in rows if d.key == "warnings" for e in d.evidence]
    if warned:
        out += ["<details><summary>Warnings</summary>", pre(warned), "</details>"]
    return out


def _sides(d: Difference) -> tuple[str, str]:
    a, b = only_differing(d.a, d.b)
    return esc(shown(d, a, 2000)), esc(shown(d, b, 2000))


def _detail(i: int, d: Difference, ids: Anchors, show_all: bool) -> list[str]:
    anchor = ids.make(d.path)
    a, b = _sides(d)
    out = [f'<section class="diff" id="{esc(anchor)}">',
           f'<h3>{i}. <a href="{href(anchor)}">{esc(d.where)}</a> <span class="dim">'
           f"{esc(change_words(d))} [{d.score}]</span></h3>",
           f"<div>A: <code>{a}</code></div>", f"<div>B: <code>{b}</code></div>",
           f'<div class="why">why: {esc(d.reason)}</div>']
    if d.evidence:
        out += [f"<details><summary>Evidence ({len(d.evidence)} lines)</summary>",
                pre(d.evidence), "</details>"]
    related = [r for r in d.related if show_all or not r.hidden]
    if related:
        out += [f"<details><summary>With it ({len(related)})</summary>", *_table(related, ids),
                "</details>"]
    out.append("</section>")
    return out


def _table(diffs: Sequence[Difference], ids: Anchors) -> list[str]:
    out = ["<table><tr><th>score</th><th>key</th><th>change</th><th>A</th><th>B</th>"
           "<th>why</th></tr>"]
    for d in diffs:
        anchor = ids.make(d.path)
        a, b = _sides(d)
        evidence = (f"<details><summary>evidence ({len(d.evidence)})</summary>"
                    f"{pre(d.evidence)}</details>") if d.evidence else ""
        out.append(f'<tr id="{esc(anchor)}"><td>{d.score}</td><td><a href="{href(anchor)}">'
                   f"{esc(d.where)}</a></td><td>{esc(d.change)}</td><td><code>{a}</code></td>"
                   f"<td><code>{b}</code></td><td class=\"why\">{esc(d.reason)}{evidence}</td>"
                   "</tr>")
    out.append("</table>")
    return out


def _grouped(diffs: Sequence[Difference], ids: Anchors) -> list[str]:
    sections = list(dict.fromkeys(d.section for d in diffs))
    out: list[str] = []
    for section in sections:
        mine = [d for d in diffs if d.section == section]
        out += [f"<details open><summary>{esc(section)} ({len(mine)})</summary>",
                *_table(mine, ids), "</details>"]
    return out


def render_html(report: AnyReport, color: bool = False) -> str:
    """The page of ``report``, two-way or N-way."""
    return page(*body_html(report))


def body_html(report: AnyReport, level: int = 1) -> tuple[str, list[str]]:
    """The verdict and the page's body (its verdict an ``h{level}``, its parts one level
    down): what :func:`render_html` and a bug report's page lay out (N-way reports:
    :func:`runsnap.render.html_many.body_html`)."""
    if isinstance(report, NReport):
        return many_body(report, level)
    ids = Anchors()
    verdict = f"runsnap diff: {report.verdict()}"
    h, h2 = f"h{level}", f"h{level + 1}"
    body = [f'<{h} class="verdict">{esc(verdict)}</{h}>',
            *_snapshots([("A", report.a), ("B", report.b)])]
    body += [f'<p class="note">note: {esc(n)}</p>' for n in report.notes]
    rest = [d for d in report.shown if d.section != "outcome" or d.hidden]
    body += _outcome(report.shown)
    if report.consequences:
        body += [f"<details><summary>{esc(consequence_line(report))}</summary>",
                 *_grouped(report.consequences, ids), "</details>"]
    likely = detailed(report, rest)
    if likely:
        one = report.confidence == "confident" and len(likely) == 1
        body.append(f"<{h2}>{'Most likely cause' if one else 'Most likely causes'}</{h2}>")
        for i, d in enumerate(likely, 1):
            body += _detail(i, d, ids, report.show_all)
    others = [d for d in rest if d not in likely and not d.hidden]
    if others:
        body += [f"<{h2}>{'Other differences' if likely else 'Differences'} ({len(others)})"
                 f"</{h2}>",
                 *_grouped(others, ids)]
    hidden = report.hidden
    if hidden:
        names = ", ".join(dedupe_keys(hidden))
        body += [f"<details><summary>Noise and ignored ({len(hidden)}, not counted)</summary>",
                 f'<p class="dim">{esc(names)}</p>', *_grouped(hidden, ids), "</details>"]
    return verdict, body

