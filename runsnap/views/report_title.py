"""The heading of a ``runsnap report``, as a maintainer would write it: the program, how it
ended, and the error's type with its first clause, in whole words within a GitHub title."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from runsnap.base.argv import is_python_name
from runsnap.snapshot import Snapshot
from runsnap.snapshot.records import Outcome

#: GitHub's limit on an issue title.
TITLE_MAX = 256


def title_of(s: Snapshot) -> str:
    """A heading a maintainer would write: the program, how it ended, the error's type and its
    first clause, in whole words, within a GitHub title's length."""
    o = s.records.outcome
    argv = [str(a) for a in s.records.command.argv]
    what = program_name(argv) if argv else "the current context"
    if not o:
        return what
    head = f"{what} {status_words(o)}"
    err = error_clause(str(o.first_error or ""))
    return whole_words(f"{head}: {err}" if err else head, TITLE_MAX)


def program_name(argv: Sequence[str]) -> str:
    """What a maintainer calls the program: the module of ``python -m``, the script a Python
    runs, else the command's own name.

    >>> program_name(["python3", "-m", "sglang.launch_server", "--tp", "8"])
    'sglang.launch_server'
    >>> program_name(["/usr/bin/python3", "-u", "fixtures/demo/launch_server.py", "--x"])
    'launch_server.py'
    >>> program_name(["torchrun", "--nproc-per-node", "8", "train.py"])
    'torchrun'
    """


    first = os.path.basename(argv[0])
    if not is_python_name(first):
        return first
    rest = list(argv[1:])
    while rest:
        arg = rest.pop(0)
        if arg == "-m" and rest:
            return rest[0]
        if arg.startswith("-m") and len(arg) > 2:
            return arg[2:]
        if arg == "-c":
            return f"{first} -c"
        if arg in ("-W", "-X", "--check-hash-based-pycs"):
            rest = rest[1:]
            continue
        if not arg.startswith("-"):
            return os.path.basename(arg)
    return first


def error_clause(error: str) -> str:
    """The error's type and the first clause of its message (up to the first sentence's end).

    >>> error_clause("ValueError: Warning: context_length (262144) is greater than the "
    ...              "derived context_length (131072). This may lead to errors.")
    'ValueError: Warning: context_length (262144) is greater than the derived context_length (131072)'

    >>> error_clause("RuntimeError: CUDA error: out of memory")
    'RuntimeError: CUDA error: out of memory'
    """

    line = error.strip().split("\n", 1)[0].strip()
    m = re.search(r"[.;!?](?=\s)", line)
    return line[:m.start()] if m else line.rstrip(".")


def whole_words(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, cut at a word's end (then ``…``), never inside
    a word.

    >>> whole_words("exited with status 1: ValueError: too long here", 30)
    'exited with status 1:…'
    """
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut).rstrip(" ,;") + "…"


def status_words(o: Outcome) -> str:
    if o.timed_out:
        return "timed out"
    if o.status == "signalled":
        return f"killed by {o.signal or 'a signal'}"
    if o.status in ("not_found", "not_executable", "failed"):
        return f"did not start ({o.error or o.status})"
    if o.has("exit_status"):
        return f"exited with status {o.exit_status}"
    return str(o.status or "")


# --------------------------------------------------------------------------- parts
