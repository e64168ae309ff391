"""The kinds of evidence from the runs, their score bands, and the record of one finding.

:mod:`runsnap.diffing.evidence` gathers the evidence for each difference and documents the
scale (docs/ranking.md has the same table); the kinds, strongest first, and the bands they
score in are declared here, beside :class:`Evidence`, which turns a finding into a score.
"""

from __future__ import annotations

from runsnap.base.records import FrozenRecord

__all__ = ["BANDS", "KINDS", "UNREAD_CEILING", "Evidence"]

#: Evidence kinds, strongest first.
KINDS = ("failing-path", "named", "read", "static", "name", "incidental", "unread")

#: Score band (low, high) of each kind of evidence from the run.
BANDS = {"failing-path": (97, 99), "named": (94, 96), "read": (91, 93), "static": (89, 90)}

#: A score ceiling for a variable the traced program never read.
UNREAD_CEILING = 30


class Evidence(FrozenRecord):
    """The strongest evidence found for one difference."""

    kind: str
    """One of :data:`KINDS`."""

    sentence: str
    """What was seen, where, as a maintainer can check it."""

    rank: int = 0
    """Within the kind, 0 is strongest (e.g. the raising function itself)."""

    lines: tuple[str, ...] = ()
    """More detail (other read sites, the traceback frame met)."""

    corroborated: bool = False
    """``failing-path`` evidence that the failing run's own words back too: its error quotes
    the failing side's value of a variable it read (the value reached the code that raised),
    or the variable is read on the failing path and named by the failing run's words or by an
    engine's message it governs; ``named`` evidence where the failing error itself quotes the
    failing side's value (an option's, a config field's), or an engine's own message that the
    difference governs. :func:`runsnap.diffing.confidence.judge` tells it apart from a read in
    a caller of the raise that nothing else backs, and from what the runs say nothing about."""

    quoted: bool = False
    """The failing error quotes a distinctive part of the failing side's value of an input the
    failing run took in (:func:`runsnap.diffing.naming.named`, ``reached``): it stands apart
    from every difference whose value the error does not quote, failing-path ones included."""

    ceiling: int = 100
    """The highest score it may give: a read only at start-up ranks below the launch options
    (:data:`runsnap.diffing.ambient.CEILING`)."""

    def score(self, name_score: int) -> int:
        """The score of this evidence for a difference whose name scored ``name_score``.

        >>> Evidence("read", "").score(85), Evidence("read", "").score(40)
        (93, 91)
        >>> Evidence("failing-path", "", rank=1).score(85), Evidence("named", "").score(40)
        (98, 96)
        """
        if self.kind == "unread":
            return min(name_score, UNREAD_CEILING)
        if self.kind not in BANDS:
            return min(name_score, self.ceiling)
        low, high = BANDS[self.kind]
        if self.kind in ("failing-path", "named"):
            return max(low, high - self.rank)
        bonus = 2 if name_score >= 85 else 1 if name_score >= 75 else 0
        return min(high, low + bonus, self.ceiling)
