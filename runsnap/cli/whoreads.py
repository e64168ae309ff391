"""``runsnap who-reads``: its body, and a parser for plain command lines that skips click.

A repeated search is answered from the cache in milliseconds, so the command's own start-up
is most of its cost: :func:`parse_who_reads` takes ``NAME... [--python PATH] [--format
text|json]`` without importing click (anything else, ``--help`` or a mistake, goes to click,
which says what is wrong). Both faces call :func:`run_who_reads`.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["FORMATS", "parse_who_reads", "run_who_reads"]

#: The ``--format`` names of ``who-reads``.
FORMATS = ("text", "json")


def parse_who_reads(args: Sequence[str]) -> dict[str, Any] | None:
    """The keyword arguments of :func:`run_who_reads` for ``runsnap who-reads ARGS``, or None
    when click should parse them.

    >>> parse_who_reads(["A_B", "--python", "/v/bin/python", "--format=json", "C"])
    {'names': ('A_B', 'C'), 'python': '/v/bin/python', 'fmt': 'json', 'include_tests': False}
    >>> parse_who_reads(["A_B", "--include-tests"])["include_tests"]
    True
    >>> parse_who_reads(["--help"]) is None, parse_who_reads([]) is None
    (True, True)
    """
    names: list[str] = []
    params: dict[str, Any] = {"python": None, "fmt": "text", "include_tests": False}
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        flag, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if arg == "--include-tests":
            params["include_tests"] = True
        elif flag in ("--python", "--format"):
            if not eq:
                if i >= len(args):
                    return None
                value = args[i]
                i += 1
            if flag == "--format" and value not in FORMATS:
                return None
            params["python" if flag == "--python" else "fmt"] = value
        elif arg.startswith("-") or not arg:
            return None
        else:
            names.append(arg)
    if not names:
        return None
    return {"names": tuple(names), **params}


def run_who_reads(names: Sequence[str], python: str | None, fmt: str,
                  include_tests: bool = False) -> int:
    """Search, print, and return the exit status: 0 found, 1 nowhere. Places in tests,
    examples and benchmarks are counted, and listed (after the rest) with ``include_tests``."""
    from runsnap.base.terminal import clean, width, wrap
    from runsnap.render.whoreads import render
    from runsnap.whoreads.search import in_tests, who_reads

    every = who_reads(names, python)
    hits = every if include_tests else [h for h in every if not in_tests(h.path)]
    sys.stdout.write(render(hits, fmt, width() if fmt == "text" else 0))
    sys.stdout.flush()
    hidden = len(every) - len(hits)
    if fmt == "text" and hidden:
        sys.stderr.write(f"runsnap: {hidden} more in tests, examples and benchmarks "
                         f"(--include-tests lists them)\n")
    if fmt == "text" and not every:
        line = f"runsnap: {', '.join(names)}: no installed package names it"
        sys.stderr.write("".join(f"{part}\n" for part in wrap(clean(line), width(), "  ")))
    return 0 if every else 1
