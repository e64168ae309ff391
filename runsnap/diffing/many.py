"""N snapshots (the ranks and nodes of one job): which keys are not the same everywhere, and who
holds the odd values.

Linear in the number of snapshots: a section object shared by several snapshots (the bulk loader
shares every section whose text is the same, see :mod:`runsnap.diffing.bulkload`) is compared
once, against the section most snapshots hold, and the differences are credited to every
snapshot that shares it. Each key's values are then grouped by equality (hashing, not pairwise),
and the row says what kind of disagreement it is:

``odd``       a majority agrees, a few snapshots do not: the odd ones out, the usual lead;
``split``     no majority (half and half, many values);
``per-rank``  every snapshot its own value, or one value per host or per local rank, exactly as
              the launcher numbers them (``RANK``, ``LOCAL_RANK``, the host name): expected, and
              not counted.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from runsnap.base.records import FrozenRecord
from runsnap.diffing import sections
from runsnap.diffing.many_result import NReport, NRow
from runsnap.diffing.rank import rank, ranking_key
from runsnap.diffing.result import Difference, SnapInfo, group_values, short, who
from runsnap.diffing.rules import RankContext
from runsnap.diffing.voters import Voters
from runsnap.snapshot import Snapshot, ordered_sections

__all__ = ["KINDS", "SetSummary", "compare_rows", "entries", "summarise"]

#: Row kinds, in the order reports list them.
KINDS = ("odd", "split", "per-rank")

_ABSENT: Mapping[str, Any] = {}

#: ``progress(done, total)`` while comparing.
Progress = Callable[[int, int], None]

#: ``evidence_for(rules, a, b, found) -> rules`` with the runs' evidence for ``found``.
EvidenceFor = Callable[[RankContext, Snapshot, Snapshot, Sequence[Difference]], RankContext]


class SetSummary(FrozenRecord):
    """What a set of snapshots is, in one line's worth of facts."""

    count: int
    hosts: tuple[str, ...]
    """Distinct hosts, in order of first appearance."""
    ranks: tuple[int, int] | None
    """Lowest and highest rank, when the snapshots carry ranks."""
    rank_count: int
    """How many snapshots carry a rank."""
    jobs: tuple[str, ...]
    first: str
    """Earliest capture time."""
    last: str
    """Latest capture time."""

    def line(self) -> str:
        """``4096 snapshots from 512 hosts (node-000 … node-511), ranks 0-4095, job 4242,
        captured 2026-01-01T00:00:00 … 00:00:59``."""
        bits = [f"{self.count} snapshots"]
        if self.hosts:
            n = len(self.hosts)
            where = self.hosts[0] if n == 1 else (
                ", ".join(self.hosts) if n <= 3 else f"{self.hosts[0]} … {self.hosts[-1]}")
            bits[0] += f" from {n} host{'s' if n != 1 else ''} ({where})"
        if self.ranks is not None:
            lo, hi = self.ranks
            text = f"ranks {lo}-{hi}" if lo != hi else f"rank {lo}"
            if self.rank_count != self.count:
                text += f" ({self.count - self.rank_count} without a rank)"
            bits.append(text)
        if self.jobs:
            bits.append(("job " if len(self.jobs) == 1 else "jobs ")
                        + ", ".join(self.jobs[:3]) + (" …" if len(self.jobs) > 3 else ""))
        if self.first:
            bits.append(f"captured {self.first}" if self.first == self.last else
                        f"captured {self.first} … {_same_day(self.first, self.last)}")
        return ", ".join(bits)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"count": self.count, "hosts": len(self.hosts),
                "host_names": list(self.hosts[:20]),
                "ranks": list(self.ranks) if self.ranks else None, "jobs": list(self.jobs),
                "first": self.first, "last": self.last}


def _same_day(first: str, last: str) -> str:
    """``last`` without the date when it is ``first``'s date."""
    if first[:10] == last[:10] and "T" in last:
        return last.split("T", 1)[1]
    return last


def summarise(infos: Sequence[SnapInfo]) -> SetSummary:
    """The set's hosts, rank range, jobs and time span."""
    hosts = tuple(dict.fromkeys(i.host for i in infos if i.host))
    ranks = [i.rank for i in infos if i.rank is not None]
    jobs = tuple(dict.fromkeys(i.job for i in infos if i.job))
    times = sorted(i.time for i in infos if i.time)
    return SetSummary(len(infos), hosts, (min(ranks), max(ranks)) if ranks else None,
                      len(ranks), jobs, times[0] if times else "", times[-1] if times else "")


class _Row:
    """One (section, key) being built: the reference value and every other snapshot's."""

    __slots__ = ("ref", "at", "best", "kind", "odd_members", "per")

    def __init__(self, ref: Any) -> None:
        self.ref = ref
        self.at: dict[int, Any] = {}
        self.best: Difference | None = None
        self.kind = "split"
        self.odd_members: tuple[int, ...] = ()
        self.per = ""


#: A key with one value per rank or host is ranked on the differences of this many snapshots
#: that hold another value than the reference's (it is not counted, and its rank decides only
#: where ``--all`` lists it); every other key on all of them. Each difference's evidence needs
#: both runs' facts, which at 32,768 ranks cost more than the rest of the diff.
PER_RANK_SAMPLE = 32


def compare_rows(
    snaps: Sequence[Snapshot],
    rules: RankContext,
    *,
    show_all: bool = False,
    notes: Sequence[str] = (),
    progress: Progress | None = None,
    evidence_for: EvidenceFor | None = None,
) -> NReport:
    """The N-way report of ``snaps`` (at least two) under ``rules`` (already completed with the
    run-time reads and fingerprint comparability of the whole set). ``evidence_for(rules, a,
    b, found)`` adds the runs' evidence for the differences ``found`` between snapshots ``a``
    and ``b``: it is asked once per distinct section, with one snapshot of each side.

    Two passes: the values first (each distinct section compared once with the one most
    snapshots hold), which say each key's kind (odd ones out, split, one value per rank);
    then the differences are ranked with their evidence, all of them except those of a key
    with one value per rank, ranked on :data:`PER_RANK_SAMPLE` snapshots."""

    # Comparing makes a few small records per snapshot and no reference cycles: the cycle
    # collector's passes over them cost a third of the compare at 16,384 ranks.
    was = gc.isenabled()
    gc.disable()
    try:
        return _compare_rows(snaps, rules, show_all=show_all, notes=notes, progress=progress,
                             evidence_for=evidence_for)
    finally:
        if was:
            gc.enable()


def _compare_rows(
    snaps: Sequence[Snapshot],
    rules: RankContext,
    *,
    show_all: bool,
    notes: Sequence[str],
    progress: Progress | None,
    evidence_for: EvidenceFor | None,
) -> NReport:
    n = len(snaps)
    rows: dict[tuple[str, str], _Row] = {}
    names = ordered_sections({name for s in snaps for name in s.sections})
    done = 0
    # (ref member, member, differences) per distinct section that is not the reference
    pending: list[tuple[int, list[int], list[Difference]]] = []
    for name in names:
        variants: dict[int, tuple[Mapping[str, Any], list[int]]] = {}
        for i, s in enumerate(snaps):
            section = s.get(name)
            if section is None:
                section = _ABSENT
            variants.setdefault(id(section), (section, []))[1].append(i)
        if len(variants) == 1:
            continue
        ordered = sorted(variants.values(), key=lambda v: -len(v[1]))
        ref, ref_members = ordered[0]
        for section, members in ordered[1:]:
            found = sections.compare_section(name, ref, section)
            for d in found:
                row = rows.get((d.section, d.key))
                if row is None:
                    row = rows[(d.section, d.key)] = _Row(d.a)
                at = row.at
                for m in members:
                    at[m] = d.b
            if found:
                pending.append((ref_members[0], members, found))
    infos = tuple(SnapInfo.of(s) for s in snaps)
    identities = _Identities(infos)
    voters = Voters(infos)
    for row in rows.values():
        _kind(row, n, identities, voters)
    total = sum(len(m) for _, m, _ in pending) or 1
    seen: dict[tuple[str, str], int] = {}
    for ref_at, members, found in pending:
        kept = []
        for d in found:
            key = (d.section, d.key)
            if rows[key].per:
                k = seen[key] = seen.get(key, 0) + 1
                if k > PER_RANK_SAMPLE:
                    continue
            kept.append(d)
        if kept:
            ruled = rules
            if evidence_for is not None:
                ruled = evidence_for(rules, snaps[ref_at], snaps[members[0]], kept)
            for d in rank(kept, ruled):
                row = rows[(d.section, d.key)]
                if row.best is None or ranking_key(d) < ranking_key(row.best):
                    row.best = d
        done += len(members)
        if progress is not None:
            progress(done, total)
    out = [_finish(section, key, row, n, voters) for (section, key), row in rows.items()]
    out.sort(key=row_order)
    return NReport(infos, tuple(out), show_all=show_all, notes=(*notes, *voters.notes),
                   summary=summarise(infos))


def row_order(r: NRow) -> tuple[int, int, int, str, str]:
    """Shown before hidden; odd ones out, then splits, then per-rank values; higher score first."""
    return (int(r.hidden), KINDS.index(r.kind) if r.kind in KINDS else len(KINDS), -r.score,
            r.section, r.key)


def _partition(values: Sequence[Any]) -> tuple[tuple[int, ...], ...]:
    """The groups of equal values as sorted index tuples, for comparing partitions."""
    return tuple(sorted(tuple(m) for _, m in group_values(values)))


def _kind(row: _Row, n: int, identities: _Identities, voters: Voters) -> None:
    """The row's kind from its values alone (see the module's docstring); a majority counts
    each rank once (:mod:`runsnap.diffing.voters`)."""
    values = [row.at.get(i, row.ref) for i in range(n)]
    tally = voters.tally(group_values(values))
    groups = [g for _, g in tally]
    if len(groups) >= 2 and tally[0][0] * 2 > voters.count:
        row.kind = "odd"
        row.odd_members = tuple(sorted(i for _, m in groups[1:] for i in m))
    elif voters.count >= 3:
        row.per = identities.split_as(groups, n)
        if row.per:
            row.kind = "per-rank"


def _finish(section: str, key: str, row: _Row, n: int, voters: Voters) -> NRow:
    values = tuple(row.at.get(i, row.ref) for i in range(n))
    best = row.best
    assert best is not None  # every row's key has at least one ranked difference
    kind = row.kind
    hidden = best.hidden or kind == "per-rank"
    reason = best.reason if kind != "per-rank" else (
        f"one value per {row.per}, as the launcher numbers them (not counted); {best.reason}")
    odd = (row.odd_members[0] if row.odd_members and voters.one(row.odd_members)
           and voters.count >= 3 else None)
    return NRow(section, key, values, best.score, reason, odd=odd, hidden=hidden, kind=kind,
                odd_members=row.odd_members, path=best.path)


class _Identities:
    """The launcher's numbering of the snapshots (rank, host, local rank), each partition
    made once for all keys."""

    def __init__(self, infos: Sequence[SnapInfo]) -> None:
        self.known: list[tuple[str, tuple[tuple[int, ...], ...] | None]] = []
        for what, ident in (("rank", [i.rank for i in infos]),
                            ("host", [i.host or None for i in infos]),
                            ("local rank", [i.local_rank for i in infos])):
            if any(x is None for x in ident) or len(set(ident)) == 1:
                continue
            self.known.append((what, None if what == "rank" else _partition(ident)))
        self._ranks = next((_partition([i.rank for i in infos]) for what, _ in self.known
                            if what == "rank"), None)

    def split_as(self, groups: Sequence[tuple[Any, list[int]]], n: int) -> str:
        """``rank``, ``host`` or ``local rank`` when the values split exactly as that
        identity does (and it is known for every snapshot), else ``""``."""
        mine: tuple[tuple[int, ...], ...] | None = None
        for what, part in self.known:
            if what == "rank":
                if len(groups) == n:
                    return what
                part = self._ranks
            if mine is None:
                mine = tuple(sorted(tuple(m) for _, m in groups))
            if part == mine:
                return what
        return ""


def _val(value: Any, limit: int) -> str:
    return "it unset" if value is None else short(value, limit)


def sentence(row: NRow, infos: Sequence[SnapInfo], limit: int = 60) -> list[str]:
    """The row in words, odd ones first: ``node-7 (ranks 56-63) has mlx5_1; the other 4088
    have mlx5_0``. One line per minority value (at most 4), then the majority."""
    groups = group_values(row.values)
    n = len(row.values)
    if row.kind == "odd":
        lines = []
        minority = groups[1:]
        for value, members in minority[:4]:
            verb = "has" if len({infos[m].host or m for m in members}) == 1 else "have"
            lines.append(f"{who(members, infos)} {verb} {_val(value, limit)}")
        if len(minority) > 4:
            lines.append(f"… and {len(minority) - 4} more values")
        value, members = groups[0]
        lines.append(f"the other {len(members)} {'has' if len(members) == 1 else 'have'} "
                     f"{_val(value, limit)}")
        return lines
    if row.kind == "per-rank":
        return [f"{len(groups)} values among {n} snapshots, e.g. {_val(groups[0][0], limit)}"]
    lines = [f"{len(members)} have {_val(value, limit)} ({who(members, infos)})"
             for value, members in groups[:4]]
    if len(groups) > 4:
        lines.append(f"… and {len(groups) - 4} more values")
    return lines


def entries(rows: Sequence[NRow]) -> list[NRow | tuple[NRow, ...]]:
    """``rows`` in their order, with the odd-one-out rows of the same odd ones (the same
    snapshots disagree with the majority) joined into one entry at the place of the first:
    "node-17 rank 137 differs in 3 keys" reads as one machine set up differently, not as three
    unrelated facts.

    >>> a, b, c = (NRow("env", k, (1, 1, 2), 80, "r", kind="odd", odd_members=(2,))
    ...            for k in "ABC")
    >>> d = NRow("env", "D", (1, 2, 1), 70, "r", kind="odd", odd_members=(1,))
    >>> [e.key if isinstance(e, NRow) else [r.key for r in e] for e in entries([a, d, b, c])]
    [['A', 'B', 'C'], 'D']
    """
    together: dict[tuple[int, ...], list[NRow]] = {}
    for row in rows:
        if row.kind == "odd" and row.odd_members and not row.hidden:
            together.setdefault(row.odd_members, []).append(row)
    out: list[NRow | tuple[NRow, ...]] = []
    placed: set[tuple[int, ...]] = set()
    for row in rows:
        group = together.get(row.odd_members) if row.kind == "odd" and not row.hidden else None
        if group is None or len(group) == 1:
            out.append(row)
        elif row.odd_members not in placed:
            placed.add(row.odd_members)
            out.append(tuple(group))
    return out


def group_sentence(group: Sequence[NRow], infos: Sequence[SnapInfo],
                   limit: int = 60) -> tuple[str, list[str]]:
    """A group of :func:`entries` in words: the head (``node-017 rank 137 differs from the
    other 255 in 2 keys``) and one line per key (``env NCCL_ALGO: Tree; the others have
    Ring``)."""
    members = group[0].odd_members
    n = len(group[0].values)
    head = (f"{who(members, infos)} differ{'s' if len(members) == 1 else ''} from the other "
            f"{n - len(members)} in {len(group)} keys")
    lines = []
    for row in group:
        groups = group_values(row.values)
        majority = _val(groups[0][0], limit)
        odd = [_val(v, limit) for v, _ in groups[1:]]
        said = odd[0] if len(odd) == 1 else f"{len(odd)} values ({', '.join(odd[:3])})"
        lines.append(f"{row.where}: {said}; the others have {majority}")
    return head, lines
