"""A launch's argv edited as a trial applies a difference: a long option given another value,
added or removed; a positional argument replaced (:mod:`runsnap.experiments.applying`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runsnap.base.argv import looks_like_option, positional_indexes

__all__ = ["set_index", "set_option", "set_positional"]


def _option_spans(argv: Sequence[str], name: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each occurrence of long option ``name`` (with its value)."""
    spans = []
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            break
        if arg == name:
            end = i + 2 if i + 1 < len(argv) and not looks_like_option(argv[i + 1]) else i + 1
            spans.append((i, end))
            i = end
            continue
        if arg.startswith(name + "="):
            spans.append((i, i + 1))
        i += 1
    return spans


def set_option(argv: Sequence[str], name: str, value: Any) -> list[str]:
    """``argv`` with long option ``name`` given ``value`` (a string, True for a flag, a list
    for a repeated option, None to remove it), where it stood, or before ``--`` / at the end.

    >>> set_option(["srv", "--tp", "8", "--x"], "--tp", "4")
    ['srv', '--tp', '4', '--x']
    >>> set_option(["srv", "--tp=8", "--", "a"], "--ep", True), set_option(["s", "--x"], "--x", None)
    (['srv', '--tp=8', '--ep', '--', 'a'], ['s'])
    """
    argv = list(argv)
    spans = _option_spans(argv, name)
    where = spans[0][0] if spans else (argv.index("--") if "--" in argv[1:] else len(argv))
    for start, end in reversed(spans):
        del argv[start:end]
        if start < where:
            where -= end - start
    values = value if isinstance(value, list) else [] if value is None else [value]
    new: list[str] = []
    for v in values:
        new += [name] if v is True else [f"{name}={v}"] if looks_like_option(str(v)) else [name,
                                                                                          str(v)]
    argv[where:where] = new
    return argv


def set_positional(argv: Sequence[str], index: int, value: Any) -> list[str]:
    """``argv`` with its ``index``-th positional argument (long options and their values left
    out, as the diff counts them) replaced by ``value``."""
    slots = positional_indexes(argv)
    if index >= len(slots):
        return list(argv)
    return set_index(argv, slots[index], value)


def set_index(argv: Sequence[str], i: int, value: Any) -> list[str]:
    out = list(argv)
    if value is None:
        del out[i]
    else:
        out[i] = str(value)
    return out
