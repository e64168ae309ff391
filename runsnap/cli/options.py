"""The ``runsnap`` console script: ``capture`` parsed without click, everything else by click.

runsnap sits in front of every launch, and importing click costs more than a third of a whole
capture (~25-40 ms of CPU on our 2-core machines, most of it ``inspect``, which click imports).
So ``main`` parses ``runsnap capture [OPTIONS] [-- COMMAND...]`` itself when the command line is
plainly well formed, from :data:`CAPTURE_OPTIONS`, the one declaration of capture's options
(``runsnap.cli`` builds the click command from the same table). Anything else (``--help``, a
mistake, an unknown option, a positional word before ``--``, any other command) goes to click,
which gives the help text and the error messages. A property test checks that every command
line this parser accepts gets exactly the values click would give.

This module and what it imports on the way to a capture must stay free of click.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from runsnap.snapshot import Snapshot


class Opt:
    """One option of ``runsnap capture``: its flags, its kind of value, default and help.

    ``kind``: ``str``; ``file`` / ``dir`` (a path that must not be an existing directory /
    file); ``path``; ``count`` (an integer >= 0); ``int``; ``seconds`` (a number >= 0);
    ``flag``.
    """

    __slots__ = ("flags", "dest", "kind", "default", "multiple", "envvar", "help")

    def __init__(self, *flags: str, dest: str, kind: str = "str", default: Any = None,
                 multiple: bool = False, envvar: str | None = None, help: str) -> None:
        self.flags, self.dest, self.kind, self.default = flags, dest, kind, default
        self.multiple, self.envvar, self.help = multiple, envvar, help


#: ``runsnap capture``'s options, in the order ``--help`` lists them.
CAPTURE_OPTIONS = (
    Opt("-o", "--output", dest="output", kind="file",
        help="Where to write the snapshot (default: DIR/<UTC time>-<label or command>.toml)."),
    Opt("--dir", dest="out_dir", kind="dir", envvar="RUNSNAP_DIR",
        help="Folder for snapshots written without -o (default: ./.runsnap)."),
    Opt("--label", dest="label", default="",
        help="A name for this run; used in the default file name."),
    Opt("--repo", dest="repos", kind="path", multiple=True,
        help="Another git repository to record (repeatable)."),
    Opt("--model", dest="models", multiple=True,
        help="A model directory or Hugging Face repo id to record (repeatable)."),
    Opt("--python", dest="python",
        help="The interpreter whose packages to list (default: the one the command runs)."),
    Opt("--max-diff-bytes", dest="max_diff_bytes", kind="count", default=1024 * 1024,
        help="Cap on each repository's stored uncommitted diff."),
    Opt("--log", dest="log", kind="file",
        help="Also write the child's full output (stdout and stderr) to this file."),
    Opt("--tail-lines", dest="tail_lines", kind="count", default=200,
        help="Last lines of stdout and of stderr kept in [outcome]."),
    Opt("--exec", dest="exec_", kind="flag", default=False,
        help="Write the snapshot, then replace runsnap with the command (no [outcome])."),
    Opt("--no-run", dest="no_run", kind="flag", default=False,
        help="Only record the context; do not run COMMAND."),
    Opt("--pid", dest="pid", kind="int",
        help="Snapshot a process that is already running instead of a COMMAND."),
    Opt("--inherit-tty", dest="inherit_tty", kind="flag", default=False,
        help="Pass a terminal to the child as it is (no pty); its output is then not recorded."),
    Opt("--kill-after", dest="kill_after", kind="seconds", default=10.0,
        help="Seconds between the SIGTERM and the SIGKILL when runsnap is asked twice to stop."),
)

_BY_FLAG = {flag: opt for opt in CAPTURE_OPTIONS for flag in opt.flags}


class _Unsure(Exception):
    """The fast parser leaves this command line to click."""


def _value(opt: Opt, raw: str) -> Any:
    """``raw`` as click would convert it, or :class:`_Unsure` where click might refuse it."""
    kind = opt.kind
    if kind in ("str", "path"):
        return raw
    if kind == "file":
        if os.path.isdir(raw):
            raise _Unsure
        return raw
    if kind == "dir":
        if os.path.exists(raw) and not os.path.isdir(raw):
            raise _Unsure
        return raw
    try:
        number: float = float(raw) if kind == "seconds" else int(raw)
    except ValueError:
        raise _Unsure from None
    if kind in ("count", "seconds") and number < 0:
        raise _Unsure
    return number


def parse_capture(args: Sequence[str], environ: Any = None) -> dict[str, Any] | None:
    """The keyword arguments of a capture for ``runsnap capture ARGS``, or None for click.

    Accepted: ``--name VALUE``, ``--name=VALUE``, ``-o VALUE``, flags, repeated options (the
    last one wins, ``--repo``/``--model`` add up) and ``--`` followed by the command.
    """
    environ = os.environ if environ is None else environ
    params: dict[str, Any] = {o.dest: [] if o.multiple else o.default for o in CAPTURE_OPTIONS}
    given: set[str] = set()
    i = 0
    try:
        while i < len(args):
            arg = args[i]
            i += 1
            if arg == "--":
                break
            name, eq, attached = arg.partition("=") if arg.startswith("--") else (arg, "", "")
            opt = _BY_FLAG.get(name)
            if opt is None:
                return None  # a positional word, --help, a typo: click knows what to say
            if opt.kind == "flag":
                if eq:
                    return None
                params[opt.dest] = True
                continue
            if eq:
                raw = attached
            elif i < len(args):
                raw = args[i]
                i += 1
            else:
                return None
            value = _value(opt, raw)
            if opt.multiple:
                params[opt.dest].append(value)
            else:
                params[opt.dest] = value
            given.add(opt.dest)
        for opt in CAPTURE_OPTIONS:
            if opt.envvar and opt.dest not in given and environ.get(opt.envvar):
                params[opt.dest] = _value(opt, environ[opt.envvar])
    except _Unsure:
        return None
    for opt in CAPTURE_OPTIONS:
        if opt.multiple:
            params[opt.dest] = tuple(params[opt.dest])
    params["command"] = tuple(args[i:])
    return params


def guarded(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``func``; runsnap's own errors become ``runsnap: message`` and their exit status."""
    from runsnap.errors import RunsnapError

    try:
        return func(*args, **kwargs)
    except RunsnapError as exc:
        sys.stderr.write(f"runsnap: {exc}\n")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("runsnap: interrupted\n")
        sys.exit(130)


def run_capture(
    output: str | None, out_dir: str | None, label: str, repos: tuple[str, ...],
    models: tuple[str, ...], python: str | None, max_diff_bytes: int, log: str | None,
    tail_lines: int, exec_: bool, no_run: bool, pid: int | None, inherit_tty: bool,
    kill_after: float, command: tuple[str, ...],
) -> int:
    """What ``runsnap capture`` does once its options are known; returns the exit status."""
    from runsnap.errors import UsageError

    if pid is not None:
        if command:
            raise UsageError("--pid takes no COMMAND: give one or the other")
        if exec_ or log or no_run:
            raise UsageError("--exec, --log and --no-run need a COMMAND, not --pid")
        from runsnap.capturing import capture_pid, resolve_output

        snap = capture_pid(pid, label=label, repos=repos, models=models, python=python,
                           max_diff_bytes=max_diff_bytes)
        print(snap.save(resolve_output(snap, output, out_dir)).path_text, flush=True)
        return 0
    if not command or no_run:
        if exec_ or log:
            raise UsageError("--exec and --log need a COMMAND to run (and no --no-run)")
        from runsnap.capturing import capture, resolve_output

        snap = capture(command, label=label, repos=repos, models=models, python=python,
                       max_diff_bytes=max_diff_bytes)
        print(snap.save(resolve_output(snap, output, out_dir)).path_text, flush=True)
        return 0

    from runsnap.capturing import run

    def announce(snap: Snapshot) -> None:
        sys.stderr.write(f"runsnap: snapshot {snap.path_text}\n")
        sys.stderr.flush()

    record = run(
        command, label=label, repos=repos, models=models, python=python,
        max_diff_bytes=max_diff_bytes, output=output, out_dir=out_dir, tail_lines=tail_lines,
        log=log, inherit_tty=inherit_tty, kill_grace=kill_after, exec_=exec_,
        on_saved=announce,
    )
    if record.result.error:
        sys.stderr.write(f"runsnap: {record.result.error}\n")
    for problem in record.errors:
        sys.stderr.write(f"runsnap: {problem}\n")
    return int(record.exit_status)


def main(argv: Sequence[str] | None = None) -> None:
    """The ``runsnap`` console script."""
    args = sys.argv[1:] if argv is None else list(argv)
    params = parse_capture(args[1:]) if args[:1] == ["capture"] else None
    if params is None:
        from runsnap.cli import cli

        cli(args, prog_name="runsnap")
        return
    if params["pid"] is None:
        # git diff and git status are the slowest part of a capture: set them going on the
        # other core before the rest of runsnap is imported (the capture takes them over).
        from runsnap.collectors import git

        git.prestart(os.environ, os.getcwd(), params["repos"], params["max_diff_bytes"])
    try:
        status = guarded(run_capture, **params)
    except BrokenPipeError:
        # stdout closed by the reader (``runsnap capture | head -0``): as click does, exit 1
        # without a traceback, and keep Python from complaining again at shutdown.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    sys.exit(status)
