"""The snapshot model, its TOML codec, atomic saving and validated loading.

A snapshot is one TOML document::

    schema = 1
    [meta]      runsnap version, capture time, label, host, id
    [command]   argv, cwd, resolved executable, parsed options
    [env]       the child's complete environment
    [packages]  distributions of the interpreter the child runs
    [git]       repositories in play
    [models]    model directories in play
    [system]    OS, CPU, memory, GPUs
    [process]   a running process read with ``capture --pid``: pid, exe, libraries mapped
    [outcome]   what happened (only when the command was launched)

Every section is plain data. TOML has no null and cannot hold text that is not
valid Unicode, nor integers beyond 64 bits, so this module (and only this
module) writes those values as one-key marker tables and reads them back:

========================  =====================================================
Python value              TOML
========================  =====================================================
``None``                  ``{ "~null" = true }``
str with lone surrogates  ``{ "~bytes" = "<base64>" }`` when every surrogate came
                          from ``surrogateescape`` (undecodable environment
                          bytes: the original bytes are stored), otherwise
                          ``{ "~utf8sp" = "<base64 of surrogatepass UTF-8>" }``
int outside 64 bits       ``{ "~int" = "<decimal>" }``
a key that starts ``~``   the same key with one more ``~`` in front
a key with surrogates     ``"~b64:<base64 of surrogatepass UTF-8>"``
========================  =====================================================

The codec is exact: ``decode(encode(x)) == x`` for every value made of
``None``, bool, int, float, str, list and dict with str keys (floats compare as
floats; NaN is NaN).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping

from runsnap._paths import path_str
from runsnap._plain import FrozenRecord
from runsnap._version import __version__
from runsnap.errors import CaptureError, SnapshotError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

__all__ = [
    "SCHEMA_VERSION",
    "SECTION_ORDER",
    "Snapshot",
    "atomic_write",
    "decode",
    "dumps",
    "encode",
    "load",
    "loads",
]

#: The schema version this runsnap writes. Readers accept this and every older one.
SCHEMA_VERSION = 1

#: The last line of every snapshot. A file without it was cut short (a full disk, a copy that
#: stopped): TOML alone cannot tell, because a file cut at a line end is often still valid TOML.
END_MARKER = "# end of runsnap snapshot"

#: The order sections are written in, most telling first. Unknown sections follow, sorted.
SECTION_ORDER = (
    "command", "env", "packages", "git", "models", "system", "process", "outcome", "runtime",
)

_NULL = "~null"
_BYTES = "~bytes"
_UTF8SP = "~utf8sp"
_BIGINT = "~int"
_KEY_B64 = "~b64:"
_MARKERS = frozenset({_NULL, _BYTES, _UTF8SP, _BIGINT})
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1


class Snapshot(FrozenRecord):
    """One captured run context.

    Build one with :func:`runsnap.capture`, read one with :func:`runsnap.load`;
    change one with :meth:`replace`. Frozen: assigning to an attribute raises
    :class:`AttributeError`.
    """

    # The path is kept as text and made a Path when asked for: importing pathlib costs every
    # capture ~5 ms of CPU.
    __slots__ = ("meta", "sections", "schema", "_path")
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

    @property
    def path(self) -> Path | None:
        """Where the snapshot was loaded from or last saved to; not part of its identity."""
        if self._path is None:
            return None
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

    @property
    def id(self) -> str:
        """The snapshot's unique id."""
        return str(self.meta.get("id", ""))

    @property
    def label(self) -> str:
        """The run's label (may be empty)."""
        return str(self.meta.get("label") or "")

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

    def save(self, path: str | os.PathLike[str]) -> Snapshot:
        """Write the snapshot atomically to ``path``; return it with ``path`` set.

        Raises :class:`~runsnap.errors.CaptureError` when the file cannot be written (the old
        file, if any, is left whole).
        """
        target = path_str(path)
        try:
            atomic_write(target, dumps(self).encode("utf-8"))
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


# --------------------------------------------------------------------------- codec


def _b64encode(raw: bytes) -> str:
    # base64 is imported only for the rare values that need it (undecodable bytes): importing
    # it costs every capture ~2 ms of CPU.
    import base64

    return base64.b64encode(raw).decode("ascii")


def _b64decode(text: str) -> bytes:
    import base64

    return base64.b64decode(text)


def _has_surrogate(s: str) -> bool:
    if s.isascii():
        return False
    return any("\ud800" <= ch <= "\udfff" for ch in s)


def _encode_str(s: str) -> Any:
    if not _has_surrogate(s):
        return s
    try:
        raw = s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return {_UTF8SP: _b64encode(s.encode("utf-8", "surrogatepass"))}
    return {_BYTES: _b64encode(raw)}


def _encode_key(k: str) -> str:
    if _has_surrogate(k):
        return _KEY_B64 + _b64encode(k.encode("utf-8", "surrogatepass"))
    if k.startswith("~"):
        return "~" + k
    return k


def _decode_key(k: str) -> str:
    if k.startswith(_KEY_B64):
        return _b64decode(k[len(_KEY_B64) :]).decode("utf-8", "surrogatepass")
    if k.startswith("~~"):
        return k[1:]
    return k


def encode(value: Any) -> Any:
    """Turn plain data into data that TOML can hold, losslessly (see the module table)."""
    if value is None:
        return {_NULL: True}
    if isinstance(value, str):
        return _encode_str(value)
    if isinstance(value, bool) or isinstance(value, float):
        return value
    if isinstance(value, int):
        if _INT_MIN <= value <= _INT_MAX:
            return value
        return {_BIGINT: str(value)}
    if isinstance(value, Mapping):
        return {_encode_key(str(k)): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, os.PathLike):  # a pathlib.Path, asked without importing pathlib
        return encode(os.fspath(value))
    raise TypeError(f"cannot store {type(value).__name__} in a snapshot: {value!r}")


def decode(value: Any) -> Any:
    """The inverse of :func:`encode`."""
    if isinstance(value, dict):
        if len(value) == 1:
            (k, v), = value.items()
            if k in _MARKERS:
                if k == _NULL:
                    return None
                if k == _BYTES:
                    return _b64decode(v).decode("utf-8", "surrogateescape")
                if k == _UTF8SP:
                    return _b64decode(v).decode("utf-8", "surrogatepass")
                return int(v)
        return {_decode_key(k): decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def dumps(snapshot: Snapshot) -> str:
    """The snapshot as TOML text."""
    body = "".join(_table_chunks(encode(snapshot.to_document()), ""))
    return f"{body}\n{END_MARKER}\n"


# --------------------------------------------------------------------------- TOML writer
#
# The layout is tomli-w's (``multiline_strings=True``): plain values first, then sub-tables;
# a list of tables as ``[[array.of.tables]]`` unless every item fits on one inline line;
# arrays one item per line. Two differences, both measured (benchmarks/RESULTS.md):
#
# * speed: tomli-w escapes strings one character at a time (31 ms for a 350 KiB git diff);
#   here one regular expression does it (the whole snapshot: 6 ms instead of 31 ms);
# * multi-line text is written as a literal string (``'''...'''``) whenever TOML allows it
#   (no ``'''``, no carriage return, no control character but tab): it needs no escapes, so
#   it reads as the text itself, and tomllib parses it about 8x faster than an escaped
#   ``"""..."""`` string, so a large diff does not slow every load. Other text with a newline
#   is a multi-line basic string in which ``\r`` is escaped, so CRLF line ends survive
#   (tomli-w turns ``\r\n`` into ``\n`` there).

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPE = re.compile(r'[\x00-\x1f\x7f"\\]')
_ESCAPE_ML = re.compile(r'[\x00-\x08\x0b-\x1f\x7f"\\]')  # keeps \t and \n as they are
# Control characters a literal string cannot hold (all but tab and newline), for str.translate:
# deleting them and comparing lengths is 4x faster than a regular expression search.
_NOT_IN_LITERAL = dict.fromkeys([*range(0x00, 0x09), *range(0x0b, 0x20), 0x7f])
_SHORT = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"',
          "\\": "\\\\"}
_INLINE_MAX = 100


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    return _SHORT.get(ch) or f"\\u{ord(ch):04x}"


def _string(s: str) -> str:
    r"""A TOML string for ``s``: basic on one line; literal, else basic, on several.

    >>> print(_string('say "hi"'))
    "say \"hi\""
    >>> print(_string("a\nb"))
    '''
    a
    b'''
    >>> _string("a\r\nb").splitlines()[1]  # a multi-line basic string: CR escaped
    'a\\r'
    """
    if "\n" not in s:
        return f'"{_ESCAPE.sub(_escape, s)}"'
    if "'''" not in s and not s.endswith("'") and len(s.translate(_NOT_IN_LITERAL)) == len(s):
        return f"'''\n{s}'''"
    return f'"""\n{_ESCAPE_ML.sub(_escape, s)}"""'


def _key(k: str) -> str:
    return k if _BARE_KEY.fullmatch(k) else f'"{_ESCAPE.sub(_escape, k)}"'


def _value(v: Any, level: int = 0) -> str:
    if isinstance(v, str):
        return _string(v)
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, Mapping):
        return _inline_table(v)
    if isinstance(v, (list, tuple)):
        if not v:
            return "[]"
        pad = "    " * (level + 1)
        items = ",\n".join(pad + _value(x, level + 1) for x in v)
        return f"[\n{items},\n{'    ' * level}]"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def _inline_table(t: Mapping[str, Any]) -> str:
    if not t:
        return "{}"
    return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in t.items()) + " }"


def _fits_inline(t: Mapping[str, Any]) -> bool:
    text = _inline_table(t)
    return len(text) + 5 <= _INLINE_MAX and "\n" not in text


def _table_chunks(table: Mapping[str, Any], name: str, in_array: bool = False) -> list[str]:
    plain: list[str] = []
    tables: list[tuple[str, Any, bool]] = []
    for k, v in table.items():
        if isinstance(v, Mapping):
            tables.append((k, v, False))
        elif (isinstance(v, (list, tuple)) and v and all(isinstance(x, Mapping) for x in v)
              and not all(_fits_inline(x) for x in v)):
            tables.extend((k, x, True) for x in v)
        else:
            plain.append(f"{_key(k)} = {_value(v)}\n")
    out: list[str] = []
    if in_array or (name and (plain or not tables)):
        out.append(f"[[{name}]]\n" if in_array else f"[{name}]\n")
    out.extend(plain)
    for k, v, arr in tables:
        if out:
            out.append("\n")
        out.extend(_table_chunks(v, f"{name}.{_key(k)}" if name else _key(k), arr))
    return out


def toml_parser() -> Any:
    """The TOML parser: :mod:`tomllib`, or :mod:`tomli` before Python 3.11."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib


def loads(text: str, path: str | os.PathLike[str] | None = None) -> Snapshot:
    """Parse and validate snapshot TOML text."""
    tomllib = toml_parser()
    where = f"{path_str(path)}: " if path is not None else ""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SnapshotError(f"{where}not valid TOML ({exc}); is the file truncated?") from exc
    newer = isinstance(raw.get("schema"), int) and raw["schema"] > SCHEMA_VERSION
    if "schema" in raw and not newer and text.rstrip().rpartition("\n")[2].strip() != END_MARKER:
        raise SnapshotError(f"{where}the snapshot is truncated (its last line is not "
                            f"'{END_MARKER}')")
    return Snapshot.from_document(decode(raw), path=path)


def load(path: str | os.PathLike[str]) -> Snapshot:
    """Read and validate the snapshot at ``path``; raise :class:`SnapshotError` if it is not one."""
    p = path_str(path)
    try:
        with open(p, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise SnapshotError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise SnapshotError(f"{p}: is a directory, not a snapshot file") from None
    except OSError as exc:
        raise SnapshotError(f"{p}: cannot read ({exc.strerror or exc})") from None
    if not data.strip():
        raise SnapshotError(f"{p}: empty file, not a runsnap snapshot")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SnapshotError(f"{p}: not a text file, not a runsnap snapshot") from None
    return loads(text, path=p)


def atomic_write(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never a part.

    A temporary file in the same directory is written, flushed and fsynced, then renamed over
    ``path``; the directory is fsynced so the rename survives a crash.
    """
    path = path_str(path)
    parent = os.path.dirname(path) or "."
    os.makedirs(parent, exist_ok=True)
    fd, tmp = _create_temporary(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:
        dir_fd = os.open(parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def _create_temporary(path: str) -> tuple[int, str]:
    """Create a new file beside ``path``, only for us (what ``tempfile.mkstemp`` does, without
    the ~7 ms that importing :mod:`tempfile` and :mod:`random` costs every capture)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
