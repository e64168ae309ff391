"""``runsnap diff`` and ``runsnap report`` as click commands: both load snapshots, compare or
summarise them through the library, render, and choose the exit status (:mod:`runsnap.cli.app`
adds them to the group)."""

from __future__ import annotations

import sys

import click

from runsnap.cli.boundary import CONTEXT_SETTINGS, runsnap_command
from runsnap.cli.shared import dir_option
from runsnap.errors import UsageError
from runsnap.snapshot import atomic_write

#: The ``--format`` names of ``diff``; a test checks they are exactly the renderers'
#: (kept here so that ``runsnap --help`` does not import the diff engine).
DIFF_FORMATS = ("text", "markdown", "json")


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("snapshots", nargs=-1, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(DIFF_FORMATS), default="text",
              envvar="RUNSNAP_FORMAT", show_envvar=True, show_default=True,
              help="text for terminals, markdown for a GitHub issue, json for programs.")
@click.option("--all", "show_all", is_flag=True,
              help="Also list noise (PWD, SHLVL, SSH_*, timings...) and ignored differences.")
@click.option("--ignore", "ignore", multiple=True, metavar="PATTERN",
              help="Hide differences whose locator (env.NCCL_*, models.*.config.*), KEY or "
                   "SECTION.KEY matches this glob (repeatable).")
@click.option("--color/--no-color", "color", default=None,
              help="Colour the text report (default: on a terminal, unless NO_COLOR is set).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the report to this file instead of standard output.")
@click.option("--metric-tolerance", "metric_tolerance", multiple=True, metavar="[NAME=]TOL",
              help="How far a metric may move and still be noise, relative to the larger "
                   "value (0.001 or 0.1%; 0 for bit-exact runs; NAME may be a glob; "
                   "repeatable; default 1%, 50% for speed and time).")
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

    from runsnap.cli.comparing import DiffRequest, run_diff

    request = DiffRequest(snapshots=tuple(snapshots), fmt=fmt, show_all=show_all,
                          ignore=tuple(ignore), color=color, output=output, name_only=name_only,
                          stat=stat, sections=tuple(sections), no_runtime=no_runtime,
                          patch=patch, quiet=quiet, snap_dir=snap_dir,
                          metric_tolerance=tuple(metric_tolerance))
    sys.exit(run_diff(request, lambda text, color: click.echo(text, nl=False, color=color)))


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("snapshots", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(("markdown", "text", "json")),
              default="markdown", show_default=True,
              help="markdown to paste into a GitHub issue, text to read, json for programs.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the report to this file instead of standard output.")
@click.option("--max-chars", type=click.IntRange(min=2000), default=65536, show_default=True,
              help="Fit the report in this many characters (GitHub's limit by default); the "
                   "least important parts are trimmed first, and the report says which.")
@click.option("--attach", "attach_dir", type=click.Path(file_okay=False), default=None,
              help="Also write the full snapshots (scrubbed) into this folder as .txt files "
                   "GitHub accepts as attachments; the report says to attach them.")
@dir_option
@runsnap_command
def report(snapshots: tuple[str, ...], fmt: str, output: str | None, max_chars: int,
           attach_dir: str | None, snap_dir: str) -> None:
    """A bug report ready to paste: SNAPSHOT's command, outcome (first error, traceback,
    warnings), the facts maintainers ask for (Python, OS, GPU, driver, CUDA, NCCL, torch,
    sglang, vllm, transformers, flashinfer, triton...), the variables that matter, git state
    and model configs. With SNAPSHOT_B: B is the run reported, A the reference, and the
    ranked diff between them comes second.

    \b
      runsnap report bad.toml | gh issue create --body-file -
      runsnap report good.toml bad.toml --attach report-files/
    """
    from runsnap.render.bugreport import render as render_report
    from runsnap.views.bugreport import attach, build
    from runsnap.views.names import load as load_ref

    if len(snapshots) > 2:
        raise UsageError("report takes one snapshot, or two (A the reference, B the run "
                         "reported); for more, use runsnap diff")
    doc = build([load_ref(s, snap_dir) for s in snapshots])
    files: list[str] = []
    if attach_dir:
        try:
            files = attach(doc, attach_dir)
        except OSError as exc:
            raise UsageError(f"cannot write into {attach_dir}: {exc.strerror or exc}") from None
    from runsnap.base.terminal import width

    text = render_report(doc, fmt, max_chars, files, width=0 if output else width())
    if output:
        try:
            atomic_write(output, text.encode("utf-8"))
        except OSError as exc:
            raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
        click.echo(f"runsnap: report written to {output} ({len(text):,} characters)", err=True)
    else:
        click.echo(text, nl=False)
