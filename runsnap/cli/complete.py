"""Shell completion of snapshot arguments: files, and ``@N`` / ``@LABEL`` / ``@pinned`` from
the snapshot folder, through click's own completion protocol (docs/commands.md, "Shell
completion": ``_RUNSNAP_COMPLETE=bash_source runsnap`` and its zsh and fish forms)."""

from __future__ import annotations

import click
from click.shell_completion import CompletionItem

__all__ = ["snapshot_names"]


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
    # the snapshot loader: only when a shell asks for completions
    from runsnap.views.names import references

    return [CompletionItem(ref, help=words)
            for ref, words in references(ctx.params.get("snap_dir"), incomplete)]
