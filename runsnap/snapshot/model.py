"""The snapshot model: a frozen record of sections, written as one TOML document.

A snapshot is one TOML document::

    schema = 2
    [meta]      runsnap version, capture time, label, host, id
    [command]   argv, cwd, resolved executable, parsed options
    [env]       the child's complete environment
    [packages]  distributions of the interpreter the child runs
    [git]       repositories in play
    [models]    model directories in play
    [system]    OS, CPU, memory, GPUs
    [process]   a running process read with ``capture --pid``: pid, exe, libraries mapped
    [outcome]   what happened (only when the command was launched)
    [runtime]   what the program read and imported (schema 2 stores it compactly:
                runsnap.snapshot.runtime)

Every section is plain data; :mod:`runsnap.snapshot.codec` writes the values TOML lacks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from runsnap._version import __version__
from runsnap.base.atomic import atomic_write
from runsnap.base.paths import path_str
from runsnap.base.records import FrozenRecord
from runsnap.errors import CaptureError, SnapshotError
from runsnap.snapshot.codec import encode
from runsnap.snapshot.runtime_form import ONE_LINE
from runsnap.snapshot.writer import table_chunks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from runsnap.snapshot.records import Sections

__all__ = ["END_MARKER", "SCHEMA_VERSION", "SECTION_ORDER", "Snapshot", "dumps", "ordered_sections"]

#: The schema version this runsnap writes. Readers accept this and every older one.
SCHEMA_VERSION = 2

#: The last line of every snapshot. A file without it was cut short (a full disk, a copy that
#: stopped): TOML alone cannot tell, because a file cut at a line end is often still valid TOML.
END_MARKER = "# end of runsnap snapshot"

#: The order sections are written in, most telling first. Unknown sections follow, sorted.
SECTION_ORDER = (
    "command", "env", "packages", "git", "models", "system", "process", "outcome", "tests",
    "runtime",
)


class Snapshot(FrozenRecord):
    """One captured run context.

    Build one with :func:`runsnap.capture`, read one with :func:`runsnap.load`;
    change one with :meth:`replace`. Frozen: assigning to an attribute raises
    :class:`AttributeError`.
    """

    # The path is kept as text and made a Path when asked for: the capture path does not import
    # pathlib (see runsnap/base/paths.py).
    __slots__ = ("meta", "sections", "schema", "_path", "_records")
    _fields = _repr_fields = ("meta", "sections", "schema", "path")
    _eq_fields = ("meta", "sections", "schema")

    meta: Mapping[str, Any]
    """Who and when: ``runsnap_version``, ``captured_at`` (UTC ISO 8601), ``label``, ``host``,
    ``id`` (unique), ``fingerprint_key`` (which local key made the secret fingerprints)."""

    sections: Mapping[str, Mapping[str, Any]]
    """Section name -> plain data, in :data:`SECTION_ORDER`."""

    schema: int
    """The schema version the snapshot was written with."""

    _path: str | None
    """:attr:`path` as ``str(path)`` writes it."""

    _records: Sections | None
    """:attr:`records` once read."""

    def __init__(
        self,
        meta: Mapping[str, Any],
        sections: Mapping[str, Mapping[str, Any]],
        schema: int = SCHEMA_VERSION,
        path: str | os.PathLike[str] | None = None,
    ) -> None:
        object.__setattr__(self, "meta", meta)
        object.__setattr__(self, "sections", sections)
        object.__setattr__(self, "schema", schema)
        object.__setattr__(self, "_path", None if path is None else path_str(path))
        object.__setattr__(self, "_records", None)

    @property
    def records(self) -> Sections:
        """Each declared section read as its frozen record (``snap.records.git.repos``),
        built once, on first use (:mod:`runsnap.snapshot.records`, generated from the
        declarations). Readers read these; the writer, redaction and ``show --raw`` read
        :attr:`sections`, the document as written."""
        made = self._records
        if made is None:
            # deferred: the records' classes (runsnap.snapshot.records): read by the views and
            # renderers, never by a capture, whose start-up they would cost
            from runsnap.snapshot.records import Sections

            made = Sections(self.meta, self.sections, self._path)
            object.__setattr__(self, "_records", made)
        return made

    @property
    def path(self) -> Path | None:
        """Where the snapshot was loaded from or last saved to; not part of its identity."""
        if self._path is None:
            return None
        # deferred: pathlib, ~14 ms measured under load; only path() needs it
        from pathlib import Path

        return Path(self._path)

    @property
    def path_text(self) -> str | None:
        """:attr:`path` as text, without importing :mod:`pathlib` (the capture path avoids it)."""
        return self._path

    def replace(self, **changes: Any) -> Snapshot:
        """A copy with the attributes named in ``changes`` replaced (what
        :func:`dataclasses.replace` did): ``snap.replace(meta={**snap.meta, "label": "b"})``."""
        values: dict[str, Any] = {"meta": self.meta, "sections": self.sections,
                                  "schema": self.schema, "path": self._path}
        values.update(changes)
        return self.__class__(**values)

    def __getitem__(self, name: str) -> Mapping[str, Any]:
        return self.sections[name]

    def get(self, name: str, default: Any = None) -> Any:
        """The section ``name``, or ``default`` when the snapshot has none."""
        return self.sections.get(name, default)

    def _meta_text(self, key: str) -> str:
        """A text of ``[meta]`` as it was written, ``""`` where there is none. Without the
        records (:attr:`records`' ``meta``): the capture path names its file from these."""
        value = self.meta.get(key)
        return "" if value is None else str(value)

    @property
    def id(self) -> str:
        """The snapshot's unique id."""
        return self._meta_text("id")

    @property
    def label(self) -> str:
        """The run's label (may be empty)."""
        return self._meta_text("label")

    @property
    def captured_at(self) -> str:
        """When the snapshot was captured (ISO 8601, UTC); empty when it does not say."""
        return self._meta_text("captured_at")

    @property
    def host(self) -> str:
        """The host it was captured on; empty when it does not say."""
        return self._meta_text("host")

    @property
    def launcher(self) -> dict[str, Any] | None:
        """``[meta] launcher``: the launcher that started the run (rank, world size, job), if
        one did."""
        found = self.meta.get("launcher")
        return found if isinstance(found, dict) else None

    def to_document(self) -> dict[str, Any]:
        """The snapshot as the plain document that is written to TOML (before encoding)."""
        doc: dict[str, Any] = {"schema": self.schema, "meta": dict(self.meta)}
        for name in ordered_sections(self.sections):
            doc[name] = self.sections[name]
        return doc

    @classmethod
    def from_document(
        cls, doc: Mapping[str, Any], path: str | os.PathLike[str] | None = None
    ) -> Snapshot:
        """Validate a decoded document and build the snapshot; raise :class:`SnapshotError`."""
        where = f"{path_str(path)}: " if path is not None else ""
        schema = doc.get("schema")
        meta = doc.get("meta")
        if isinstance(schema, bool) or not isinstance(schema, int) or not isinstance(meta, dict):
            raise SnapshotError(f"{where}not a runsnap snapshot (no 'schema' and [meta])")
        if schema > SCHEMA_VERSION:
            raise SnapshotError(
                f"{where}snapshot schema {schema} is newer than this runsnap understands "
                f"({SCHEMA_VERSION}); upgrade runsnap (this is {__version__})"
            )
        if schema < 1:
            raise SnapshotError(f"{where}invalid snapshot schema {schema!r}")
        if "id" not in meta or "captured_at" not in meta:
            raise SnapshotError(f"{where}not a runsnap snapshot ([meta] lacks id or captured_at)")
        sections = {}
        for name in ordered_sections(doc):
            if name in ("schema", "meta"):
                continue
            value = doc[name]
            if not isinstance(value, dict):
                raise SnapshotError(f"{where}section [{name}] is not a table")
            sections[name] = value
        return cls(meta=meta, sections=sections, schema=schema, path=path)

    def save(self, path: str | os.PathLike[str], *, sweep: bool = True) -> Snapshot:
        """Write the snapshot atomically to ``path``; return it with ``path`` set.

        ``sweep``: as for :func:`runsnap.base.atomic.atomic_write` (False: the folder is not
        listed, as one rank of thousands writing there). Raises
        :class:`~runsnap.errors.CaptureError` when the file cannot be written (the old file,
        if any, is left whole).
        """
        target = path_str(path)
        try:
            atomic_write(target, dumps(self).encode("utf-8"), points="snapshot", sweep=sweep)
        except OSError as exc:
            raise CaptureError(f"cannot write {target}: {exc.strerror or exc}") from None
        return self.replace(path=target)


def ordered_sections(names: Any) -> list[str]:
    """Section names in :data:`SECTION_ORDER`, unknown ones after, sorted.

    >>> ordered_sections(["zeta", "env", "command"])
    ['command', 'env', 'zeta']
    """
    known = [n for n in SECTION_ORDER if n in names]
    rest = sorted(n for n in names if n not in SECTION_ORDER)
    return [*known, *rest]


def dumps(snapshot: Snapshot) -> str:
    """The snapshot as TOML text."""
    body = "".join(table_chunks(encode(snapshot.to_document()), "", one_line=ONE_LINE))
    return f"{body}\n{END_MARKER}\n"
