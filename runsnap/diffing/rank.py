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

import json
import re
from collections.abc import Iterable
from typing import Any

from runsnap.base.placeholder import PREFIX, is_fingerprint
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


_FINGERPRINT = re.compile(re.escape(PREFIX) + r"[0-9a-f]+>")
#: Why a difference in fingerprints alone is not counted when the keys differ.
NOT_COMPARABLE = ("fingerprints not comparable: the snapshots were made with different "
                  "fingerprint keys (RUNSNAP_KEY_FILE), so the secret may be the same; not counted")


def _masked(value: Any) -> str:
    """``value`` as text with every fingerprint the same placeholder."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return _FINGERPRINT.sub(PREFIX + "?>", text)


def only_fingerprints(d: Difference) -> bool:
    """Whether ``d`` changed nothing but fingerprints (a secret's value, or a secret inside a
    text: a command line, a code diff, an output line).

    >>> fp = "<redacted:hmac-sha256:0123456789abcdef>"
    >>> d = Difference("git", "r", "changed", "-x -u " + fp, "-x -u " + fp.replace("0", "f"))
    >>> only_fingerprints(d), only_fingerprints(d.replace(b="-y -u " + fp))
    (True, False)
    >>> diff = ("@@ -1 +1 @@", "-+curl -u " + fp, "++curl -u " + fp.replace("0", "e"))
    >>> only_fingerprints(Difference("git", "r: f.sh", "changed", "+1 -0", "+1 -0", evidence=diff))
    True
    """
    if d.change != "changed":
        return False
    if d.a == d.b:  # texts compared line by line (a code diff): the lines that changed
        lines = d.evidence
        if not lines or not all(line[:1] in "-+ @" and line for line in lines):
            return False  # a line cut short, or a note: more may differ than is shown
        gone = [_masked(line[1:]) for line in lines if line[:1] == "-"]
        came = [_masked(line[1:]) for line in lines if line[:1] == "+"]
        return bool(gone) and gone == came and any(PREFIX in line for line in gone)
    a, b = _masked(d.a), _masked(d.b)
    return a == b and PREFIX in a


def assess(d: Difference, rules: RankContext) -> Difference:
    """``d`` with its score, reason and hidden flag: the section's scorer, then secret notes,
    then user rules (a priority rule lifts to at least 90; an ignore rule hides)."""
    score, reason, hidden = sections.score(d, rules)
    score, reason = _secret_note(d, rules, score, reason)
    kind, evidence = "name", d.evidence
    seen = rules.evidence.get((d.section, d.key))
    corroborated = seen is not None and seen.corroborated
    quoted = seen is not None and seen.quoted
    if seen is not None:
        kind, evidence = seen.kind, (*d.evidence, *seen.lines)
        score = seen.score(score)
        if seen.kind in ("failing-path", "named"):
            hidden = False
        if seen.kind == "unread":
            reason = f"{seen.sentence}; {reason}"
        else:
            # the section's own words, unless an evidence line says them already
            also = () if reason in evidence else (f"also: {reason}",)
            evidence, reason = (*evidence, *also), seen.sentence
    if not rules.fingerprints_comparable and only_fingerprints(d):
        score, hidden, reason = 3, True, NOT_COMPARABLE  # noise: neither shown nor counted
    p = matches(rules.priority, d)
    if p:
        score, hidden, reason = max(score, 90), False, f"matches your priority rule {p!r}; {reason}"
    p = matches(rules.ignore, d)
    if p:
        hidden, reason = True, f"ignored by your rule {p!r} ({reason})"
    return d.replace(score=score, reason=reason, hidden=hidden, evidence_kind=kind,
                     evidence=evidence, corroborated=corroborated, quoted=quoted)


_SECTION_RANK = {name: i for i, name in enumerate(
    ("command", "env", "models", "packages", "git", "system", "outcome", "runtime"))}


def ranking_key(d: Difference) -> tuple[int, int, int, int, int, int, str]:
    """Sort key: shown before hidden; what happened (section ``outcome``, an effect) after
    every cause but those the runs show unread; an ``incidental`` one (the runs show it decided
    nothing) after every other cause, as the verdict's candidates have it; higher score first;
    on a tie, the one whose value the failing error quotes, then the one the failing run's
    words back; then the section in the
    order command, env, models, packages, git, system, outcome, others (what the user chose
    before what the machine provides), then the key alphabetically so the order is stable."""
    effect = d.section == "outcome" or d.evidence_kind == "unread"
    return (int(d.hidden), int(effect), int(d.evidence_kind == "incidental"), -d.score,
            -2 * int(d.quoted) - int(d.corroborated),
            _SECTION_RANK.get(d.section, len(SECTION_ORDER)), d.key)


def rank(diffs: Iterable[Difference], rules: RankContext) -> tuple[Difference, ...]:
    """Assess every difference and order them most likely cause first."""
    return tuple(sorted((assess(d, rules) for d in diffs), key=ranking_key))
