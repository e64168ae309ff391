"""Keep a report to some sections (``diff --section env,packages``, ``--no-runtime``).

A filter over a finished report: ranking, grouping and evidence are computed on everything
(a variable's run-time reads still rank it), then only the chosen sections are listed, and a
cause's consequences in other sections are left out with them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from runsnap.diffing.many_result import NReport
from runsnap.diffing.result import Difference, Report
from runsnap.snapshot.model import SECTION_ORDER

__all__ = ["SECTIONS", "parse_sections", "select"]

#: The sections ``--section`` takes, with ``check`` (the findings of ``runsnap check``).
SECTIONS = (*SECTION_ORDER, "check")

R = TypeVar("R", bound="Report | NReport")


def parse_sections(values: Iterable[str]) -> frozenset[str]:
    """``["env,packages", "git"]`` -> the section names; ValueError naming an unknown one.

    >>> sorted(parse_sections(["env, packages", "git"]))
    ['env', 'git', 'packages']
    >>> parse_sections(["envv"])
    Traceback (most recent call last):
    ...
    ValueError: unknown section 'envv' (one of command, env, packages, ...)
    """
    out: set[str] = set()
    for value in values:
        for part in value.split(","):
            name = part.strip()
            if not name:
                continue
            if name not in SECTIONS:
                raise ValueError(f"unknown section {name!r} (one of "
                                 f"{', '.join(SECTIONS[:3])}, ...)")
            out.add(name)
    return frozenset(out)


def select(report: R, keep: frozenset[str] = frozenset(),
           drop: frozenset[str] = frozenset()) -> R:
    """``report`` with only the sections in ``keep`` (all when empty), none in ``drop``."""
    if not keep and not drop:
        return report

    def wanted(section: str) -> bool:
        return (not keep or section in keep) and section not in drop

    if isinstance(report, NReport):
        return report.replace(rows=tuple(r for r in report.rows if wanted(r.section)))

    def trim(d: Difference) -> Difference:
        related = tuple(trim(r) for r in d.related if wanted(r.section))
        return d if related == d.related else d.replace(related=related)

    return report.replace(
        differences=tuple(trim(d) for d in report.differences if wanted(d.section)),
        consequences=tuple(d for d in report.consequences if wanted(d.section)))
