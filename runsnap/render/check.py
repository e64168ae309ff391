"""``runsnap check``'s output: a check report as text (wrapped to the terminal), Markdown or
JSON."""

from __future__ import annotations

import json

from runsnap.base.terminal import clean as safe
from runsnap.base.terminal import wrap
from runsnap.checks.rules import CheckReport
from runsnap.render.style import md_text

__all__ = ["render"]


def render(report: CheckReport, fmt: str = "text", width: int = 0) -> str:
    """``text``, ``markdown`` or ``json``; ``width``: the terminal's, text lines are wrapped
    to it (0: one line per finding and detail)."""
    if fmt == "json":
        return json.dumps(report.to_dict(), indent=2) + "\n"

    n = len(report.findings)
    head = (f"runsnap check: {n} finding{'s' if n != 1 else ''}" if n else
            "runsnap check: no findings")
    if fmt == "markdown":
        lines = [f"### {md_text(head)}", ""]
        for i, f in enumerate(report.findings, 1):
            lines.append(f"{i}. **{md_text(f.kind)}** ({f.score}): {md_text(f.message)}")
            lines += [f"   - {md_text(x)}" for x in f.details]
        return "\n".join(lines) + "\n"
    lines = _wrapped("", f"{head}  ({safe(report.snapshot)})", width, 2)
    for i, f in enumerate(report.findings, 1):
        lines += _wrapped(f"  {i:>2}. ", f"[{f.score}] {f.kind}: {safe(f.message)}", width)
        for x in f.details:
            lines += _wrapped(" " * 8, safe(x), width, 2)
    return "\n".join(lines) + "\n"


def _wrapped(prefix: str, text: str, width: int, hang: int = 0) -> list[str]:
    """``prefix`` + ``text`` wrapped to ``width`` (0: one line), the lines after the first
    under the text, ``hang`` further in."""

    if not width:
        return [prefix + text]
    parts = wrap(text, max(width - len(prefix), 20), " " * hang)
    return [prefix + parts[0], *(" " * len(prefix) + part for part in parts[1:])]
