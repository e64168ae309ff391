"""What each command does once its options are known, free of click: the journeys run as
named steps, one module per command whose work is more than a call (nox's ``tasks``).

Both faces of the command line call these: the click commands (``runsnap.cli.<command>``)
and the fast paths of ``runsnap.cli.main`` that skip click (capture, who-reads, a plain diff).
Each returns its command's :class:`Result`; the command line turns it into output and an exit
status in one place (``runsnap.cli.boundary.finish``).
"""

from __future__ import annotations

from runsnap.base.records import FrozenRecord
from runsnap.errors import OK

__all__ = ["Result"]


class Result(FrozenRecord):
    """What a command has to say: the text for standard output (or for the file ``output``),
    lines for standard error after it, and the exit status (:data:`runsnap.errors.EXIT_STATUSES`).

    >>> Result("same\\n").status, bool(Result(status=1))
    (0, True)
    """

    text: str = ""
    """What the command prints on standard output, or writes into ``output``."""
    status: int = OK
    """The exit status."""
    output: str | None = None
    """Where ``text`` goes instead of standard output (``-o FILE``), written atomically."""
    color: bool = False
    """``text`` holds colours meant for the terminal."""
    notes: tuple[str, ...] = ()
    """Lines for standard error, after the text (each without its newline)."""
