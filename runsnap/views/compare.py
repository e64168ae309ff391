"""``runsnap diff``'s journey as one call: snapshots named as files, folders, ``@N`` or
``@LABEL`` are loaded, and one snapshot is compared with the current context, captured now for
its own launch (``runsnap diff A``: "will my next launch match?")."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Union

from runsnap.diffing import NReport, RankContext, Report, compare, compare_many, expand
from runsnap.diffing.bulkload import load_many
from runsnap.diffing.many import Progress
from runsnap.errors import SnapshotError, UsageError
from runsnap.snapshot import Snapshot, load

__all__ = ["SnapshotLike", "diff"]

SnapshotLike = Union[Snapshot, str, "os.PathLike[str]"]


def _as_snapshot(x: SnapshotLike) -> Snapshot:
    from runsnap.views.names import load as load_named

    return x if isinstance(x, Snapshot) else load_named(x)


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
    (:func:`runsnap.views.jobs.compare_jobs`), more -> :func:`compare_many` (files among
    them that cannot be read are left out and named in the report, as long as two remain).
    ``progress(done, total)`` is called while many files load."""
    if not snapshots:
        raise UsageError("diff needs at least one snapshot")
    rules = (rules or RankContext()).with_ignore(ignore)
    if any(isinstance(s, Snapshot) for s in snapshots):
        snaps = [_as_snapshot(s) for s in snapshots]
    else:
        from runsnap.views.names import resolve

        named: list[str | os.PathLike[str]] = [
            resolve(s) if isinstance(s, str) else s  # type: ignore[misc]
            for s in snapshots]  # @1, @label resolved first
        paths = expand(named)
        if len(named) == 2 and len(paths) > 2 and all(os.path.isdir(p) for p in named):
            jobs = _jobs(named, rules, show_all, git_log, static, progress)
            if jobs is not None:
                return jobs
        if len(paths) > 2:
            return _many(paths, rules, show_all, progress)
        snaps = load_many(paths, progress=progress) if len(paths) > 1 else [load(p) for p in paths]
    if len(snaps) == 1:
        from runsnap.capturing.like import capture_like

        now = capture_like(snaps[0])
        return compare(snaps[0], now, rules=rules, show_all=show_all, git_log=git_log,
                       notes=("B is the current context, captured now for A's command",),
                       b_is_now=True)
    if len(snaps) == 2:
        return compare(snaps[0], snaps[1], rules=rules, show_all=show_all, git_log=git_log,
                       static=static)
    return compare_many(snaps, rules=rules, show_all=show_all)


def _jobs(folders: list[str | os.PathLike[str]], rules: RankContext, show_all: bool,
          git_log: bool, static: bool, progress: Progress | None) -> Report | None:
    """``diff JOB_A/ JOB_B/``: rank against rank (:mod:`runsnap.views.jobs`), when both
    folders are jobs whose ranks pair; None when they are not (the N-way diff of every file)."""
    from runsnap.views.jobs import compare_jobs, job_pairs

    loaded = [load_many(expand([f]), progress=progress) for f in folders]
    pairs = job_pairs(loaded[0], loaded[1])
    if pairs is None:
        return None
    return compare_jobs(*pairs, rules=rules, show_all=show_all, git_log=git_log, static=static)


def _many(paths: list[str], rules: RankContext, show_all: bool,
          progress: Progress | None) -> NReport:
    """N snapshot files compared; the ones that cannot be read are left out and named in the
    report (:attr:`NReport.unreadable`), unless fewer than two remain."""
    bad: list[str] = []
    snaps = load_many(paths, progress=progress, unreadable=bad)
    if len(snaps) < 2:
        raise SnapshotError(bad[0] if len(bad) == 1 else
                            f"{len(bad)} of {len(paths)} snapshots cannot be read; the first: "
                            f"{bad[0]}")
    report = compare_many(snaps, rules=rules, show_all=show_all)
    if not bad:
        return report
    shown = "; ".join(bad[:3]) + (f"; and {len(bad) - 3} more" if len(bad) > 3 else "")
    note = f"{len(bad)} of {len(paths)} snapshots left out, not readable: {shown}"
    return report.replace(unreadable=tuple(bad), notes=(note, *report.notes))
