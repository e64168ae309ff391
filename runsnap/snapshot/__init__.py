"""Snapshots: the model (:mod:`~runsnap.snapshot.model`), the codec for values TOML lacks
(:mod:`~runsnap.snapshot.codec`), the TOML writer (:mod:`~runsnap.snapshot.writer`), atomic
writes (:mod:`~runsnap.snapshot.atomic`) and validated loading (:mod:`~runsnap.snapshot.load`).
"""

from __future__ import annotations

from runsnap.snapshot.atomic import atomic_write
from runsnap.snapshot.codec import decode, encode
from runsnap.snapshot.load import load, loads, toml_parser
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
    "ordered_sections",
    "toml_parser",
]
