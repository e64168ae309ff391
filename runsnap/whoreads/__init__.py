"""``runsnap who-reads NAME``: which installed code declares, reads or mentions a variable; its
answers are also static evidence for ``diff``."""

from __future__ import annotations

from runsnap.whoreads.search import KINDS, Hit, classify, distributions, who_reads

__all__ = ["KINDS", "Hit", "classify", "distributions", "who_reads"]
