"""``[command]``: argv as given, cwd, the resolved executable and the parsed long options."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from runsnap.context import CaptureContext


def parse_options(argv: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """The long options in ``argv`` as a table, keyed by name without dashes.

    ``--k v`` and ``--k=v`` give a string, a bare flag gives ``true``, an option given more than
    once gives a list of its values in order. Everything after ``--`` is positional.

    >>> parse_options(["-m", "x", "--tp", "8", "--trust-remote-code", "--a=1", "--a", "2"])
    {'tp': '8', 'trust-remote-code': True, 'a': ['1', '2']}
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
        if arg.startswith("--") and len(arg) > 2:
            name, eq, value = arg[2:].partition("=")
            if eq:
                put(name, value)
            elif i + 1 < len(argv) and not _looks_like_option(argv[i + 1]):
                put(name, argv[i + 1])
                i += 1
            else:
                put(name, True)
        i += 1
    return options


def _looks_like_option(arg: str) -> bool:
    if not arg.startswith("-") or arg == "-":
        return False
    # A negative number is a value, not an option.
    try:
        float(arg)
    except ValueError:
        return True
    return False


def collect(ctx: CaptureContext) -> dict[str, Any]:
    """``{"argv", "cwd", "executable", "executable_real", "options", "errors"}``."""
    errors: list[str] = []
    argv = list(ctx.argv)
    section: dict[str, Any] = {"argv": argv, "cwd": ctx.cwd}
    if argv:
        exe = ctx.executable
        if exe is None:
            errors.append(f"{argv[0]}: not found on the child's PATH")
            section["executable"] = ""
            section["executable_real"] = ""
        else:
            section["executable"] = exe
            section["executable_real"] = os.path.realpath(exe)
        section["options"] = parse_options(argv[1:])
    else:
        section["options"] = {}
    if not os.path.isdir(ctx.cwd):
        errors.append(f"{ctx.cwd}: working directory does not exist")
    section["errors"] = errors
    return section
