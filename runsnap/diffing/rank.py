"""Scores and reasons: which difference most likely changed the behaviour.

Evidence from the runs (:mod:`runsnap.diffing.evidence`: read on the failing path, named by
the outcome, read at run time, read by an installed package) outranks every rule; each
section's own rules (:mod:`runsnap.diffing.sections`, with :mod:`runsnap.knowledge`) decide
among differences the runs say nothing about; the user's rules (:mod:`runsnap.diffing.rules`)
come last. A score is 0-100; the report lists differences by :func:`ranking_key`. The scale,
from the top (docs/ranking.md):

====  ==========================================================================================
89-99 evidence from the runs (:mod:`runsnap.diffing.evidence`, docs/ranking.md)
90    a variable name that looks like a misspelling of a known one; a user priority rule
84-88 launch options and arguments, the executable, the interpreter, model config and revision
80-85 variable families that steer serving and training stacks (``SGLANG_*``, ``NCCL_*``, ...)
78-82 code: another commit, other uncommitted changes; core packages (torch, sglang, vllm)
70-76 other packages, weight files, tokenizer files, GPU model and count
50-66 drivers and CUDA, install locations, untracked files, sys.path, the outcome (an effect)
15-45 host facts (kernel, CPU, host name), branch names, remotes, collector errors
0-5   noise: hidden unless ``--all``, never counted (``PWD``, ``SHLVL``, ``SSH_*``, timings)
====  ==========================================================================================
"""

from __future__ import annotations

from collections.abc import Iterable

from runsnap.base.placeholder import is_fingerprint
from runsnap.diffing import sections
from runsnap.diffing.result import Difference
from runsnap.diffing.rules import RankContext, matches
from runsnap.snapshot import SECTION_ORDER

__all__ = ["assess", "rank", "ranking_key"]


def _secret_note(d: Difference, rules: RankContext, score: int, reason: str) -> tuple[int, str]:
    """Secrets compare by fingerprint; say so, and say when fingerprints cannot compare."""
    if not (is_fingerprint(d.a) or is_fingerprint(d.b)):
        return score, reason
    if d.change != "changed" or not (is_fingerprint(d.a) and is_fingerprint(d.b)):
        return score, reason + "; a secret (kept as a fingerprint)"
    if not rules.fingerprints_comparable:
        return 10, (reason + "; fingerprints not comparable: the snapshots were made with "
                    "different fingerprint keys, so the secret may be the same")
    return score, reason + "; secret changed (fingerprints differ)"


def assess(d: Difference, rules: RankContext) -> Difference:
    """``d`` with its score, reason and hidden flag: the section's scorer, then secret notes,
    then user rules (a priority rule lifts to at least 90; an ignore rule hides)."""
    score, reason, hidden = sections.score(d, rules)
    score, reason = _secret_note(d, rules, score, reason)
    kind, evidence = "name", d.evidence
    seen = rules.evidence.get((d.section, d.key))
    corroborated = seen is not None and seen.corroborated
    if seen is not None:
        kind, evidence = seen.kind, (*d.evidence, *seen.lines)
        score = seen.score(score)
        if seen.kind in ("failing-path", "named"):
            hidden = False
        if seen.kind == "unread":
            reason = f"{seen.sentence}; {reason}"
        else:
            evidence, reason = (*evidence, f"also: {reason}"), seen.sentence
    p = matches(rules.priority, d)
    if p:
        score, hidden, reason = max(score, 90), False, f"matches your priority rule {p!r}; {reason}"
    p = matches(rules.ignore, d)
    if p:
        hidden, reason = True, f"ignored by your rule {p!r} ({reason})"
    return d.replace(score=score, reason=reason, hidden=hidden, evidence_kind=kind,
                     evidence=evidence, corroborated=corroborated)


_SECTION_RANK = {name: i for i, name in enumerate(
    ("command", "env", "models", "packages", "git", "system", "outcome", "runtime"))}


def ranking_key(d: Difference) -> tuple[int, int, int, str]:
    """Sort key: shown before hidden, higher score first; on a tie, the section in the order
    command, env, models, packages, git, system, outcome, others (what the user chose before
    what the machine provides), then the key alphabetically so the order is stable."""
    return (int(d.hidden), -d.score, _SECTION_RANK.get(d.section, len(SECTION_ORDER)), d.key)


def rank(diffs: Iterable[Difference], rules: RankContext) -> tuple[Difference, ...]:
    """Assess every difference and order them most likely cause first."""
    return tuple(sorted((assess(d, rules) for d in diffs), key=ranking_key))
