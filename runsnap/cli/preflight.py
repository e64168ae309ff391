"""A click command whose arguments after ``--`` are a command line of their own: ``runsnap
check -- COMMAND`` (:mod:`runsnap.commands.check`) told apart from ``runsnap check SNAPSHOT``."""

from __future__ import annotations

import click

__all__ = ["AfterDashes"]


class AfterDashes(click.Command):
    """A click command whose arguments after ``--`` are a command line of their own, kept in
    ``ctx.meta["runsnap.command"]`` (None when there is no ``--``): ``check -- COMMAND`` is then
    told apart from ``check SNAPSHOT``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            at = args.index("--")
            ctx.meta["runsnap.command"] = args[at + 1:]
            args = args[:at]
        else:
            ctx.meta["runsnap.command"] = None
        return super().parse_args(ctx, args)
