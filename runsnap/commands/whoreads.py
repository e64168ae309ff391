"""What ``runsnap who-reads`` does once its options are known, and its options, declared once.

A repeated search is answered from the cache in milliseconds, so the command's own start-up
is most of its cost: ``runsnap.cli.fast.parse_who_reads`` reads :data:`WHO_READS_OPTIONS`
without importing click (anything else, ``--help`` or a mistake, goes to click, which reads
the same table). Both faces call :func:`run_who_reads`.
"""

from __future__ import annotations

from runsnap.base.options import FORMAT, Opt
from runsnap.commands import Result
from runsnap.errors import NO, OK

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["FORMATS", "WHO_READS_OPTIONS", "run_who_reads"]

#: The ``--format`` names of ``who-reads``.
FORMATS = ("text", "json")

#: ``runsnap who-reads``' options, in the order ``--help`` lists them.
WHO_READS_OPTIONS = (
    Opt(("--python",), "python", metavar="PATH",
        help="The interpreter whose packages to search (default: python on PATH)."),
    FORMAT.but(choices=FORMATS, default="text", help="text for terminals, json for programs."),
    Opt(("--include-tests",), "include_tests", kind="flag", default=False,
        help="Also list places in tests, examples and benchmarks (after the rest)."),
)


def run_who_reads(names: Sequence[str], python: str | None, fmt: str,
                  include_tests: bool = False) -> Result:
    """The places found, and the exit status: 0 found, 1 nowhere. Places in tests, examples
    and benchmarks are counted, and listed (after the rest) with ``include_tests``."""
    # deferred: runsnap.base.terminal, runsnap.render.whoreads, runsnap.whoreads.search, ~78 ms measured under
    # load; only run_who_reads() needs it
    from runsnap.base.terminal import clean, width, wrap
    from runsnap.render.whoreads import render
    from runsnap.whoreads.search import in_tests, who_reads

    every = who_reads(names, python)
    hits = every if include_tests else [h for h in every if not in_tests(h.path)]
    text = render(hits, fmt, width() if fmt == "text" else 0)
    notes: list[str] = []
    hidden = len(every) - len(hits)
    if fmt == "text" and hidden:
        notes.append(f"runsnap: {hidden} more in tests, examples and benchmarks "
                     f"(--include-tests lists them)")
    if fmt == "text" and not every:
        line = f"runsnap: {', '.join(names)}: no installed package names it"
        notes += wrap(clean(line), width(), "  ")
    return Result(text, OK if every else NO, notes=tuple(notes))
