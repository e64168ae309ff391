"""The N-way diff (ranks and nodes of one job) as text and Markdown that fit a screen whatever N:
a header that summarises the set, then the keys, odd ones out first, each in a sentence naming
the hosts and ranks that disagree with the majority."""

from __future__ import annotations

import os
from collections.abc import Sequence

from runsnap.diffing.many import entries, group_sentence, sentence
from runsnap.diffing.many_result import NReport, NRow
from runsnap.diffing.result import short
from runsnap.render.style import Style, cell, md_text

__all__ = ["DETAILED", "files_line", "render_markdown", "render_text", "set_line"]

#: Keys detailed (with their sentences) before the rest are listed one line each.
DETAILED = 8
#: Keys listed at all before "N more": the report stays one screen or two.
LISTED = 24

_TITLES = {"odd": "Odd ones out (they differ from the majority)",
           "split": "Split (no majority)",
           "per-rank": "One value per rank or host, as the launcher numbers them (not counted)"}


def set_line(report: NReport) -> str:
    """What the set is, in one line (its summary, else how many snapshots)."""
    if report.summary is not None:
        return report.summary.line()
    return f"{len(report.snapshots)} snapshots"


def files_line(report: NReport) -> str:
    """Where the files are: ``4096 files in /scratch/job/snaps`` (empty: none saved)."""
    paths = [s.path for s in report.snapshots if s.path]
    if not paths:
        return ""

    common = os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0])
    return f"{len(paths)} files in {common or '/'}"


def render_text(report: NReport, color: bool = False) -> str:
    """The terminal report."""
    st = Style(color)
    lines = [st.bold(f"runsnap diff: {short(report.verdict(), 400)}"),
             f"  set: {short(set_line(report), 400)}"]
    files = files_line(report)
    if files:
        lines.append(f"  {short(files, 400)}")
    lines += [st.yellow(f"  note: {short(n, 400)}") for n in report.notes]
    rows = report.shown
    kind = None
    listed = entries(rows)
    for i, entry in enumerate(listed[:LISTED], 1):
        row = entry if isinstance(entry, NRow) else entry[0]
        title = "Noise and ignored (not counted)" if row.hidden and row.kind != "per-rank" \
            else _TITLES.get(row.kind, row.kind)
        if title != kind:
            lines += ["", st.bold(title)]
            kind = title
        if not isinstance(entry, NRow):  # the same odd ones differ in several keys
            words, keys = group_sentence(entry, report.snapshots)
            lines.append(f"  {i:>2}. {st.bold(short(words, 120))}  "
                         f"[{st.score(row.score).strip()}]")
            shown_keys = keys if i <= DETAILED else keys[:3]
            lines += ["        " + (st.red(short(k, 160)) if j == 0 else short(k, 160))
                      for j, k in enumerate(shown_keys)]
            if len(keys) > len(shown_keys):
                lines.append(st.dim(f"        … and {len(keys) - len(shown_keys)} more keys"))
            if i <= DETAILED:
                lines.append(st.dim(f"        why: {short(row.reason, 200)}"))
            continue
        head = f"  {i:>2}. {st.bold(short(row.where, 120))}  [{st.score(row.score).strip()}]"
        if i > DETAILED:
            lines.append(f"{head}  {st.dim(short(sentence(row, report.snapshots)[0], 100))}")
            continue
        lines.append(head)
        for j, text in enumerate(sentence(row, report.snapshots)):
            text = short(text, 160)
            lines.append("        " + (st.red(text) if row.kind == "odd" and j == 0 else text))
        lines.append(st.dim(f"        why: {short(row.reason, 200)}"))
    if len(listed) > LISTED:
        lines += ["", st.dim(f"{_keys(listed[LISTED:])} more keys: see them all with "
                             "--format json")]
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


def _keys(listed: Sequence[NRow | tuple[NRow, ...]]) -> int:
    """How many keys entries of :func:`~runsnap.diffing.many.entries` hold."""
    return sum(1 if isinstance(e, NRow) else len(e) for e in listed)


def _md_row(i: int, entry: NRow | tuple[NRow, ...], report: NReport) -> str:
    if isinstance(entry, NRow):
        r, where = entry, entry.where
        said = sentence(r, report.snapshots)
    else:  # the same odd ones differ in several keys
        r = entry[0]
        where, said = group_sentence(entry, report.snapshots)
    words = "<br>".join(md_text(short(t, 200)) for t in said)
    return (f"| {i} | {r.kind} | {cell(where, 70)} | {words} | {r.score} | "
            f"{md_text(short(r.reason, 200))} |")


def _table(listed: Sequence[NRow | tuple[NRow, ...]], report: NReport,
           start: int = 1) -> list[str]:
    lines = ["| # | kind | key | who holds what | score | why |", "|---:|---|---|---|---:|---|"]
    lines += [_md_row(i, e, report) for i, e in enumerate(listed, start)]
    return lines


def render_markdown(report: NReport, color: bool = False) -> str:
    """Markdown for an issue: the verdict, the set in one line, a table of the keys (odd ones
    out first), the rest folded in ``<details>``."""
    lines = [f"### runsnap diff: {md_text(short(report.verdict(), 400))}", "",
             f"**Set:** {md_text(short(set_line(report), 400))}"]
    files = files_line(report)
    if files:
        lines += ["", f"**Files:** {md_text(short(files, 400))}"]
    for n in report.notes:
        lines += ["", f"> **Note:** {md_text(short(n, 400))}"]
    listed = entries(report.shown)
    if listed:
        lines += ["", "**Keys not the same everywhere, odd ones out first**", ""]
        lines += _table(listed[:DETAILED], report)
        rest = listed[DETAILED:LISTED]
        if rest:
            lines += ["", f"<details><summary>{_keys(rest)} more keys</summary>", "",
                      *_table(rest, report, DETAILED + 1), "", "</details>"]
        if len(listed) > LISTED:
            lines += ["", f"{_keys(listed[LISTED:])} more keys: `runsnap diff --format json`"]
    hidden = report.hidden
    if hidden and not report.show_all:
        keys = ", ".join(cell(r.key, 60) for r in hidden[:60]) + (
            ", ..." if len(hidden) > 60 else "")
        lines += ["", f"<details><summary>{len(hidden)} keys hidden (one value per rank or "
                  f"host, noise)</summary>", "", keys, "", "</details>"]
    return "\n".join(lines) + "\n"
