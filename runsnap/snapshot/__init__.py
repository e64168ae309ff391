"""Snapshots: the model (:mod:`~runsnap.snapshot.model`), the codec for values TOML lacks
(:mod:`~runsnap.snapshot.codec`), the TOML writer (:mod:`~runsnap.snapshot.writer`), atomic
writes (:mod:`~runsnap.base.atomic`), validated loading (:mod:`~runsnap.snapshot.load`) and
the bounds and schema (``schema.json``) a snapshot from someone else is checked against
(:mod:`~runsnap.snapshot.validate`).
"""

from __future__ import annotations

from runsnap.base.atomic import atomic_write
from runsnap.snapshot.codec import decode, encode
from runsnap.snapshot.load import load, loads, read_checked, toml_parser
from runsnap.snapshot.model import (
    END_MARKER,
    SCHEMA_VERSION,
    SECTION_ORDER,
    Snapshot,
    dumps,
    ordered_sections,
)

__all__ = [
    "END_MARKER",
    "SCHEMA_VERSION",
    "SECTION_ORDER",
    "Snapshot",
    "atomic_write",
    "decode",
    "dumps",
    "encode",
    "load",
    "loads",
    "read_checked",
    "ordered_sections",
    "toml_parser",
]
