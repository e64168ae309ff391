"""The command-line face: the ``runsnap`` console script and its commands.

runsnap sits in front of every launch, and importing click costs a large share of a whole
capture (figures in benchmarks/RESULTS.md). So :func:`main` parses ``runsnap capture [OPTIONS]
[-- COMMAND...]`` itself when the command line is plainly well formed
(:func:`runsnap.cli.options.parse_capture`) and runs :func:`runsnap.cli.capture.run_capture`;
``runsnap who-reads NAME...`` likewise (:mod:`runsnap.cli.whoreads`), and ``runsnap diff A B
...`` given with no option (:mod:`runsnap.cli.comparing`); everything else goes to the click
application in :mod:`runsnap.cli.app`, imported only then.

The modules: :mod:`~runsnap.cli.options` (capture's option table, the fast parser),
:mod:`~runsnap.cli.boundary` (errors to messages and exit statuses), :mod:`~runsnap.cli.capture`
(the capture command's body), :mod:`~runsnap.cli.app` (the click group, one thin function per
command). Data flows one way: this package imports the library; nothing in the library imports
this package. This module and what it imports on the way to a capture stay free of click.
"""

from __future__ import annotations

import os
import sys

from runsnap.base.paths import current_dir
from runsnap.base.startenv import hold_closed_streams, restore_exec_environment
from runsnap.cli.boundary import guarded
from runsnap.cli.options import CaptureRequest, parse_capture

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> None:
    """The ``runsnap`` console script.

    Run as the script (``argv`` None), ``os.environ`` first becomes the environment runsnap
    was started with (:mod:`runsnap.base.startenv`: CPython's locale coercion undone), and a
    capture ends the process with :func:`os._exit` once
    its streams are flushed: everything it wrote is closed by then (the snapshot synced), and
    runsnap has no exit handler and only daemon threads, so Python's teardown of the
    interpreter would only cost time (a measurable share of a capture: benchmarks/RESULTS.md).
    """
    if argv is None:  # a real start: undo what runsnap's own interpreter did to its environment
        hold_closed_streams()
        restore_exec_environment()
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["who-reads"]:  # answered from a cache: start-up is most of its cost
        from runsnap.cli.whoreads import parse_who_reads, run_who_reads

        search = parse_who_reads(args[1:])
        if search is not None:
            sys.exit(guarded(run_who_reads, **search))
    if args[:1] == ["diff"]:  # two snapshots or more, no option: click is not needed
        from runsnap.cli.comparing import plain_diff, run_diff

        plain = plain_diff(args[1:], os.environ)
        if plain is not None:
            sys.exit(guarded(run_diff, plain))
    if args[:1] == ["why"]:  # `runsnap why [BAD]`: a confident verdict costs what diff does
        from runsnap.cli.explain import plain_why, run_why

        bad = plain_why(args[1:])
        if bad is not False:
            sys.exit(guarded(run_why, bad or None, os.environ.get("RUNSNAP_DIR") or ".runsnap"))
    params = parse_capture(args[1:]) if args[:1] == ["capture"] else None
    if params is None:
        from runsnap.cli.app import cli

        cli(args, prog_name="runsnap")
        return
    if params["pid"] is None:
        # git diff and git status are the slowest part of a capture: set them going on the
        # other core before the rest of runsnap is imported, and hand them to the capture.
        from runsnap.capturing.collectors import git

        plan = git.prestart(os.environ, current_dir(), params["repos"], params["max_diff_bytes"])
        if plan is not None:
            params["started"] = {"git": plan}
    from runsnap.cli.capture import run_capture  # not on the way of the other commands

    try:
        status = guarded(run_capture, CaptureRequest.from_params(params))
    except BrokenPipeError:
        # stdout closed by the reader (``runsnap capture | head -0``): as click does, exit 1
        # without a traceback, and keep Python from complaining again at shutdown.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    if argv is None:
        _leave(status)
    sys.exit(status)


def _leave(status: int) -> NoReturn:
    """Flush the standard streams, then exit with ``status`` without the interpreter's
    teardown (see :func:`main`)."""
    try:
        sys.stdout.flush()
    except OSError:  # as above: the reader is gone (or the disk under it full)
        status = status or 1
    try:
        sys.stderr.flush()
    except OSError:
        pass
    os._exit(status)
