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
    MASTER_PORT is read by init_process_group, a caller of the raise (98): confident; so when
    MASTER_PORT was read in the function that raised too (99: a settings reader that reads
    every variable there) and nothing names it. One the words back too stays a tie."""
    cause = _backed("GLOO_SOCKET_IFNAME", 99, True)
    for other in (_backed("MASTER_PORT", 98, False), _backed("MASTER_PORT", 99, False)):
        verdict = judge(sorted([cause, other], key=ranking_key), "different")
        assert verdict.confidence == "confident" and verdict.candidates == (cause,)
    for other in (_backed("MASTER_PORT", 98, True), _backed("MASTER_PORT", 99, True)):
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


def test_the_only_difference_the_program_took_in_is_the_cause() -> None:
    """A metric-only pair: `--lr` (88, no evidence from the runs, but the program is handed its
    command line) and thread variables read at start-up by every process (incidental, 70-73)
    and variables no process read: the option is the only difference the program took in, a
    confident verdict that says so. One more difference the runs may have taken in (a package
    they say nothing about, another option, a variable the program read) undoes it: the
    candidates are then the likely ones, start-up reads left out."""
    lr = Difference("command", "--lr", "changed", "0.001", "3.0", score=88)
    omp = Difference("env", "OMP_NUM_THREADS", "changed", "8", "16", score=73,
                     evidence_kind="incidental")
    mkl = Difference("env", "MKL_NUM_THREADS", "changed", "4", "8", score=71,
                     evidence_kind="incidental")
    nccl = Difference("env", "NCCL_ALGO", "added", None, "Ring", score=30, evidence_kind="unread")
    verdict = judge([lr, omp, mkl, nccl], "different")
    assert verdict.confidence == "confident" and verdict.candidates == (lr,)
    assert verdict.why == "the only input that differs; 3 others unread or read at start-up"
    pkg = Difference("packages", "numpy", "changed", "1.26", "2.1", score=72)
    seed = Difference("env", "SEED", "changed", "1", "2", score=91, evidence_kind="read")
    for more in (pkg, Difference("command", "--wd", "changed", "0", "1", score=88), seed):
        got = judge(sorted([lr, omp, mkl, nccl, more], key=ranking_key), "different")
        assert got.confidence == "undecided" and lr in got.candidates
        assert omp not in got.candidates and nccl not in got.candidates
    # a host fact or a tree's dirty flag (scored under 60, no evidence) is never a candidate
    kernel = Difference("system", "kernel", "changed", "6.1", "6.8", score=30)
    got = judge([lr, omp, mkl, nccl, kernel], "different")
    assert got.confidence == "confident" and got.why.endswith("unread, read at start-up or minor")
    # the same differences with the same outcome, or no run to judge by: nothing committed
    assert judge([lr, omp, mkl, nccl], "same").confidence == "undecided"
    assert judge([lr, omp, mkl, nccl], "").confidence == "undecided"
    # an environment variable with no evidence is no input the runs show the program took
    env = Difference("env", "LR", "changed", "0.001", "3.0", score=88)
    assert judge([env, omp, nccl], "different").confidence == "undecided"


def test_the_model_the_command_line_names_is_taken_in_as_the_command_line_is() -> None:
    """A tokenizer file of the model given by --model-path changed (no evidence from the runs:
    tokenizers opens it from C), beside start-up reads and variables no process read: the
    program computes with the model it was launched with, so it is the only input that
    differs. A variable without evidence beside it still leaves the verdict undecided."""
    tok = Difference("models", "--model-path: file tokenizer.json", "changed", "a", "b",
                     score=85)
    par = Difference("env", "TOKENIZERS_PARALLELISM", "changed", "false", "true", score=61,
                     evidence_kind="incidental")
    nccl = Difference("env", "NCCL_ALGO", "added", None, "Ring", score=30, evidence_kind="unread")
    got = judge([tok, par, nccl], "different")
    assert (got.confidence, got.candidates) == ("confident", (tok,))
    env = Difference("env", "TOKENIZER_MAX_LEN", "changed", "64", "8", score=70)
    assert judge([tok, env, par, nccl], "different").confidence == "undecided"


def test_a_start_up_read_is_never_the_verdict_alone() -> None:
    """Every other difference unread and one read only for a generic feature or at start-up
    (tqdm's TQDM_DISABLE, OMP_NUM_THREADS): still undecided, "the only candidate" named with
    the experiment; a program that is not deterministic differs with nothing changed but the
    shell, and the runs cannot tell that from a cause."""
    unread = [Difference("env", f"NCCL_{i}", "added", None, "1", score=30, evidence_kind="unread")
              for i in range(3)]
    for key, score in (("TQDM_DISABLE", 40), ("OMP_NUM_THREADS", 73)):
        alone = Difference("env", key, "added", None, "1", score=score,
                           evidence_kind="incidental")
        verdict = judge([alone, *unread], "different")
        assert verdict.confidence == "undecided" and verdict.candidates == (alone,)


def test_an_option_or_a_start_up_read_more_never_makes_the_verdict_surer() -> None:
    """The property of the first test over options (the program's own input, no evidence),
    variables without evidence, start-up reads and unread ones, with an outcome that differs."""
    kinds = [("command", "name", 88), ("env", "name", 88), ("env", "incidental", 73),
             ("env", "incidental", 40), ("env", "unread", 30), ("env", "read", 91),
             ("env", "failing-path", 98), ("packages", "name", 72)]
    for size in (1, 2, 3):
        for combo in itertools.combinations_with_replacement(kinds, size):
            base = sorted((Difference(sec, f"V{i}", "changed", "a", "b", score=s,
                                      evidence_kind=k) for i, (sec, k, s) in enumerate(combo)),
                          key=ranking_key)
            before = judge(base, "different").confidence
            for sec, kind, score in kinds:
                more = sorted([*base, Difference(sec, "V9", "changed", "a", "b", score=score,
                                                 evidence_kind=kind)], key=ranking_key)
                if more[0] is not base[0]:
                    continue
                after = judge(more, "different")
                assert not (after.confidence == "confident" and before != "confident"), (
                    combo, sec, kind, score)


def test_an_error_quoting_the_value_stands_apart_from_what_the_runs_say_nothing_about() -> None:
    """An option whose failing value the error quotes (named, 94, backed by the error) over
    another option the runs say nothing about: confident. Named by a warning or the last lines
    only (94, not backed), it stays a tie; another option the error quotes too stays a tie."""
    quoted = Difference("command", "--optim", "changed", "sgd", "radamw", score=94,
                        evidence_kind="named", corroborated=True)
    other = Difference("command", "--log-every", "changed", "10", "20", score=88)
    got = judge([quoted, other], "different")
    assert got.confidence == "confident" and got.why.startswith("the failing run's words back it")
    assert judge([quoted.replace(corroborated=False), other], "different").confidence == \
        "undecided"
    assert judge([quoted, other.replace(score=94, evidence_kind="named", corroborated=True)],
                 "different").confidence == "undecided"


def test_an_undecided_verdict_names_three_candidates_and_counts_the_others() -> None:
    """Five differences without evidence from the runs: bisect decides among all five, the
    verdict names the three ranked first and counts the rest (JSON ``more_candidates``)."""
    from runsnap.diffing.result import Report, SnapInfo

    five = [Difference("command", f"--opt{i}", "changed", "a", "b", score=88 - i) for i in range(5)]
    j = judge(five, "different")
    assert j.confidence == "undecided" and len(j.candidates) == 5
    report = Report(SnapInfo(None, "a", "", ""), SnapInfo(None, "b", "", ""), tuple(five),
                    outcome="different", confidence=j.confidence, candidates=j.candidates,
                    launches=j.launches)
    assert "undecided between 5 candidates (command --opt0, command --opt1, command --opt2 " \
           "and 2 more)" in report.verdict()
    out = report.to_dict()
    assert out["candidates"] == ["command --opt0", "command --opt1", "command --opt2"]
    assert out["more_candidates"] == 2 and out["bisect_launches"] == j.launches


def test_what_scores_under_likely_without_evidence_never_ties_with_evidence() -> None:
    """A read in the caller of the raise (failing-path 98) beside a host fact (kernel, 30) and
    a tree's dirty flag (50), neither with evidence: they are never candidates, so the verdict
    commits; beside a package the runs say nothing about (72), it stays a tie."""
    top = Difference("env", "SERVE_MODE", "changed", "a", "b", score=98,
                     evidence_kind="failing-path")
    kernel = Difference("system", "kernel", "changed", "6.1", "6.8", score=30)
    dirty = Difference("git", "proj.dirty", "changed", False, True, score=50)
    got = judge([top, dirty, kernel], "different")
    assert got.confidence == "confident" and got.candidates == (top,)
    pkg = Difference("packages", "numpy", "changed", "1.26", "2.1", score=72)
    got = judge([top, pkg, dirty, kernel], "different")
    assert got.confidence == "undecided" and got.candidates == (top, pkg)
