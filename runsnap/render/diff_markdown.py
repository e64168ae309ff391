"""The Markdown renderer of a diff report, for a GitHub issue or pull request: a table of the
differences that count, the rest in ``<details>`` blocks, within a size limit."""

from __future__ import annotations

from collections.abc import Sequence

from runsnap.diffing.many_result import NReport
from runsnap.diffing.result import UNCHANGED, Difference, Report, SnapInfo
from runsnap.render.diff_parts import WORDS, AnyReport, consequence_line, dedupe_keys
from runsnap.render.many import render_markdown as render_many
from runsnap.render.style import cell, fence, md_text

#: Rows in the Markdown table before the rest go into a ``<details>`` block.
MD_ROWS = 15


def _md_snapshots(rows: Sequence[tuple[str, SnapInfo]]) -> list[str]:
    lines = ["| | snapshot | label | captured | host |", "|---|---|---|---|---|"]
    for tag, s in rows:
        lines.append(f"| {tag} | {cell(s.path or '(not saved)', 80)} | {md_text(s.label)} | "
                     f"{s.time} | {md_text(s.host)} |")
    return lines


def _md_table(diffs: Sequence[Difference], start: int = 1) -> list[str]:
    lines = ["| # | section | key | change | A | B | score | why |",
             "|---:|---|---|---|---|---|---:|---|"]
    for i, d in enumerate(diffs, start):
        lines.append(f"| {i} | {d.section} | {cell(d.key, 70)} | {d.change} | {cell(d.a)} | "
                     f"{cell(d.b)} | {d.score} | {md_text(d.reason)} |")
    return lines


#: GitHub's limit on an issue or comment body: every Markdown diff fits it.
MD_LIMIT = 65536


def _details(summary: str, items: Sequence[list[str]]) -> list[str]:
    if not items:
        return []
    return ["", f"<details><summary>{summary}</summary>", "",
            *[line for item in items for line in item], "</details>"]


def render_markdown(report: AnyReport, color: bool = False, limit: int = MD_LIMIT) -> str:
    """Markdown to paste into a GitHub issue: the verdict, a table of the snapshots, what
    happened, a ranked table of differences, long parts folded in ``<details>``; within
    ``limit`` characters (GitHub's 65,536), folding as ``runsnap report`` does: the least
    important part is shortened first (the noise list, the evidence, the consequences, the
    differences past the first table), and what was left out is said."""
    if isinstance(report, NReport):
        return _render_markdown_n(report)
    outcome = [d for d in report.shown if d.section == "outcome" and not d.hidden]
    diffs = [d for d in report.shown if d.section != "outcome" or d.hidden]
    return _fit(_md_head(report, outcome, diffs), _md_folded(report, outcome, diffs), limit)


_Part = tuple[str, list[list[str]], list[str]]
"""A folded part: its summary (``{n}``: how many items), its items (each some lines), and the
lines above them (a table's head)."""


def _md_head(report: Report, outcome: list[Difference], diffs: list[Difference]) -> list[str]:
    """What is never folded: the verdict, the snapshots, the outcome, the first table."""
    lines = [f"### runsnap diff: {md_text(report.verdict())}", ""]
    lines += _md_snapshots([("A", report.a), ("B", report.b)])
    for n in report.notes:
        lines += ["", f"> **Note:** {md_text(n)}"]
    if outcome:
        lines += ["", "**Outcome**", "", "| | A | B |", "|---|---|---|"]
        for d in outcome:
            lines.append(f"| {d.key} | {cell(d.a, 100)} | {cell(d.b, 100)} |")
    if report.consequences:
        lines += ["", md_text(consequence_line(report))]
    if diffs:
        lines += ["", "**Differences, most likely cause first**", ""]
        lines += _md_table(diffs[:MD_ROWS])
    return lines


def _md_folded(report: Report, outcome: list[Difference], diffs: list[Difference]) -> list[_Part]:
    """The folded parts, most important first."""
    words: list[_Part] = []
    for d in outcome:
        if d.key in WORDS and any(isinstance(v, str) and len(v) > 100 for v in (d.a, d.b)):
            item: list[str] = []
            for tag, value in (("A", d.a), ("B", d.b)):
                if value is not None:
                    item += [f"{tag}:", "", *fence(str(value).splitlines()), ""]
            words.append((f"{d.key.replace('_', ' ')} in full", [item], []))
    more = [_md_table(diffs[i:i + 1], i + 1)[2:] for i in range(MD_ROWS, len(diffs))]
    related = [[f"**{md_text(d.where)}**", "",
                *[f"- {md_text(r.where)}: {cell(r.a, 60)} → {cell(r.b, 60)} "
                  f"({md_text(r.reason)})" for r in d.related], ""]
               for d in diffs if d.related]
    evidence = [[f"**{md_text(d.where)}**", "", *fence(d.evidence), ""]
                for d in diffs if d.evidence]
    folded = [[f"- {md_text(d.where)}: {cell(d.a, 60)} → {cell(d.b, 60)}"]
              for d in report.consequences] if report.show_all else []
    hidden = report.hidden
    noise = [[", ".join(f"`{k}`" for k in dedupe_keys(hidden)), ""]] \
        if hidden and not report.show_all else []
    return [
        *words,
        ("{n} more differences", more, ["| # | section | key | change | A | B | score | why |",
                                        "|---:|---|---|---|---|---|---:|---|"]),
        ("Consequences grouped under their cause", related, []),
        ("Evidence (list entries, commits, diffs of diffs)", evidence, []),
        ("{n} consequences (read or imported in one run only)", folded, []),
        (f"{len(hidden)} differences hidden (noise, or they {UNCHANGED})"
         if any(d.reason.startswith(UNCHANGED) for d in hidden)
         else f"{len(hidden)} noise differences hidden", noise, []),
    ]


def _fit(lines: list[str], parts: list[_Part], limit: int) -> str:
    """``lines`` and the folded ``parts`` within ``limit`` characters: the least important
    part shortened first, by halves, and what was left out said."""
    cut: list[str] = []

    def layout() -> str:
        out = list(lines)
        for summary, items, head in parts:
            if items:
                title = summary.replace("{n}", str(len(items)))
                out += _details(title, [head, *items] if head else items)
        if cut:
            out += ["", md_text(f"Left out to fit {limit:,} characters: {'; '.join(cut)} "
                                "(`--format json` has everything).")]
        return "\n".join(out) + "\n"

    text = layout()
    for i in range(len(parts) - 1, -1, -1):  # the least important part first
        summary, items, head = parts[i]
        total = len(items)
        while len(text) > limit and items:
            items = items[: len(items) // 2]
            parts[i] = (summary, items, head)
            text = layout()
        if len(items) < total:
            name = summary.replace("{n} ", "").split(" (")[0]
            cut.append(f"{total - len(items)} of {total} {name.lower()}")
            text = layout()
        if len(text) <= limit:
            break
    if len(text) > limit:  # even the essentials overflow: cut the table's tail
        text = text[: limit - 80].rsplit("\n", 1)[0] + "\n\n(cut here to fit)\n"
    return text


def _render_markdown_n(report: NReport) -> str:

    return render_many(report)


# --------------------------------------------------------------------------- json
