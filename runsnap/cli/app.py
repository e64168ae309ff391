"""The command line as click commands: each parses, calls the library, renders, and exits.

``runsnap capture`` is usually parsed by :func:`runsnap.cli.main` without importing click; its
options are declared once, in :mod:`runsnap.cli.options`, and turned into click options here.

Exit statuses (documented in README and docs/launch.md):
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

import json
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from runsnap import __version__
from runsnap.cli.boundary import CONTEXT_SETTINGS, runsnap_command, untrusted
from runsnap.cli.options import CAPTURE_OPTIONS, CaptureRequest, Opt
from runsnap.cli.shared import dir_option
from runsnap.cli.whoreads import run_who_reads
from runsnap.errors import UsageError

F = TypeVar("F", bound=Callable[..., Any])


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "-V", "--version", prog_name="runsnap")
def cli() -> None:
    """Snapshot the whole context of a launch, and say why two runs differ.

    \b
      runsnap capture -- python -m sglang.launch_server --model-path ...
      runsnap show .runsnap/<snapshot>.toml
      runsnap diff good.toml bad.toml
    """


def _click_option(opt: Opt) -> Callable[[F], F]:
    """The click declaration of one of capture's options (declared once, in runsnap.cli.options)."""
    kinds: dict[str, Any] = {
        "str": None, "path": click.Path(), "file": click.Path(dir_okay=False),
        "dir": click.Path(file_okay=False), "count": click.IntRange(min=0), "int": int,
        "seconds": click.FloatRange(min=0),
    }
    if opt.kind == "flag":
        return click.option(*opt.flags, opt.dest, is_flag=True, help=opt.help)
    return click.option(*opt.flags, opt.dest, type=kinds[opt.kind], default=opt.default,
                        multiple=opt.multiple, envvar=opt.envvar, show_envvar=bool(opt.envvar),
                        metavar=opt.metavar,
                        show_default=opt.kind in ("count", "seconds"), help=opt.help)


def _capture_options(func: F) -> F:
    for opt in reversed(CAPTURE_OPTIONS):
        func = _click_option(opt)(func)
    return func


@cli.command(context_settings={**CONTEXT_SETTINGS, "ignore_unknown_options": False})
@_capture_options
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@runsnap_command
def capture(**params: Any) -> None:
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
    # imported here: the other commands (diff above all) never need the capture journey
    from runsnap.cli.capture import run_capture

    sys.exit(run_capture(CaptureRequest.from_params(params)))


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("snapshot", required=False)
@click.option("--format", "fmt", type=click.Choice(("text", "json", "markdown")),
              default="text", show_default=True,
              help="text for terminals, json for programs, markdown for a GitHub issue.")
@click.option("--section", metavar="NAME",
              help="Show one section in full (packages: every distribution; env: every "
                   "variable; any other as TOML, as the snapshot holds it).")
@click.option("--all", "full", is_flag=True,
              help="Whole lines, even on a terminal (a pipe always gets them).")
@dir_option
@runsnap_command
def show(snapshot: str | None, fmt: str, section: str | None, full: bool,
         snap_dir: str) -> None:
    """Print a readable summary of SNAPSHOT: key facts first, then counts and errors.

    SNAPSHOT is a file, @1 (the newest in --dir), @2, ... or @LABEL; default @1.
    """
    from runsnap.base.terminal import neutralise_json, width
    from runsnap.render import show as showing
    from runsnap.views.names import load

    snap = load(snapshot or "@1", snap_dir)
    with untrusted(snap.path_text or str(snapshot)):
        if section:
            text = showing.render_section(snap, section, 0 if full else width())
            if fmt == "json":
                data = snap.meta if section == "meta" else snap.sections.get(section)
                text = neutralise_json(
                    json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
        else:
            text = showing.render(snap, fmt, width() if fmt == "text" and not full else 0)
    click.echo(text, nl=False)


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("snapshot", required=False)
@click.option("--format", "fmt", type=click.Choice(("text", "json", "markdown")),
              default="text", show_default=True,
              help="text for terminals, json for programs, markdown for a GitHub issue.")
@dir_option
@runsnap_command
def check(snapshot: str | None, fmt: str, snap_dir: str) -> None:
    """Find what is wrong inside SNAPSHOT, most important first.

    A misspelt variable (against the names the run read by name, the installed packages and
    runsnap's lists), a draft and a target model that disagree where speculative decoding
    needs agreement, a context length longer than the target's own, an unknown key in
    PYTORCH_CUDA_ALLOC_CONF, a package imported from somewhere other than where it is
    installed, unmet requirements as pip check finds them, a variable set to a value its
    reader cannot accept.

    SNAPSHOT is a file, @1 (the newest in --dir), @2, ... or @LABEL; default @1.
    Exit status: 0 no findings, 1 findings, 2 error.
    """
    from runsnap.base.terminal import width
    from runsnap.checks import check as check_snapshot
    from runsnap.diffing.static import readers_of
    from runsnap.render.check import render
    from runsnap.views.names import load

    snap = load(snapshot or "@1", snap_dir)
    report = check_snapshot(snap, who_reads=readers_of(snap), installed=True)
    click.echo(render(report, fmt, width=width()), nl=False)
    sys.exit(1 if report else 0)


@cli.command(name="ls", context_settings=CONTEXT_SETTINGS)
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text",
              show_default=True, help="text for terminals, json for programs.")
@click.option("--track", "track", type=click.Choice(("mlflow", "wandb")), default=None,
              help="List the runs of this experiment tracker that hold a snapshot instead.")
@click.option("--experiment", "experiment", metavar="NAME", default="",
              help="With --track: the MLflow experiment (default: MLFLOW_EXPERIMENT_NAME, else "
                   "Default), or the W&B ENTITY/PROJECT (default: the offline runs in ./wandb).")
@dir_option
@runsnap_command
def ls(fmt: str, track: str | None, experiment: str, snap_dir: str) -> None:
    """List the snapshots of --dir, newest first: @N, time, label, exit status, host, command.

    Name them @1 (the newest), @2, ... or @LABEL wherever a snapshot is taken. With --track,
    the tracked runs holding a snapshot, named mlflow:RUN_ID or wandb:... the same way.
    """
    from runsnap.base.terminal import width
    from runsnap.render.listing import render_listing
    from runsnap.snapshot.store import list_snapshots

    if track:
        from runsnap.views.names import tracked_entries

        entries = tracked_entries(track, experiment)
    else:
        if experiment:
            raise UsageError("--experiment goes with --track")
        entries = list_snapshots(snap_dir)
    click.echo(render_listing(entries, fmt, width()), nl=False)
    if fmt == "text" and not track:
        from runsnap.base.terminal import fit
        from runsnap.views.housekeeping import usage

        click.echo(fit(usage(snap_dir).line(snap_dir), width(sys.stderr)), err=True)


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.option("--keep", type=click.IntRange(min=0), default=None, metavar="N",
              help="Keep the newest N snapshots, remove the older ones.")
@click.option("--older-than", "older_than", metavar="WHEN", default=None,
              help="Remove those captured before WHEN: a date (2026-11-30, UTC) or an age "
                   "(12h, 7d, 2w).")
@click.option("--bisect", "bisect_only", is_flag=True,
              help="Only bisect trials (DIR/bisect-<id>/); alone: every bisect folder.")
@click.option("-n", "--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
@dir_option
@runsnap_command
def gc(keep: int | None, older_than: str | None, bisect_only: bool, dry_run: bool,
       snap_dir: str) -> None:
    """Remove old snapshots, or bisect trials, from --dir to free space.

    \b
      runsnap gc --keep 20            the newest 20 snapshots stay
      runsnap gc --older-than 7d      snapshots captured more than 7 days ago go
      runsnap gc --bisect             every bisect folder goes
      runsnap gc --keep 5 --dry-run   what would go, and the space it would free

    Only snapshots (*.toml) and bisect-* folders are removed. Exit status 0, 2 on error.
    """
    from runsnap.base.terminal import fit, width
    from runsnap.views.housekeeping import parse_age, plan, remove, size_text, usage

    if keep is None and older_than is None and not bisect_only:
        raise UsageError("gc: say what to remove: --keep N, --older-than WHEN or --bisect")
    if not os.path.isdir(snap_dir):
        raise UsageError(f"{snap_dir}: no such directory")
    try:
        before = parse_age(older_than) if older_than else None
    except ValueError as exc:
        raise UsageError(f"--older-than: {exc}") from None
    items = plan(snap_dir, keep, before, bisect_only)
    cols = width()
    for item in items:
        click.echo(fit(f"{'would remove' if dry_run else 'removing'} {item.path}  "
                       f"({size_text(item.size)}, {item.when[:19] or '?'})", cols))
    total = sum(i.size for i in items)
    what = "bisect folder" if bisect_only else "snapshot"
    count = f"{len(items)} {what}{'s' if len(items) != 1 else ''}"
    if dry_run:
        click.echo(f"runsnap: would remove {count} ({size_text(total)})", err=True)
        return
    freed = remove(items)
    click.echo(f"runsnap: removed {count} ({size_text(freed)} freed); "
               f"{usage(snap_dir).line(snap_dir)}", err=True)


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("snapshots", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--redact", "redact", multiple=True, metavar="NAME_OR_GLOB",
              help="Also treat values of this name as secrets (repeatable).")
@dir_option
@runsnap_command
def scrub(snapshots: tuple[str, ...], redact: tuple[str, ...], snap_dir: str) -> None:
    """Re-apply today's secret rules to SNAPSHOTS, rewriting each in place (atomically).

    SNAPSHOTS are files, @1 (the newest in --dir), @2, ... or @LABEL.

    Values found are replaced by fingerprints under this machine's key; the file is replaced
    whole or not at all. Prints, per file, how many places changed.
    """
    # imported here: the secret rules cost every other command's start-up (diff's above all)
    from runsnap.redact.scrub import scrub_file
    from runsnap.snapshot.store import resolve

    for path in [resolve(s, snap_dir) for s in snapshots]:
        changed = scrub_file(path, redact=redact)
        click.echo(f"{path}: {changed} place{'s' if changed != 1 else ''} redacted"
                   if changed else f"{path}: nothing to redact")


@cli.command(name="who-reads", context_settings=CONTEXT_SETTINGS)
@click.argument("names", nargs=-1, required=True, metavar="NAME...")
@click.option("--python", "python", metavar="PATH",
              help="The interpreter whose packages to search (default: python on PATH).")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text",
              show_default=True, help="text for terminals, json for programs.")
@click.option("--include-tests", is_flag=True,
              help="Also list places in tests, examples and benchmarks (after the rest).")
@runsnap_command
def who_reads(names: tuple[str, ...], python: str | None, fmt: str, include_tests: bool) -> None:
    """Where the installed packages declare, read or mention variable NAME.

    One line a place: distribution and version, file:line (a shared library: its path), and
    the kind: declaration (NAME = EnvBool(...)), read (os.getenv("NAME"), envs.NAME.get()),
    mention, library (a string in a shared library). The package's own code comes first;
    places in tests, examples and benchmarks are counted, and listed with --include-tests.
    Exit status 0: found, 1: nowhere.
    """
    sys.exit(run_who_reads(names, python, fmt, include_tests))


# commands of their own modules
from runsnap.cli.compare import DIFF_FORMATS, diff, report  # noqa: E402, F401 - DIFF_FORMATS: importable here too
from runsnap.cli.experiments import bisect, replay  # noqa: E402

cli.add_command(diff)
cli.add_command(report)
cli.add_command(replay)
cli.add_command(bisect)
from runsnap.cli.why import why  # noqa: E402

cli.add_command(why)
