"""``[command]``: argv as given, cwd, the resolved executable and the parsed long options."""

from __future__ import annotations

import os

from runsnap.base.argv import parse_options

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.capturing.context import CaptureContext
    from runsnap.snapshot.shapes import CommandSection


def collect(ctx: CaptureContext) -> CommandSection:
    """``{"argv", "cwd", "executable", "executable_real", "options", "errors"}``."""
    errors: list[str] = []
    argv = list(ctx.argv)
    section: CommandSection = {"argv": argv, "cwd": ctx.cwd}
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
