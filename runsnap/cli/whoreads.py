"""``runsnap who-reads``: the click command (a plain command line is read without click, by
:func:`runsnap.cli.main`); the work and the options' table are in
:mod:`runsnap.commands.whoreads`."""

from __future__ import annotations

import sys

import click

from runsnap.cli.boundary import CONTEXT_SETTINGS, finish, runsnap_command
from runsnap.cli.options import echo, table_options
from runsnap.commands.whoreads import WHO_READS_OPTIONS, run_who_reads

__all__ = ["who_reads"]


@click.command(name="who-reads", context_settings=CONTEXT_SETTINGS)
@click.argument("names", nargs=-1, required=True, metavar="NAME...")
@table_options(WHO_READS_OPTIONS)
@runsnap_command
def who_reads(names: tuple[str, ...], python: str | None, fmt: str, include_tests: bool) -> None:
    """Where the installed packages declare, read or mention variable NAME.

    One line a place: distribution and version, file:line (a shared library: its path), and
    the kind: declaration (NAME = EnvBool(...)), read (os.getenv("NAME"), envs.NAME.get()),
    mention, library (a string in a shared library). The package's own code comes first;
    places in tests, examples and benchmarks are counted, and listed with --include-tests.
    Exit status 0: found, 1: nowhere.
    """
    sys.exit(finish(run_who_reads(names, python, fmt, include_tests), echo))
