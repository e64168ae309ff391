"""The snapshot codec: the values TOML lacks, written as marker tables and read back.

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

import binascii
import os
from collections.abc import Mapping

from runsnap.base.patterns import on_use
from runsnap.errors import SnapshotError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["decode", "encode"]

_NULL = "~null"
_BYTES = "~bytes"
_UTF8SP = "~utf8sp"
_BIGINT = "~int"
_KEY_B64 = "~b64:"
_MARKERS = frozenset({_NULL, _BYTES, _UTF8SP, _BIGINT})
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1


def _base64() -> Any:
    """:mod:`base64`, imported only for the rare values that need it (undecodable bytes), not by
    every capture (tests/test_capture_imports.py holds that)."""
    # deferred: base64, a few imports; only _base64() needs it
    import base64

    return base64


def _b64encode(raw: bytes) -> str:
    return _base64().b64encode(raw).decode("ascii")


def _b64decode(text: str) -> bytes:
    return _base64().b64decode(text, validate=True)


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
        try:
            return _b64decode(k[len(_KEY_B64) :]).decode("utf-8", "surrogatepass")
        except (ValueError, binascii.Error, UnicodeDecodeError):
            raise SnapshotError(f"bad key {k[:40]!r}: not base64 of UTF-8") from None
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
    """The inverse of :func:`encode`; a marker whose value is not what :func:`encode` writes
    (``{ "~int" = "x" }``, bad base64) raises :class:`~runsnap.errors.SnapshotError`."""
    if isinstance(value, dict):
        if len(value) == 1:
            (k, v), = value.items()
            if k in _MARKERS:
                return _decode_marker(k, v)
        return {_decode_key(k): decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


_DECIMAL = on_use(r"-?[0-9]{1,4000}")


def _decode_marker(k: str, v: Any) -> Any:

    try:
        if k == _NULL:
            if v is not True:
                raise ValueError("must be true")
            return None
        if k == _BIGINT:
            if not isinstance(v, str) or not _DECIMAL.fullmatch(v):
                raise ValueError("must be a decimal integer in a string")
            return int(v)
        if not isinstance(v, str):
            raise ValueError("must be base64 text")
        raw = _b64decode(v)
        if k == _BYTES:
            return raw.decode("utf-8", "surrogateescape")
        return raw.decode("utf-8", "surrogatepass")
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise SnapshotError(f"bad {k} value {str(v)[:40]!r}: {exc}") from None
