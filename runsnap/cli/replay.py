"""``runsnap replay``: launch again what a snapshot recorded (the work:
:mod:`runsnap.experiments.replaying`)."""

from __future__ import annotations

import sys
from typing import Any

import click

from runsnap.base.paths import shown
from runsnap.cli.asking import review, say_line
from runsnap.cli.boundary import CONTEXT_SETTINGS, runsnap_command
from runsnap.cli.complete import snapshot_names
from runsnap.cli.options import dir_option, output_option, yes_option

__all__ = ["replay"]


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("snapshot", type=click.Path(), shell_complete=snapshot_names)
@click.argument("extra", nargs=-1, type=click.UNPROCESSED)
@click.option("--strict", is_flag=True,
              help="Refuse when something cannot be restored (commit, packages, model, host).")
@click.option("--allow-missing-secrets", is_flag=True,
              help="Launch without a secret whose value is not here (its variable is unset).")
@click.option("--label", default=None, help="The replay's label (default: replay-<label>).")
@output_option(help="Where to write the replay's snapshot.")
@dir_option(dest="out_dir", default=None,
            help="Folder for the replay's snapshot, and of the snapshots named @N, @LABEL.")
@yes_option(help="Run without showing what will run and asking (needed without a terminal "
                 "for a snapshot from another host or user).")
@runsnap_command
def replay(snapshot: str, extra: tuple[str, ...], strict: bool, allow_missing_secrets: bool,
           label: str | None, output: str | None, out_dir: str | None, yes: bool) -> None:
    """Launch again what SNAPSHOT recorded, captured like `runsnap capture`.

    SNAPSHOT is a file, @1 (the newest in --dir), @2, ... or @LABEL.

    Same argv (EXTRA arguments after `--` are appended), working directory and environment:
    variables absent from the snapshot are removed, and a secret is taken from this
    environment when its fingerprint matches. Before launching, says what it cannot restore
    (another commit or dirty state, other packages, another model, another host or GPU).
    A snapshot from another host or user, or any snapshot when stdin is a terminal, is shown
    (argv, working directory, variables that run code at start-up) and asked about first;
    without a terminal it needs --yes. Exits with the command's status.
    """
    # only when this command runs, not for --help or the other commands (~254 ms measured under load)
    from runsnap.diffing.result import describe_change
    from runsnap.experiments.replaying import prepare
    from runsnap.experiments.replaying import replay as do_replay
    from runsnap.views.names import load

    snap = load(snapshot, out_dir)
    # only when this command runs, not for --help or the other commands (~47 ms measured under load)
    from runsnap.experiments.review import check_launchable

    check_launchable(snap)
    plan = prepare(snap, extra, allow_missing_secrets=allow_missing_secrets, strict=strict)
    review([snap], [(plan.spec.argv, plan.spec.cwd, plan.spec.env)], yes)
    for where in plan.restored.taken:
        say_line(f"{where}: secret taken from this environment (its fingerprint matches)")
    for where in plan.restored.missing:
        say_line(f"{where}: secret not restored ({where.split(': ', 1)[-1]}), launching without it")
    if plan.cannot:
        say_line(f"cannot restore {len(plan.cannot)} difference"
             f"{'s' if len(plan.cannot) != 1 else ''} with now:")
        for d in plan.cannot[:12]:
            say_line(f"  {d.where} {describe_change(d)}")
        if len(plan.cannot) > 12:
            say_line(f"  ... and {len(plan.cannot) - 12} more (runsnap diff {snapshot})")

    def announce(s: Any) -> None:
        say_line(f"snapshot {shown(s.path_text)}")

    record = do_replay(plan, label=label, output=output, out_dir=out_dir, on_saved=announce)
    if record.result.error:
        say_line(record.result.error)
    sys.exit(int(record.exit_status))
