"""The command lines runsnap reads without click, one parser for all: ``runsnap capture
[OPTIONS] [-- COMMAND...]`` (:func:`parse_capture`), ``runsnap who-reads NAME... [OPTIONS]``
(:func:`parse_who_reads`) and ``runsnap diff A B ...`` with no option (:func:`plain_diff`).

Each reads its command's options from their one declaration (:mod:`runsnap.base.options`:
capture's table, who-reads' table), as click does (:mod:`runsnap.cli.options`). Anything the
parser is not sure of (``--help``, a mistake, an unknown option, a positional word before
capture's ``--``) it leaves to click (``None``), which gives the help text and the error
messages. A property test checks that every command line the capture parser accepts gets
exactly the values click would give.

This module stays free of click: it is on the path of every capture.
"""

from __future__ import annotations

import os

from runsnap.base.options import DIR
from runsnap.capturing.options import CAPTURE_OPTIONS
from runsnap.commands.whoreads import WHO_READS_OPTIONS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from runsnap.base.options import Opt
    from runsnap.commands.diff import DiffRequest

__all__ = ["parse_capture", "parse_line", "parse_who_reads", "plain_diff"]


class _Unsure(Exception):
    """The fast parser leaves this command line to click."""


def _value(opt: Opt, raw: str) -> Any:
    """``raw`` as click would convert it, or :class:`_Unsure` where click might refuse it."""
    kind = opt.kind
    if kind == "choice":
        if raw not in opt.choices:
            raise _Unsure
        return raw
    if kind in ("str", "path"):
        return raw
    if kind == "file":
        if os.path.isdir(raw):
            raise _Unsure
        return raw
    if kind == "dir":
        if os.path.exists(raw) and not os.path.isdir(raw):
            raise _Unsure
        return raw
    try:
        number: float = float(raw) if kind == "seconds" else int(raw)
    except ValueError:
        raise _Unsure from None
    if kind in ("count", "seconds") and not number >= 0:  # negative, or NaN: click refuses
        raise _Unsure
    return number


def parse_line(args: Sequence[str], table: Sequence[Opt], environ: Mapping[str, str],
               words: bool = False) -> dict[str, Any] | None:
    """The values of ``table``'s options (keyed by ``dest``, defaults and ``environ``'s
    variables filled in) given ``args``, or None for click. ``words``: positional words may
    stand anywhere and are collected under ``"words"``; else the first positional word is
    ``--``, and what follows it is ``"command"``.

    Accepted: ``--name VALUE``, ``--name=VALUE``, ``-o VALUE``, flags, repeated options (the
    last one wins, multiple ones add up).

    >>> parse_line(["x", "--dir=d", "y"], [DIR], {}, words=True)
    {'snap_dir': 'd', 'words': ('x', 'y')}
    """
    params: dict[str, Any] = {o.dest: [] if o.multiple else o.default for o in table}
    by_flag = {flag: opt for opt in table for flag in opt.flags}
    given: set[str] = set()
    found: list[str] = []
    i = 0
    try:
        while i < len(args):
            arg = args[i]
            i += 1
            if arg == "--" and not words:
                break
            name, eq, attached = arg.partition("=") if arg.startswith("--") else (arg, "", "")
            opt = by_flag.get(name)
            if opt is None:
                if not words or not arg or arg.startswith("-"):
                    return None  # a positional word, --help, a typo: click knows what to say
                found.append(arg)
                continue
            if opt.kind == "flag":
                if eq:
                    return None
                params[opt.dest] = True
                continue
            if eq:
                raw = attached
            elif i < len(args):
                raw = args[i]
                i += 1
            else:
                return None
            value = _value(opt, raw)
            if opt.multiple:
                params[opt.dest].append(value)
            else:
                params[opt.dest] = value
            given.add(opt.dest)
        for opt in table:
            if opt.envvar and opt.dest not in given and environ.get(opt.envvar):
                params[opt.dest] = _value(opt, environ[opt.envvar])
    except _Unsure:
        return None
    for opt in table:
        if opt.multiple:
            params[opt.dest] = tuple(params[opt.dest])
    if words:
        params["words"] = tuple(found)
    else:
        params["command"] = tuple(args[i:])
    return params


def parse_capture(args: Sequence[str], environ: Any = None) -> dict[str, Any] | None:
    """The values of capture's options (:data:`CAPTURE_OPTIONS`) and its ``command`` for
    ``runsnap capture ARGS``, or None for click.

    >>> parse_capture(["--label", "a", "--", "python", "-c", "pass"], {})["command"]
    ('python', '-c', 'pass')
    """
    return parse_line(args, CAPTURE_OPTIONS, os.environ if environ is None else environ)


def parse_who_reads(args: Sequence[str]) -> dict[str, Any] | None:
    """The keyword arguments of :func:`runsnap.commands.whoreads.run_who_reads` for ``runsnap
    who-reads ARGS``, or None when click should parse them.

    >>> parse_who_reads(["A_B", "--python", "/v/bin/python", "--format=json", "C"])
    {'python': '/v/bin/python', 'fmt': 'json', 'include_tests': False, 'names': ('A_B', 'C')}
    >>> parse_who_reads(["A_B", "--include-tests"])["include_tests"]
    True
    >>> parse_who_reads(["--help"]) is None, parse_who_reads([]) is None
    (True, True)
    """

    params = parse_line(args, WHO_READS_OPTIONS, {}, words=True)
    if params is None or not params["words"]:
        return None
    params["names"] = params.pop("words")
    return params


def plain_diff(args: Sequence[str], environ: Mapping[str, str]) -> DiffRequest | None:
    """The request of ``runsnap diff A B ...`` (``args`` after ``diff``) when the command line
    has two snapshots or more and nothing that looks like an option, and no variable sets an
    option (``RUNSNAP_FORMAT``); else ``None`` (click parses it).

    >>> plain_diff(["a.toml", "b.toml"], {"RUNSNAP_DIR": "/s"}).snap_dir
    '/s'
    >>> plain_diff(["a.toml", "--all", "b.toml"], {}), plain_diff(["a.toml"], {})
    (None, None)
    """
    params = parse_line(args, (), environ, words=True)
    if params is None or len(params["words"]) < 2 or environ.get("RUNSNAP_FORMAT"):
        return None
    from runsnap.commands.diff import DiffRequest  # not on a capture's way

    return DiffRequest(snapshots=params["words"], snap_dir=environ.get("RUNSNAP_DIR") or DIR.default)
