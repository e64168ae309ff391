"""The N-way diff (ranks and nodes of one job) as text and Markdown that fit a screen whatever N:
a header that summarises the set, then the keys, odd ones out first, each in a sentence naming
the hosts and ranks that disagree with the majority."""

from __future__ import annotations

from collections.abc import Sequence

from runsnap.diffing.many import sentence
from runsnap.diffing.report import NReport, NRow, short
from runsnap.render.style import Style, cell, md_text

__all__ = ["DETAILED", "render_markdown", "render_text"]

#: Keys detailed (with their sentences) before the rest are listed one line each.
DETAILED = 8
#: Keys listed at all before "N more": the report stays one screen or two.
LISTED = 24

_TITLES = {"odd": "Odd ones out (they differ from the majority)",
           "split": "Split (no majority)",
           "per-rank": "One value per rank or host, as the launcher numbers them (not counted)"}


def _header(report: NReport) -> str:
    if report.summary is not None:
        return report.summary.line()
    return f"{len(report.snapshots)} snapshots"


def _files(report: NReport) -> str:
    paths = [s.path for s in report.snapshots if s.path]
    if not paths:
        return ""
    import os

    common = os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0])
    return f"{len(paths)} files in {common or '/'}"


def render_text(report: NReport, color: bool = False) -> str:
    """The terminal report."""
    st = Style(color)
    lines = [st.bold(f"runsnap diff: {short(report.verdict(), 400)}"),
             f"  set: {short(_header(report), 400)}"]
    files = _files(report)
    if files:
        lines.append(f"  {short(files, 400)}")
    lines += [st.yellow(f"  note: {short(n, 400)}") for n in report.notes]
    rows = report.shown
    kind = None
    for i, row in enumerate(rows[:LISTED], 1):
        title = "Noise and ignored (not counted)" if row.hidden and row.kind != "per-rank" \
            else _TITLES.get(row.kind, row.kind)
        if title != kind:
            lines += ["", st.bold(title)]
            kind = title
        head = f"  {i:>2}. {st.bold(short(row.where, 120))}  [{st.score(row.score).strip()}]"
        if i > DETAILED:
            lines.append(f"{head}  {st.dim(short(sentence(row, report.snapshots)[0], 100))}")
            continue
        lines.append(head)
        for j, text in enumerate(sentence(row, report.snapshots)):
            text = short(text, 160)
            lines.append("        " + (st.red(text) if row.kind == "odd" and j == 0 else text))
        lines.append(st.dim(f"        why: {short(row.reason, 200)}"))
    if len(rows) > LISTED:
        lines += ["", st.dim(f"{len(rows) - LISTED} more keys: see them all with --format json")]
    hidden = report.hidden
    if hidden and not report.show_all:
        per_rank = [r for r in hidden if r.kind == "per-rank"]
        noise = [r for r in hidden if r.kind != "per-rank"]
        for label, group in (("one value per rank or host", per_rank), ("noise", noise)):
            if group:
                names = ", ".join(short(r.key, 40) for r in group[:8]) + (
                    ", ..." if len(group) > 8 else "")
                lines += ["", st.dim(f"{len(group)} key{'s' if len(group) != 1 else ''} with "
                                     f"{label} hidden (--all shows them): {names}")]
    return "\n".join(lines) + "\n"


def _md_row(i: int, r: NRow, report: NReport) -> str:
    words = "<br>".join(md_text(short(t, 200)) for t in sentence(r, report.snapshots))
    return (f"| {i} | {r.kind} | {cell(r.where, 70)} | {words} | {r.score} | "
            f"{md_text(short(r.reason, 200))} |")


def _table(rows: Sequence[NRow], report: NReport, start: int = 1) -> list[str]:
    lines = ["| # | kind | key | who holds what | score | why |", "|---:|---|---|---|---:|---|"]
    lines += [_md_row(i, r, report) for i, r in enumerate(rows, start)]
    return lines


def render_markdown(report: NReport, color: bool = False) -> str:
    """Markdown for an issue: the verdict, the set in one line, a table of the keys (odd ones
    out first), the rest folded in ``<details>``."""
    lines = [f"### runsnap diff: {md_text(short(report.verdict(), 400))}", "",
             f"**Set:** {md_text(short(_header(report), 400))}"]
    files = _files(report)
    if files:
        lines += ["", f"**Files:** {md_text(short(files, 400))}"]
    for n in report.notes:
        lines += ["", f"> **Note:** {md_text(short(n, 400))}"]
    rows = report.shown
    if rows:
        first = rows[:DETAILED]
        lines += ["", "**Keys not the same everywhere, odd ones out first**", ""]
        lines += _table(first, report)
        rest = rows[DETAILED:LISTED]
        if rest:
            lines += ["", f"<details><summary>{len(rest)} more keys</summary>", "",
                      *_table(rest, report, DETAILED + 1), "", "</details>"]
        if len(rows) > LISTED:
            lines += ["", f"{len(rows) - LISTED} more keys: `runsnap diff --format json`"]
    hidden = report.hidden
    if hidden and not report.show_all:
        keys = ", ".join(cell(r.key, 60) for r in hidden[:60]) + (
            ", ..." if len(hidden) > 60 else "")
        lines += ["", f"<details><summary>{len(hidden)} keys hidden (one value per rank or "
                  f"host, noise)</summary>", "", keys, "", "</details>"]
    return "\n".join(lines) + "\n"
