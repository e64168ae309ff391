"""Renderers for diff reports (two-way here, N-way in :mod:`runsnap.render.many`):
``render(report, format) -> str``; they never write anything.

:data:`RENDERERS` maps each ``--format`` name to its renderer, in one place (a test checks that
every name in :data:`FORMATS` maps and renders both report kinds).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from runsnap.base.terminal import clean, fit, neutralise_data, neutralise_json, wrap
from runsnap.base.timestamps import without_timestamp
from runsnap.diffing.many_result import NReport
from runsnap.diffing.result import (
    UNCHANGED,
    Difference,
    SnapInfo,
    short,
    shown,
)
from runsnap.errors import UsageError
from runsnap.render.diff_markdown import render_markdown
from runsnap.render.diff_parts import (
    CANDIDATES_DETAILED,
    DETAILED,
    UNREAD_HEAD,
    UNREAD_LISTED,
    WORDS,
    AnyReport,
    change_words,
    consequence_line,
    dedupe_keys,
    detailed,
    news,
    only_differing,
)
from runsnap.render.html_diff import render_html
from runsnap.render.many import render_text as render_many
from runsnap.render.style import Style

__all__ = ["CANDIDATES_DETAILED", "DETAILED", "FORMATS", "RENDERERS", "only_differing", "render",
           "render_json", "render_markdown", "render_text"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")

#: Evidence lines shown per difference in text.
EVIDENCE_LINES = 12
#: Related differences (consequences) shown under a cause in text.
RELATED_LINES = 8
#: (evidence lines, consequences) shown per difference detailed (the cause, or an undecided
#: verdict's candidates), in a terminal: the first that keeps the report within
#: :data:`SCREEN` lines, else the last.
CANDIDATE_BUDGETS = ((EVIDENCE_LINES, RELATED_LINES), (8, 5), (4, 3), (2, 2))
#: Other differences listed one a line at a terminal; the rest are named on the fold line.
OTHER_LINES = 8
#: ... fewer when the report would be longer than this many lines, but never fewer than
#: :data:`OTHER_MIN` (issue 41: at most 40 lines above the fold for one cause).
SCREEN = 40
OTHER_MIN = 3
#: Lines kept below the detailed differences: the other differences' head, :data:`OTHER_MIN`
#: of them and their fold line, what no process read and the noise line, with blank lines.
BELOW = 11


# --------------------------------------------------------------------------- text


def _snap_line(tag: str, s: SnapInfo) -> str:
    bits = [f"{tag}: {s.name}"]
    if s.path and s.path.rsplit("/", 1)[-1] != s.name:
        bits.append(s.path)
    elif not s.path:
        bits.append("(not saved)")
    bits += [s.time, s.host]
    return "  " + "  ".join(b for b in bits if b)


def _detail(i: int, d: Difference, st: Style, show_all: bool = False,
            budget: tuple[int, int] = (EVIDENCE_LINES, RELATED_LINES)) -> list[str]:
    """One difference in detail, with at most ``budget`` evidence lines and consequences
    (``--all`` shows all)."""
    lines = [f"  {i:>2}. {st.bold(d.where)}  {change_words(d)}  [{st.score(d.score).strip()}]"]
    a, b = only_differing(d.a, d.b)
    lines.append(f"        A: {shown(d, a, 400)}")
    lines.append(f"        B: {shown(d, b, 400)}")
    room = len(d.evidence) if show_all else budget[0]
    lines += [st.dim(f"           {e}") for e in d.evidence[:room]]
    if len(d.evidence) > room:
        lines.append(st.dim(f"           ... {len(d.evidence) - room} more lines (--all)"))
    lines.append(st.dim(f"        why: {d.reason}"))
    related = news(d, show_all)
    if related:
        lines.append(f"        with it ({len(related)}):")
        # a consequence may sit in another section than its cause: name the section too
        room = len(related) if show_all else budget[1]
        for r in related[:room]:  # an edit's own lines too: the field and the file
            lines += [f"    {_one_line(r, st, r.where)}", *_short_hunk(r, st, hint=False)]
        if len(related) > room:
            lines.append(st.dim(f"           ... {len(related) - room} more (--all)"))
    return lines


def elide_common(a: Any, b: Any, keep: int = 12) -> tuple[Any, Any]:
    """Two texts with the long start they share shown as ``…``, so that what differs fits.

    >>> elide_common("/tmp/pytest-of-root/work/runs/venvA/lib/site",
    ...              "/tmp/pytest-of-root/work/runs/venvB/lib/site")
    ('…/work/runs/venvA/lib/site', '…/work/runs/venvB/lib/site')
    >>> elide_common("short", "shore")
    ('short', 'shore')
    """
    if not (isinstance(a, str) and isinstance(b, str)):
        return a, b
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    cut = n - keep
    if cut < 8:
        return a, b
    slash = a.rfind("/", 0, cut + 1)  # start at a path boundary where there is one
    cut = slash if slash > 0 else cut
    return f"…{a[cut:]}", f"…{b[cut:]}"


def _one_line(d: Difference, st: Style, name: str = "") -> str:
    if d.change in ("added", "removed", "reordered"):
        what = f"{change_words(d)}: {shown(d, d.b if d.change == 'added' else d.a, 60)}"
    else:
        a, b = elide_common(*only_differing(d.a, d.b))
        what = f"{d.change}: {shown(d, a, 60)} -> {shown(d, b, 60)}"
    related = news(d)
    more = f"  (+{len(related)} with it)" if related else ""
    return f"    {st.score(d.score)}  {name or d.key}  {what}{more}  {st.dim('(' + d.reason + ')')}"


#: A pair of outcome values this short shares one line (``exit_status  A: 0  B: 1``).
PAIR_WIDTH = 24


def _outcome_block(diffs: Sequence[Difference], st: Style, width: int = 0,
                   show_all: bool = False) -> list[str]:
    """What happened: short values side by side on one line, a run's own words (the first
    error) A above B. The first error is the line that matters most: it gets the whole width
    (cut only at the terminal's edge), and in full (wrapped) with ``--all`` or when the output
    is not a terminal (``width`` 0); when only one run has one, one line says which."""
    rows = [d for d in diffs if d.section == "outcome" and not d.hidden]
    if not rows:
        return []
    lines = ["", st.bold("Outcome (what happened)")]
    for d in rows:
        words = d.key in WORDS
        texts = [_outcome_text(d, value, width) for value in (d.a, d.b)]
        if not words and all(len(t) <= PAIR_WIDTH for t in texts):
            lines.append(f"  {d.key:<12} A: {st.outcome(d.key, d.a, texts[0])}"
                         f"  B: {st.outcome(d.key, d.b, texts[1])}")
        else:
            sides: tuple[tuple[str, Any, str], ...] = (("A", d.a, texts[0]),
                                                       ("B", d.b, texts[1]))
            if words and (d.a is None) != (d.b is None):  # one run's error: one line
                sides = tuple((f"{tag} only", v, t) for tag, v, t in sides if v is not None)
            for n, (tag, value, text) in enumerate(sides):
                head = f"  {d.key if n == 0 else '':<12} {tag}: "
                if words and width and show_all:
                    body = wrap(text, max(width - len(head), 20), " " * len(head))
                    lines.append(head + st.outcome(d.key, value, body[0]))
                    lines += [st.outcome(d.key, value, part) for part in body[1:]]
                else:
                    lines.append(head + st.outcome(d.key, value, text))
        if d.key == "warnings":
            for e in d.evidence[:6]:
                line = f"  {'':<12} {e}"
                lines += [st.dim(part) for part in (wrap(line, width, " " * 15) if show_all
                                                    else [line])]
    return lines


def _outcome_text(d: Difference, value: Any, width: int) -> str:
    """One run's outcome value as the block shows it."""
    if d.key == "warnings":
        return f"{len(value or [])} warnings"
    if d.key in WORDS and value is not None:
        return clean(without_timestamp(str(value))).replace("\n", " ⏎ ")
    return short(value, max(110, width))


def render_text(report: AnyReport, color: bool = False, width: int = 0) -> str:
    """The terminal report: a one-line verdict, the snapshots, what happened, the most likely
    causes in detail, then the other differences one line each, grouped by section.

    ``width``: the terminal's (:func:`runsnap.base.terminal.width`); every line is cut to it (the
    first error gets all of it), 0 for no limit."""
    if isinstance(report, NReport):
        return "".join(fit(line, width) + "\n"
                       for line in _render_text_n(report, color).splitlines())
    st = Style(color)
    lines = [st.bold(f"runsnap diff: {report.verdict()}"),
             _snap_line("A", report.a), _snap_line("B", report.b)]
    lines += [st.yellow(f"  note: {n}") for n in report.notes]
    shown = [d for d in report.shown if d.section != "outcome" or d.hidden]
    lines += _outcome_block(report.shown, st, width, report.show_all)
    if report.consequences:
        lines += ["", st.dim(consequence_line(report))]
        if report.show_all:
            lines += _grouped(report.consequences, st)
    likely = detailed(report, shown)
    if likely:
        lines += ["", st.bold("Most likely cause" if report.confidence == "confident"
                              and len(likely) == 1 else "Most likely causes")]
        lines += _details(likely, lines, st, width, report.show_all)
    in_detail = {id(d) for d in likely}  # by identity: a record's == compares every field
    counted_rest = [d for d in shown if id(d) not in in_detail and not d.hidden]
    unread = [d for d in counted_rest if d.evidence_kind == "unread"]
    if len(unread) <= UNREAD_LISTED or report.show_all:
        unread = []
    counted_rest = [d for d in counted_rest if not unread or d.evidence_kind != "unread"]
    if counted_rest:
        tail = (3 if unread else 0) + (2 if report.hidden else 0)  # the fold lines below
        used = len(_fit_lines("\n".join(lines).split("\n"), width, st)) + 2 + tail
        shown_rest = _room(counted_rest, st, used) if width and not report.show_all \
            else counted_rest
        folded = counted_rest[len(shown_rest):]
        lines += ["", st.bold("Other differences" if likely else "Differences")]
        lines += _grouped(shown_rest, st)
        if folded:  # a terminal: the fold says what it holds; a pipe or --all gets them all
            lines.append(st.dim(f"  ... {len(folded)} more, ranked lower (--all lists them): "
                                f"{', '.join(dedupe_keys(folded))}"))
    if unread:
        names = ", ".join(dedupe_keys(unread)[:8]) + (", ..." if len(unread) > 8 else "")
        lines += ["", st.dim(f"{UNREAD_HEAD}{len(unread)} differences (--all lists them): "
                             f"{names}")]
    hidden = report.hidden
    if hidden and report.show_all:
        lines += ["", st.bold(f"Noise and ignored ({len(hidden)}, not counted)")]
        lines += _grouped(hidden, st)
    elif hidden:
        inert = [d for d in hidden if d.reason.startswith(UNCHANGED)]
        noise = [d for d in hidden if not d.reason.startswith(UNCHANGED)]
        lines.append("")
        for group, fmt in ((inert, "{n} difference{s} that " + UNCHANGED + ", hidden"),
                           (noise, "{n} noise difference{s} hidden")):
            if group:
                names = ", ".join(dedupe_keys(group)[:8])
                more = ", ..." if len(dedupe_keys(group)) > 8 else ""
                head = fmt.format(n=len(group), s="s" if len(group) != 1 else "")
                lines.append(st.dim(f"{head} (--all shows them): {names}{more}"))
    return "".join(line + "\n" for line in _fit_lines("\n".join(lines).split("\n"), width, st))


def _details(likely: Sequence[Difference], above: list[str], st: Style, width: int,
             show_all: bool) -> list[str]:
    """The differences shown in detail (the cause, or an undecided verdict's candidates), with
    the first of :data:`CANDIDATE_BUDGETS` that keeps a terminal's report within
    :data:`SCREEN` lines (a pipe, a file and ``--all``: the most): a patch of 120 lines
    shows its first few under one cause."""
    budgets = CANDIDATE_BUDGETS if width and not show_all else CANDIDATE_BUDGETS[:1]
    for budget in budgets:
        out = [line for i, d in enumerate(likely, 1) for line in _detail(i, d, st, show_all, budget)]
        if len(_fit_lines("\n".join([*above, *out]).split("\n"), width, st)) <= SCREEN - BELOW:
            break  # room left for the other differences and the fold lines
    return out


def _room(rest: Sequence[Difference], st: Style, used: int) -> Sequence[Difference]:
    """The first of ``rest`` a terminal lists one a line: up to :data:`OTHER_LINES`, fewer
    when the report above (``used`` lines) would push them past :data:`SCREEN` lines, never
    fewer than :data:`OTHER_MIN`; the fold line names the others."""
    k = min(len(rest), OTHER_LINES)
    while k > OTHER_MIN and used + len(_grouped(rest[:k], st)) + (k < len(rest)) > SCREEN:
        k -= 1
    return rest[:k]


def _fit_lines(lines: Sequence[str], width: int, st: Style) -> list[str]:
    """Every line cut to ``width``, except the verdict and the reasons (``why: ...``),
    sentences a reader checks: they are wrapped."""
    out: list[str] = []
    for i, line in enumerate(lines):
        plain = _ANSI.sub("", line) if "\x1b" in line else line
        if width and len(plain) > width and (i == 0 or plain.lstrip().startswith(
                ("why: ", "Consequences, not causes: ", UNREAD_HEAD))):
            lead = " " * (len(plain) - len(plain.lstrip()))
            more = "  " if i == 0 else " " * len("why: ")
            parts = wrap(plain.lstrip(), width - len(lead), more)
            if plain.lstrip().startswith(UNREAD_HEAD) and len(parts) > 2:  # names: --all
                parts = [parts[0], fit(parts[1].rstrip(", ") + ", ...", width - len(lead))]
            paint = st.bold if i == 0 else st.dim
            out += [paint(lead + part) for part in parts]
        else:
            out.append(fit(line, width))
    return out


def _grouped(diffs: Sequence[Difference], st: Style) -> list[str]:
    lines: list[str] = []
    sections: list[str] = []
    for d in diffs:
        if d.section not in sections:
            sections.append(d.section)
    for section in sections:
        lines.append(f"  {section}")
        for d in diffs:
            if d.section == section:
                lines.append(_one_line(d, st))
                lines += _short_hunk(d, st)
    return lines


#: Lines of an uncommitted edit shown under its difference; a longer one is left to --patch.
HUNK_LINES = 8


#: Changed lines of an edit shown under the difference it is a view of (a config field).
EDIT_LINES = 4


def _short_hunk(d: Difference, st: Style, hint: bool = True) -> list[str]:
    """Under an uncommitted edit, the edit itself as ``git diff`` shows it, when it is short
    (else, with ``hint``, where to see it). Without ``hint`` (the edit is another view of the
    difference it sits under, which says where), only its changed lines, up to
    :data:`EDIT_LINES`."""
    if d.section != "git" or len(d.path) < 4 or d.path[2] != "diff":
        return []
    body = [e for e in d.evidence if e[:2] == "@@" or (e[:1] in "+- " and e[:3] not in
                                                          ("+++", "---"))]
    if not hint:
        changed = [e for e in body if e[:1] in "+-"]
        return ["          " + patch_line(e, st) for e in changed] \
            if d.change in ("added", "removed") and len(changed) <= EDIT_LINES else []
    if d.change not in ("added", "removed") or not body:
        return [st.dim("          (runsnap diff --patch shows the edits)")]
    if len(body) > HUNK_LINES:
        return [st.dim(f"          {len(body)} lines of edits (runsnap diff --patch shows them)")]
    return ["          " + patch_line(e, st) for e in body]


def patch_line(line: str, st: Style) -> str:
    """A line of a patch coloured as ``git diff`` colours it (terminal-safe)."""
    text = clean(line)
    if line.startswith("@@"):
        return st.dim(text)
    if line.startswith("+"):
        return st.green(text)
    if line.startswith("-"):
        return st.red(text)
    return text


def _render_text_n(report: NReport, color: bool) -> str:

    return render_many(report, color)


# --------------------------------------------------------------------------- markdown


def render_json(report: AnyReport, color: bool = False) -> str:
    """The stable machine-readable report (format ``runsnap-diff/1``, see docs/diff.md)."""
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n"


def render_stat(report: AnyReport, width: int = 0) -> str:
    """The verdict, then one line per section: how many differences count there, how many
    are hidden, and the keys of the first few (``runsnap diff --stat``, as ``git diff
    --stat`` summarises a patch)."""
    items = report.counted
    sections: dict[str, list[Any]] = {}
    for d in items:
        sections.setdefault(d.section, []).append(d)
    hidden: dict[str, int] = {}
    for d in report.hidden:
        hidden[d.section] = hidden.get(d.section, 0) + 1
    wide = max((len(name) for name in sections), default=0)
    # the verdict names the cause: wrapped, never cut
    lines = wrap(clean(f"runsnap diff: {report.verdict()}"), width, "  ")
    for name, diffs in sections.items():
        keys = ", ".join(d.key for d in diffs[:4]) + (", ..." if len(diffs) > 4 else "")
        noise = f" (+{hidden.pop(name)} hidden)" if name in hidden else ""
        lines.append(fit(clean(f"  {name:<{wide}}  {len(diffs):>3}{noise}  {keys}"), width))
    return "".join(line + "\n" for line in lines)


#: ``--format`` name -> renderer. Every renderer takes ``(report, color)`` and returns text.
RENDERERS: dict[str, Callable[[AnyReport, bool], str]] = {
    "text": render_text,
    "markdown": render_markdown,
    "json": render_json,
    "html": render_html,
}

#: The ``--format`` names, in the order ``--help`` lists them.
FORMATS = tuple(RENDERERS)


def render(report: AnyReport, format: str = "text", *, color: bool = False,
           width: int = 0) -> str:
    """``report`` as text in ``format`` (one of :data:`FORMATS`); colour and ``width`` (the
    terminal's, 0 for no limit) only for ``text``."""
    try:
        renderer = RENDERERS[format]
    except KeyError:
        raise UsageError(f"unknown format {format!r} (choose from {', '.join(FORMATS)})") from None

    if format == "json":
        return neutralise_json(renderer(report, color))
    # values from snapshots (untrusted) escaped before layout: no newline in one fakes a line
    report = neutralise_data(report)
    if format == "text":
        return render_text(report, color, width)
    return renderer(report, color)
