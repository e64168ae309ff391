"""``runsnap show``: a snapshot's key facts, or one section in full."""

from __future__ import annotations

import json
import sys

import click

from runsnap.base.terminal import neutralise_json, width
from runsnap.cli.boundary import CONTEXT_SETTINGS, finish, runsnap_command
from runsnap.cli.complete import snapshot_names
from runsnap.cli.options import dir_option, echo, format_option, output_option
from runsnap.commands import Result

__all__ = ["show"]


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("snapshot", required=False, shell_complete=snapshot_names)
@format_option("text", "json", "markdown", "html")
@output_option()
@click.option("--section", metavar="NAME",
              help="Show one section in full (packages: every distribution; env: every "
                   "variable; any other as TOML, as the snapshot holds it).")
@click.option("--all", "full", is_flag=True,
              help="Whole lines, even on a terminal (a pipe always gets them), and every "
                   "variable the run read while unset (else counted on one line).")
@dir_option
@runsnap_command
def show(snapshot: str | None, fmt: str, output: str | None, section: str | None, full: bool,
         snap_dir: str) -> None:
    """Print a readable summary of SNAPSHOT: key facts first, then counts and errors.

    SNAPSHOT is a file, @1 (the newest in --dir), @2, ... or @LABEL; default @1.
    """
    # only when this command runs, not for --help or the other commands (~176 ms measured under load)
    from runsnap.render import show as showing
    from runsnap.views.names import load

    snap = load(snapshot or "@1", snap_dir)
    if section:
        text = showing.render_section(snap, section, 0 if full or output else width())
        if fmt == "json":
            data = snap.meta if section == "meta" else snap.sections.get(section)
            text = neutralise_json(
                json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
        elif fmt == "html":
            text = showing.page(f"runsnap snapshot {snap.id[:12]}: [{section}]", [(section, text)])
    else:
        text = showing.render(snap, fmt, width() if fmt == "text" and not (full or output) else 0,
                              every_read=full)
    sys.exit(finish(Result(text, output=output), echo))
