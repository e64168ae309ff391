"""Which names hold a secret, which values look like one, and the placeholder that stands for
a secret: pure functions over the rules of :mod:`runsnap.knowledge.secrets`."""

from __future__ import annotations

import functools
import math
import os
import re

from runsnap.base.patterns import on_use
from runsnap.base.placeholder import PREFIX, is_fingerprint
from runsnap.knowledge import secrets as rules

__all__ = ["FINGERPRINT", "MIN_KNOWN", "PREFIX", "harmless_value", "identifier_name",
           "is_fingerprint", "is_secret_name", "looks_like_credential", "looks_opaque", "name_class", "norm",
           "secret_if_credential"]

FINGERPRINT = on_use(r"<redacted:hmac-sha256:[0-9a-f]{16}>")

#: Known values shorter than this are not searched for in text (``HF_TOKEN=1``).
MIN_KNOWN = 6


def norm(name: str) -> str:
    """``name`` as the name rules match it: upper case, ``-`` and ``.`` as ``_``."""
    return name.strip().strip("-").upper().replace("-", "_").replace(".", "_")


#: The last word of a name that holds an identifier, random by design (``BUILD_ID``,
#: ``RUN_UUID``, ``TRACE_GUID``).
_ID_WORDS = frozenset(("ID", "IDS", "UUID", "GUID"))


def identifier_name(name: str) -> bool:
    """Whether a variable named ``name`` (normalised, not a secret name) holds an identifier:
    its value is shown unless a credential format is found in it, however random it looks.

    >>> identifier_name("BUILD_ID"), identifier_name("CI_PIPELINE_UUID"), identifier_name("SETTING_7")
    (True, True, False)
    """
    return name.rpartition("_")[2] in _ID_WORDS


@functools.lru_cache(maxsize=1 << 16)
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


@functools.lru_cache(maxsize=1 << 16)
def secret_if_credential(name: str) -> bool:
    """Whether a name holds a secret when its value looks like a credential (``*AUTH*``)."""
    _, by_value, never = rules.name_rules()
    upper = norm(name)
    return by_value.match(upper) and not never.match(upper)


@functools.lru_cache(maxsize=1 << 16)
def name_class(name: str) -> tuple[bool, bool]:
    """``(is_secret_name(name), secret_if_credential(name))``, the name normalised and the
    lists asked once (a capture under 10,000 variables asks for each name).

    >>> name_class("HF_TOKEN"), name_class("MY_AUTH"), name_class("APP_SETTING")
    ((True, False), (False, True), (False, False))
    """
    always, by_value, never = rules.name_rules()
    upper = norm(name)
    secret, if_credential = always.match(upper), by_value.match(upper)
    if (secret or if_credential) and never.match(upper):
        return False, False
    return secret, if_credential


_AUTH_SCHEME = on_use(
    r"(?i)^(?:bearer|basic|token|digest|bot|negotiate|apikey|sharedaccesssignature)\s+\S")
_USER_PASS = on_use(r"^[^\s:/@]{1,64}:[^\s]{3,}$")
_INNOCENT_WORDS = frozenset(
    "true false yes no on off none null nil auto default disabled enabled disable enable "
    "required optional ignore all any".split())
_NUMBER = on_use(r"^[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|0x[0-9a-f]+)$", re.I)
_WORD = on_use(r"^(?:[a-z]+|[A-Z]+|[A-Z][a-z]+)$")
_HOST_PORT = on_use(r"^[A-Za-z0-9.-]+:\d{1,5}$")


def looks_like_credential(value: str) -> bool:
    """Whether ``value`` looks like a password or token rather than a setting.

    Settings: numbers, switches, words, paths, URLs without credentials, lists and sentences,
    names made of short parts (``gpt-4o-mini``, ``cuda-12.4``), ``host:port``. Credentials:
    token shapes, ``Bearer ...``, ``user:password``, and other single opaque strings.

    >>> [looks_like_credential(v) for v in ("1", "disabled", "/opt/x", "openid email", "eth0")]
    [False, False, False, False, False]
    >>> [looks_like_credential(v) for v in ("mixed_precision", "compute_environment")]
    [False, False]
    >>> [looks_like_credential(v) for v in ("Bearer abc.def", "user:s3cret", "hunter22", "aB3xQ9zT")]
    [True, True, True, True]
    """
    v = value.strip().strip("\"'")
    if len(v) < 4 or v.startswith(PREFIX):
        return False
    if _AUTH_SCHEME.match(v) or rules.token_spans(v):
        return True
    if _USER_PASS.match(v) and not _HOST_PORT.match(v) and "://" not in v and "," not in v:
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
    if "_" in v and 2 <= len(parts) <= 4 and all(
            p.isalpha() and p.islower() and len(p) <= 12 for p in parts):
        return False  # a snake_case name of lowercase words: mixed_precision, compute_environment
    if len(v) >= 8:
        return True
    classes = (any(c.islower() for c in v) + any(c.isupper() for c in v)
               + any(c.isdigit() for c in v) + any(not c.isalnum() for c in v))
    return classes >= 3



# ---------------------------------------------------------------- values that are never secrets

_SMALL_NUMBER = on_use(r"^[-+]?(?:\d{1,7}|\d{1,7}\.\d{1,6}|\d*\.\d{1,6}(?:e[-+]?\d+)?)$", re.I)
_PLAIN_WORD = on_use(r"^(?:[a-z]{1,16}|[A-Z][a-z]{1,15}|[A-Z]{1,16})$")
_SENTENCE = on_use(r"^[A-Za-z][A-Za-z'(),.:!?-]*(?:[ \t]+[A-Za-z(][A-Za-z'(),.:!?-]*)+$")
#: How public material and documented ids begin (publishable keys, then the ids of requests and
#: objects: OpenAI, Anthropic, Stripe...): one list for :data:`_PUBLIC` and :func:`_may_be_public`.
_PUBLISHABLE_HEADS = ("pk_live_", "pk_test_", "pk.eyJ", "phc_", "sb_publishable_", "pk-lf-",
                      "NEXT_PUBLIC_")
_ID_HEADS = ("chatcmpl-", "cmpl-", "req_", "msg_", "resp_", "run_", "thread_", "asst_", "file-",
             "batch_", "toolu_", "call_", "evt_", "ch_", "cus_", "pi_", "in_", "sub_", "price_",
             "prod_")
_PUBLIC = on_use(
    r"^(?:(?:ssh-(?:rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp\d+|sk-(?:ssh-ed25519|ecdsa-sha2-"
    r"nistp256)@openssh\.com)\s+AAAA[A-Za-z0-9+/]+=*(?:\s.*)?"
    r"|-----BEGIN (?:PUBLIC KEY|RSA PUBLIC KEY|CERTIFICATE|PGP PUBLIC KEY BLOCK|SSH2 PUBLIC KEY|"
    r"X509 CRL|CERTIFICATE REQUEST)-----.*"
    r"|(?:SHA256|SHA1|SHA384|SHA512):[A-Za-z0-9+/]{27,86}={0,2}"
    r"|(?:MD5:)?[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){15,63}"
    r"|(?:0x)?[0-9A-Fa-f]{8}|(?:0x)?[0-9A-Fa-f]{16}"
    r"|[0-9A-F]{4}(?:[ ]{1,2}[0-9A-F]{4}){9}"
    r"|age1[02-9ac-hj-np-z]{58}"
    # the body of an SSH public key (base64 of its length-prefixed type name)
    r"|AAAA(?:B3NzaC1|C3NzaC1|E2VjZHNh|GnNrLXNzaC1|InNrLWVjZHNh)[A-Za-z0-9+/]+=*"
    r"|arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:\d{0,12}:\S+"
    rf"|(?:{'|'.join(map(re.escape, _PUBLISHABLE_HEADS))})\S*"
    rf"|(?:{'|'.join(map(re.escape, _ID_HEADS))})[A-Za-z0-9_-]{{6,64}}"
    r"|[0-7][0-9A-HJKMNP-TV-Z]{25}"
    r")$", re.S)
#: How each form of :data:`_PUBLIC` begins, or (for the bare ones) how long it is, or where its
#: first separator stands (hex pairs ``ab:cd:...``, hex groups ``ABCD EF01 ...``): a value with
#: none of them cannot match, and the pattern, the costliest of redaction's to compile (~1.4 ms),
#: is not compiled for it. Keep both in step (tests/test_public_material.py checks them).
_PUBLIC_HEADS = ("ssh-", "ecdsa-sha2-nistp", "sk-ssh-ed25519@openssh.com",
                 "sk-ecdsa-sha2-nistp256@openssh.com", "-----BEGIN ", "SHA256:", "SHA1:",
                 "SHA384:", "SHA512:", "MD5:", "age1", "AAAA", "arn:aws", *_PUBLISHABLE_HEADS,
                 *_ID_HEADS)
_PUBLIC_BARE_LENGTHS = frozenset({8, 10, 16, 18, 26})


def _may_be_public(v: str) -> bool:
    """Whether ``v`` (stripped) can match :data:`_PUBLIC` at all (see :data:`_PUBLIC_HEADS`).

    >>> [_may_be_public(v) for v in ("hf_" + "x" * 34, "Mitigation: Speculative Store Bypass")]
    [False, False]
    >>> [_may_be_public(v) for v in ("SHA256:abc", "3AA5C34371567BD2", "ab:" * 16, "ABCD " * 10)]
    [True, True, True, True]
    """
    return (len(v) in _PUBLIC_BARE_LENGTHS or v.startswith(_PUBLIC_HEADS)
            or (len(v) >= 47 and (v[2] == ":" or v[4] == " ")))


_UUID = on_use(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_HEX40 = on_use(r"^(?:0x)?[0-9A-Fa-f]{40}$")
_PASSWORD_NAME = ("PASS", "PWD", "PHRASE", "PIN")
_KEY_ID_NAME = ("GPG", "PGP", "FINGERPRINT", "KEYID", "KEY_ID", "THUMBPRINT")
_URL_NO_PASSWORD = on_use(r"^[A-Za-z][A-Za-z0-9+.-]{0,30}://(?:[^\s:/?#@]+@)?[^\s@:/?#]+"
                          r"(?::\d{1,5})?(?:[/?#][^\s@]*)?$")


def harmless_value(value: str, name: str = "") -> bool:
    """Whether ``value`` is no secret whatever its name (``name``, normalised, says what kind
    of secret the name promises): a small number, a switch, a plain word or a sentence, a URL
    without a password, a public key or a fingerprint, a key id, a publishable key.

    A password may be a plain word or a sentence: under a password's name only numbers,
    switches and public material are harmless.

    >>> [harmless_value(v, "TOKEN_BUDGET") for v in ("131072", "false", "see vault", "")]
    [True, True, True, True]
    >>> harmless_value("postgres", "PGPASSWORD"), harmless_value("hf_aBcDeFgHiJkLmN0pQ", "HF_TOKEN")
    (False, False)
    >>> harmless_value("3AA5C34371567BD2", "GPG_KEY"), harmless_value("SHA256:" + "A" * 43)
    (True, True)
    """
    v = value.strip()
    if not v:
        return True
    low = v.lower()
    if low in _INNOCENT_WORDS or _SMALL_NUMBER.match(v) or v.startswith(PREFIX):
        return True
    if _may_be_public(v) and _PUBLIC.match(v):
        return True
    if "://" in v and _URL_NO_PASSWORD.match(v) and not _has_secret_query(v):
        userinfo = v.split("://", 1)[1].split("@", 1)[0] if "@" in v else ""
        return not userinfo or not looks_like_credential(userinfo)
    if name:  # (a value given whole has no name: 10,000 of them in a large environment)
        if any(part in name for part in _KEY_ID_NAME) and (_HEX40.match(v) or _UUID.match(v)):
            return True
        if name.endswith("_ID") and _UUID.match(v):
            return True  # a documented id (a key's id, a tenant), not the key
        if any(part in name for part in _PASSWORD_NAME):
            return False
    if _PLAIN_WORD.match(v):
        return True
    return (" " in v or "\t" in v) and _SENTENCE.match(v) is not None and len(v.split()) >= 2


def _has_secret_query(url: str) -> bool:
    if "?" not in url:
        return False
    # deferred: urllib.parse, ~3 ms measured under load; only a value that looks like a URL needs it
    from urllib.parse import parse_qsl

    params = rules.secret_query_params()
    return any(k.lower() in params or is_secret_name(k) or looks_like_credential(val)
               for k, val in parse_qsl(url.split("?", 1)[1].split("#", 1)[0]))


# ---------------------------------------------------------------- opaque values under any name

_OPAQUE = on_use(r"^[A-Za-z0-9+/_.~-]{20,600}={0,3}$")
_HEXISH = on_use(r"^(?:0x)?[0-9a-fA-F]+$")
_DIGEST_PREFIX = on_use(r"^(?:sha(?:1|224|256|384|512)|md5|blake2b?|xxh\d*)[-:=]", re.I)
_PARTS = on_use(r"[-_.~]")
_VOWELS = frozenset("aeiouAEIOU")
_NO_VOWELS = str.maketrans("", "", "aeiouAEIOU")
_WORDISH = on_use(r"[A-Z][a-z]{3,}|[a-z]{4,}|[A-Z]{5,}")
_UPPER, _LOWER, _DIGITS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz", b"0123456789"


def looks_opaque(value: str) -> bool:
    """Whether ``value``, given whole (a variable, an argument, a config value), is an opaque
    random string: a credential of a format no rule knows, under a name that says nothing.

    Not opaque: hex strings (git commits, digests, Hugging Face revisions), UUIDs, digests with
    their algorithm, paths and ids made of words and short parts (``meta-llama/Llama-3.1-8B``,
    ``exp_1701234567_a1b2c3d4``), identifiers (``ThisIsAVeryLongCamelCaseName``).

    >>> looks_opaque("Zq8vLm3nRt5wXy7Q4pK2sD9f"), looks_opaque("0f" * 20)
    (True, False)
    >>> looks_opaque("meta-llama/Llama-3.1-8B-Instruct"), looks_opaque("ThisIsAVeryLongCamelCaseName1")
    (False, False)
    """
    if not _OPAQUE.match(value) or _HEXISH.match(value) or _DIGEST_PREFIX.match(value):
        return False
    if value.startswith("~/") or _UUID.match(value):
        return False
    if value[0] in "/." and "+" not in value and not value.endswith("="):
        return False
    if value.count("/") >= 2 and not any(c in value for c in "+=") and "//" not in value:
        parts = value.split("/")
        if all(len(p) <= 24 for p in parts):
            return False  # a relative path
    part = max(_PARTS.split(value.rstrip("=")), key=len)
    longest = part.replace("/", "").replace("+", "")
    if len(longest) < 16 or _HEXISH.match(longest):
        return False
    # base64's own marks: a "+" inside, or "=" padding on a length of 4n; no identifier has them
    base64 = "+" in part or (value.endswith("=") and len(value) % 4 == 0)
    # counted by deleting them from its bytes (C speed; ``longest`` is ASCII: see _OPAQUE)
    raw = longest.encode("ascii")
    size = len(raw)
    upper = size - len(raw.translate(None, _UPPER))
    lower = size - len(raw.translate(None, _LOWER))
    digits = size - len(raw.translate(None, _DIGITS))
    letters = upper + lower
    if (upper > 0) + (lower > 0) + (digits > 0) < 2:
        return False  # one kind of character: a word, a number
    if not base64 and digits * 6 < len(longest) and _wordy(longest) * 2 >= len(longest):
        return False  # words run together: an identifier
    need = min(3.6, 0.75 * math.log2(len(longest)))
    if upper and lower and digits:
        return _entropy_at_least(longest, need)
    if upper and lower:  # letters only: long random ones (a base64 key without a digit)
        return len(longest) >= 32 and _entropy_at_least(longest, need)
    return digits >= 2 and letters >= 3 and _entropy_at_least(longest, need)


#: How far from the line a bound must be to decide without counting (float rounding).
_MARGIN = 1e-9


def _entropy_at_least(text: str, need: float) -> bool:
    """``rules.entropy(text) >= need``, decided by the number of distinct characters alone
    when it can be: ``d`` of them in ``n`` give an entropy of at most ``log2(d)`` and at least
    that of the most uneven counts (one character ``n - d + 1`` times, the others once). A
    random token is decided by that floor, without counting its characters (~4 us a value).

    >>> _entropy_at_least("Zq8vLm3nRt5wXy7Q4pK2sD9f", 3.4), _entropy_at_least("ab" * 10, 3.0)
    (True, False)
    """
    n = len(text)
    d = len(set(text))
    if math.log2(d) < need - _MARGIN:
        return False
    big = n - d + 1
    if big / n * math.log2(n / big) + (d - 1) / n * math.log2(n) >= need + _MARGIN:
        return True
    return rules.entropy(text) >= need


def _wordy(text: str) -> int:
    """How many characters of ``text`` are in words: runs of letters (``Word``, ``word``, or
    ``WORD`` of five or more) that hold a vowel, three in ten for an upper-case one.

    >>> _wordy("ThisIsAVeryLongName1"), _wordy("Zq8vLm3nRt5wXy7Q"), _wordy("XKCDQ9TOKENS")
    (16, 0, 6)
    """
    n = 0
    for w in _WORDISH.findall(text):
        if w.isupper():
            if (len(w) - len(w.translate(_NO_VOWELS))) * 10 >= len(w) * 3:
                n += len(w)
        elif not _VOWELS.isdisjoint(w):
            n += len(w)
    return n
