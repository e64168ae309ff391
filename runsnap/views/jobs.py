"""``runsnap diff JOB_A/ JOB_B/``: one job against another, rank against rank.

Each folder holds the snapshots of one job (one per rank, as ``capture -o DIR/{rank}.toml``
under torchrun, mpirun or srun names them). The ranks are paired by their id (``[meta]
launcher`` rank), never by file order, and each pair is a two-way diff, so its consequences
fold and its verdict is judged as for two runs. One report comes back: the pair of the rank
that failed first (:func:`shown_rank`), with notes for the rest: a rank that ran in one job
only (named with its job), and the differences that count in another pair but not in the one
shown (what rank 3 alone sees). The evidence the other pairs hold from the runs (a variable
or a file rank 1 read, a failing path in rank 3) counts for the pair shown where it is
stronger, saying which rank saw it: a job took an input in when any of its ranks did.

The rank that failed first, not the lowest: when one rank raises, its launcher stops the others
(torchrun and mpirun send ``SIGTERM``), and a rank stopped so, or one whose collective broke
when its peer left, holds the failure's consequence, not its cause. So the rank shown is, among
those whose outcomes differ, one not stopped by ``SIGTERM``, ``SIGINT`` or ``SIGHUP`` (all of
them when every one was), the one whose run ended first; of several that ended with that same
first error (every rank raised it), the lowest. No rank failed otherwise: the lowest whose
printed metrics differ (rank 1's shard changed, rank 0's did not), else the lowest. Folders whose
snapshots carry no rank ids, or repeat one, are no pair of jobs: :func:`job_pairs` says so and
the N-way diff takes them.
"""

from __future__ import annotations

from collections.abc import Sequence

from runsnap.diffing import RankContext, Report, compare, rank_evidence
from runsnap.diffing.consequences import outcome_of
from runsnap.diffing.evidence import merged
from runsnap.diffing.kinds import Evidence
from runsnap.diffing.result import SnapInfo
from runsnap.snapshot import Snapshot

__all__ = ["MAX_NAMED", "STOPPING_SIGNALS", "compare_jobs", "job_pairs", "shown_rank"]

#: Ranks or keys named in one note before "and N more".
MAX_NAMED = 4

#: The signals a launcher stops the other ranks with once one has failed.
STOPPING_SIGNALS = frozenset({"SIGTERM", "SIGINT", "SIGHUP"})


def _by_rank(snaps: Sequence[Snapshot]) -> dict[int, Snapshot] | None:
    out: dict[int, Snapshot] = {}
    for s in snaps:
        rank = SnapInfo.of(s).rank
        if rank is None or rank in out:
            return None
        out[rank] = s
    return out


def job_pairs(a: Sequence[Snapshot], b: Sequence[Snapshot]
              ) -> tuple[dict[int, Snapshot], dict[int, Snapshot]] | None:
    """Each job's snapshots by rank id, when both folders are jobs whose ranks pair (every
    snapshot has a rank, none repeats one, and some rank is in both); else None."""
    ra, rb = _by_rank(a), _by_rank(b)
    if ra is None or rb is None or not set(ra) & set(rb):
        return None
    return ra, rb


def _stopped(s: Snapshot) -> bool:
    return str(s.records.outcome.signal or "") in STOPPING_SIGNALS


def shown_rank(a: dict[int, Snapshot], b: dict[int, Snapshot]) -> tuple[int, list[str]]:
    """The rank whose pair a job diff shows (see the module's text) and notes that say why.

    The ranks of ``b`` (the failing job) decide; ``a`` only says whose outcome differs."""
    common = sorted(set(a) & set(b))
    differ = [r for r in common if outcome_of(a[r], b[r])[0] == "different"]
    head = f"job against job, {len(common)} ranks paired by id"
    if not differ:
        # no rank failed otherwise: the lowest whose printed metrics moved, else the lowest
        moved = [r for r in common if a[r].records.outcome.metrics != b[r].records.outcome.metrics]
        first = (moved or common)[0]
        why = "; the lowest whose metrics differ" if moved and first != common[0] else ""
        return first, [f"{head}; rank {first} shown{why}"]
    stopped = [r for r in differ if _stopped(b[r])]
    own = [r for r in differ if r not in stopped] or differ
    first = min(own, key=lambda r: (str(b[r].records.outcome.ended_at or "~"), r))
    error = b[first].records.outcome.first_error
    same = [r for r in own if r == first or (error and b[r].records.outcome.first_error == error)]
    n = len(differ)
    notes = [f"{head}, {n} differ{'s' if n == 1 else ''}; rank {min(same)} shown"]
    if len(same) > 1:
        notes.append(f"ranks {_named([str(r) for r in same])} failed with one error: the "
                     "lowest shown")
    elif len(differ) > 1:
        notes.append(f"rank {first} failed first")
    if stopped and len(own) < len(differ):
        notes.append(f"rank{'s' if len(stopped) > 1 else ''} {_named([str(r) for r in stopped])}"
                     f" stopped by {b[stopped[0]].records.outcome.signal} (a launcher stops the rest "
                     "once one fails)")
    return min(same), notes


def _named(items: Sequence[str]) -> str:
    """``a, b, c`` with at most :data:`MAX_NAMED`, then how many more.

    >>> _named(["r1", "r2"]), _named([str(i) for i in range(7)])
    ('r1, r2', '0, 1, 2, 3 and 3 more')
    """
    more = len(items) - MAX_NAMED
    return ", ".join(items[:MAX_NAMED]) + (f" and {more} more" if more > 0 else "")


def _job(snaps: dict[int, Snapshot]) -> str:
    jobs = sorted({SnapInfo.of(s).job for s in snaps.values()} - {""})
    return jobs[0] if len(jobs) == 1 else f"{len(jobs)} jobs" if jobs else "no job id"


def compare_jobs(a: dict[int, Snapshot], b: dict[int, Snapshot], *,
                 rules: RankContext | None = None, show_all: bool = False,
                 git_log: bool = True, static: bool = False) -> Report:
    """Job ``a`` against job ``b``, rank against rank (see the module's text)."""
    common = sorted(set(a) & set(b))
    shown, notes = shown_rank(a, b)
    ja, jb = _job(a), _job(b)
    for side, job, only in (("A", ja, sorted(set(a) - set(b))), ("B", jb, sorted(set(b) - set(a)))):
        if only:
            notes.append(f"rank{'s' if len(only) > 1 else ''} {_named([str(r) for r in only])} "
                         f"ran in {side}'s job {job} only")
    # what the other pairs saw (rank 1 read its shard, rank 0 did not) is evidence for the job
    more: dict[tuple[str, str], Evidence] = {}
    for r in common:
        if r != shown:
            more = merged(more, rank_evidence(a[r], b[r], f"rank {r}"))
    rules = (rules or RankContext()).replace(job_evidence=more)
    report = compare(a[shown], b[shown], rules=rules, show_all=show_all, git_log=git_log,
                     static=static)
    seen = {(d.section, d.key) for d in report.counted}
    extra: dict[tuple[str, str], list[int]] = {}
    for r in common:
        if r == shown:
            continue
        other = compare(a[r], b[r], rules=rules, git_log=False)
        for d in other.counted:
            if (d.section, d.key) not in seen and d.section != "outcome":
                extra.setdefault((d.section, d.key), []).append(r)
    for (section, key), ranks in list(extra.items())[:MAX_NAMED]:
        notes.append(f"{section} {key} differs in rank{'s' if len(ranks) > 1 else ''} "
                     f"{_named([str(r) for r in ranks])} only")
    if len(extra) > MAX_NAMED:
        notes.append(f"{len(extra) - MAX_NAMED} more differences count in other ranks only")
    return report.replace(notes=(*notes, *report.notes))
