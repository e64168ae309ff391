"""A field of a section's record as its comparer reads it where the written document tells
"not written" from "written as nothing": the comparers read sections as records
(:mod:`runsnap.snapshot.records`), whose absent fields and fields written as ``None`` both
read ``None``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from runsnap.snapshot.sectionrecord import SectionRecord

__all__ = ["written"]


def written(record: SectionRecord, field: str, absent: Any = "") -> Any:
    """``field`` of ``record`` as read (``None`` when written so), ``absent`` when not written.

    >>> from runsnap.snapshot.records import GitRepo
    >>> written(GitRepo({"describe": None}), "describe"), written(GitRepo({}), "describe")
    (None, '')
    """
    return getattr(record, field) if record.has(field) else absent


_R = TypeVar("_R", bound=SectionRecord)
_MADE: dict[tuple[type, int], tuple[Mapping[str, Any], SectionRecord]] = {}


def record(cls: type[_R], section: Mapping[str, Any]) -> _R:
    """``section`` read as a ``cls`` record. The N-way diff compares one reference section with
    each rank's in turn: the last few records made are kept (a section is never changed once
    loaded, and a record is frozen), so the reference's fields are converted once, not once a
    rank (the least recently used goes first)."""
    key = (cls, id(section))
    hit = _MADE.get(key)
    if hit is not None and hit[0] is section:
        del _MADE[key]  # the most recently used last: the reference stays while ranks pass
        _MADE[key] = hit
        return hit[1]  # type: ignore[return-value]
    made = cls(section)
    if len(_MADE) >= 1024:
        _MADE.pop(next(iter(_MADE)))
    _MADE[key] = (section, made)
    return made
