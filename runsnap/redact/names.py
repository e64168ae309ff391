"""Which names hold a secret, which values look like one, and the placeholder that stands for
a secret: pure functions over the rules of :mod:`runsnap.knowledge.secrets`."""

from __future__ import annotations

import functools
import os
import re

from runsnap.knowledge import secrets as rules

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["FINGERPRINT", "MIN_KNOWN", "PREFIX", "is_fingerprint", "is_secret_name",
           "looks_like_credential", "norm", "secret_if_credential"]

PREFIX = "<redacted:hmac-sha256:"
FINGERPRINT = re.compile(r"<redacted:hmac-sha256:[0-9a-f]{16}>")

#: Known values shorter than this are not searched for in text (``HF_TOKEN=1``).
MIN_KNOWN = 6


def norm(name: str) -> str:
    """``name`` as the name rules match it: upper case, ``-`` and ``.`` as ``_``."""
    return name.strip().strip("-").upper().replace("-", "_").replace(".", "_")


@functools.lru_cache(maxsize=8192)
def is_secret_name(name: str) -> bool:
    """Whether a variable or option named ``name`` always holds a secret.

    >>> is_secret_name("HF_TOKEN"), is_secret_name("SGLANG_MAX_NEW_TOKENS_LIMIT")
    (True, False)
    >>> is_secret_name("AZURE_STORAGE_CONNECTION_STRING"), is_secret_name("SSHPASS")
    (True, True)
    """
    always, _, never = rules.name_rules()
    upper = norm(name)
    return always.match(upper) and not never.match(upper)


@functools.lru_cache(maxsize=8192)
def secret_if_credential(name: str) -> bool:
    """Whether a name holds a secret when its value looks like a credential (``*AUTH*``)."""
    _, by_value, never = rules.name_rules()
    upper = norm(name)
    return by_value.match(upper) and not never.match(upper)


_AUTH_SCHEME = re.compile(
    r"(?i)^(?:bearer|basic|token|digest|bot|negotiate|apikey|sharedaccesssignature)\s+\S")
_USER_PASS = re.compile(r"^[^\s:/@]{1,64}:[^\s]{3,}$")
_INNOCENT_WORDS = frozenset(
    "true false yes no on off none null nil auto default disabled enabled disable enable "
    "required optional ignore all any".split())
_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|0x[0-9a-f]+)$", re.I)
_WORD = re.compile(r"^(?:[a-z]+|[A-Z]+|[A-Z][a-z]+)$")
_HOST_PORT = re.compile(r"^[A-Za-z0-9.-]+:\d{1,5}$")


def looks_like_credential(value: str) -> bool:
    """Whether ``value`` looks like a password or token rather than a setting.

    Settings: numbers, switches, words, paths, URLs without credentials, lists and sentences,
    names made of short parts (``gpt-4o-mini``, ``cuda-12.4``), ``host:port``. Credentials:
    token shapes, ``Bearer ...``, ``user:password``, and other single opaque strings.

    >>> [looks_like_credential(v) for v in ("1", "disabled", "/opt/x", "openid email", "eth0")]
    [False, False, False, False, False]
    >>> [looks_like_credential(v) for v in ("Bearer abc.def", "user:s3cret", "hunter22", "aB3xQ9zT")]
    [True, True, True, True]
    """
    v = value.strip().strip("\"'")
    if len(v) < 4 or v.startswith(PREFIX):
        return False
    if _AUTH_SCHEME.match(v) or rules.token_spans(v):
        return True
    if _USER_PASS.match(v) and not _HOST_PORT.match(v) and "://" not in v:
        return v.split(":", 1)[1].lower() not in _INNOCENT_WORDS
    if any(ch.isspace() for ch in v) or "://" in v or "," in v:
        return False
    if v.lower() in _INNOCENT_WORDS or _NUMBER.match(v) or _WORD.match(v):
        return False
    if v[0] in "/~." or v.startswith(("./", "../")) or os.sep + os.sep in v:
        return False
    if os.pathsep in v and all(p.startswith(("/", "~", ".")) for p in v.split(os.pathsep) if p):
        return False
    parts = [p for p in re.split(r"[-_.]", v) if p]
    if len(parts) >= 2 and all(len(p) <= 8 for p in parts):
        return False
    if len(v) >= 8:
        return True
    classes = (any(c.islower() for c in v) + any(c.isupper() for c in v)
               + any(c.isdigit() for c in v) + any(not c.isalnum() for c in v))
    return classes >= 3



def is_fingerprint(value: Any) -> bool:
    """Whether ``value`` is a redaction placeholder."""
    return isinstance(value, str) and value.startswith(PREFIX)
