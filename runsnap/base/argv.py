"""Reading a launch command line: its long options, its positional words, its interpreter.

The one parser of argv for capture (``[command] options``) and diff (options compared one by
one, the remaining words position by position), so the two always split a command line the same
way.
"""

from __future__ import annotations

import re

from runsnap.base.patterns import on_use

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["is_python_name", "looks_like_option", "parse_options", "positional_indexes", "positionals"]

_PYTHON_NAME = on_use(r"^(?:python|pypy)(?:\d+(?:\.\d+)*)?[tdmu]*(?:\.exe)?$")


def is_python_name(name: str) -> bool:
    """Whether a program's file name (no folder) is a Python interpreter's.

    >>> [is_python_name(n) for n in ("python", "python3.11", "python3.13t", "pypy3", "pythonw2x")]
    [True, True, True, True, False]
    """
    return _PYTHON_NAME.match(name) is not None


#: What an option can be: one or two dashes, a name of up to 100 letters, digits and ``_.:+-``
#: starting with a letter or digit, then maybe ``=value``. A PEM block (``-----BEGIN ...``), a
#: word with spaces or newlines in its name, or a longer one is a value, never an option name.
_OPTION_WORD = on_use(r"--?[A-Za-z0-9][A-Za-z0-9_.:+-]{0,99}(?:=.*)?", re.S)


def looks_like_option(arg: str) -> bool:
    """Whether a word of a command line is an option rather than a value.

    A negative number is a value, not an option; so is anything that cannot be an option's
    name (a PEM block, a word with spaces, a very long one).

    >>> looks_like_option("--tp"), looks_like_option("-3"), looks_like_option("-"), looks_like_option("8")
    (True, False, False, False)
    >>> looks_like_option("-----BEGIN PRIVATE KEY-----\\nMIIE"), looks_like_option("--a b")
    (False, False)
    """
    if not _OPTION_WORD.fullmatch(arg):
        return False
    try:
        float(arg)
    except ValueError:
        return True
    return False


def parse_options(argv: Sequence[str]) -> dict[str, Any]:
    """The long options in ``argv`` as a table, keyed by name without dashes.

    ``--k v`` and ``--k=v`` give a string, a bare flag gives ``true``, an option given more than
    once gives a list of its values in order. Everything after ``--`` is positional.

    >>> parse_options(["-m", "x", "--tp", "8", "--trust-remote-code", "--a=1", "--a", "2"])
    {'tp': '8', 'trust-remote-code': True, 'a': ['1', '2']}
    >>> parse_options(["--key", "-----BEGIN PRIVATE KEY-----\\nMII=", "-----BEGIN X-----", "--v"])
    {'key': '-----BEGIN PRIVATE KEY-----\\nMII=', 'v': True}
    """
    options: dict[str, Any] = {}

    def put(name: str, value: Any) -> None:
        if name not in options:
            options[name] = value
        elif isinstance(options[name], list):
            options[name].append(value)
        else:
            options[name] = [options[name], value]

    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            break
        if arg.startswith("--") and looks_like_option(arg):
            name, eq, value = arg[2:].partition("=")
            if eq:
                put(name, value)
            elif i + 1 < len(argv) and not looks_like_option(argv[i + 1]):
                put(name, argv[i + 1])
                i += 1
            else:
                put(name, True)
        i += 1
    return options


def positionals(argv: Sequence[str]) -> list[str]:
    """``argv`` without its long options and their values (what :func:`parse_options` reads
    from ``argv[1:]``), the program included.

    >>> positionals(["python", "-m", "srv", "--tp", "8", "--flag", "--x=1", "--", "--y"])
    ['python', '-m', 'srv', '--', '--y']
    """
    return [argv[i] for i in positional_indexes(argv)]


def positional_indexes(argv: Sequence[str]) -> list[int]:
    """Where the words of :func:`positionals` stand in ``argv`` (replay and bisect change the
    N-th positional word the diff counted in place).

    >>> positional_indexes(["python", "-m", "srv", "--tp", "8", "--", "--y"])
    [0, 1, 2, 5, 6]
    """
    out: list[int] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--" and i > 0:
            out += range(i, len(argv))
            break
        if i > 0 and arg.startswith("--") and looks_like_option(arg):
            if "=" not in arg and i + 1 < len(argv) and not looks_like_option(argv[i + 1]):
                i += 1
        else:
            out.append(i)
        i += 1
    return out
