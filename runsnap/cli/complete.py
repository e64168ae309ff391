"""Shell completion of snapshot arguments: files, and ``@N`` / ``@LABEL`` / ``@pinned`` from
the snapshot folder, through click's own completion protocol (docs/commands.md, "Shell
completion": ``_RUNSNAP_COMPLETE=bash_source runsnap`` and its zsh and fish forms)."""

from __future__ import annotations

import click
from click.shell_completion import CompletionItem

__all__ = ["snapshot_names"]

#: The most ``@N`` positions offered (a folder of thousands completes its newest ones).
POSITIONS = 20


def snapshot_names(ctx: click.Context, param: click.Parameter, incomplete: str
                   ) -> list[CompletionItem]:
    """What a snapshot argument completes to: ``@N`` (with the run's label, time and command
    as help), ``@LABEL`` and ``@pinned`` of ``--dir`` when ``incomplete`` is empty or starts
    with ``@``, and files otherwise (the shell lists them; bash lists the names alone when
    nothing is typed yet)."""
    if incomplete and not incomplete.startswith("@"):
        return [CompletionItem(incomplete, type="file")]
    # files first: bash's script starts over on a "file" item, then adds the names after it
    return [CompletionItem(incomplete, type="file")] * (not incomplete) + _references(
        ctx, incomplete)


def _references(ctx: click.Context, incomplete: str) -> list[CompletionItem]:
    import shlex

    from runsnap.errors import RunsnapError
    from runsnap.snapshot.store import PINNED, default_dir, is_reference, list_snapshots

    folder = ctx.params.get("snap_dir") or default_dir()
    try:
        entries = [e for e in list_snapshots(folder) if not e.error]
    except RunsnapError:  # no folder yet: nothing to name, and completion never complains
        return []
    out: list[CompletionItem] = []
    for e in entries[:POSITIONS]:
        what = " ".join(x for x in (e.label, e.captured_at[:19],
                                    shlex.join(e.command)[:60] if e.command else "") if x)
        out.append(CompletionItem(e.ref, help=what))
    seen = set()
    for e in entries:
        if is_reference(f"@{e.label}") and e.label not in seen and not e.label.isdigit():
            seen.add(e.label)
            out.append(CompletionItem(f"@{e.label}", help=f"newest labelled {e.label}"))
    if any(e.pinned for e in entries):
        out.append(CompletionItem(f"@{PINNED}", help="newest pinned"))
    return [i for i in out if str(i.value).startswith(incomplete)]
