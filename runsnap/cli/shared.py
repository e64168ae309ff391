"""Click options more than one command takes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["DIR_HELP", "dir_option"]

F = TypeVar("F", bound=Callable[..., Any])

#: Where ``show``, ``ls`` and ``diff`` look for snapshots named ``@N`` / ``@label``.
DIR_HELP = "Folder of the snapshots named @1 (newest), @2, @label (default: ./.runsnap)."


def dir_option(func: F) -> F:
    return click.option("--dir", "snap_dir", envvar="RUNSNAP_DIR",
                        type=click.Path(file_okay=False), default=".runsnap",
                        show_envvar=True, help=DIR_HELP)(func)
