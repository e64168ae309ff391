"""``runsnap diff``: the click command (``runsnap diff A B ...`` with no option is read without
click, by :func:`runsnap.cli.main`); the work, as named steps, is
:func:`runsnap.commands.diff.run_diff`."""

from __future__ import annotations

import sys

import click

from runsnap.base.options import METRIC_TOLERANCE
from runsnap.cli.boundary import CONTEXT_SETTINGS, finish, runsnap_command
from runsnap.cli.complete import snapshot_names
from runsnap.cli.options import click_option, dir_option, echo, format_option, output_option

__all__ = ["DIFF_FORMATS", "diff"]

#: The ``--format`` names of ``diff``; a test checks they are exactly the renderers'
#: (kept here so that ``runsnap --help`` does not import the diff engine).
DIFF_FORMATS = ("text", "markdown", "json", "html")


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("snapshots", nargs=-1, type=click.Path(), shell_complete=snapshot_names)
@format_option(*DIFF_FORMATS, envvar="RUNSNAP_FORMAT")
@click.option("--all", "show_all", is_flag=True,
              help="Also list noise (PWD, SHLVL, SSH_*, timings...) and ignored differences.")
@click.option("--ignore", "ignore", multiple=True, metavar="PATTERN",
              help="Hide differences whose locator (env.NCCL_*, models.*.config.*), KEY or "
                   "SECTION.KEY matches this glob (repeatable).")
@click.option("--color/--no-color", "color", default=None,
              help="Colour the text report (default: on a terminal, unless NO_COLOR is set).")
@output_option()
@click_option(METRIC_TOLERANCE)
@click.option("--name-only", "name_only", is_flag=True,
              help="Only where the runs differ: one locator a line (env.NCCL_ALGO), most "
                   "likely cause first, as git diff --name-only lists files.")
@click.option("--stat", is_flag=True,
              help="Only the verdict and, per section, how many differences and which.")
@click.option("--section", "sections", multiple=True, metavar="NAME[,NAME]",
              help="Only these sections (env, packages, git, models, command, system, "
                   "outcome, runtime, check...; repeatable or comma-separated).")
@click.option("--no-runtime", is_flag=True,
              help="Leave out the [runtime] differences (what each run read and imported).")
@click.option("--patch", "-p", "patch", is_flag=True,
              help="Show the uncommitted code differences as git diff shows them: each "
                   "changed file's hunks, A's diff against B's.")
@click.option("-q", "--quiet", is_flag=True,
              help="Print nothing: the exit status says whether the runs differ.")
@dir_option
@runsnap_command
def diff(
    snapshots: tuple[str, ...],
    fmt: str,
    show_all: bool,
    ignore: tuple[str, ...],
    color: bool | None,
    output: str | None,
    metric_tolerance: tuple[str, ...],
    name_only: bool,
    stat: bool,
    sections: tuple[str, ...],
    no_runtime: bool,
    patch: bool,
    quiet: bool,
    snap_dir: str,
) -> None:
    """Say why runs differ, most likely cause first.

    \b
      runsnap diff A B        compare two snapshots
      runsnap diff A          A against the current context (captured now)
      runsnap diff A B C ...  N snapshots (ranks, nodes): the odd ones out
      runsnap diff snaps/123/ every snapshot in a folder (one per rank...)
      runsnap diff JOB_A/ JOB_B/  one job against another, rank against rank
      runsnap diff            the two newest snapshots in --dir (@2 @1)
      runsnap diff @good @1   snapshots by label or position (runsnap ls)

    Exit status: 0 no differences that count, 1 differences, 2 error.
    """
    from runsnap.commands.diff import DiffRequest, run_diff  # not for runsnap --help

    request = DiffRequest(snapshots=tuple(snapshots), fmt=fmt, show_all=show_all,
                          ignore=tuple(ignore), color=color, output=output, name_only=name_only,
                          stat=stat, sections=tuple(sections), no_runtime=no_runtime,
                          patch=patch, quiet=quiet, snap_dir=snap_dir,
                          metric_tolerance=tuple(metric_tolerance))
    sys.exit(finish(run_diff(request), echo))
