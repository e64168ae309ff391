"""What ``runsnap diff`` does once its options are known, as named steps in one place
(:func:`run_diff`: resolve -> load -> compare -> select -> render); free of click. The click
command (:mod:`runsnap.cli.diff`) calls it with every option; :func:`runsnap.cli.main` calls it
directly for ``runsnap diff A B ...`` given with no option at all, the options' defaults
taken (click and the command group cost a large share of a diff of two files:
benchmarks/RESULTS.md, "Real scale")."""

from __future__ import annotations

import os
import sys

from runsnap.base.options import DIR
from runsnap.base.records import FrozenRecord
from runsnap.base.terminal import clean, width
from runsnap.commands import Result
from runsnap.diffing import NReport, Report
from runsnap.diffing.rules import load_user_rules
from runsnap.diffing.select import parse_sections, select
from runsnap.errors import NO, OK, UsageError
from runsnap.render import render
from runsnap.render.diff import render_stat
from runsnap.render.patch import render_patch
from runsnap.snapshot.store import newest
from runsnap.views.compare import compare_jobs_in, compare_loaded, files, load_all

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from runsnap.snapshot import Snapshot

__all__ = ["DiffRequest", "progress_line", "run_diff"]


class DiffRequest(FrozenRecord):
    """What ``runsnap diff`` was asked: its snapshots and options (the click command's, with
    their defaults), one record rather than fourteen parameters."""

    snapshots: tuple[str, ...]
    """Snapshots, folders, labels or positions; none: the two newest in ``snap_dir``."""
    fmt: str = "text"
    show_all: bool = False
    ignore: tuple[str, ...] = ()
    color: bool | None = None
    """None: colour when writing to a terminal that allows it."""
    output: str | None = None
    name_only: bool = False
    stat: bool = False
    sections: tuple[str, ...] = ()
    no_runtime: bool = False
    patch: bool = False
    quiet: bool = False
    snap_dir: str = DIR.default
    metric_tolerance: tuple[str, ...] = ()
    """``--metric-tolerance [NAME=]TOL`` specs (:func:`runsnap.diffing.rules.parse_tolerance`)."""


def run_diff(request: DiffRequest) -> Result:
    """``runsnap diff``: its report and exit status (0 no differences that count, 1
    differences), each step named once."""
    keep = _sections(request)
    paths = _resolve(request)
    rules = load_user_rules(os.getcwd()).with_ignore(request.ignore).with_metric_tolerance(
        request.metric_tolerance)
    snaps: list[Snapshot] = []
    unreadable: tuple[str, ...] = ()
    jobs = compare_jobs_in(request.snapshots, rules, request.snap_dir,
                           show_all=request.show_all, static=not request.quiet)
    if jobs is None:  # not one job against another: the files, as given
        snaps, unreadable = _load(paths, request)
    report = jobs if jobs is not None else compare_loaded(
        snaps, rules, show_all=request.show_all, static=not request.quiet,
        unreadable=unreadable)  # a Report is false when nothing counts: ``is``, not ``or``
    report = select(report, keep, frozenset({"runtime"}) if request.no_runtime else frozenset())
    status = NO if report else OK
    if request.quiet:
        return Result(status=status)
    color = request.color
    if color is None:
        color = (request.output is None and not os.environ.get("NO_COLOR")
                 and os.environ.get("TERM") != "dumb" and sys.stdout.isatty())
    text = _render(report, request, color)
    if request.patch and request.fmt == "text":
        text += _patches(snaps, color, 0 if request.output else width())
    return Result(text, status, request.output, color)


def _sections(request: DiffRequest) -> frozenset[str]:
    """``--section``'s names, checked before anything is read."""
    try:
        return parse_sections(request.sections)
    except ValueError as exc:
        raise UsageError(f"--section: {exc}") from None


def _resolve(request: DiffRequest) -> list[str]:
    """The files compared: the names given (``@N``, labels, folders), or the two newest."""
    paths = files(request.snapshots, request.snap_dir) if request.snapshots \
        else newest(request.snap_dir, 2)
    if len(paths) == 1 and not request.quiet:
        sys.stderr.write(f"runsnap: comparing {paths[0]} with the current context "
                         "(captured now)\n")
    if request.patch and request.fmt == "text" and not request.quiet and len(paths) != 2:
        raise UsageError("--patch compares two snapshots")
    return paths


def _load(paths: list[str], request: DiffRequest) -> tuple[list[Snapshot], tuple[str, ...]]:
    """The snapshots, with a progress line only where loading takes a while (N snapshots, one
    per rank, on a terminal)."""
    progress = progress_line("loading snapshots") \
        if len(paths) > 2 and sys.stderr.isatty() and not request.quiet else None
    return load_all(paths, progress)


def _render(report: Report | NReport, request: DiffRequest, color: bool) -> str:
    """The report as ``--name-only``, ``--stat`` or ``--format`` asks."""
    cols = 0 if request.output else width()
    if request.name_only:
        return "".join(clean(".".join(str(p) for p in getattr(d, "path", ()) or
                                      (d.section, d.key))) + "\n" for d in report.shown)
    if request.stat:
        return render_stat(report, cols)
    return render(report, request.fmt, color=color, width=cols)


def _patches(snaps: Sequence[Snapshot], color: bool, cols: int) -> str:
    """``diff --patch``: the uncommitted edits of the two runs, after the report."""

    body = render_patch(snaps[0], snaps[1], color, cols)  # code lines wrapped, never cut
    head = "\nUncommitted edits (the snapshots' stored git diff)\n"
    return head + (body or "  no uncommitted edit differs\n")


def progress_line(what: str) -> Callable[[int, int], None]:
    """``runsnap: loading snapshots 1234/4096`` rewritten in place on stderr (a terminal),
    cleared when done."""

    def show(done: int, total: int) -> None:
        end = "\r\x1b[K" if done >= total else ""
        sys.stderr.write(f"\rrunsnap: {what} {done}/{total}{end}")
        sys.stderr.flush()

    return show
