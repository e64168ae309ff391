"""The engines' own messages (runsnap/knowledge/engine-messages.tsv): each row's provenance, and
each message found in a line that prints it with its fields filled."""

from __future__ import annotations

import re

from runsnap.knowledge.engines import governing, rows

ENGINES = {"nccl", "gloo", "torch", "cuda", "vllm", "cpython"}


def test_every_row_says_where_the_message_is_and_which_half_it_is_in() -> None:
    assert len(rows()) >= 10
    for row in rows():
        assert row.engine in ENGINES, row
        assert row.half in ("tune", "held-out"), row
        assert row.names and all(n.strip() for n in row.names), row
        # a repository and a path in it (or the CUDA runtime's own error string, printed by
        # a repository's code)
        assert re.match(r"([\w.-]+/[\w.-]+ [\w./-]+|NVIDIA CUDA runtime )", row.source), row


def test_a_line_that_prints_the_message_finds_its_row() -> None:
    for row in rows():
        if row.message.startswith("type:"):
            continue
        filled = re.sub(r"%[-+ #0-9.]*(?:hh|h|ll|l|z|j|t)?[sdiuxXfgcp]|\{[^{}]*\}", "eth9",
                        row.message)
        line = f"host:12:34 [0] {row.engine.upper()} WARN {filled}"
        assert row in governing((line,), ""), row
        assert row not in governing((row.message[: len(row.message) // 2],), ""), row


def test_a_warning_raised_as_an_error_finds_the_warnings_setting() -> None:
    found = governing((), "DeprecationWarning")
    assert [r.engine for r in found] == ["cpython"]
    assert found[0].governs("PYTHONWARNINGS", "error::DeprecationWarning")
    assert not found[0].governs("PYTHONWARNINGS", "ignore")
    assert governing((), "ValueError") == []
