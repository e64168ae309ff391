"""What is wrong inside one snapshot: the rules ``runsnap check`` runs, and ``diff`` shows per
side (misspelled variables, draft/target disagreement, shadowed imports, rejected values)."""

from __future__ import annotations

from runsnap.checks.rules import CHECKS, CheckReport, Finding, check, unshared

__all__ = ["CHECKS", "CheckReport", "Finding", "check", "unshared"]
