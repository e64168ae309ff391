"""How sure the verdict may be: a cause is named only when the runs single it out.

The rules (docs/ranking.md has the same text):

* the outcomes must differ (:func:`runsnap.diffing.consequences.outcome_of`): with the same
  outcome there is nothing a difference caused, and the verdict names no cause;
* the top candidate must have evidence from the runs (``failing-path``, ``named`` or ``read``,
  :data:`runsnap.diffing.kinds.KINDS`);
* and a clear margin over every other candidate (not only the next one: a difference more
  can never make the verdict surer; without evidence, one scored under :data:`LIKELY` is no
  candidate): stronger evidence (a kind higher in
  :data:`~runsnap.diffing.kinds.KINDS`, or, within a kind, a rank at least
  :data:`MARGIN` better: the function that raised over a read three calls up). Points a name
  family adds within a band never make a margin: a tie stays a tie. A ``read`` alone (the
  program used the value, nothing ties it to the failure) stands apart only from differences
  the runs show unread or read only incidentally (by the interpreter at start-up, or for a
  generic feature), and, when the failing run's own warning names it by its words or implies
  its value, from a difference the runs say nothing about; over a difference the runs say
  nothing about (an option, a data file, a package: kinds ``name`` and ``static``), only the
  strongest evidence stands apart: read in
  the function that raised (99), named by the error itself (96), or evidence the failing
  run's words back (an option whose failing value the error itself quotes). ``failing-path``
  evidence that the failing run's own words back too (its error quotes the value the run
  read; a read on the failing path that its words or an engine's message name) stands apart
  from a read as deep as its own (a caller of the raise, or a settings reader that read
  every variable in the function that raised) that nothing else backs.

Where a run failed with a traceback the other did not share, a library's start-up setting
(a ``read`` below the band of reads: read only at its import, no part of it on that traceback)
stands apart from the program's own read, and from a setting of the whole interpreter that
decides results (``PYTHONOPTIMIZE``), which holds for every frame of that traceback: the
traceback shows where the run failed. A random seed the program read (``PL_GLOBAL_SEED``)
stands apart from a library's start-up setting whatever the outcome: another seed is another
result, by what a seed is.

When the margin fails, the verdict still commits when the top difference is the only one the
program took in (:func:`_sole`): every other difference is one the runs show unread or read
only at start-up or for a generic feature; or when it is the only thing the program was
launched with that differs (an option, the model, or its own code and data: an uncommitted
edit of a module it imported or ran, a file of the tree it opened, a file both runs opened
with other content) and the others are,
besides, only
libraries' start-up settings (read at their import, no word of the runs naming them; not a
locale, which writes numbers otherwise). A confident verdict says why
(:attr:`Judgement.why`).

Otherwise the verdict is "undecided between K candidates" (those the evidence does not tell
apart from the top one, or every likely cause when none has evidence from the runs, never one
the runs show unread while another is left, nor one read only incidentally, or only as a
setting every process of the stack takes, while a likely one the program decides is), and
names the experiment that decides, ``runsnap bisect``, with about how many launches it takes
(:func:`bisect_launches`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from runsnap.base.records import FrozenRecord
from runsnap.diffing.kinds import BANDS, KINDS
from runsnap.diffing.result import Difference
from runsnap.knowledge.options import endpoint_setting, seed_setting
from runsnap.knowledge.readers import ambient_setting, decides_results

__all__ = ["FROM_RUNS", "LAUNCHED", "LIKELY", "MARGIN", "Judgement", "bisect_launches", "judge", "strength"]

#: Evidence kinds that come from the runs themselves.
FROM_RUNS = ("failing-path", "named", "read")
#: Sections that are what the program was launched with: its command line, and the models
#: the command line names (their config, weights, tokenizer and generation files): the program
#: takes them in whatever the trace sees.
LAUNCHED = ("command", "models")
#: Within one evidence kind, how many ranks apart two candidates must be to be told apart.
MARGIN = 2
#: Without evidence from the runs, the differences scored at least this are the candidates.
LIKELY = 60
#: Launches bisect makes besides the search itself: all changes applied once, then the answer
#: and GOOD's own launch re-checked twice each (runsnap/experiments/bisecting.py).
BISECT_FIXED = 1 + 2 * 2


class Judgement(FrozenRecord):
    """What the verdict may say."""

    confidence: str
    """``confident`` (a cause is named) or ``undecided``."""

    candidates: tuple[Difference, ...]
    """The cause (confident), or the differences the evidence does not tell apart."""

    launches: int = 0
    """About how many launches ``runsnap bisect`` takes to decide among the candidates."""

    why: str = ""
    """Why it commits (what singles the cause out) or why it is undecided, in words."""


def strength(d: Difference) -> tuple[int, int]:
    """(kind, rank) of a difference's evidence, lower is stronger; the rank inside a kind's
    band, not the points a name family adds to it.

    >>> strength(Difference("env", "X", "added", None, "1", score=98, evidence_kind="failing-path"))
    (0, 1)
    >>> strength(Difference("env", "X", "added", None, "1", score=93, evidence_kind="read"))
    (2, 0)
    """
    kind = KINDS.index(d.evidence_kind) if d.evidence_kind in KINDS else len(KINDS)
    if d.evidence_kind in ("failing-path", "named"):
        return kind, max(0, BANDS[d.evidence_kind][1] - d.score)
    return kind, 0


def _apart(top: Difference, other: Difference) -> bool:
    """Whether the evidence tells ``top`` from ``other``. A read alone says the program used
    the value, not that it mattered: it stands apart only from what the runs show unread."""
    (k1, r1), (k2, r2) = strength(top), strength(other)
    # a quoted port or address says where the run connected; what was read as near the raise
    # (rank 0 made a client of itself, so nothing listened there) may be why it failed
    where = (top.quoted and endpoint_setting(top.key) and other.evidence_kind == "failing-path"
             and r2 <= r1)
    if top.quoted and not other.quoted and not where:
        # the failing error quotes top's value and no other input's: whatever else read on the
        # failing path (a wrapper that raised because the child failed, a constructor that read
        # every field) did not put its value in the error
        return True
    if top.evidence_kind == "read":
        if (top.corroborated and other.evidence_kind in ("name", "static")
                and not other.corroborated):
            # the failing side's own warning names top by its words or implies its value
            # ("Exceeded concurrency limit." for --limit-concurrency 2), and the runs say
            # nothing of other
            return True
        return other.evidence_kind in ("incidental", "unread")
    if (top.corroborated and not other.corroborated and other.evidence_kind == "failing-path"
            and r2 >= r1 and not where):
        # the failing run's words back top beyond where it was read (its error quotes top's
        # value or names it, or an engine's message top governs); nothing but a read as deep
        # as top's backs other (a rendezvous variable every job reads in a caller of the code
        # that raised, a settings reader that read every variable in the function that raised)
        return True
    if other.evidence_kind in ("static", "name") and r1 > 0 and not top.corroborated:
        # the runs cannot see how an option, a data file or a package was used: only the
        # strongest evidence (read in the function that raised, named by the error, the
        # failing error quoting top's value) stands apart from a difference they say nothing
        # about
        return False
    return k1 < k2 or (k1 == k2 and r2 - r1 >= MARGIN)


def bisect_launches(k: int) -> int:
    """About how many launches ``runsnap bisect`` needs to find one cause among ``k``
    candidates ranked first: the fixed ones, and about 2 log2(k) for the halving.

    >>> bisect_launches(1), bisect_launches(2), bisect_launches(8)
    (5, 7, 11)
    """
    return BISECT_FIXED + 2 * math.ceil(math.log2(max(k, 1)))


def _sole(causes: Sequence[Difference], outcome: str) -> Judgement | None:
    """The one difference the runs took in, when every other difference is one they never
    touched: a confident verdict, with its reason. Judged over every difference (one more,
    noise included, is one more the runs may have taken in: it can only undo the verdict).

    The program took a difference in when the runs show it (read, on the failing path, named
    by the error) or when it is what the program was launched with (its command line: an
    option, an argument, the executable; the program is handed its argv; and the model the
    command line names: its config, weights, tokenizer and generation files, which opens from
    C hide from the trace). Untouched: what the
    runs show unread, and what only the interpreter, a generic feature or every process of the
    stack read at start-up (``incidental``). A start-up read is never the verdict by itself,
    even when it is the only difference read at all: two runs of a program that is not
    deterministic differ beyond a metric's tolerance with nothing changed but the shell."""
    if outcome != "different":
        return None
    unread = [d for d in causes if d.evidence_kind == "unread"]
    startup = [d for d in causes if d.evidence_kind == "incidental"]
    # without evidence from the runs, what scores under LIKELY (host facts, a branch's name,
    # a tree's dirty flag beside its edits) is never a candidate either
    unlikely = [d for d in causes if _unlikely(d)]
    rest = [d for d in causes if d.evidence_kind not in ("unread", "incidental")
            and all(d is not u for u in unlikely)]
    # launched with it, whether or not the runs also show it read (evidence from the runs
    # never makes a verdict less sure: a config field the program read is launched too)
    launched = [d for d in rest if d.section in LAUNCHED or _own_input(d)]
    if len(launched) == 1 and all(d is launched[0] or (_setting(d) and not _locale(d))
                                  for d in rest):
        # what the program was launched with, beside libraries' start-up settings only (read
        # at their import, no word of the runs naming them): the launch decides
        startup += [d for d in rest if d is not launched[0]]
        rest = launched
    if len(rest) == 1 and (rest[0].evidence_kind in FROM_RUNS or rest[0].section in LAUNCHED):
        n = len(unread) + len(startup) + len(unlikely)
        what = ", ".join(w for w, some in (("unread", unread), ("read at start-up", startup),
                                           ("minor", unlikely)) if some)
        what = " or ".join(what.rsplit(", ", 1))
        return Judgement("confident", (rest[0],), why=_sentence(
            "the only input that differs", n, what))
    return None


def _own_input(d: Difference) -> bool:
    """An uncommitted edit or untracked file the run took in (a module of an edited file it
    imported or ran as its script, a data file it opened: ``read`` evidence of a ``git``
    difference), or a file both runs opened with other content (``runtime data_files``: a
    shared config regenerated, a local override rewritten): the program's own code and data,
    as much what it was launched with as its command line."""
    return d.evidence_kind == "read" and (
        d.section == "git" or tuple(d.path[:2]) == ("runtime", "data_files"))


def _unlikely(d: Difference) -> bool:
    """A difference without evidence from the runs that scores under :data:`LIKELY` (a host
    fact, a branch's name, a tree's dirty flag): never a candidate."""
    return d.evidence_kind in ("name", "static") and d.score < LIKELY


def _setting(d: Difference) -> bool:
    """A read scored below the band of reads: a setting every process of the stack takes,
    read at a library's import or for the locale (:data:`runsnap.diffing.ambient.CEILING`)."""
    return d.evidence_kind == "read" and d.score < BANDS["read"][0]


def _locale(d: Difference) -> bool:
    """A locale variable: another locale writes numbers and encodes text otherwise, what a
    metric or an output shows (it stays a candidate beside a launch option)."""
    rule = ambient_setting(d.key) if d.section == "env" else None
    return rule is not None and rule[0] == "locale"


def _whole_interpreter(d: Difference) -> bool:
    """A setting of the whole interpreter that decides results (``PYTHONOPTIMIZE``,
    ``PYTHONHASHSEED``: :func:`runsnap.knowledge.readers.decides_results`), read by it: it
    holds for every frame of a failing traceback, as a library's import setting does not."""
    return d.section == "env" and d.evidence_kind == "read" and decides_results(d.key) is not None


def _own_read(d: Difference) -> bool:
    """A ``read`` in the band of reads: the program used it while it ran (not a library's
    start-up setting, :func:`_setting`)."""
    return d.evidence_kind == "read" and d.score >= BANDS["read"][0]


def _sentence(head: str, n: int, what: str) -> str:
    """``head``, and what the ``n`` other differences are, in a few words."""
    if not n:
        return head
    return f"{head}; {'the other' if n == 1 else f'{n} others'} {what}"


def _apart_why(top: Difference, causes: Sequence[Difference]) -> str:
    """Why ``top`` stands apart from every other difference, in a few words."""
    said = {"failing-path": "on the failing path", "named": "named by the failing run",
            "read": "read by the program"}[top.evidence_kind]
    if top.quoted:
        said = "the failing error quotes its value, no other input's"
    elif top.corroborated:
        said = ("the failing run's words back it" if top.evidence_kind == "named"
                else f"{said}, backed by its error" if top.evidence_kind == "failing-path"
                else f"{said}, backed by what the runs printed")
    rest = [d for d in causes if d is not top]
    if not rest:
        return said
    return _sentence(said, len(rest), "weaker")


def judge(counted: Sequence[Difference], outcome: str, *, traceback: bool = False) -> Judgement:
    """The judgement over ``counted`` (ranked, the differences that count) for runs whose
    outcome is ``outcome`` (``same``, ``different`` or ``""`` unknown). ``traceback``: a run
    failed in a way the other did not, with a traceback that shows where; then a library's
    start-up setting (:func:`_setting`: read only at its import, no part of it on that
    traceback, no word of the runs naming it) stands apart from the program's own read."""
    causes = [d for d in counted if d.section != "outcome"]
    if outcome == "same" or not causes:
        why = "the outcomes are the same" if outcome == "same" else "nothing to explain"
        return Judgement("undecided", (), 0, why)
    top = causes[0]
    if top.evidence_kind in FROM_RUNS:
        # apart from every other candidate, not only the runner-up: a difference added below
        # the runner-up (noise of another shell) never makes a verdict more sure
        # without evidence, what scores under LIKELY is never a candidate (as below)
        tied = [d for d in causes if d is top or not (
            _apart(top, d) or _unlikely(d)
            or (traceback and (_own_read(top) or _whole_interpreter(top)) and _setting(d)
                and not _whole_interpreter(d))
            or (_own_read(top) and seed_setting(top.key) and _setting(d)))]
        if len(tied) == 1:
            return Judgement("confident", (top,), why=_apart_why(top, causes))
        return _sole(causes, outcome) or Judgement(
            "undecided", tuple(tied), bisect_launches(len(tied)),
            "the evidence from the runs does not tell them apart")
    sole = _sole(causes, outcome)
    if sole is not None:
        return sole
    # what the runs show unread changed nothing: never a candidate while anything else is
    pool = [d for d in causes if d.evidence_kind != "unread"] or causes
    likely = [d for d in pool if d.score >= LIKELY] or pool
    # a start-up read by every process (threads, colour) is no decision of the program: while
    # a difference the program decides (an option, its own variable, a config field) is
    # likely, it is not one of the candidates
    likely = [d for d in likely if d.evidence_kind != "incidental"] or likely
    # so is a setting every process of the stack takes (read only at a library's import, or a
    # locale), kept below the band of reads: it stays listed, not among the candidates
    likely = [d for d in likely if not _setting(d)] or likely
    why = ("no difference has evidence from the runs" if outcome else
           "no run to take evidence from")
    return Judgement("undecided", tuple(likely), bisect_launches(len(likely)), why)
