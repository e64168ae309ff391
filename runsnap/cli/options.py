"""Options as click declares them, from their one declaration as data
(:mod:`runsnap.base.options`): the options several commands share, ``--format``, ``--dir``,
``-o``/``--output`` and ``-y``/``--yes`` (pipx's ``_add_output_option``), and ``runsnap
capture``'s table (:data:`runsnap.capturing.options.CAPTURE_OPTIONS`), which the fast parser
(:mod:`runsnap.cli.fast`) reads too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from runsnap.base.options import DIR, FORMAT, OUTPUT, YES, Opt
from runsnap.capturing.options import CAPTURE_OPTIONS

__all__ = ["capture_options", "click_option", "dir_option", "echo", "format_option", "output_option",
           "table_options", "yes_option"]

F = TypeVar("F", bound=Callable[..., Any])

#: What each ``--format`` name is for, in the words of ``--help``.
_FORMAT_WORDS = {"text": "text for terminals", "json": "json for programs",
                 "markdown": "markdown for a GitHub issue",
                 "html": "html for a browser (one self-contained page)"}

class _Seconds(click.FloatRange):
    """A number of seconds: click's range, less NaN, which every comparison lets through."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None
                ) -> Any:
        got = super().convert(value, param, ctx)
        if got != got:  # NaN
            self.fail(f"{value!r} is not a number of seconds.", param, ctx)
        return got


_KINDS: dict[str, Any] = {
    "str": None, "path": click.Path(), "file": click.Path(dir_okay=False),
    "dir": click.Path(file_okay=False), "count": click.IntRange(min=0), "int": int,
    "seconds": _Seconds(min=0), "positive": click.IntRange(min=1),
    "after": _Seconds(min=0, min_open=True),
}


def click_option(opt: Opt) -> Callable[[F], F]:
    """The click declaration of an option declared as data."""
    if opt.kind == "flag":
        return click.option(*opt.flags, opt.dest, is_flag=True, help=opt.help)
    kind = click.Choice(opt.choices) if opt.kind == "choice" else _KINDS[opt.kind]
    return click.option(*opt.flags, opt.dest, type=kind, default=opt.default,
                        multiple=opt.multiple, envvar=opt.envvar, show_envvar=bool(opt.envvar),
                        metavar=opt.metavar,
                        show_default=opt.kind in ("count", "seconds", "choice"), help=opt.help)


def format_option(*names: str, default: str | None = None, envvar: str | None = None,
                  help: str | None = None) -> Callable[[F], F]:
    """``--format NAME``, one of ``names`` (the first is the default unless ``default`` says),
    into the parameter ``fmt``; the help says what each name is for unless ``help`` does.

    >>> callable(format_option("text", "json"))
    True
    """
    words = help or ", ".join(_FORMAT_WORDS[n] for n in names) + "."
    return click_option(FORMAT.but(choices=names, default=default or names[0], envvar=envvar,
                                   help=words))


def dir_option(func: F | None = None, *, dest: str = DIR.dest, default: str | None = DIR.default,
               help: str = DIR.help) -> Any:
    """``--dir DIR`` (``RUNSNAP_DIR``), the snapshot folder, into ``snap_dir``. A bare
    decorator, or called with the parameter's name, default and help of a command whose
    folder means more (replay and bisect write there too)."""
    option = click_option(DIR.but(dest=dest, default=default, help=help))
    return option if func is None else option(func)


def output_option(help: str = OUTPUT.help) -> Callable[[F], F]:
    """``-o FILE``/``--output FILE`` into ``output`` (None: standard output)."""
    return click_option(OUTPUT.but(help=help))


def yes_option(help: str) -> Callable[[F], F]:
    """``-y``/``--yes`` into ``yes``: go on without asking."""
    return click_option(YES.but(help=help))


def table_options(table: tuple[Opt, ...]) -> Callable[[F], F]:
    """Every option of a command's table, in the table's order (``--help`` lists them so)."""
    def decorate(func: F) -> F:
        for opt in reversed(table):
            func = click_option(opt)(func)
        return func

    return decorate


#: ``runsnap capture``'s options.
capture_options = table_options(CAPTURE_OPTIONS)


def echo(text: str, color: bool) -> None:
    """A command's output as click writes it (:func:`runsnap.cli.boundary.finish`'s writer for
    the click commands): colours kept only when asked for."""
    click.echo(text, nl=False, color=color)
