"""The verdict's confidence is judged against every candidate: a difference more (noise of
another shell, a launcher's port) never makes it surer (runsnap/diffing/confidence.py)."""

from __future__ import annotations

import itertools

from runsnap.diffing.confidence import judge
from runsnap.diffing.rank import ranking_key
from runsnap.diffing.result import Difference

#: One difference per kind and strength of evidence, as ranking scores them.
KINDS = [("failing-path", 99), ("failing-path", 97), ("named", 96), ("named", 95),
         ("named", 94), ("read", 93), ("read", 91), ("static", 90), ("name", 88),
         ("name", 70), ("incidental", 60), ("unread", 30)]


def _diff(i: int, kind: str, score: int) -> Difference:
    return Difference("env", f"VAR_{i}", "changed", "a", "b", score=score, evidence_kind=kind)


def test_a_difference_more_never_makes_the_verdict_surer() -> None:
    """Every pair and triple of evidence kinds, with every kind added below the top one:
    confident after the addition only if confident before."""
    for size in (1, 2, 3):
        for combo in itertools.combinations_with_replacement(KINDS, size):
            base = sorted((_diff(i, k, s) for i, (k, s) in enumerate(combo)), key=ranking_key)
            before = judge(base, "different").confidence
            for kind, score in KINDS:
                more = sorted([*base, _diff(9, kind, score)], key=ranking_key)
                if more[0] is not base[0]:
                    continue  # a new top candidate: another verdict, not a noisier one
                after = judge(more, "different")
                assert not (after.confidence == "confident" and before != "confident"), (
                    combo, kind, score)


def test_a_name_below_a_read_keeps_the_named_cause_undecided() -> None:
    """Named by a traceback's source line (95), a read (93) next, an option the runs say
    nothing about (88) last: the option is not told apart, so the verdict is undecided between
    the two, whatever stands between them."""
    named, read, option = _diff(0, "named", 95), _diff(1, "read", 93), _diff(2, "name", 88)
    got = judge([named, read, option], "different")
    assert got.confidence == "undecided"
    assert [d.key for d in got.candidates] == ["VAR_0", "VAR_2"]
    assert judge([named, read], "different").confidence == "confident"


def _backed(key: str, score: int, corroborated: bool) -> Difference:
    return Difference("env", key, "changed", "a", "b", score=score,
                      evidence_kind="failing-path", corroborated=corroborated)


def test_the_runs_words_tell_a_read_on_the_failing_path_from_a_read_above_the_raise() -> None:
    """gloo's error quotes GLOO_SOCKET_IFNAME's value, which the run read (99, corroborated);
    MASTER_PORT is read by init_process_group, a caller of the raise (98): confident. A read
    in the function that raised (99), or one the words back too, stays a tie."""
    cause = _backed("GLOO_SOCKET_IFNAME", 99, True)
    verdict = judge([cause, _backed("MASTER_PORT", 98, False)], "different")
    assert verdict.confidence == "confident" and verdict.candidates == (cause,)
    for other in (_backed("MASTER_PORT", 99, False), _backed("MASTER_PORT", 98, True)):
        ranked = sorted([cause, other], key=ranking_key)
        assert judge(ranked, "different").confidence == "undecided"


def test_a_difference_more_never_makes_a_corroborated_verdict_surer() -> None:
    """The property of the first test, with corroborated failing-path evidence among the kinds."""
    kinds = [*((k, s, False) for k, s in KINDS), ("failing-path", 99, True),
             ("failing-path", 98, True), ("failing-path", 98, False)]
    for size in (1, 2, 3):
        for combo in itertools.combinations_with_replacement(kinds, size):
            base = sorted((Difference("env", f"V{i}", "changed", "a", "b", score=s,
                                      evidence_kind=k, corroborated=c)
                           for i, (k, s, c) in enumerate(combo)), key=ranking_key)
            before = judge(base, "different").confidence
            for kind, score, c in kinds:
                more = sorted([*base, Difference("env", "V9", "changed", "a", "b", score=score,
                                                 evidence_kind=kind, corroborated=c)],
                              key=ranking_key)
                if more[0] is not base[0]:
                    continue
                after = judge(more, "different")
                assert not (after.confidence == "confident" and before != "confident"), (
                    combo, kind, score, c)


def test_start_up_reads_leave_the_list_while_an_option_is_likely() -> None:
    """A metric-only pair: `--lr` (88, no evidence from the runs) above thread variables read
    at start-up by every process (incidental, 70-73): the option is the only candidate; with
    only incidental reads likely, they stay the candidates."""
    lr = Difference("command", "--lr", "changed", "0.001", "3.0", score=88)
    omp = Difference("env", "OMP_NUM_THREADS", "changed", "8", "16", score=73,
                     evidence_kind="incidental")
    mkl = Difference("env", "MKL_NUM_THREADS", "changed", "4", "8", score=71,
                     evidence_kind="incidental")
    verdict = judge([lr, omp, mkl], "different")
    assert verdict.confidence == "undecided" and verdict.candidates == (lr,)
    assert judge([omp, mkl], "different").candidates == (omp, mkl)
