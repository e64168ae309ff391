"""The verdict of ``runsnap why`` as text, Markdown (for an issue) or JSON.

One block: which runs were compared (and how GOOD was found), the diff's verdict, then the
cause, how it was established (the evidence, or the experiment: launches and seconds) and
the change that restores GOOD."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from runsnap.base.paths import shown
from runsnap.base.terminal import wrap
from runsnap.diffing.result import short
from runsnap.render.style import cell, md_text

if TYPE_CHECKING:
    from runsnap.experiments.verdicts import WhyResult

__all__ = ["render"]

_HEAD = {"proven": "cause proven", "found": "cause found by experiment",
         "confident": "most likely cause (from the evidence)", "not-proven": "not proven",
         "none": "no cause", "undecided": "undecided", "not-reproducible": "not reproducible",
         "max-trials": "stopped (--max-trials)", "interrupted": "interrupted"}


#: Before the experiment lines a person runs (no launch of ``why`` could apply the cause).
_TRY = "Experiment (run it yourself):"


def _change(c: Any) -> str:
    return f"{short(c.where, 70)}: GOOD {short(c.a, 60)} -> BAD {short(c.b, 60)}"


def _words(line: str) -> list[str]:
    """A shell line's words, a quoted one (``"${TMPDIR:-/tmp}/x"``, ``'a b'``) and a comment
    (``# must go ...``: no backslash may end a line inside it) kept whole.

    >>> _words('cd "/a b" && x  # must go')
    ['cd', '"/a b"', '&&', 'x', '# must go']
    """
    words: list[str] = []
    word = quote = ""
    for at, ch in enumerate(line):
        if not word and not quote and ch == "#":
            return [*words, line[at:]]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == " ":
            if word:
                words.append(word)
            word = ""
            continue
        word += ch
    return [*words, word] if word else words


def _shell(line: str, width: int) -> list[str]:
    r"""One shell line as a person pastes it: within ``width`` (0: as it is), broken between
    words with a backslash at each end, which the shell joins back. A word longer than a line
    (a deep path) is broken inside it, the backslash at the end of the line and the rest at the
    next line's start: the shell removes the two and joins the word back (not inside single
    quotes or a comment, which stay whole).

    >>> _shell("git -C /r worktree add --detach /t abc && cd /t && python run.py", 32)
    ['  git -C /r worktree add \\', '    --detach /t abc && cd /t \\', '    && python run.py']
    >>> _shell("cd /a/very/long/path/to/a/repository && python run.py", 24)
    ['  cd \\', '    /a/very/long/path/t\\', 'o/a/repository && \\', '    python run.py']
    """
    if not width or len(line) + 2 <= width:
        return [f"  {line}"]
    out, cur = [], "  "
    for word in _words(line):
        if cur.strip() and len(cur) + 1 + len(word) + 2 > width:
            out.append(cur + " \\")
            cur = "    "
        rest = (" " if cur.strip() else "") + word
        if len(cur) + len(rest) > width - 2 and "'" not in word and not word.startswith("#"):
            while len(cur) + len(rest) > width - 2:  # room for " \\" after what follows
                room = max(min(width - 1 - len(cur), len(rest) - 1), 1)  # a character left
                out.append(cur + rest[:room] + "\\")
                cur, rest = "", rest[room:]
        cur += rest
    return [*out, cur]


def _lines(result: WhyResult, width: int = 0) -> list[str]:
    lines = [f"runsnap why: {short(result.message, 200)}",
             f"  BAD  {shown(result.bad)}",
             f"  GOOD {shown(result.good)} ({short(result.reference, 120)})",
             f"  diff: {short(result.report.verdict(), 300)}",
             *[f"  note: {short(n, 200)}" for n in result.notes]]
    b = result.bisect
    if not result.cause and b is not None and b.best:
        lines += ["", "Best so far (not re-checked):", *[f"  {_change(c)}" for c in b.best]]
    if result.cause:
        lines += ["", "Cause:", *[f"  {_change(c)}" for c in result.cause]]
    if result.how:
        lines += ["", f"How: {short(result.how, 300)}"]
    if result.proof is not None:
        p = result.proof
        lines += [f"  GOOD with it applied: {short(p.applied, 160)}",
                  f"  BAD with it reverted: {short(p.reverted, 160)}"]
    if result.restore and result.status in ("proven", "found", "confident"):
        lines += ["", "Restores GOOD:", *[f"  {short(r, 200)}" for r in result.restore]]
    if result.status == "confident" and not result.cannot:
        named = "" if result.bad.endswith(".toml") else f" {shown(result.bad)}"
        lines += ["", f"Prove it in two launches: runsnap why --prove{named}"]
    lines += [f"Not applied: {short(c, 300)}" for c in result.cannot]
    if result.experiment:
        lines += ["", _TRY, *[x for e in result.experiment for x in _shell(e, width)]]
    if b is not None and b.folder:
        lines += ["", f"Trials: {shown(b.folder)}/ (runsnap bisect's answer: bisect.json)"]
    return lines


def render_text(result: WhyResult, width: int = 0) -> str:
    """The verdict block a person reads; ``width``: wrap each line to it (0: no limit)."""
    lines = _lines(result, width)
    if width:
        out = []
        for line in lines:
            lead = line[: len(line) - len(line.lstrip(" "))]
            out += [lead + part for part in wrap(line.lstrip(" "), max(width - len(lead), 20),
                                                 "  ")]
        lines = out
    return "\n".join(lines) + "\n"


def render_markdown(result: WhyResult) -> str:
    """For a GitHub issue: the verdict, the cause as a table, how and what restores GOOD."""
    lines = [f"### runsnap why: {md_text(_HEAD.get(result.status, result.status))}", "",
             md_text(result.message), "",
             f"- BAD: {cell(shown(result.bad), 200)}",
             f"- GOOD: {cell(shown(result.good), 200)} ({md_text(result.reference)})",
             f"- diff: {md_text(result.report.verdict())}",
             *[f"- note: {md_text(n)}" for n in result.notes], ""]
    if result.cause:
        lines += ["| cause | GOOD | BAD |", "| --- | --- | --- |"]
        lines += [f"| {cell(c.where)} | {cell(c.a)} | {cell(c.b)} |" for c in result.cause]
        lines.append("")
    if result.how:
        lines += [f"**How:** {cell(result.how, 400)}", ""]
    if result.restore and result.status in ("proven", "found", "confident"):
        lines += ["**Restores GOOD:** " + "; ".join(cell(r, 200) for r in result.restore), ""]
    lines += [f"Not applied: {md_text(c)}" for c in result.cannot]
    if result.experiment:
        lines += ["", f"**{_TRY}**", "", "```sh", *result.experiment, "```"]
    return "\n".join(lines).rstrip("\n") + "\n"


def render(result: WhyResult, format: str = "text", width: int = 0) -> str:
    """``result`` in ``format`` (``text``, ``markdown`` or ``json``)."""
    if format == "json":
        return json.dumps(result.to_dict(), indent=2, default=str) + "\n"
    if format == "markdown":
        return render_markdown(result)
    return render_text(result, width)
