"""The mark a redacted value is replaced with (``<redacted:hmac-sha256:…>``), apart from the
secret rules that make it (:mod:`runsnap.redact`): the diff recognises placeholders without
loading those rules."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["PREFIX", "is_fingerprint"]

#: How every placeholder starts; its keyed digest (16 hex digits) and ``>`` follow.
PREFIX = "<redacted:hmac-sha256:"


def is_fingerprint(value: Any) -> bool:
    """Whether ``value`` is a redaction placeholder.

    >>> is_fingerprint("<redacted:hmac-sha256:0123456789abcdef>"), is_fingerprint("x")
    (True, False)
    """
    return isinstance(value, str) and value.startswith(PREFIX)
