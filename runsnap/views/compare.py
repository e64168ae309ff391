"""``runsnap diff``'s journey below the command line, as steps: :func:`files` (names,
``@N``, ``@LABEL`` and folders to files, once), :func:`load_all` (the files to snapshots; of
many, the unreadable ones left out and named), :func:`compare_loaded` (two, many, or one with
the current context, captured now for its own launch: "will my next launch match?"), and
:func:`diff`, the public function, which runs them."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Union

from runsnap.diffing import NReport, RankContext, Report, compare, compare_many, expand
from runsnap.diffing.bulkload import load_many
from runsnap.diffing.many import Progress
from runsnap.errors import SnapshotError, UsageError
from runsnap.snapshot import Snapshot, load
from runsnap.views.jobs import compare_jobs, job_pairs
from runsnap.views.names import load as load_named
from runsnap.views.names import resolve

__all__ = ["SnapshotLike", "compare_jobs_in", "compare_loaded", "diff", "files", "load_all"]

SnapshotLike = Union[Snapshot, str, "os.PathLike[str]"]


def files(names: Iterable[str | os.PathLike[str]],
          folder: str | os.PathLike[str] | None = None) -> list[str]:
    """The snapshot files ``names`` stand for: ``@N`` and ``@LABEL`` in ``folder`` and tracked
    runs resolved, folders expanded into their snapshots (in rank order)."""
    return expand([resolve(n, folder) if isinstance(n, str) else n for n in names])


def load_all(paths: Sequence[str], progress: Progress | None = None
             ) -> tuple[list[Snapshot], tuple[str, ...]]:
    """The snapshots of ``paths``, and what could not be read. Of one or two files, the first
    unreadable one raises :class:`~runsnap.errors.SnapshotError`; of more, the unreadable ones
    are left out (named in the second item) as long as two remain."""
    if len(paths) <= 2:
        snaps = load_many(paths, progress=progress) if len(paths) > 1 else [load(p) for p in paths]
        return snaps, ()
    bad: list[str] = []
    snaps = load_many(paths, progress=progress, unreadable=bad)
    if len(snaps) < 2:
        raise SnapshotError(bad[0] if len(bad) == 1 else
                            f"{len(bad)} of {len(paths)} snapshots cannot be read; the first: "
                            f"{bad[0]}")
    return snaps, tuple(bad)


def compare_loaded(
    snaps: Sequence[Snapshot],
    rules: RankContext,
    show_all: bool = False,
    git_log: bool = True,
    static: bool = False,
    unreadable: Sequence[str] = (),
) -> Report | NReport:
    """One snapshot against the current context (captured now for its command, interpreter,
    repositories and models), two -> :func:`compare`, more -> :func:`compare_many`, whose
    report names the ``unreadable`` files left out."""
    if len(snaps) == 1:
        from runsnap.capturing.like import capture_like  # only to compare with now: a capture

        now = capture_like(snaps[0])
        return compare(snaps[0], now, rules=rules, show_all=show_all, git_log=git_log,
                       notes=("B is the current context, captured now for A's command",),
                       b_is_now=True)
    if len(snaps) == 2 and not unreadable:
        return compare(snaps[0], snaps[1], rules=rules, show_all=show_all, git_log=git_log,
                       static=static)
    report = compare_many(snaps, rules=rules, show_all=show_all)
    if not unreadable:
        return report
    total = len(snaps) + len(unreadable)
    shown = "; ".join(unreadable[:3]) + (f"; and {len(unreadable) - 3} more"
                                         if len(unreadable) > 3 else "")
    note = f"{len(unreadable)} of {total} snapshots left out, not readable: {shown}"
    return report.replace(unreadable=tuple(unreadable), notes=(note, *report.notes))


def compare_jobs_in(
    names: Sequence[str | os.PathLike[str]],
    rules: RankContext,
    folder: str | os.PathLike[str] | None = None,
    show_all: bool = False,
    git_log: bool = True,
    static: bool = False,
    progress: Progress | None = None,
) -> Report | None:
    """``diff JOB_A/ JOB_B/``: two folders, each the ranks of one job, compared rank against
    rank (:mod:`runsnap.views.jobs`); None when ``names`` are not two such folders (then the
    N-way diff of every file, as before)."""
    if len(names) != 2:
        return None
    folders = [resolve(n, folder) if isinstance(n, str) else n for n in names]
    if not all(os.path.isdir(f) for f in folders):
        return None
    jobs = [expand([f]) for f in folders]
    if len(jobs[0]) + len(jobs[1]) <= 2:
        return None
    pairs = job_pairs(*(load_many(j, progress=progress) for j in jobs))
    if pairs is None:
        return None
    return compare_jobs(*pairs, rules=rules, show_all=show_all, git_log=git_log, static=static)


def diff(
    *snapshots: SnapshotLike,
    rules: RankContext | None = None,
    ignore: Iterable[str] = (),
    show_all: bool = False,
    git_log: bool = True,
    static: bool = False,
    progress: Progress | None = None,
) -> Report | NReport:
    """Compare snapshots (objects, files, or folders of files): one -> with the current context
    (captured now for its command, interpreter, repositories and models), two ->
    :func:`compare`, two folders of one job each -> rank against rank
    (:func:`compare_jobs_in`), more -> :func:`compare_many` (files among them that cannot be read are
    left out and named in the report, as long as two remain). ``progress(done, total)`` is
    called while many files load."""
    if not snapshots:
        raise UsageError("diff needs at least one snapshot")
    rules = (rules or RankContext()).with_ignore(ignore)
    bad: tuple[str, ...] = ()
    if any(isinstance(s, Snapshot) for s in snapshots):
        snaps = [s if isinstance(s, Snapshot) else load_named(s) for s in snapshots]
    else:
        jobs = compare_jobs_in(snapshots, rules, None, show_all, git_log,  # type: ignore[arg-type]
                               static, progress)
        if jobs is not None:
            return jobs
        snaps, bad = load_all(files(snapshots), progress)  # type: ignore[arg-type]
    return compare_loaded(snaps, rules, show_all, git_log, static, bad)
