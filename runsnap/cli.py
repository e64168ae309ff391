"""The command line: click commands only. Each parses, calls the library, renders, and exits.

Exit statuses (documented in README):
    0    success; for ``diff``: no differences that count (noise alone counts as none)
    1    ``diff`` only: the snapshots differ
    2    usage or input error (bad option, missing or invalid snapshot, --pid of a process
         that does not exist or cannot be read), with a one-line message
  ``capture -- COMMAND`` exits with the command's own status instead:
    N    the command exited with status N (0..255)
    128+N  the command was killed by signal N (137 for SIGKILL, 130 for SIGINT)
    127  the command was not found
    126  the command was found but could not be executed (permission, not a program,
         bad #! interpreter)
  runsnap's own errors before the command starts (snapshot or log not writable) still give 2.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from runsnap._version import __version__

F = TypeVar("F", bound=Callable[..., Any])

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def runsnap_command(func: F) -> F:
    """Turn runsnap's own errors into ``runsnap: message`` on stderr and their exit status."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from runsnap.errors import RunsnapError

        try:
            return func(*args, **kwargs)
        except RunsnapError as exc:
            click.echo(f"runsnap: {exc}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("runsnap: interrupted", err=True)
            sys.exit(130)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "-V", "--version", prog_name="runsnap")
def cli() -> None:
    """Snapshot the whole context of a launch, and say why two runs differ.

    \b
      runsnap capture -- python -m sglang.launch_server --model-path ...
      runsnap show .runsnap/<snapshot>.toml
      runsnap diff good.toml bad.toml
    """


@cli.command(context_settings={**CONTEXT_SETTINGS, "ignore_unknown_options": False})
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Where to write the snapshot (default: DIR/<UTC time>-<label or command>.toml).")
@click.option("--dir", "out_dir", envvar="RUNSNAP_DIR", type=click.Path(file_okay=False),
              default=None, show_envvar=True,
              help="Folder for snapshots written without -o (default: ./.runsnap).")
@click.option("--label", default="", help="A name for this run; used in the default file name.")
@click.option("--repo", "repos", multiple=True, type=click.Path(),
              help="Another git repository to record (repeatable).")
@click.option("--model", "models", multiple=True,
              help="A model directory or Hugging Face repo id to record (repeatable).")
@click.option("--python", "python", default=None,
              help="The interpreter whose packages to list (default: the one the command runs).")
@click.option("--max-diff-bytes", type=click.IntRange(min=0), default=1024 * 1024,
              show_default=True, help="Cap on each repository's stored uncommitted diff.")
@click.option("--log", "log", type=click.Path(dir_okay=False), default=None,
              help="Also write the child's full output (stdout and stderr) to this file.")
@click.option("--tail-lines", type=click.IntRange(min=0), default=200, show_default=True,
              help="Last lines of stdout and of stderr kept in [outcome].")
@click.option("--exec", "exec_", is_flag=True,
              help="Write the snapshot, then replace runsnap with the command (no [outcome]).")
@click.option("--no-run", is_flag=True, help="Only record the context; do not run COMMAND.")
@click.option("--pid", type=int, default=None,
              help="Snapshot a process that is already running instead of a COMMAND.")
@click.option("--inherit-tty", is_flag=True,
              help="Pass a terminal to the child as it is (no pty); its output is then not "
                   "recorded.")
@click.option("--kill-after", type=click.FloatRange(min=0), default=10.0, show_default=True,
              help="Seconds between the SIGTERM and the SIGKILL when runsnap is asked twice "
                   "to stop.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@runsnap_command
def capture(
    output: str | None,
    out_dir: str | None,
    label: str,
    repos: tuple[str, ...],
    models: tuple[str, ...],
    python: str | None,
    max_diff_bytes: int,
    log: str | None,
    tail_lines: int,
    exec_: bool,
    no_run: bool,
    pid: int | None,
    inherit_tty: bool,
    kill_after: float,
    command: tuple[str, ...],
) -> None:
    """Snapshot COMMAND, run it, and record its outcome in the same TOML file.

    Put the command after `--`. The snapshot (command line, environment with secrets replaced
    by fingerprints, git state, the child's packages, model configs, host and GPU facts) is
    written before the command starts; when it ends, [outcome] is added: exit status, times,
    peak memory, the last lines of its output, its first error and its warnings. runsnap
    exits with the command's status (128+N when killed by signal N, 127 not found, 126 not
    executable) and prints the snapshot's path on stderr.

    With --no-run, or with no command (the current context), nothing is run and the path is
    printed on stdout. --pid PID snapshots a process that is already running.
    """
    from runsnap.errors import UsageError

    if pid is not None:
        if command:
            raise UsageError("--pid takes no COMMAND: give one or the other")
        if exec_ or log or no_run:
            raise UsageError("--exec, --log and --no-run need a COMMAND, not --pid")
        from runsnap.capturing import capture_pid, resolve_output

        snap = capture_pid(pid, label=label, repos=repos, models=models, python=python,
                           max_diff_bytes=max_diff_bytes)
        click.echo(str(snap.save(resolve_output(snap, output, out_dir)).path))
        return
    if not command or no_run:
        if exec_ or log:
            raise UsageError("--exec and --log need a COMMAND to run (and no --no-run)")
        from runsnap.capturing import capture as do_capture
        from runsnap.capturing import resolve_output

        snap = do_capture(command, label=label, repos=repos, models=models, python=python,
                          max_diff_bytes=max_diff_bytes)
        click.echo(str(snap.save(resolve_output(snap, output, out_dir)).path))
        return

    from runsnap.capturing import run

    def announce(snap: Any) -> None:
        click.echo(f"runsnap: snapshot {snap.path}", err=True)

    record = run(
        command, label=label, repos=repos, models=models, python=python,
        max_diff_bytes=max_diff_bytes, output=output, out_dir=out_dir, tail_lines=tail_lines,
        log=log, inherit_tty=inherit_tty, kill_grace=kill_after, exec_=exec_,
        on_saved=announce,
    )
    result = record.result
    if result.error:
        click.echo(f"runsnap: {result.error}", err=True)
    for problem in record.errors:
        click.echo(f"runsnap: {problem}", err=True)
    sys.exit(record.exit_status)


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("snapshot", type=click.Path(dir_okay=True))
@runsnap_command
def show(snapshot: str) -> None:
    """Print a readable summary of SNAPSHOT: key facts first, then counts and errors."""
    from runsnap.show import render_summary
    from runsnap.snapshot import load

    click.echo(render_summary(load(snapshot)), nl=False)


#: The ``--format`` names of ``diff``; a test checks they are exactly the renderers'
#: (kept here so that ``runsnap --help`` does not import the diff engine).
DIFF_FORMATS = ("text", "markdown", "json")


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("snapshots", nargs=-1, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(DIFF_FORMATS), default="text",
              envvar="RUNSNAP_FORMAT", show_envvar=True, show_default=True,
              help="text for terminals, markdown for a GitHub issue, json for programs.")
@click.option("--all", "show_all", is_flag=True,
              help="Also list noise (PWD, SHLVL, SSH_*, timings...) and ignored differences.")
@click.option("--ignore", "ignore", multiple=True, metavar="PATTERN",
              help="Hide differences whose KEY or SECTION.KEY matches this glob (repeatable).")
@click.option("--color/--no-color", "color", default=None,
              help="Colour the text report (default: on a terminal, unless NO_COLOR is set).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the report to this file instead of standard output.")
@click.option("--dir", "snap_dir", envvar="RUNSNAP_DIR", type=click.Path(file_okay=False),
              default=".runsnap", show_envvar=True,
              help="Where to find the two newest snapshots when none is given.")
@runsnap_command
def diff(
    snapshots: tuple[str, ...],
    fmt: str,
    show_all: bool,
    ignore: tuple[str, ...],
    color: bool | None,
    output: str | None,
    snap_dir: str,
) -> None:
    """Say why runs differ, most likely cause first.

    \b
      runsnap diff A B        compare two snapshots
      runsnap diff A          compare A with the current context (captured now for A's command)
      runsnap diff A B C ...  N snapshots (ranks, nodes): who holds which value, the odd one out
      runsnap diff            the two newest snapshots in --dir

    Exit status: 0 no differences that count, 1 differences, 2 error.
    """
    import os

    from runsnap.diffing import diff as do_diff
    from runsnap.diffing import newest
    from runsnap.diffing.rank import load_user_rules
    from runsnap.diffing.render import render

    paths = list(snapshots) or newest(snap_dir, 2)
    if len(paths) == 1:
        click.echo(f"runsnap: comparing {paths[0]} with the current context (captured now)",
                   err=True)
    report = do_diff(*paths, rules=load_user_rules(os.getcwd()), ignore=ignore,
                     show_all=show_all)
    if color is None:
        color = (output is None and not os.environ.get("NO_COLOR")
                 and os.environ.get("TERM") != "dumb" and sys.stdout.isatty())
    text = render(report, fmt, color=color)
    if output:
        from pathlib import Path

        from runsnap.errors import UsageError
        from runsnap.snapshot import atomic_write

        try:
            atomic_write(Path(output), text.encode("utf-8"))
        except OSError as exc:
            raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
    else:
        click.echo(text, nl=False, color=color)  # click strips ANSI off a terminal otherwise
    sys.exit(1 if report else 0)


def main() -> None:
    """The ``runsnap`` console script."""
    cli(prog_name="runsnap")
