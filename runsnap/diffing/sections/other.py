"""Sections this runsnap has no rules of their own for, and collector errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runsnap.diffing.result import Difference
from runsnap.diffing.rules import RankContext, Verdict
from runsnap.diffing.walk import generic

__all__ = ["compare", "score"]


def compare(section: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Every leaf of the section that differs."""
    return generic(section, a, b)


def score(d: Difference, rules: RankContext) -> Verdict:
    """A section this runsnap has no rules for (30); collector errors (20)."""
    if d.key == "errors":
        return 20, "the capture could not see something in one run", False
    return 30, f"differs in [{d.section}]", False
