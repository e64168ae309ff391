"""Everything the runs' words say about one difference, strongest first, for
:mod:`runsnap.diffing.evidence`: its key spelled out or its value quoted
(:func:`runsnap.diffing.naming.named`), an engine's own message it governs
(``knowledge/engine-messages.tsv``), a message that holds every word of its name
(:mod:`runsnap.diffing.bywords`), or an engine's message whose grammar implies its failing
value (``knowledge/implied-values.tsv``: ``1/2 clients joined`` for a world of 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runsnap.diffing.bywords import by_words, name_parts
from runsnap.diffing.naming import WARNED, engine_named, excerpt, last_words, named, texts
from runsnap.diffing.result import Difference
from runsnap.diffing.runfacts import RunFacts
from runsnap.knowledge.implied import implied

__all__ = ["implied_named", "said"]


def _whole(value: Any) -> int | None:
    text = str(value).strip() if value is not None and not isinstance(value, bool) else ""
    return int(text) if text.isdigit() else None


def implied_named(d: Difference, runs: Sequence[RunFacts]) -> tuple[str, int] | None:
    """(sentence, rank) when a line only the failing side printed is an engine's message that
    implies a value (``knowledge/implied-values.tsv``), ``d``'s name holds one of the words
    of that quantity (``world``, ``nprocs``, ``rank``...), and the value is ``d``'s on the
    failing side and not on the other: rank 1 for the error or the last lines, ``WARNED``
    for a warning."""
    if d.section not in ("env", "command", "models") or d.change == "reordered":
        return None
    parts = set(name_parts(str(d.path[-1]) if d.section == "models" else d.key))
    failing = any(f.failed and not f.shared_failure for f in runs)
    for where, text, rank, f in (*texts(runs), *last_words(runs)):
        if failing and not f.failed:
            continue
        if any(text in (*g.errors, *g.warnings, *g.tail) for g in runs if g is not f):
            continue
        mine, theirs = (d.b, d.a) if f.label == "B" else (d.a, d.b)
        for row, quantity, value, words in implied(text):
            if parts & set(words) and _whole(mine) == value and _whole(theirs) != value:
                return (f"{where} is {row.engine}'s own message \"{excerpt(text, '')}\" "
                        f"({row.source}): it implies {'world size' if quantity == 'world' else quantity} "
                        f"{value}, {f.label}'s value of {d.key}", max(rank, 1))
    return None


def said(d: Difference, runs: Sequence[RunFacts]) -> tuple[str, str, int, bool, bool] | None:
    """(kind, sentence, rank, corroborated, quoted): the strongest of what the runs' words say
    about ``d``, or None. ``failing-path`` when the failing error quotes the failing value of
    an input the run took in (``quoted``); ``named`` for the error or the failing run's last
    lines (``corroborated`` when the error itself quotes the value, an engine's message the
    difference governs or whose value it implies, the error naming it by its words); ``read``
    for what only a warning says (the value was seen, not that it failed)."""
    quote = named(d, runs)
    if quote is not None and quote[2]:
        # the error quotes the value of an input the failing run took in: it reached the code
        # that raised
        return "failing-path", quote[0], 0, True, True
    found: list[tuple[str, int, bool]] = []
    if quote is not None:
        found.append((quote[0], quote[1], quote[3] and quote[1] < WARNED))
    engine = engine_named(d, runs)
    if engine is not None:
        found.append((engine[0], engine[1], True))
    worded = by_words(d, runs)
    if worded is not None:  # the failing side's words, in its error or a warning of its own
        found.append((worded[0], worded[1], True))
    value = implied_named(d, runs)
    if value is not None:
        found.append((value[0], value[1], True))
    if not found:
        return None
    sentence, rank, backed = min(found, key=lambda f: f[1])
    if rank >= WARNED:
        # what only a warning says shows the value was seen, not that it failed: read; the
        # failing side's warning naming it by its words or implying its value backs it (first
        # among reads of the same score, never a margin)
        return "read", sentence, 0, backed and _failing_alone(runs), False
    return "named", sentence, rank, backed, False


def _failing_alone(runs: Sequence[RunFacts]) -> bool:
    """Whether one run failed and not the other: a warning of it is the failing side's."""
    return sum(1 for f in runs if f.failed and not f.shared_failure) == 1
