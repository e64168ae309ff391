"""The command line: click commands only. Each parses, calls the library, renders, and exits.

Exit statuses (documented in README):
    0  success; for ``diff``: no differences that count (noise alone counts as none)
    1  ``diff`` only: the snapshots differ
    2  usage or input error (bad option, missing or invalid snapshot), with a one-line message
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
    command: tuple[str, ...],
) -> None:
    """Snapshot the context of COMMAND (or, with no command, of this shell) into a TOML file.

    Put the command after `--`. The snapshot holds the command line, the environment (secrets
    replaced by fingerprints), git state, the child's installed packages, model configs, and
    host and GPU facts. The path written is printed.
    """
    from pathlib import Path

    from runsnap.capturing import capture as do_capture
    from runsnap.capturing import default_output

    snap = do_capture(
        command, label=label, repos=repos, models=models, python=python,
        max_diff_bytes=max_diff_bytes,
    )
    if output:
        target = Path(output)
    else:
        target = default_output(snap)
        if out_dir:
            target = Path(out_dir) / target.name
    snap = _save(snap, target)
    click.echo(str(snap.path))


def _save(snap: Any, target: Any) -> Any:
    from runsnap.errors import CaptureError

    try:
        return snap.save(target)
    except OSError as exc:
        raise CaptureError(f"cannot write {target}: {exc.strerror or exc}") from None


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
