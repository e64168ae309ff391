"""Values an engine's message implies (``implied-values.tsv``): ``1/2 clients joined`` says the
c10d store waited for a world of 2 ranks, ``as rank 1 in a world of size 4`` that the job had
4. Each row keeps its provenance: the source file and line in the engine's public repository,
and whether an incident of the tune half exercises it."""

from __future__ import annotations

import functools
import re

from runsnap.base.records import FrozenRecord
from runsnap.knowledge import rule_lines

__all__ = ["ImpliedValue", "implied", "rows"]

# {world} and {rank}: the values; printf fields (%s, %d, %p) and bare {} stand for any text
_FIELD = re.compile(r"\{(world|rank)\}|%[-+ #0-9.]*(?:l|z)?[sdiuxXfgcp]|\{\}")


class ImpliedValue(FrozenRecord):
    """One row of ``implied-values.tsv``."""

    engine: str
    message: str
    quantities: tuple[tuple[str, tuple[str, ...]], ...]
    """(``world`` or ``rank``, the words an input's name holds one of to carry it)."""
    source: str
    half: str

    @property
    def pattern(self) -> re.Pattern[str]:
        """The message as a regular expression over one line, a named group per value.

        >>> row = next(r for r in rows() if "clients joined" in r.message)
        >>> row.pattern.search("DistStoreError: Timed out after 4 seconds waiting for "
        ...                    "clients. 1/2 clients joined.")["world"]
        '2'
        """
        return _compile(self.message)


@functools.cache
def _compile(message: str) -> re.Pattern[str]:
    out, at = [], 0
    for m in _FIELD.finditer(message):
        out.append(re.escape(message[at:m.start()]))
        out.append(rf"(?P<{m[1]}>\d+)" if m[1] else ".+?")
        at = m.end()
    out.append(re.escape(message[at:]))
    return re.compile("".join(out))


@functools.lru_cache(maxsize=1)
def rows() -> tuple[ImpliedValue, ...]:
    """Every row of the table.

    >>> sorted({r.engine for r in rows()})
    ['nccl', 'torch', 'torchelastic']
    """
    out = []
    for engine, message, quantity, source, half in rule_lines("implied-values.tsv"):
        kinds = tuple((name, tuple(words.split(","))) for name, _, words in
                      (q.partition("=") for q in quantity.split(";")))
        out.append(ImpliedValue(engine, message, kinds, source, half))
    return tuple(out)


def implied(line: str) -> list[tuple[ImpliedValue, str, int, tuple[str, ...]]]:
    """(row, quantity, value, the words of an input that carries it) for each value a line
    of an engine's output implies.

    >>> [(q, v) for _r, q, v, _w in implied("NCCL INFO comm 0x5 rank 1 nRanks 4 nNodes 1 "
    ...                                     "localRanks 4 localRank 1 MNNVL 0")]
    [('world', 4), ('rank', 1)]
    """
    out = []
    for row in rows():
        m = row.pattern.search(line)
        if m is None:
            continue
        for name, words in row.quantities:
            out.append((row, name, int(m[name]), words))
    return out
