"""What ``runsnap diff`` does once its options are known; free of click. The click command
(:mod:`runsnap.cli.compare`) calls it with every option; :func:`runsnap.cli.main` calls it
directly for ``runsnap diff A B ...`` given with no option at all, the options' defaults
taken (click and the command group cost a large share of a diff of two files:
benchmarks/RESULTS.md, "Real scale")."""

from __future__ import annotations

import os
import sys

from runsnap.base.records import FrozenRecord
from runsnap.cli.boundary import untrusted
from runsnap.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["DiffRequest", "plain_diff", "progress_line", "run_diff"]


def _write(text: str, color: bool) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def plain_diff(args: Sequence[str], environ: dict[str, str] | os._Environ[str]
               ) -> DiffRequest | None:
    """``run_diff``'s request for ``runsnap diff A B ...`` (``args`` after ``diff``) when
    the command line has two snapshots or more and nothing that looks like an option, and no
    variable sets an option (``RUNSNAP_FORMAT``); else ``None`` (click parses it).

    >>> plain_diff(["a.toml", "b.toml"], {"RUNSNAP_DIR": "/s"}).snap_dir
    '/s'
    >>> plain_diff(["a.toml", "--all", "b.toml"], {}), plain_diff(["a.toml"], {})
    (None, None)
    """
    if len(args) < 2 or any(a.startswith("-") or not a for a in args) \
            or environ.get("RUNSNAP_FORMAT"):
        return None
    return DiffRequest(snapshots=tuple(args), snap_dir=environ.get("RUNSNAP_DIR") or ".runsnap")


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
    snap_dir: str = ".runsnap"
    metric_tolerance: tuple[str, ...] = ()
    """``--metric-tolerance [NAME=]TOL`` specs (:func:`runsnap.diffing.rules.parse_tolerance`)."""


def run_diff(request: DiffRequest, out: Callable[[str, bool], None] = _write) -> int:
    """The report of ``runsnap diff`` written (``out(text, color)``), and its exit status:
    0 no differences that count, 1 differences."""
    snapshots, fmt, output, quiet = request.snapshots, request.fmt, request.output, request.quiet
    color = request.color
    from runsnap.diffing import expand
    from runsnap.diffing.rules import load_user_rules
    from runsnap.diffing.select import parse_sections, select
    from runsnap.render import render

    try:
        keep = parse_sections(request.sections)
    except ValueError as exc:
        raise UsageError(f"--section: {exc}") from None
    from runsnap.snapshot.store import newest
    from runsnap.views.compare import diff as do_diff
    from runsnap.views.names import resolve

    named = [resolve(s, request.snap_dir) for s in snapshots]
    paths = expand(named) if snapshots else newest(request.snap_dir, 2)
    # two folders: one job against another, rank against rank (runsnap/views/jobs.py)
    given = named if len(named) == 2 and all(os.path.isdir(p) for p in named) else paths
    if len(paths) == 1 and not quiet:
        sys.stderr.write(f"runsnap: comparing {paths[0]} with the current context "
                         "(captured now)\n")
    # a progress line only where loading takes a while: N snapshots, one per rank
    progress = progress_line("loading snapshots") \
        if len(paths) > 2 and sys.stderr.isatty() and not quiet else None

    with untrusted(" and ".join(map(str, paths)) or "the snapshots"):
        rules = load_user_rules(os.getcwd()).with_metric_tolerance(request.metric_tolerance)
        report = do_diff(*given, rules=rules, ignore=request.ignore,
                         show_all=request.show_all, progress=progress, static=not quiet)
    report = select(report, keep, frozenset({"runtime"}) if request.no_runtime else frozenset())
    if quiet:
        return 1 if report else 0
    if color is None:
        color = (output is None and not os.environ.get("NO_COLOR")
                 and os.environ.get("TERM") != "dumb" and sys.stdout.isatty())
    from runsnap.base.terminal import width

    if request.name_only:
        from runsnap.base.terminal import clean

        items = report.shown
        text = "".join(clean(".".join(str(p) for p in getattr(d, "path", ()) or
                                      (d.section, d.key))) + "\n" for d in items)
    elif request.stat:
        from runsnap.render.diff import render_stat

        text = render_stat(report, 0 if output else width())
    else:
        with untrusted(" and ".join(map(str, paths)) or "the snapshots"):
            text = render(report, fmt, color=color, width=0 if output else width())
    if request.patch and fmt == "text":
        text += _patches(paths, color, 0 if output else width())
    if output:
        from pathlib import Path

        from runsnap.snapshot import atomic_write

        try:
            atomic_write(Path(output), text.encode("utf-8"))
        except OSError as exc:
            raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
    else:
        out(text, color)
    return 1 if report else 0


def _patches(paths: list[str], color: bool, cols: int) -> str:
    """``diff --patch``: the uncommitted edits of the two runs, after the report."""
    from runsnap.base.terminal import fit
    from runsnap.render.patch import render_patch
    from runsnap.snapshot import load

    if len(paths) != 2:
        raise UsageError("--patch compares two snapshots")
    with untrusted(" and ".join(paths)):
        body = render_patch(load(paths[0]), load(paths[1]), color)
    head = "\nUncommitted edits (the snapshots' stored git diff)\n"
    return head + ("".join(fit(line, cols) + "\n" for line in body.splitlines())
                   or "  no uncommitted edit differs\n")


def progress_line(what: str) -> Callable[[int, int], None]:
    """``runsnap: loading snapshots 1234/4096`` rewritten in place on stderr (a terminal),
    cleared when done."""

    def show(done: int, total: int) -> None:
        end = "\r\x1b[K" if done >= total else ""
        sys.stderr.write(f"\rrunsnap: {what} {done}/{total}{end}")
        sys.stderr.flush()

    return show
