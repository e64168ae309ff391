"""The answer of ``runsnap bisect`` as text, Markdown or JSON."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from runsnap.base.paths import shown
from runsnap.base.terminal import neutralise, wrap
from runsnap.diffing.result import short
from runsnap.render.style import cell, fence, md_text

if TYPE_CHECKING:
    from runsnap.experiments.bisecting import BisectResult

__all__ = ["render"]


def _text(value: Any, limit: int = 60) -> str:
    """A snapshot value for a terminal: one line, control characters escaped, cut short.

    >>> _text(None), _text("a\\x1b[2Jb"), _text(True)
    ('(unset)', 'a\\\\x1b[2Jb', 'true')
    """

    return short(value, limit)


def _side(c: Any, value: Any) -> str:
    """One side of a change; an option given without a value reads ``(flag)``."""
    if value is True and c.section == "command" and str(c.key).startswith("-"):
        return "(flag)"
    return _text(value)


def _change_line(c: Any) -> str:
    return f"{_text(c.where, 70)}: GOOD {_side(c, c.a)} -> BAD {_side(c, c.b)}"


def _headline(result: BisectResult) -> str:
    head = f"runsnap bisect: {result.message}"
    return f"{head} ({result.elapsed:.1f}s)" if result.runs else head


def _rechecks(result: BisectResult) -> str:
    checks = list(result.runs[-2 * result.rechecks:]) if result.rechecks else []
    if not checks:
        return ""
    again = ", ".join(str(r.trial) for r in checks if r.verdict == "bad")
    base = ", ".join(str(r.trial) for r in checks if r.verdict != "bad")
    return (f"Re-checked: bad again with {'it' if len(result.cause) == 1 else 'them'} applied "
            f"(trials {again}), good with nothing applied (trials {base}).")


def _noise(result: BisectResult) -> tuple[list[Any], str]:
    noise = [s for s in result.plan.skipped if s.why.startswith("noise")]
    if not noise:
        return [], ""
    names = ", ".join(_text(s.key, 30) for s in noise[:5])
    return noise, (f"{len(noise)} noise difference{'s' if len(noise) != 1 else ''} "
                   f"({names}{', ...' if len(noise) > 5 else ''}; give --all to try them)")


def render_text(result: BisectResult, width: int = 0) -> str:
    """The report a person reads (``runsnap bisect`` without ``--format``); ``width``: the
    terminal's, each line wrapped to it under its own indent (0: no limit)."""
    lines: list[str] = []
    p = result.plan
    if result.status == "dry-run":
        lines.append(f"runsnap bisect --dry-run: {len(p.changes)} changes to search, most likely "
                     "cause first:")
        lines += [f"  {i}. {_change_line(c)}" for i, c in enumerate(p.changes, 1)]
        lines += ["", "First trials:"] + [f"  {t}" for t in result.first_trials]
    else:
        lines.append(_headline(result))
        if result.cause:
            lines += ["", *[f"  {_change_line(c)}" for c in result.cause]]
            if _rechecks(result):
                lines += ["", _rechecks(result)]
        elif result.best and result.status in ("max-trials", "interrupted"):
            lines += ["", "Best so far (not re-checked):"]
            lines += [f"  {_change_line(c)}" for c in result.best]
    if p.program is not None:
        lines += ["", f"Different programs ({_text(p.program.where)}): GOOD's was run "
                  "(--force)."]
    if p.skipped:
        lines += ["", "Skipped (left as in GOOD):"]
        noise, summary = _noise(result)
        # why a change was skipped can hold a name from a snapshot (a package's): escaped
        lines += [f"  {_change_line(s)}  [{neutralise(s.why)}]" for s in p.skipped
                  if s not in noise]
        if summary:
            lines.append(f"  {summary}")
    if result.folder:
        captured = sum(1 for r in result.runs if r.snapshot)
        kept = (f"trial-NN.toml and .log for each of {len(result.runs)}"
                if captured == len(result.runs) else
                f"trial-NN.log for each of {len(result.runs)}, trial-NN.toml for the "
                f"{captured} captured in full")
        lines += ["", f"Trials: {shown(result.folder)}/ ({kept}; bisect.json)"]
    if width:
        lines = [part for line in lines for part in _wrapped(line, width, wrap)]
    return "\n".join(lines) + "\n"


def _wrapped(line: str, width: int, wrap: Any) -> list[str]:
    """``line`` wrapped to ``width``, its own indent kept and the rest indented two more."""
    lead = line[: len(line) - len(line.lstrip(" "))]
    return [lead + part for part in wrap(line.lstrip(" "), max(width - len(lead), 20), "  ")]


def render_markdown(result: BisectResult) -> str:
    """For a GitHub issue: the answer, the changes as a table, the trials, what was skipped."""
    p = result.plan
    lines = [f"### {md_text(_headline(result))}", ""]
    shown = result.cause or result.best or (p.changes if result.status == "dry-run" else ())
    if shown:
        lines += ["| difference | GOOD | BAD |", "| --- | --- | --- |"]
        lines += [f"| {cell(c.where)} | {cell(c.a)} | {cell(c.b)} |" for c in shown]
        lines.append("")
    if _rechecks(result):
        lines += [_rechecks(result), ""]
    if result.runs:
        lines += ["<details><summary>Trials</summary>", "",
                  "| trial | applied | verdict | why |", "| ---: | ---: | --- | --- |"]
        lines += [f"| {r.trial} | {len(r.applied)} of {len(p.changes)} | {r.verdict} | "
                  f"{cell(r.why, 100)} |" for r in result.runs]
        lines += ["", "</details>", ""]
    if p.skipped:
        noise, summary = _noise(result)
        body = [f"{_change_line(s)}  [{s.why}]" for s in p.skipped if s not in noise]
        lines += ["<details><summary>Skipped (left as in GOOD)</summary>", "",
                  *fence(body + ([summary] if summary else [])), "", "</details>", ""]
    return "\n".join(lines)


def render_json(result: BisectResult) -> str:
    """One JSON object: ``cause``, ``trials``, ``skipped``, ``runs`` and the rest."""
    return json.dumps(result.to_dict(), indent=2, default=str) + "\n"


def render(result: BisectResult, format: str = "text", width: int = 0) -> str:
    """``result`` in ``format`` (``text``, ``markdown`` or ``json``); ``width`` for text."""
    if format == "text":
        return render_text(result, width)
    return {"markdown": render_markdown, "json": render_json}[format](result)
