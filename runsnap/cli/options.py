"""``runsnap capture``'s options, declared once, and the parser of the fast capture path.

:data:`CAPTURE_OPTIONS` is the one declaration: :func:`parse_capture` reads a plainly well
formed ``runsnap capture [OPTIONS] [-- COMMAND...]`` from it without click, and
:mod:`runsnap.cli.app` turns the same table into click options. Anything the fast parser is not
sure of (``--help``, a mistake, an unknown option, a positional word before ``--``) it leaves
to click (``None``), which gives the help text and the error messages. A property test checks
that every command line this parser accepts gets exactly the values click would give.

This module stays free of click: it is on the path of every capture.
"""

from __future__ import annotations

import os

from runsnap.base.records import FrozenRecord
from runsnap.capturing.options import CaptureOptions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

__all__ = ["CAPTURE_OPTIONS", "CaptureRequest", "Opt", "parse_capture"]


class Opt:
    """One option of ``runsnap capture``: its flags, its kind of value, default and help.

    ``kind``: ``str``; ``file`` / ``dir`` (a path that must not be an existing directory /
    file); ``path``; ``count`` (an integer >= 0); ``int``; ``seconds`` (a number >= 0);
    ``flag``.
    """

    __slots__ = ("flags", "dest", "kind", "default", "multiple", "envvar", "metavar", "help")

    def __init__(self, *flags: str, dest: str, kind: str = "str", default: Any = None,
                 multiple: bool = False, envvar: str | None = None, metavar: str | None = None,
                 help: str) -> None:
        self.flags, self.dest, self.kind, self.default = flags, dest, kind, default
        self.multiple, self.envvar, self.metavar, self.help = multiple, envvar, metavar, help


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
    Opt("--timeout", dest="timeout", kind="seconds",
        help="Stop the command after this many seconds (SIGTERM, then SIGKILL after "
             "--kill-after); [outcome] says timed_out and runsnap exits with 124, as "
             "timeout(1) does. 0: no timeout."),
    Opt("--kill-after", dest="kill_grace", kind="seconds", default=10.0,
        help="Seconds between the SIGTERM and the SIGKILL when runsnap is asked twice to "
             "stop or --timeout expires."),
    Opt("--redact", dest="redact", multiple=True,
        help="Also treat values of this variable, option or key name (a glob) as secrets "
             "(repeatable; adds to [tool.runsnap.capture] redact in pyproject.toml)."),
    Opt("--keep", dest="keep", multiple=True,
        help="Keep the value of this exact name although it looks secret (repeatable)."),
    Opt("--track", dest="track", metavar="TRACKER",
        help="Also log the snapshot to a run of this experiment tracker, mlflow or wandb, whose "
             "id the command gets (MLFLOW_RUN_ID, WANDB_RUN_ID); none: do not (default: "
             "[tool.runsnap.capture] track in pyproject.toml). docs/trackers.md."),
    Opt("--track-experiment", dest="track_experiment", metavar="NAME",
        help="The MLflow experiment or W&B project of that run when the environment names none "
             "(MLFLOW_EXPERIMENT_NAME, WANDB_PROJECT)."),
    Opt("--track-timeout", dest="track_timeout", kind="seconds",
        help="Seconds the launch waits for the tracker at most, then goes on without it "
             "(default: 5)."),
    Opt("--metric", dest="metrics", multiple=True,
        help="Also record this number of the output as a metric: NAME=REGEX, the first group "
             "(or the whole match) of the last match (repeatable; adds to [tool.runsnap] "
             "metrics in pyproject.toml)."),
    Opt("--strict", dest="strict", kind="flag", default=False,
        help="Do not launch when a pre-launch check finds a problem of weight 90 or more "
             "(exit 2); also [tool.runsnap.capture] strict = true."),
    Opt("--no-trace", dest="no_trace", kind="flag", default=False,
        help="Do not trace a Python command (which variables it reads, which modules it "
             "imports); [runtime] then says it was not traced."),
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


class CaptureRequest(FrozenRecord):
    """A ``runsnap capture`` command line as both faces read it from :data:`CAPTURE_OPTIONS`:
    the capture's :class:`~runsnap.capturing.options.CaptureOptions` and what only the command
    line decides (run or not, ``--pid``, the tracker)."""

    options: CaptureOptions
    """What the capture records and how it runs the command."""
    command: tuple[str, ...] = ()
    """The command after ``--`` (empty: the current context)."""
    no_run: bool = False
    """``--no-run``: record the context only."""
    pid: int | None = None
    """``--pid``: a process already running instead of a command."""
    track: str | None = None
    """``--track``: the experiment tracker (None: the project's setting)."""
    track_experiment: str | None = None
    """``--track-experiment``."""
    track_timeout: float | None = None
    """``--track-timeout``."""

    #: The options of :data:`CAPTURE_OPTIONS` that are the request's own; every other one is a
    #: field of :class:`CaptureOptions` of the same name, but ``--no-trace`` (``trace``).
    OWN = ("command", "no_run", "pid", "track", "track_experiment", "track_timeout")

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> CaptureRequest:
        """The request from the values of :data:`CAPTURE_OPTIONS` (keyed by ``dest``) and
        ``command``, as :func:`parse_capture` and click give them.

        >>> r = CaptureRequest.from_params({"label": "a", "no_trace": True, "timeout": 0,
        ...                                  "command": ("true",)})
        >>> r.options.label, r.options.trace, r.options.timeout, r.command
        ('a', False, None, ('true',))
        """
        given = dict(params)
        own = {name: given.pop(name) for name in cls.OWN if name in given}
        given["trace"] = not given.pop("no_trace", False)
        given["timeout"] = given.get("timeout") or None  # --timeout 0: none
        return cls(CaptureOptions.of(**given), **own)
