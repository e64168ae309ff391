"""A field of a section's record as its comparer reads it where the written document tells
"not written" from "written as nothing": the comparers read sections as records
(:mod:`runsnap.snapshot.records`), whose absent fields and fields written as ``None`` both
read ``None``."""

from __future__ import annotations

from typing import Any

from runsnap.snapshot.sectionrecord import SectionRecord

__all__ = ["written"]


def written(record: SectionRecord, field: str, absent: Any = "") -> Any:
    """``field`` of ``record`` as read (``None`` when written so), ``absent`` when not written.

    >>> from runsnap.snapshot.records import GitRepo
    >>> written(GitRepo({"describe": None}), "describe"), written(GitRepo({}), "describe")
    (None, '')
    """
    return getattr(record, field) if record.has(field) else absent
