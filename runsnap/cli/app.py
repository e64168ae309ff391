"""The click application: the ``runsnap`` group and its commands, one module each
(``runsnap.cli.<command>``), added here with one line each.

``runsnap capture``, ``who-reads`` and a plain ``diff A B`` are usually parsed by
:func:`runsnap.cli.main` without importing click. The exit statuses are listed once, in
:data:`runsnap.errors.EXIT_STATUSES` (the README's table is checked against it).
"""

from __future__ import annotations

import click

from runsnap import __version__
from runsnap.cli.bisect import bisect
from runsnap.cli.boundary import CONTEXT_SETTINGS
from runsnap.cli.capture import capture
from runsnap.cli.check import check
from runsnap.cli.diff import DIFF_FORMATS, diff
from runsnap.cli.gc import gc
from runsnap.cli.ls import ls
from runsnap.cli.pin import pin
from runsnap.cli.replay import replay
from runsnap.cli.report import report
from runsnap.cli.scrub import scrub
from runsnap.cli.show import show
from runsnap.cli.unpin import unpin
from runsnap.cli.whoreads import who_reads
from runsnap.cli.why import why

__all__ = ["DIFF_FORMATS", "capture", "cli"]


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "-V", "--version", prog_name="runsnap")
def cli() -> None:
    """Snapshot the whole context of a launch, and say why two runs differ.

    \b
      runsnap capture -- python -m sglang.launch_server --model-path ...
      runsnap show .runsnap/<snapshot>.toml
      runsnap diff good.toml bad.toml
    """


cli.add_command(capture)
cli.add_command(show)
cli.add_command(check)
cli.add_command(ls)
cli.add_command(gc)
cli.add_command(scrub)
cli.add_command(who_reads)
cli.add_command(diff)
cli.add_command(report)
cli.add_command(replay)
cli.add_command(bisect)
cli.add_command(pin)
cli.add_command(unpin)
cli.add_command(why)
