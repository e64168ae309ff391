"""The command-line face: the ``runsnap`` console script and its commands.

runsnap sits in front of every launch, and importing click costs a large share of a whole
capture (figures in benchmarks/RESULTS.md). So :func:`main` parses ``runsnap capture [OPTIONS]
[-- COMMAND...]`` itself when the command line is plainly well formed
(:func:`runsnap.cli.fast.parse_capture`) and runs :func:`runsnap.commands.capture.run_capture`;
``runsnap who-reads NAME...`` likewise, and ``runsnap diff A B ...`` given with no option
(:mod:`runsnap.cli.fast` parses all three, one way); everything else goes to the click
application in :mod:`runsnap.cli.app`, imported only then.

The modules: one per command, named after it, holding its click command and nothing else
(``capture.py``, ``diff.py``, ``who-reads``: ``whoreads.py`` ...), added to the group in
:mod:`~runsnap.cli.app`; what they share: :mod:`~runsnap.cli.options` (the shared options,
each declared once, and capture's table as click options), :mod:`~runsnap.cli.boundary`
(results, errors and bugs to output and exit statuses, in one place),
:mod:`~runsnap.cli.asking` (asking before a launch), :mod:`~runsnap.cli.fast` (the parsers that
skip click). What a command does once its options are known is in :mod:`runsnap.commands`.
Data flows one way: this package imports the library; nothing in the library imports this
package. This module and what it imports on the way to a capture stay free of click.
"""

from __future__ import annotations

import os
import sys

from runsnap.base.options import DEFAULT_DIR
from runsnap.base.paths import current_dir, zip_refusal
from runsnap.base.startenv import hold_closed_streams, restore_exec_environment
from runsnap.cli.boundary import finish, guarded
from runsnap.cli.fast import parse_capture, parse_who_reads, plain_diff
from runsnap.commands.whoreads import run_who_reads
from runsnap.errors import FAILED, PIPE_CLOSED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, NoReturn

    from runsnap.commands import Result

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
    refusal = zip_refusal(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if refusal:  # before any command reads a data file from where it cannot
        sys.stderr.write(f"runsnap: {refusal}\n")
        sys.exit(FAILED)
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["who-reads"]:  # answered from a cache: start-up is most of its cost
        search = parse_who_reads(args[1:])
        if search is not None:
            sys.exit(guarded(_finished, run_who_reads, **search))
    if args[:1] == ["diff"]:  # two snapshots or more, no option: click is not needed
        # only on this command's way: each fast path imports its own work (~123 ms measured under load)
        from runsnap.commands.diff import run_diff

        plain = plain_diff(args[1:], os.environ)
        if plain is not None:
            sys.exit(guarded(_finished, run_diff, plain))
    if args[:1] == ["why"]:
        # `runsnap why [BAD]` without click: a confident verdict costs what diff does
        from runsnap.commands.why import plain_why, run_why

        bad = plain_why(args[1:])
        if bad is not False:
            sys.exit(guarded(_finished, run_why, bad or None,
                             os.environ.get("RUNSNAP_DIR") or DEFAULT_DIR))
    params = parse_capture(args[1:]) if args[:1] == ["capture"] else None
    if params is None:
        # only on this command's way: each fast path imports its own work (~136 ms measured under load)
        from runsnap.cli.app import cli

        try:
            cli(args, prog_name="runsnap")
        except SystemExit as done:  # capture, replay: a child ended by a signal ends runsnap so
            if argv is None and getattr(done.code, "signal_number", None) is not None:
                _leave(done.code)  # type: ignore[arg-type]
            raise
        return
    if params["pid"] is None:
        # git diff and git status are the slowest part of a capture: set them going on the
        # other core before the rest of runsnap is imported, and hand them to the capture.
        # The GPU facts too (NVML's thread, nvidia-smi topo -m): their answers are read last.
        from runsnap.capturing.collectors import git, gpu

        plan = git.prestart(os.environ, current_dir(), params["repos"], params["max_diff_bytes"])
        gpus = gpu.prestart(os.environ)
        params["started"] = {k: v for k, v in (("git", plan), ("system.gpu", gpus)) if v}
        if params["command"] and not (params["no_trace"] or params["exec_"]):
            from runsnap.tracing.native import prebuild  # only for a traced launch

            prebuild()  # the getenv interposer, built on first use while the collectors work
    from runsnap.commands.capture import CaptureRequest, run_capture  # only to capture

    try:
        status = guarded(run_capture, CaptureRequest.from_params(params))
    except BrokenPipeError:
        # stdout closed by the reader (``runsnap capture | head -0``): as click does, exit 1
        # without a traceback, and keep Python from complaining again at shutdown.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(PIPE_CLOSED)
    if argv is None:
        _leave(status)
    sys.exit(status)


def _finished(func: Callable[..., Result], *args: Any, **kwargs: Any) -> int:
    """Run a command's work and write its result: the exit status."""
    return finish(func(*args, **kwargs))


def _leave(status: int) -> NoReturn:
    """Flush the standard streams, then exit with ``status`` without the interpreter's
    teardown (see :func:`main`); a child that a signal ended (``status`` a
    :class:`~runsnap.errors.Signalled`) ends runsnap by the same signal."""
    try:
        sys.stdout.flush()
    except OSError:  # as above: the reader is gone (or the disk under it full)
        status = status or PIPE_CLOSED
    try:
        sys.stderr.flush()
    except OSError:
        pass
    signalled = getattr(status, "signal_number", None)
    if signalled is not None:
        from runsnap.launch.signals import die_by  # only when a signal ended the command

        die_by(signalled)
    os._exit(status)
