"""The records a diff produces: :class:`Difference` and :class:`Report` (for N snapshots:
:mod:`runsnap.diffing.many_result`). Plain frozen data; the renderers in :mod:`runsnap.render`
print them. The words they are said in: :mod:`runsnap.diffing.wording`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from runsnap.base.jsonform import json_form
from runsnap.base.records import FrozenRecord
from runsnap.diffing.deciding import decides
from runsnap.diffing.wording import group_values, short
from runsnap.diffing.written import written
from runsnap.knowledge.launchers import detect
from runsnap.snapshot.records import Launcher

if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["CHANGES", "REPORT_FORMAT", "UNCHANGED", "Difference", "Ranked", "Report", "SnapInfo",
           "describe_change", "group_values", "launcher_of", "short", "shown", "who"]

#: Every value :attr:`Difference.change` takes.
CHANGES = ("added", "removed", "changed", "reordered", "upgraded", "downgraded")

#: How the reason of a difference begins when the runs ended the same way, so that it changed
#: nothing they show (:func:`runsnap.diffing.consequences.unchanged`): hidden, counted apart
#: from noise.
UNCHANGED = "changed nothing the runs show"

#: How many candidates an undecided verdict names (the first, most likely ones); the others
#: are counted ("and 2 more"), and bisect decides among all of them.
LISTED = 3

#: The ``format`` field of the JSON report; bumped when a field changes meaning or goes away.
REPORT_FORMAT = "runsnap-diff/1"


class Difference(FrozenRecord):
    """One way in which snapshot B differs from snapshot A."""

    section: str
    """The snapshot section: ``env``, ``command``, ``packages``, ``git``, ``models``, ``system``,
    ``outcome``, or another section's name."""

    key: str
    """What differs inside the section: a variable name, ``--option``, a package name, ``repo.
    commit``, ``--model-path: text_config.rope_scaling.factor``..."""

    change: str
    """One of :data:`CHANGES`: ``added`` (only in B), ``removed`` (only in A), ``changed``,
    ``reordered`` (same entries, another order), ``upgraded`` / ``downgraded`` (versions)."""

    a: Any
    """The value in A (``None``: absent from A)."""

    b: Any
    """The value in B (``None``: absent from B)."""

    score: int = 0
    """How likely this difference changed the behaviour, 0-100 (see :mod:`runsnap.diffing.rank`)."""

    reason: str = ""
    """Why it got that score, in words."""

    evidence: tuple[str, ...] = ()
    """Detail lines: list entries added or removed, commits between, a diff of two diffs."""

    hidden: bool = False
    """Noise (or ignored by a user rule): left out of the report unless ``--all``, never counts."""

    evidence_kind: str = "name"
    """The strongest kind of evidence behind :attr:`score` (:data:`runsnap.diffing.evidence.
    KINDS`: ``failing-path``, ``named``, ``read``, ``static``, ``name``, ``incidental``,
    ``unread``)."""

    related: tuple[Difference, ...] = ()
    """Consequences grouped under this cause (another venv: its packages; another model
    revision: its config fields and files), see :mod:`runsnap.diffing.grouping`."""

    path: tuple[str, ...] = ()
    """Where the difference is, as data: the section, then the keys inside it, e.g.
    ``("env", "NCCL_ALGO")``, ``("command", "options", "--tp")``, ``("packages", "torch")``,
    ``("models", "--model-path", "config", "text_config", "max_position_embeddings")``
    (docs/diff.md lists them all). Enough to find the value in a snapshot again, or to apply
    the difference to a launch. Defaults to ``(section, key)``.

    >>> Difference("env", "PATH", "reordered", "a", "b").path
    ('env', 'PATH')
    """

    corroborated: bool = False
    """Its ``failing-path`` evidence is backed by the failing run's own words too (the error
    quotes the value the run read, or names it, or an engine's message it governs):
    :attr:`runsnap.diffing.kinds.Evidence.corroborated`."""

    quoted: bool = False
    """The failing error quotes a distinctive part of its failing value, and the failing run
    took it in (read it, its command line, its model's config): it stands apart from every
    difference whose value the error does not quote (:attr:`runsnap.diffing.evidence.
    Evidence.quoted`)."""

    def __post_init__(self) -> None:
        if not self.path:
            object.__setattr__(self, "path", (self.section, self.key))

    def to_dict(self, show_all: bool = True) -> dict[str, Any]:
        """The JSON form: every field, ``evidence``, ``related`` and ``path`` as lists
        (``related`` without its hidden members unless ``show_all``)."""
        out = {name: getattr(self, name) for name in self.field_names()}
        out["evidence"] = list(self.evidence)
        out["related"] = [r.to_dict(show_all) for r in self.related if show_all or not r.hidden]
        out["path"] = list(self.path)
        return out

    @property
    def where(self) -> str:
        """``section key``, as the reports name a difference.

        >>> Difference("env", "PATH", "reordered", "a", "b").where
        'env PATH'
        """
        return f"{self.section} {self.key}"


def launcher_of(snap: Snapshot) -> Launcher:
    """The launcher record of ``snap``: its ``[meta] launcher``, or, for a snapshot older than
    that field, what its recorded environment shows (empty: no launcher)."""
    meta = snap.records.meta
    if meta.has("launcher"):
        return meta.launcher
    return Launcher(detect({k: v for k, v in snap.records.env.vars.items()
                            if isinstance(v, str)}) or {})


class SnapInfo(FrozenRecord):
    """Which snapshot a side of the report is: enough to find it again."""

    path: str | None
    """The file it was loaded from (``None``: captured in memory, e.g. the current context)."""

    id: str
    """The snapshot's unique id."""

    label: str
    """The run's label (may be empty)."""

    time: str
    """When it was captured (UTC, ISO 8601)."""

    host: str = ""
    """Where it was captured."""

    rank: int | None = None
    """Its global rank in a job (from the launcher's variables; ``None``: not launched so)."""

    local_rank: int | None = None
    """Its rank on its node."""

    job: str = ""
    """The job it belongs to (Slurm job id, torchrun run id, MPI job id)."""

    @classmethod
    def of(cls, snap: Snapshot, path: str | None = None) -> SnapInfo:
        """The info of ``snap`` (``path`` overrides the snapshot's own)."""
        where = path if path is not None else snap.path_text
        who = launcher_of(snap)
        return cls(
            path=where,
            id=snap.id,
            label=snap.label,
            time=snap.records.meta.captured_at or "",
            host=snap.records.meta.host or "",
            rank=who.rank,
            local_rank=who.local_rank,
            job=str(written(who, "job")),
        )

    @property
    def name(self) -> str:
        """A short name for headings: the label, else the file name, else the id.

        >>> SnapInfo("/x/.runsnap/20261129-good.toml", "ab12cd34ef56", "", "t").name
        '20261129-good.toml'
        """
        if self.label:
            return self.label
        if self.path:
            return self.path.rsplit("/", 1)[-1]
        return self.id[:12] or "?"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return json_form(self)


class _Listed(Protocol):
    """An item of a :class:`Ranked` report: a :class:`Difference`, or an N-way row."""

    @property
    def hidden(self) -> bool:
        """Noise, or ignored by a rule."""


RankedItem = TypeVar("RankedItem", bound=_Listed)


class Ranked(Generic[RankedItem]):
    """What a two-way and an N-way report share: ranked items, some hidden (noise, ignored).

    The truth value is "any item that counts", so the CLI's exit status is one expression.
    """

    show_all: bool

    def _items(self) -> tuple[RankedItem, ...]:
        raise NotImplementedError

    def __bool__(self) -> bool:
        return any(not i.hidden for i in self._items())

    @property
    def counted(self) -> list[RankedItem]:
        """The items that count, ranked."""
        return [i for i in self._items() if not i.hidden]

    @property
    def hidden(self) -> list[RankedItem]:
        """Noise and items ignored by a rule."""
        return [i for i in self._items() if i.hidden]

    @property
    def shown(self) -> list[RankedItem]:
        """What the renderers list: :attr:`counted`, and :attr:`hidden` too with ``--all``."""
        return list(self._items()) if self.show_all else self.counted


class Report(FrozenRecord, Ranked["Difference"]):
    """The differences between two snapshots, most likely cause first.

    ``bool(report)`` is true when any difference counts (noise and ignored ones do not), so
    the exit status of ``runsnap diff`` is ``int(bool(report))``.
    """

    a: SnapInfo
    """The first snapshot (the reference, often the good run)."""

    b: SnapInfo
    """The second snapshot."""

    differences: tuple[Difference, ...]
    """Every difference found, ranked (hidden ones included, flagged)."""

    show_all: bool = False
    """Whether renderers list hidden differences too (``--all``)."""

    notes: tuple[str, ...] = ()
    """Remarks about the comparison itself (fingerprints not comparable, B captured now)."""

    outcome: str = ""
    """How the runs ended, compared: ``same``, ``different``, or ``""`` (a snapshot has no
    outcome: a context captured without a launch). See
    :func:`runsnap.diffing.consequences.outcome_of`."""

    outcome_words: str = ""
    """The same in words (``A exited 0, B failed with ValueError``)."""

    consequences: tuple[Difference, ...] = ()
    """Run-time differences of the paths the runs took (read or imported in one run only),
    folded under the outcome, never ranked or counted
    (:mod:`runsnap.diffing.consequences`)."""

    def _items(self) -> tuple[Difference, ...]:
        return self.differences

    confidence: str = ""
    """``confident`` (the evidence from the runs singles out one cause) or ``undecided``
    (:func:`runsnap.diffing.confidence.judge`); ``""`` for a report built by hand."""

    candidates: tuple[Difference, ...] = ()
    """The cause (confident) or the differences the evidence does not tell apart."""

    launches: int = 0
    """About how many launches ``runsnap bisect`` takes to decide among the candidates."""

    because: str = ""
    """Why a confident verdict commits, in words (what singles the cause out)."""

    @property
    def listed(self) -> tuple[Difference, ...]:
        """The candidates the verdict names: the first :data:`LISTED` (bisect decides among
        all of them)."""
        return self.candidates[:LISTED]

    def verdict(self) -> str:
        """One line that answers "do they differ, and why?": the outcome first when it is the
        same, a cause only when the evidence singles it out (else the candidates and the
        experiment that decides).

        >>> Report(SnapInfo(None, "a", "", ""), SnapInfo(None, "b", "", ""), ()).verdict()
        'no differences'
        """
        counted = self.counted
        inert = sum(1 for d in self.differences if d.hidden and d.reason.startswith(UNCHANGED))
        noise = len(self.differences) - len(counted) - inert
        parts = [f"{inert} that {UNCHANGED}"] if inert else []
        parts += [f"{noise} noise"] if noise else []
        hidden = (f" ({', '.join(parts)}{'' if self.show_all else ' hidden'})" if parts
                  else "")
        same = f"the same outcome ({self.outcome_words}): " if self.outcome == "same" else ""
        if not counted:
            return same + ("no differences that count" if parts else "no differences") + hidden
        n = len(counted)
        head = f"{same}{n} difference{'s' if n != 1 else ''}{hidden}"
        if self.outcome == "same":
            return head + ", none changed the outcome"
        if not self.candidates:
            return head
        top = self.candidates[0]
        if self.confidence == "confident":
            because = f" ({self.because})" if self.because else ""
            return f"{head}; most likely cause: {top.where} {describe_change(top)}{because}"
        k = len(self.candidates)
        if k == 1:
            return (f"{head}; the only candidate, without evidence from the runs: {top.where} "
                    f"{describe_change(top)}")
        more = k - len(self.listed)
        names = ", ".join(d.where for d in self.listed) + (f" and {more} more" if more else "")
        return (f"{head}; undecided between {k} candidates ({names}): "
                f"{decides(self.candidates, self.launches, self.outcome)}")

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (documented in docs/diff.md)."""
        return {
            "format": REPORT_FORMAT,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "verdict": self.verdict(),
            "differ": bool(self),
            "count": len(self.counted),
            "hidden": len(self.hidden),
            "notes": list(self.notes),
            "outcome": self.outcome or None,
            "confidence": self.confidence or None,
            "because": self.because or None,
            "candidates": [d.where for d in self.listed],
            "more_candidates": len(self.candidates) - len(self.listed),
            "bisect_launches": self.launches or None,
            "differences": [d.to_dict(self.show_all) for d in self.shown],
            "consequences": {
                "count": len(self.consequences),
                "differences": [d.to_dict() for d in self.consequences] if self.show_all
                else [],
            },
        }


def shown(d: Difference, value: Any, limit: int = 80) -> str:
    """One side of a difference in one short line: :func:`short`, but an option of the
    command given without a value reads ``(flag)``.

    >>> shown(Difference("command", "--trust-remote-code", "added", None, True), True)
    '(flag)'
    >>> shown(Difference("models", "x.config.tie_word_embeddings", "changed", False, True), True)
    'true'
    """
    if value is True and d.section == "command" and d.key.startswith("-"):
        return "(flag)"
    return short(value, limit)


def describe_change(d: Difference, limit: int = 40) -> str:
    """A few words for a difference's change, for verdict lines.

    >>> describe_change(Difference("env", "X", "removed", "1", None))
    '(set to 1 in A only)'
    >>> describe_change(Difference("packages", "torch", "downgraded", "2.9.1", "2.8.0"))
    '(downgraded 2.9.1 -> 2.8.0)'
    """
    if d.change == "removed":
        return f"(set to {shown(d, d.a, limit)} in A only)" if d.section == "env" else (
            f"(in A only: {shown(d, d.a, limit)})")
    if d.change == "added":
        return f"(set to {shown(d, d.b, limit)} in B only)" if d.section == "env" else (
            f"(in B only: {shown(d, d.b, limit)})")
    if d.change == "reordered":
        return "(same entries, another order)"
    return f"({d.change} {shown(d, d.a, limit)} -> {shown(d, d.b, limit)})"


def who(members: Sequence[int], infos: Sequence[SnapInfo], limit: int = 3) -> str:
    """The snapshots at ``members`` in a few words: by host with their ranks when known.

    >>> infos = [SnapInfo(None, str(i), "", "", f"node-{i // 2}", rank=i) for i in range(6)]
    >>> who([3], infos), who([2, 3], infos), who([1, 2, 5], infos)
    ('node-1 rank 3', 'node-1 (ranks 2-3)', 'node-0 rank 1, node-1 rank 2, node-2 rank 5')
    """
    by_host: dict[str, list[int]] = {}
    anonymous: list[int] = []
    for m in members:
        if infos[m].host:
            by_host.setdefault(infos[m].host, []).append(m)
        else:
            anonymous.append(m)
    parts: list[str] = []
    for host, ms in by_host.items():
        ranks = [infos[m].rank for m in ms]
        if any(r is None for r in ranks):
            if len(by_host) == 1 and len(ms) <= limit:
                parts += [infos[m].name for m in ms]
            else:
                parts.append(host if len(ms) == 1 else f"{host} ({len(ms)} snapshots)")
        elif len(ms) == 1:
            parts.append(f"{host} rank {ranks[0]}")
        else:
            parts.append(f"{host} ({_ranges([r for r in ranks if r is not None])})")
    parts += [infos[m].name for m in anonymous]
    if len(parts) > limit:
        rest = len(parts) - limit
        parts = parts[:limit] + [f"{rest} more ({len(members)} snapshots in all)"]
    return ", ".join(parts)


def _ranges(ranks: Sequence[int]) -> str:
    """``ranks 2-5, 9``."""
    rs = sorted(set(ranks))
    spans: list[str] = []
    start = prev = rs[0]
    for r in [*rs[1:], None]:
        if r is not None and r == prev + 1:
            prev = r
            continue
        spans.append(str(start) if start == prev else f"{start}-{prev}")
        if r is not None:
            start = prev = r
    text = ", ".join(spans[:4]) + (", …" if len(spans) > 4 else "")
    return f"rank{'s' if len(rs) > 1 else ''} {text}"
