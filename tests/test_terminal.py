"""The terminal rules every text report follows (width, cutting, wrapping, control characters)."""

from __future__ import annotations

import pytest


def test_fit_keeps_colour_codes_whole_and_closed() -> None:
    from runsnap.base.terminal import fit, visible_len

    line = "ab\x1b[31mcdefgh\x1b[0mij"
    cut = fit(line, 5)
    assert visible_len(cut) == 5 and cut.endswith("…\x1b[0m") and "\x1b[31m" in cut


def test_width_from_columns_then_terminal_else_unlimited(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from runsnap.base.terminal import width

    monkeypatch.setenv("COLUMNS", "123")
    assert width(io.StringIO()) == 123
    monkeypatch.delenv("COLUMNS")
    assert width(io.StringIO()) == 0
