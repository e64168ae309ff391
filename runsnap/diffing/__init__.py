"""Say why two (or N) runs differ, most likely cause first.

    report = runsnap.diff("good.toml", "bad.toml")
    if report:                       # any difference that counts
        print(report.counted[0])     # the most likely cause
    print(render(report, "markdown"))

The journey: load -> :mod:`~runsnap.diffing.sections` turns each section pair into unranked
:class:`Difference` records -> :mod:`~runsnap.diffing.rank` scores them and gives reasons ->
:mod:`runsnap.render` prints. Nothing here touches the live machine except the
optional ``git log`` between two commits of a repository that is here. "Compare with now" is a
capture followed by an ordinary diff: :func:`runsnap.views.compare.diff`, the public ``diff``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Union

from runsnap.diffing import consequences, datafiles, evidence, grouping, loaded, made, searchpaths, sections
from runsnap.diffing.bulkload import snapshot_files
from runsnap.diffing.confidence import FROM_RUNS, judge
from runsnap.diffing.gitlog import CommitLog, commits_between
from runsnap.diffing.kinds import Evidence
from runsnap.diffing.many import Progress, compare_rows
from runsnap.diffing.many_result import NReport, NRow
from runsnap.diffing.now import NOTE, only_what_now_has
from runsnap.diffing.rank import rank, ranking_key
from runsnap.diffing.result import (
    CHANGES,
    Difference,
    Report,
    SnapInfo,
    launcher_of,
)
from runsnap.diffing.rules import RankContext
from runsnap.diffing.static import who_reads_for
from runsnap.errors import UsageError
from runsnap.snapshot import Snapshot, ordered_sections
from runsnap.snapshot.store import newest as newest_in

__all__ = [
    "CHANGES",
    "Difference",
    "NReport",
    "NRow",
    "Report",
    "RankContext",
    "SnapInfo",
    "compare",
    "compare_many",
    "differences",
    "expand",
    "newest",
    "rank_evidence",
]

SnapshotLike = Union[Snapshot, str, "os.PathLike[str]"]


def differences(
    a: Snapshot, b: Snapshot, commit_log: CommitLog | None = None
) -> list[Difference]:
    """Every difference between ``a`` and ``b``, unranked, section by section."""
    out: list[Difference] = []
    for name in ordered_sections(set(a.sections) | set(b.sections)):
        out += sections.compare_section(name, a.get(name) or {}, b.get(name) or {}, commit_log)
    return out


def _rules_for(snaps: Sequence[Snapshot], rules: RankContext | None) -> tuple[RankContext, tuple[str, ...]]:
    rules = rules or RankContext()
    keys = {s.records.meta.fingerprint_key or "" for s in snaps}
    comparable = len(keys) <= 1
    notes: tuple[str, ...] = ()
    if not comparable:
        notes = ("the snapshots' secrets were fingerprinted with different keys (captured by "
                 "other users or machines): a changed fingerprint may hide the same secret",)
    return rules.replace(fingerprints_comparable=comparable), notes


def _with_evidence(rules: RankContext, a: Snapshot, b: Snapshot, found: Sequence[Difference],
                   who_reads: evidence.WhoReads | None = None) -> RankContext:
    """``rules`` with the runs' evidence for ``found`` (:mod:`runsnap.diffing.evidence`), and
    what the other ranks of a job saw stronger (``rules.job_evidence``)."""
    own = evidence.gather(found, a, b, who_reads)
    return rules.replace(evidence=evidence.merged(own, rules.job_evidence)
                         if rules.job_evidence else own)


def rank_evidence(a: Snapshot, b: Snapshot, label: str) -> dict[tuple[str, str], Evidence]:
    """The evidence from the runs (read, named, on a failing path) that one pair of ranks of
    two jobs holds for the differences between them, each sentence prefixed with ``label``
    (``rank 1``): what :func:`runsnap.views.jobs.compare_jobs` adds to the pair it shows."""
    found = differences(a, b)
    out = {}
    for key, ev in evidence.gather(found, a, b).items():
        if ev.kind in FROM_RUNS:
            out[key] = ev.replace(sentence=f"in {label}: {ev.sentence}")
    return out


def compare(
    a: Snapshot,
    b: Snapshot,
    *,
    rules: RankContext | None = None,
    show_all: bool = False,
    git_log: bool = True,
    notes: Iterable[str] = (),
    b_is_now: bool = False,
    static: bool = False,
) -> Report:
    """The ranked differences between snapshot ``a`` (the reference) and ``b``.

    ``static``: when neither run was traced, look for the installed packages that read each
    differing variable (who-reads over the distributions B lists, where installed here;
    :mod:`runsnap.diffing.static`).

    ``git_log``: when a repository is at another commit and is present on this machine with
    both commits, list the commits between them (the only look at this machine).
    ``b_is_now``: ``b`` is a context captured now, which has not run: what only a run has
    (:data:`~runsnap.diffing.now.RUN_SECTIONS`) is left out.
    """
    rules, extra = _rules_for((a, b), rules)
    found = differences(a, b, commits_between if git_log else None)
    if b_is_now:
        kept = only_what_now_has(found)
        if len(kept) < len(found):
            extra = (*extra, NOTE)
        found = kept
    if not b_is_now:
        found += sections.findings.compare(a, b)
    found = datafiles.one_view(found, a, b)  # a file git or [models] shows: shown there
    rules = rules.replace(same_models=_same_models(a, b, found),
                          outputs=datafiles.output_options(a, b, found),
                          parsed_alike=sections.command.parsed_alike(a, b, found),
                          ran_out=consequences.ran_out(a, b),
                          own_dirs_only=searchpaths.own_dirs_only(a, b),
                          same_prefix=_same_prefix(a, b),
                          own_families=sections.env.own_families(a.records.env.vars,
                                                                 b.records.env.vars),
                          inert_misspellings=sections.env.inert_misspellings(
                              a.records.env.vars, b.records.env.vars),
                          hand_set=sections.env.hand_set(
                              a.records.env.vars, launcher_of(a).vars or {},
                              b.records.env.vars, launcher_of(b).vars or {}))
    who = None
    if static:
        who = who_reads_for(a, b)
    rules = _with_evidence(rules, a, b, found, who)
    ranked, folded = consequences.fold(grouping.group(
        datafiles.outputs(rank(found, rules), a, b), a, b, key=ranking_key))
    info_a, info_b = SnapInfo.of(a), SnapInfo.of(b)
    ranked = tuple(sorted(made.mark(consequences.per_rank(ranked, info_a, info_b), a, b),
                          key=ranking_key))
    outcome, words = consequences.outcome_of(a, b)
    other = [d.key for d in ranked if d.section == "outcome" and not d.hidden
             and d.key not in ("exit_status", "signal")
             and not (d.key == "first_error" and words.startswith("both failed"))]
    notice = consequences.notices_only(a, b, [d.key for d in ranked if d.section == "env"]) \
        if outcome == "same" and other == ["warnings"] else ""
    if notice:  # a library told one run its shell sets a deprecated variable: nothing else
        words = f"{words}; {notice}"
        ranked = tuple(d.replace(hidden=True, reason=f"{notice} ({d.reason})")
                       if d.section == "outcome" and d.key == "warnings" else d for d in ranked)
    elif outcome == "same" and other:  # both ended alike, yet printed other warnings, metrics
        outcome, words = "different", f"{words}; {', '.join(other)} differ"
    moved = loaded.moved_exactly(ranked, a, b, rules) if outcome == "same" else ""
    if outcome == "same":  # a metric moved where it should not have: the reads stay shown
        words = f"{words}; {moved}" if moved else words
        ranked = consequences.unchanged(ranked, words, consequences.from_shell(a, b),
                                        frozenset(FROM_RUNS) if moved else frozenset())
    traceback = outcome == "different" and consequences.failed_with_traceback(a, b)
    if traceback:
        ranked = tuple(sorted(consequences.seed_drawn(ranked, a, b), key=ranking_key))
    j = judge([d for d in ranked if not d.hidden], outcome, traceback=traceback)
    return Report(info_a, info_b, ranked, show_all=show_all,
                  notes=(*notes, *extra), outcome=outcome, outcome_words=words,
                  consequences=folded, confidence=j.confidence, candidates=j.candidates,
                  launches=j.launches,
                  because=j.why if j.confidence == "confident" else "")


def compare_many(
    snaps: Sequence[Snapshot], *, rules: RankContext | None = None, show_all: bool = False,
    progress: Progress | None = None,
) -> NReport:
    """For each key not the same in every snapshot: who holds which value, the odd ones out
    against the majority (with their host and rank), splits, and the keys that are one value
    per rank or host as the launcher numbers them (see :mod:`runsnap.diffing.many`)."""
    if len(snaps) < 2:
        raise UsageError("compare_many needs at least two snapshots")
    rules, notes = _rules_for(snaps, rules)
    return compare_rows(snaps, rules, show_all=show_all, notes=notes, progress=progress,
                        evidence_for=_with_evidence)


def _same_prefix(a: Snapshot, b: Snapshot) -> str:
    """The Python environment both runs ran in, when both snapshots say it is one."""
    pa, pb = a.records.packages.prefix, b.records.packages.prefix
    return str(pa) if pa and pa == pb else ""


def _same_models(a: Snapshot, b: Snapshot, found: Sequence[Difference]) -> frozenset[str]:
    """Model sources (``--model-path``) present in both whose only difference is the path."""
    ma, mb = a.records.models.models, b.records.models.models
    out = set()
    for src in set(ma) & set(mb):
        if not src.startswith("--"):
            continue
        keys = {d.key for d in found if d.section == "models" and d.key.startswith(f"{src}: ")}
        if keys <= {f"{src}: path"}:
            out.add(src)
    return frozenset(out)


def expand(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Snapshot paths with every folder replaced by the snapshot files in it (and below it),
    in natural order (``rank-2`` before ``rank-10``)."""

    out: list[str] = []
    for p in paths:
        text = os.fspath(p)
        out += snapshot_files(text) if os.path.isdir(text) else [text]
    return out


def newest(folder: str | os.PathLike[str], count: int = 2) -> list[str]:
    """The ``count`` newest snapshots in ``folder`` (as ``runsnap ls`` orders them), oldest of
    them first, so ``diff(*newest(".runsnap"))`` compares the last two runs."""

    return newest_in(folder, count)
