"""Who votes in an N-way diff: each rank once.

The odd one out is the snapshot that holds another value than the majority, so the majority
must count ranks, not files. A file named twice (``diff r0.toml r1.toml r1.toml``, or reached
through two folders), one snapshot copied under two names (the same id), or two snapshots of
the same rank of the same job are one voter: its files share one vote (each ``1/k`` of it, so
copies that disagree split their vote). They are named in the report's notes.

    >>> from runsnap.diffing.result import SnapInfo
    >>> v = Voters([SnapInfo("a.toml", "1", "", ""), SnapInfo("b.toml", "2", "", ""),
    ...             SnapInfo("a.toml", "1", "", "")])
    >>> v.count, v.notes
    (2, ('a.toml is named 2 times (the same file): counted once',))
    >>> [(str(votes), value) for votes, (value, _) in v.tally([("x", [0, 2]), ("y", [1])])]
    [('1', 'x'), ('1', 'y')]
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from runsnap.diffing.result import SnapInfo

__all__ = ["Voters"]

#: The most duplicated ranks named one by one in the notes (then a count).
NAMED = 5


def _keys(info: SnapInfo) -> list[tuple[Any, ...]]:
    keys: list[tuple[Any, ...]] = []
    if info.path:
        keys.append(("file", os.path.abspath(info.path)))
    if info.id:
        keys.append(("id", info.id))
    if info.rank is not None:
        keys.append(("rank", info.job, info.rank))
    return keys


class Voters:
    """The voters of ``infos``: ``of[i]`` is the first file of file ``i``'s rank."""

    def __init__(self, infos: Sequence[SnapInfo]) -> None:
        seen: dict[tuple[Any, ...], int] = {}
        self.of: list[int] = []
        for i, info in enumerate(infos):
            keys = _keys(info)
            voter = next((seen[k] for k in keys if k in seen), i)
            for k in keys:
                seen.setdefault(k, voter)
            self.of.append(voter)
        copies: dict[int, list[int]] = {}
        for i, voter in enumerate(self.of):
            copies.setdefault(voter, []).append(i)
        self.count = len(copies)
        self.duplicated = self.count != len(infos)
        self.share = [Fraction(1, len(copies[v])) for v in self.of] if self.duplicated else []
        self.notes = _notes(infos, [m for m in copies.values() if len(m) > 1])

    def tally(self, groups: Sequence[tuple[Any, list[int]]]
              ) -> list[tuple[Fraction | int, tuple[Any, list[int]]]]:
        """Each group of equal values with its votes, most votes first (then as given)."""
        if not self.duplicated:
            return [(len(g[1]), g) for g in groups]
        weighed = [(sum((self.share[i] for i in g[1]), Fraction(0)), g) for g in groups]
        order = sorted(range(len(weighed)), key=lambda k: (-weighed[k][0], k))
        return [weighed[k] for k in order]

    def one(self, members: Sequence[int]) -> bool:
        """Whether ``members`` are the files of one voter."""
        return len({self.of[i] for i in members}) == 1


def _notes(infos: Sequence[SnapInfo], groups: list[list[int]]) -> tuple[str, ...]:
    out = []
    for members in groups[:NAMED]:
        first = infos[members[0]]
        paths = [infos[i].path or "(in memory)" for i in members]
        if len({os.path.abspath(p) for p in paths}) == 1:
            out.append(f"{paths[0]} is named {len(paths)} times (the same file): counted once")
            continue
        named = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        if len({infos[i].id for i in members}) == 1:
            what = f"the same snapshot (id {first.id})"
        else:
            what = f"rank {first.rank}" + (f" of job {first.job}" if first.job else "")
        out.append(f"{named}: {what}, counted once as a voter")
    if len(groups) > NAMED:
        out.append(f"{len(groups) - NAMED} more ranks are in more than one file, each counted "
                   f"once")
    return tuple(out)
