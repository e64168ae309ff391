"""What a capture is asked to do, as one record: :class:`CaptureOptions`.

Its options are declared once, in :data:`CAPTURE_OPTIONS`: the command line's two faces (the
fast parser, ``runsnap.cli.fast``, and click, ``runsnap.cli.options``) read the table and build
the record from it, the public functions
(:func:`runsnap.capture`, :func:`runsnap.capture_pid`, :func:`runsnap.run`) build it from their
keyword arguments, and everything below takes the record instead of a dozen keyword arguments.
"""

from __future__ import annotations

import os

from runsnap.base.options import DIR, OUTPUT, Opt
from runsnap.base.records import FrozenRecord, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["CAPTURE_OPTIONS", "DEFAULT_MAX_DIFF_BYTES", "CaptureOptions", "Opt"]

#: Cap on each repository's stored uncommitted diff, unless ``--max-diff-bytes`` says otherwise.
DEFAULT_MAX_DIFF_BYTES = 1024 * 1024


#: ``runsnap capture``'s options, in the order ``--help`` lists them.
CAPTURE_OPTIONS = (
    OUTPUT.but(help="Where to write the snapshot (default: DIR/<UTC time>-<label or "
                    "command>.toml)."),
    DIR.but(dest="out_dir", default=None,
            help="Folder for snapshots written without -o (default: ./.runsnap)."),
    Opt(("--label",), "label", default="",
        help="A name for this run; used in the default file name."),
    Opt(("--repo",), "repos", kind="path", multiple=True,
        help="Another git repository to record (repeatable)."),
    Opt(("--model",), "models", multiple=True,
        help="A model directory or Hugging Face repo id to record (repeatable)."),
    Opt(("--python",), "python",
        help="The interpreter whose packages to list (default: the one the command runs)."),
    Opt(("--max-diff-bytes",), "max_diff_bytes", kind="count", default=DEFAULT_MAX_DIFF_BYTES,
        help="Cap on each repository's stored uncommitted diff."),
    Opt(("--log",), "log", kind="file",
        help="Also write the child's full output (stdout and stderr) to this file."),
    Opt(("--tail-lines",), "tail_lines", kind="count", default=200,
        help="Last lines of stdout and of stderr kept in [outcome]."),
    Opt(("--exec",), "exec_", kind="flag", default=False,
        help="Write the snapshot, then replace runsnap with the command (no [outcome])."),
    Opt(("--no-run",), "no_run", kind="flag", default=False,
        help="Only record the context; do not run COMMAND."),
    Opt(("--pid",), "pid", kind="int",
        help="Snapshot a process that is already running instead of a COMMAND."),
    Opt(("--inherit-tty",), "inherit_tty", kind="flag", default=False,
        help="Pass a terminal to the child as it is (no pty); its output is then not recorded."),
    Opt(("--timeout",), "timeout", kind="seconds",
        help="Stop the command after this many seconds (SIGTERM, then SIGKILL after "
             "--kill-after); [outcome] says timed_out and runsnap exits with 124, as "
             "timeout(1) does. 0: no timeout."),
    Opt(("--kill-after",), "kill_grace", kind="seconds", default=10.0,
        help="Seconds between the SIGTERM and the SIGKILL when runsnap is asked twice to "
             "stop or --timeout expires."),
    Opt(("--redact",), "redact", multiple=True,
        help="Also treat values of this variable, option or key name (a glob) as secrets "
             "(repeatable; adds to [tool.runsnap.capture] redact in pyproject.toml)."),
    Opt(("--keep",), "keep", multiple=True,
        help="Keep the value of this exact name although it looks secret (repeatable)."),
    Opt(("--track",), "track", metavar="TRACKER",
        help="Also log the snapshot to a run of this experiment tracker, mlflow or wandb, whose "
             "id the command gets (MLFLOW_RUN_ID, WANDB_RUN_ID); none: do not (default: "
             "[tool.runsnap.capture] track in pyproject.toml). docs/trackers.md."),
    Opt(("--track-experiment",), "track_experiment", metavar="NAME",
        help="The MLflow experiment or W&B project of that run when the environment names none "
             "(MLFLOW_EXPERIMENT_NAME, WANDB_PROJECT)."),
    Opt(("--track-timeout",), "track_timeout", kind="seconds",
        help="Seconds runsnap waits for the tracker at most, all requests together (before "
             "the launch and after it), then goes on without it (default: 5)."),
    Opt(("--track-html",), "track_html", kind="flag", default=False,
        help="Also keep runsnap/diff.html with the tracked run: this run against the newest "
             "earlier run of the same command that ended well (a failed run gets it unasked)."),
    Opt(("--metric",), "metrics", multiple=True,
        help="Also record this number of the output as a metric: NAME=REGEX, the first group "
             "(or the whole match) of the last match (repeatable; adds to [tool.runsnap] "
             "metrics in pyproject.toml)."),
    Opt(("--strict",), "strict", kind="flag", default=False,
        help="Do not launch when a pre-launch check finds a problem of weight 90 or more "
             "(exit 2); also [tool.runsnap.capture] strict = true."),
    Opt(("--no-trace",), "no_trace", kind="flag", default=False,
        help="Do not trace a Python command (which variables it reads, which modules it "
             "imports); [runtime] then says it was not traced."),
)


class CaptureOptions(FrozenRecord):
    """The options of one capture (``runsnap capture --help`` says each one's meaning)."""

    label: str = ""
    """The run's name, chosen by the user (``--label``)."""
    repos: tuple[str, ...] = ()
    """Extra repositories to record (``--repo``)."""
    models: tuple[str, ...] = ()
    """Model paths or Hugging Face repo ids to record (``--model``)."""
    python: str | None = None
    """The interpreter whose packages to list (``--python``; default: the command's)."""
    max_diff_bytes: int = DEFAULT_MAX_DIFF_BYTES
    """Cap on each repository's stored uncommitted diff."""
    redact: tuple[str, ...] = ()
    """More names (globs) whose values are secrets (``--redact``)."""
    keep: tuple[str, ...] = ()
    """Exact names whose values are kept although they look secret (``--keep``)."""
    output: str | None = None
    """Where the snapshot goes (``-o``; ``-``: standard output)."""
    out_dir: str | None = None
    """The folder of snapshots written without ``output`` (``--dir``)."""
    log: str | None = None
    """A file that also gets the child's whole output (``--log``)."""
    tail_lines: int | None = None
    """Last lines of each stream kept in ``[outcome]`` (None: the default, 200)."""
    exec_: bool = False
    """Replace runsnap with the child once the snapshot is saved (``--exec``)."""
    inherit_tty: bool = False
    """Give the child the terminal as it is (``--inherit-tty``)."""
    kill_grace: float | None = None
    """Seconds between SIGTERM and SIGKILL when stopping the child (None: the default, 10)."""
    timeout: float | None = None
    """Stop the child after this many seconds (None: never)."""
    trace: bool = True
    """Trace a Python child's reads and imports into ``[runtime]``."""
    metrics: tuple[str, ...] = ()
    """The user's own metrics, ``NAME=REGEX`` (``--metric``), beside the project's."""
    strict: bool = False
    """No launch when a pre-launch check finds a problem of weight 90 or more (``--strict``)."""
    started: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    """Work begun for this capture before the rest of runsnap was imported (the fast path's
    git head start), handed over to the collectors when it suits."""

    @classmethod
    def of(cls, **given: Any) -> CaptureOptions:
        """The record from the public functions' keyword arguments: sequences become tuples,
        paths strings.

        >>> CaptureOptions.of(repos=["a"], output=None).repos
        ('a',)
        """
        for name in ("repos", "models", "redact", "keep", "metrics"):
            if name in given:
                given[name] = tuple(given[name])
        for name in ("output", "out_dir", "log"):
            if given.get(name) is not None:
                given[name] = os.fspath(given[name])
        return cls(**given)
