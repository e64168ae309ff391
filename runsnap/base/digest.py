"""SHA-256 and HMAC-SHA256 for a capture, without loading OpenSSL.

:mod:`hashlib` loads OpenSSL's ``libcrypto`` when it is imported, a measurable share of a
capture's own start (benchmarks/RESULTS.md). CPython's built-in SHA-256 (``_sha2`` from 3.12,
``_sha256`` before) needs no library and gives the same digests; it is several times slower on
large inputs, so what hashes files of megabytes (model side files, ``--log`` files) keeps
:mod:`hashlib`. A Python without the built-in module uses :mod:`hashlib`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

try:
    from _sha2 import sha256 as _sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:
    try:
        from _sha256 import sha256 as _sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import sha256 as _sha256  # type: ignore[assignment,unused-ignore]

__all__ = ["Hmac", "sha256", "text_sha256"]

sha256: Callable[..., Any] = _sha256
"""``hashlib.sha256``'s equal: ``sha256(data).hexdigest()``, ``.update()``, ``.copy()``."""

_RECENT: list[tuple[str, str]] = []


def text_sha256(text: str) -> str:
    """The sha256 (hex) of ``text`` as its bytes (UTF-8, undecodable bytes kept with
    ``surrogateescape``: the sha256 of the bytes it was decoded from).

    The last few texts are remembered by identity: a git diff is hashed by its collector and
    again by redaction, which looks it up in its cache, and at about 1 ms a MB each time that
    is a measurable share of a capture.

    >>> text_sha256("abc") == sha256(b"abc").hexdigest()
    True
    """
    for seen, digest in _RECENT:
        if seen is text:
            return digest
    digest = str(sha256(text.encode("utf-8", "surrogateescape")).hexdigest())
    _RECENT.append((text, digest))  # held: an id is never reused while the text lives
    del _RECENT[:-4]
    return digest


_BLOCK = 64  # SHA-256's block size, in bytes
_IPAD = bytes(x ^ 0x36 for x in range(256))
_OPAD = bytes(x ^ 0x5C for x in range(256))


class Hmac:
    """HMAC-SHA256 under one key (RFC 2104), as ``hmac.new(key, msg, hashlib.sha256)``.

    >>> Hmac(b"key").hexdigest(b"The quick brown fox jumps over the lazy dog")
    'f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8'
    """

    __slots__ = ("_inner", "_outer")

    def __init__(self, key: bytes) -> None:
        if len(key) > _BLOCK:
            key = sha256(key).digest()
        key = key.ljust(_BLOCK, b"\0")
        self._inner = sha256(key.translate(_IPAD))
        self._outer = sha256(key.translate(_OPAD))

    def hexdigest(self, msg: bytes) -> str:
        """The MAC of ``msg``, as 64 hex digits."""
        inner = self._inner.copy()
        inner.update(msg)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return str(outer.hexdigest())
