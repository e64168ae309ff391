"""The records of an N-way diff: one :class:`NRow` a locator whose value is not the same in every
snapshot, grouped by value, and the :class:`NReport` that ranks them."""

from __future__ import annotations

from typing import Any

from runsnap.base.records import FrozenRecord
from runsnap.diffing.result import REPORT_FORMAT, Ranked, SnapInfo, who
from runsnap.diffing.wording import group_values

__all__ = ["NReport", "NRow"]


class NRow(FrozenRecord):
    """One key that is not the same in every snapshot of an N-way diff."""

    section: str
    """The snapshot section."""

    key: str
    """What differs inside the section (as in :class:`Difference`)."""

    values: tuple[Any, ...]
    """The value in each snapshot, in the order given (``None``: absent)."""

    score: int
    """The highest score this key got against the first snapshot."""

    reason: str
    """Why it ranks where it does."""

    odd: int | None = None
    """The index of the odd one out: the only snapshot with its value while all others agree."""

    hidden: bool = False
    """Noise (or ignored by a user rule), or one value per rank or host (``per-rank``)."""

    kind: str = "split"
    """``odd`` (a majority agrees, :attr:`odd_members` do not), ``split`` (no majority) or
    ``per-rank`` (one value per rank, host or local rank, as the launcher numbers them)."""

    odd_members: tuple[int, ...] = ()
    """The indexes of the snapshots that disagree with the majority (``odd`` rows)."""

    path: tuple[str, ...] = ()
    """The locator of the key, as in :attr:`Difference.path` (default ``(section, key)``)."""

    def __post_init__(self) -> None:
        if not self.path:
            object.__setattr__(self, "path", (self.section, self.key))

    def groups(self) -> list[tuple[Any, list[int]]]:
        """Each distinct value with the indexes of the snapshots that hold it, largest group first.

        >>> NRow("env", "X", ("1", "2", "1"), 50, "").groups()
        [('1', [0, 2]), ('2', [1])]
        """
        return group_values(self.values)

    @property
    def where(self) -> str:
        """``section key``."""
        return f"{self.section} {self.key}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: values by snapshot index, groups of equal values, the odd one out."""
        return {
            "section": self.section,
            "key": self.key,
            "path": list(self.path),
            "values": list(self.values),
            "groups": [{"value": v, "snapshots": m} for v, m in self.groups()],
            "odd": self.odd,
            "kind": self.kind,
            "odd_members": list(self.odd_members),
            "score": self.score,
            "reason": self.reason,
            "hidden": self.hidden,
        }


class NReport(FrozenRecord, Ranked["NRow"]):
    """The keys that differ among N snapshots (ranks or nodes of one job)."""

    snapshots: tuple[SnapInfo, ...]
    """The snapshots, in the order given."""

    rows: tuple[NRow, ...]
    """Every key not the same everywhere, ranked (hidden ones included, flagged)."""

    show_all: bool = False
    """Whether renderers list hidden rows too."""

    notes: tuple[str, ...] = ()
    """Remarks about the comparison itself."""

    summary: Any = None
    """What the set is (:class:`runsnap.diffing.many.SetSummary`: count, hosts, rank range,
    jobs, time span); ``None`` for reports built by hand."""

    unreadable: tuple[str, ...] = ()
    """Files named (or found in a folder) that could not be read and were left out, each
    ``"PATH: why"``: a rank killed while writing, a file copied in part. They count as a
    difference (the report is true), since the set compared is not the set given."""

    def _items(self) -> tuple[NRow, ...]:
        return self.rows

    def __bool__(self) -> bool:
        return bool(self.unreadable) or super().__bool__()

    def odd_ones(self) -> dict[int, int]:
        """Snapshot index -> how many counted keys set it apart from the majority, most first
        (a rank in two files is its first file: its ``odd``)."""
        tally: dict[int, int] = {}
        for r in self.counted:
            for m in ((r.odd,) if r.odd is not None else r.odd_members) if r.kind == "odd" else ():
                tally[m] = tally.get(m, 0) + 1
        return dict(sorted(tally.items(), key=lambda kv: -kv[1]))

    def verdict(self) -> str:
        """One line: how many keys differ, and which snapshot is the odd one out."""
        counted = self.counted
        per_rank = sum(1 for r in self.rows if r.hidden and r.kind == "per-rank")
        noise = len(self.rows) - len(counted) - per_rank
        parts = ([f"{per_rank} per-rank key{'s' if per_rank != 1 else ''}"] if per_rank else []) \
            + ([f"{noise} noise"] if noise else [])
        hidden = f" ({' and '.join(parts)} hidden)" if parts and not self.show_all else ""
        n = len(self.snapshots)
        bad = len(self.unreadable)
        left_out = f" ({bad} unreadable, left out)" if bad else ""
        if not counted:
            return f"{n} snapshots{left_out}, no differences that count{hidden}"
        line = (f"{n} snapshots{left_out}, {len(counted)} key{'s' if len(counted) != 1 else ''} "
                f"not the same everywhere{hidden}")
        odd = self.odd_ones()
        if odd:
            if len(odd) == 1:
                idx, count = next(iter(odd.items()))
                line += (f"; odd one out: {who([idx], self.snapshots)} (alone in {count} "
                         f"key{'s' if count != 1 else ''})")
            else:
                line += f"; odd ones out: {who(sorted(odd), self.snapshots)}"
        return line

    def to_dict(self) -> dict[str, Any]:
        """The JSON report for N snapshots."""
        return {
            "format": REPORT_FORMAT,
            "snapshots": [s.to_dict() for s in self.snapshots],
            "summary": self.summary.to_dict() if self.summary is not None else None,
            "verdict": self.verdict(),
            "differ": bool(self),
            "count": len(self.counted),
            "hidden": len(self.hidden),
            "notes": list(self.notes),
            "unreadable": list(self.unreadable),
            "odd_ones": {str(k): v for k, v in self.odd_ones().items()},
            "differences": [r.to_dict() for r in self.shown],
        }
