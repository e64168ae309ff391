"""``runsnap diff JOB_A/ JOB_B/``: one job against another, rank against rank.

Each folder holds the snapshots of one job (one per rank, as ``capture -o DIR/{rank}.toml``
under torchrun, mpirun or srun names them). The ranks are paired by their id (``[meta]
launcher`` rank), never by file order, and each pair is a two-way diff, so its consequences
fold and its verdict is judged as for two runs. One report comes back: the pair of the lowest
rank whose outcomes differ (else the lowest rank), with notes for the rest: a rank that ran in
one job only (named with its job), and the differences that count in another pair but not in
the one shown (what rank 3 alone sees). Folders whose snapshots carry no rank ids, or repeat
one, are no pair of jobs: :func:`job_pairs` says so and the N-way diff takes them.
"""

from __future__ import annotations

from collections.abc import Sequence

from runsnap.diffing import RankContext, Report, compare
from runsnap.diffing.consequences import outcome_of
from runsnap.diffing.result import SnapInfo
from runsnap.snapshot import Snapshot

__all__ = ["MAX_NAMED", "compare_jobs", "job_pairs"]

#: Ranks or keys named in one note before "and N more".
MAX_NAMED = 4


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
    differ = [r for r in common if outcome_of(a[r], b[r])[0] == "different"]
    shown = differ[0] if differ else common[0]
    ja, jb = _job(a), _job(b)
    notes = [f"job against job, {len(common)} ranks paired by id; rank {shown} shown"
             + (f" ({len(differ)} differ)" if differ else "")]
    for side, job, only in (("A", ja, sorted(set(a) - set(b))), ("B", jb, sorted(set(b) - set(a)))):
        if only:
            notes.append(f"rank{'s' if len(only) > 1 else ''} {_named([str(r) for r in only])} "
                         f"ran in {side}'s job {job} only")
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
