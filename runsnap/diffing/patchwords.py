"""An error that quotes what an uncommitted edit added: the edit named by its own words.

A config edited to list other target modules, a data file whose header renamed a column: when
the failing run's error quotes a word the edit brought in (``Target modules {'c_attn_x'}``,
``feature_names mismatch: [... 'days_since_last_login' ...]``) and the other run never
printed it, the edit reached the code that raised, as an error quoting a variable's value
says of the variable (:func:`runsnap.diffing.naming.named`). The words are taken from the
patch a git difference carries (its ``+`` lines for the failing side, ``-`` lines for the
other), less the words the other side of the patch has too; only words of four characters
or more, never a number alone. A number counts beside its key: a changed line ``key: value``
(``key = value``, ``"key": value``) whose key and new value the error both quote
(``Expected float between 0 and 1 pct_start, but got 1.5`` for ``pct_start: 0.3`` edited to
``1.5``) names the edit, where neither alone would.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from runsnap.diffing.naming import distinctive, excerpt, says, texts
from runsnap.diffing.result import Difference
from runsnap.diffing.runfacts import RunFacts

__all__ = ["edit_quoted"]

_WORD = re.compile(r"[A-Za-z_][\w.-]{3,}")
#: A config line's key and value (YAML ``key: value``, INI/TOML ``key = value``, JSON
#: ``"key": value,``), the value up to a comment or a trailing comma.
_PAIR = re.compile(r"""^\s*(?:-\s+)?["']?([A-Za-z_][\w.-]*)["']?\s*[:=]\s*["']?([^\s"',#]+)""")


def _added(d: Difference, sign: str) -> list[str]:
    """The words of the patch lines ``d`` carries that start with ``sign`` and that no line
    of the other sign holds, in order."""
    mine: list[str] = []
    theirs: set[str] = set()
    for line in d.evidence:
        text = str(line)
        if text.startswith(("+++", "---")) or text[:1] not in "+-":
            continue
        words = _WORD.findall(text[1:])
        if text[0] == sign:
            mine += [w for w in words if w not in mine]
        else:
            theirs.update(words)
    return [w.rstrip(".-") for w in mine if w not in theirs]


def _pairs(d: Difference, sign: str) -> list[tuple[str, str]]:
    """The ``(key, value)`` of the patch lines ``d`` carries that start with ``sign``, where
    the other sign's lines give that key another value (or none)."""
    mine: list[tuple[str, str]] = []
    theirs: set[tuple[str, str]] = set()
    for line in d.evidence:
        text = str(line)
        if text.startswith(("+++", "---")) or text[:1] not in "+-":
            continue
        m = _PAIR.match(text[1:])
        if m is None:
            continue
        if text[0] == sign:
            mine.append((m[1], m[2]))
        else:
            theirs.add((m[1], m[2]))
    return [(k, v) for k, v in mine if (k, v) not in theirs]


def edit_quoted(d: Difference, runs: Sequence[RunFacts]) -> str | None:
    """The sentence when a failing run's error quotes a word the edit ``d`` (a git difference
    of one file) brought to that run's side, and no other run printed it; else None."""
    if d.section != "git" or ": " not in d.key:
        return None
    for where, text, rank, f in texts(runs):
        if rank or not f.failed or f.shared_failure:
            continue
        sign = "+" if f.label == "B" else "-"
        for word in _added(d, sign):
            if says(text, word) and distinctive(word, f, runs):
                return (f"{where} quotes {word}, which the edit to {d.key.partition(': ')[2]} "
                        f"brought to run {f.label}: \"{excerpt(text, word)}\"")
        for key, value in _pairs(d, sign):
            if says(text, key) and says(text, value) and distinctive(value, f, runs):
                return (f"{where} quotes {key} and its value {value}, which the edit to "
                        f"{d.key.partition(': ')[2]} brought to run {f.label}: "
                        f"\"{excerpt(text, value)}\"")
    return None
