"""Two healthy runs whose only difference in what happened is a library's notice that a
variable one shell sets is no longer used: they did the same, one was told about its shell
(runsnap/diffing/consequences.py ``notices_only``). The notice's words are huggingface_hub
1.x's (``constants.py:302``, recorded from a real run of huggingface_hub 1.3 in the corpus),
printed here by the program as the library prints it, since the huggingface_hub of this test
environment no longer has the variable. A program's own warning that a variable is deprecated
("results may differ") is no such notice: the outcome still differs."""

from __future__ import annotations

import sys
from pathlib import Path

from runsnap.diffing import compare
from tests.diffing.conftest import Capture, write_script

NOTICE = ("The `HF_HUB_ENABLE_HF_TRANSFER` environment variable is deprecated as "
          "'hf_transfer' is not used anymore. Please use `HF_XET_HIGH_PERFORMANCE` instead to "
          "enable high performance transfer with Xet.")


def _pair(launched: Capture, tmp_path: Path, message: str) -> tuple[object, object]:
    app = write_script(tmp_path, "embed.py", f"""
        import os, warnings
        if os.environ.get("HF_HUB_ENABLE_HF_TRANSFER"):
            warnings.warn({message!r}, FutureWarning)
        print("mrr=0.6904")
        """)
    return (launched(env={"SHELL_TAG": "a"}, argv=[sys.executable, str(app)]),
            launched(env={"SHELL_TAG": "b", "HF_HUB_ENABLE_HF_TRANSFER": "1"},
                     argv=[sys.executable, str(app)]))


def test_a_notice_that_a_variable_is_unused_is_no_difference_in_outcome(
        launched: Capture, tmp_path: Path) -> None:
    report = compare(*_pair(launched, tmp_path, NOTICE))
    assert report.outcome == "same", report.verdict()
    assert "only a library's notice about HF_HUB_ENABLE_HF_TRANSFER differs" in \
        report.outcome_words
    assert not report.counted, [(d.key, d.reason) for d in report.counted]


def test_a_programs_own_deprecation_warning_still_differs(launched: Capture,
                                                          tmp_path: Path) -> None:
    report = compare(*_pair(launched, tmp_path,
                            "HF_HUB_ENABLE_HF_TRANSFER is deprecated; results may differ"))
    assert report.outcome == "different", report.verdict()
    assert report.candidates[0].key == "HF_HUB_ENABLE_HF_TRANSFER", report.verdict()


def test_a_notice_that_a_variable_was_renamed_is_no_difference_in_outcome(
        launched: Capture, tmp_path: Path) -> None:
    """c10d's notice (torch 2.13, ``Utils.hpp:137``, as a real gloo job's rank printed it in
    fresh14 ``ctr-ddp-job-noise``), printed by the program since torch is not installed here:
    the runs ended alike in every other way, so the renamed value did nothing they show."""
    line = ("[W1205 16:28:27.846690601 Utils.hpp:137] Warning: Environment variable "
            "TORCH_NCCL_TRACE_BUFFER_SIZE is deprecated; use TORCH_FR_BUFFER_SIZE instead "
            "(function operator())")
    app = write_script(tmp_path, "rank.py", f"""
        import os, sys
        if os.environ.get("TORCH_NCCL_TRACE_BUFFER_SIZE"):
            print({line!r}, file=sys.stderr)
        print("auc=0.7312")
        """)
    report = compare(launched(env={"SHELL_TAG": "a"}, argv=[sys.executable, str(app)]),
                     launched(env={"SHELL_TAG": "b", "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000"},
                              argv=[sys.executable, str(app)]))
    assert report.outcome == "same", report.verdict()
    assert "only a library's notice about TORCH_NCCL_TRACE_BUFFER_SIZE differs" in \
        report.outcome_words
