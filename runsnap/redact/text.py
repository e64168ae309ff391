"""Secrets in text: token shapes, PEM blocks, URL credentials, assignments and options whose
name is secret, and values already redacted elsewhere; and the decisions every other part of
redaction asks (:meth:`TextRedactor.is_secret`, :meth:`TextRedactor.fingerprint`)."""

from __future__ import annotations

import functools
import json
import os
import re
import threading

from runsnap._version import __version__
from runsnap.base.digest import Hmac, sha256, text_sha256
from runsnap.base.linesub import sub_lines, sub_words
from runsnap.base.patterns import on_use
from runsnap.knowledge import secrets as rules
from runsnap.knowledge.secrets import Policy
from runsnap.redact.fingerprint import FingerprintKey
from runsnap.redact.known import KnownValues
from runsnap.redact.names import (
    FINGERPRINT,
    MIN_KNOWN,
    PREFIX,
    harmless_value,
    identifier_name,
    looks_like_credential,
    looks_opaque,
    name_class,
    norm,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from runsnap.base.cache import CleanTexts, ScrubbedTexts

__all__ = ["TextRedactor"]

# PEM private key blocks; the END line may be missing (a cut output tail).
_PEM = on_use(r"(-----BEGIN [A-Z0-9 _-]{0,100}PRIVATE KEY(?: BLOCK)?-----)(.*?)"
              r"(-----END [A-Z0-9 _-]{0,100}-----|\Z)", re.S)
# A URL: scheme, then everything up to a space, a quote or an angle bracket.
_URL = on_use(r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{0,30}://)([^\s\"'<>`]+)")
_HOST = on_use(r"(?:[A-Za-z0-9_.~%-]+|\[[0-9A-Fa-f:.]+\])(?::\d*)?(?=[/?#]|$)")
_QUERY = on_use(r"([?&;])([^=&#;\s]{1,80})=([^&#;\s]*)")
# name = value, name: value, "name": "value", name=value;... (a value may be quoted, or carry an
# authorization scheme: "Authorization: Bearer abc").
_ASSIGN = on_use(
    r"(?<![A-Za-z0-9_])(?P<key>[A-Za-z_][A-Za-z0-9_.-]{0,80})[\"']?\]?[ \t]{0,3}"
    r"(?P<sep>:=|=>|\+=|=|:)[ \t]{0,3}"
    r"(?P<val>(?:(?i:bearer|basic|token|digest|bot|negotiate|apikey)[ \t]+)?"
    r"(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"',;&<>{}\[\]()]+))")
# --name value, -name value (in free text: a command line inside a string, an echoed command)
# (written ``-(?<![\w-]-)`` rather than ``(?<![\w-])-``: the same matches, but a pattern that
# starts with a literal lets the regex engine skip to each ``-`` instead of trying every position)
_OPTION = on_use(r"-(?<![\w-]-)-?(?P<key>[A-Za-z][\w-]{1,60})[ \t]+"
                 r"(?P<val>\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']+)")
_SCHEME = on_use(r"(?i)(?:bearer|basic|token|digest|bot|negotiate|apikey)[ \t]+")
# Azure connection strings: SharedAccessSignature=sv=...&sig=...; runs to the next ';'.
_LONG = on_use(r"(?<![A-Za-z0-9_])(?P<key>[A-Za-z][A-Za-z0-9_]{0,60})=(?P<val>[^;\s\"']+)")
_CODE_VALUE = on_use(r"^(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|None|True|False|null|nil|"
                     r"true|false|undefined)$|^[$%{]")
#: What follows a name in code without being its value: an operator or punctuation alone
#: (``-DEFAULT_TOKEN = None``, a removed line of a diff, reads as the option ``-DEFAULT_TOKEN``
#: with the value ``=``). No secret is made of these characters only.
_OPERATOR = on_use(r"^[^\w\s]{1,4}$")
_LONG_VALUE_KEYS = ("SIGNATURE", "CONNECTION", "CONN_STR", "SAS")
#: A text holding none of those words (in any case) has no long value to look at.
_LONG_WORDS = tuple(k.lower() for k in _LONG_VALUE_KEYS)


class TextRedactor:
    """Decides what is secret and replaces it with its fingerprint, in values and in text; it
    remembers what it redacted, so a value hidden once is hidden wherever it reappears."""

    #: A text at least this long is looked up in :attr:`memo` before it is searched.
    MEMO_MIN = 64 * 1024

    def __init__(self, key: FingerprintKey, policy: Policy | None = None,
                 memo: ScrubbedTexts | None = None, clean: CleanTexts | None = None) -> None:
        self.key = key
        self.policy = policy or Policy()
        self.memo = memo
        """Where large texts scrubbed before are kept (a capture's git diff is usually the same
        as last time); None: every text is searched."""
        self.clean = clean
        """Where the small texts the rules left as they were are remembered between captures
        (:meth:`save_clean` records this capture's); None: every text is searched."""
        self._clean_opened = False
        self._found: list[str] | None = None
        self._mac: Hmac | None = None
        self._clean: set[str] = set()
        """Texts that scrub to themselves while :attr:`known` stays as it is (a capture meets
        the same site-packages path once per distribution)."""
        self.redacted: list[str] = []
        """Where something was redacted (``env.HF_TOKEN``, ``command.argv[3]``), for the record."""
        self.known = KnownValues(FINGERPRINT)
        """Raw secret -> fingerprint, for every secret redacted so far (long enough to search)."""
        self.deferred = False
        """True while :meth:`scrub` only finds (the first of two passes, see
        :meth:`runsnap.redact.structures.Redactor.find`): the secrets found elsewhere are
        replaced afterwards, in one pass over everything, whatever the order."""
        self._user = rules.GlobSet(norm(g) for g in self.policy.redact)
        self.kept = frozenset(norm(n) for n in self.policy.keep)
        """The names (normalised) whose values the user keeps (``--keep``)."""

    # ------------------------------------------------------------------ decisions

    def is_secret(self, name: str, value: str) -> bool:
        """Whether ``value``, held by a variable, option or key named ``name``, is a secret."""
        upper = norm(name)
        if not upper or upper in self.kept:
            return False
        if self.policy.redact and self._user.match(upper):
            return True
        secret, if_credential = name_class(upper)
        if not (secret or if_credential):
            return False
        if harmless_value(value, upper):
            return False
        return secret or self._credential(value)

    def _credential(self, value: str) -> bool:
        """:func:`looks_like_credential`, its no remembered between captures (see :attr:`clean`):
        its token search compiles the token rules, which a capture whose texts are all known
        clean does not otherwise need."""
        if self.clean is not None and self._clean_store().holds(value, "credential"):
            return False
        found = looks_like_credential(value)
        if not found and self.clean is not None:
            self.clean.add(value, "credential")
        return found

    def fingerprint(self, value: str, weak: bool = False) -> str:
        """The placeholder that stands for ``value``; the value is remembered as a secret
        (``weak``: found by a rule on the word alone, see :meth:`KnownValues.add`)."""
        if value.startswith(PREFIX) and FINGERPRINT.fullmatch(value):
            return value
        if self._found is not None:
            self._found.append(value)
        raw = value.encode("utf-8", "surrogateescape")
        if self._mac is None:
            self._mac = Hmac(self.key.key)
        digest = self._mac.hexdigest(raw)[:16]
        fp = f"{PREFIX}{digest}>"
        self._remember(value, fp, weak)
        return fp

    def _remember(self, value: str, fp: str, weak: bool = False) -> None:
        if len(value) >= MIN_KNOWN and PREFIX not in value and value.isprintable() \
                and not value[0].isspace() and not value[-1].isspace():
            self.known.add(value, fp, weak)  # one line, nothing to strip: the common case
            return
        for piece in {value, value.strip(), *value.splitlines()}:
            piece = piece.strip()
            if len(piece) >= MIN_KNOWN and PREFIX not in piece:
                self.known.add(piece, fp)

    # ------------------------------------------------------------------ text

    def scrub(self, text: str, where: str) -> str:
        """``text`` with every secret the rules find replaced by its fingerprint, and (unless
        :attr:`deferred`) every secret found before wherever it reappears."""
        if not text:
            return text
        if text in self._clean:
            out = text
        else:
            if self.memo is not None and len(text) >= self.MEMO_MIN:
                out = self._scrub_remembered(text, self.memo)
            elif self.clean is not None and self._clean_store().holds(text):
                out = text  # left as it was by these rules in an earlier capture
            else:
                out = self._scrub(text)
                if out == text and self.clean is not None and len(text) < self.MEMO_MIN:
                    self.clean.add(text)
            if out == text and len(text) < self.MEMO_MIN:
                self._clean.add(text)  # the rules alone find nothing here, whatever is known
        if not self.deferred:
            out = self.known.sub(out)
        if out != text:
            self.redacted.append(where)
        return out

    def _clean_store(self) -> CleanTexts:
        """:attr:`clean`, opened under what the search of a text depends on: runsnap's version
        and rule files, the fingerprint key and the policy (not the secrets known: those are
        replaced after the search, whatever it found)."""
        assert self.clean is not None
        if not self._clean_opened:
            self._clean_opened = True
            h = sha256()
            for part in (_code_stamp(), self.key.id, repr(self.policy)):
                h.update(part.encode("utf-8", "surrogateescape") + b"\0")
            self.clean.open(str(h.hexdigest()[:40]))
        return self.clean

    def save_clean(self) -> None:
        """Record the texts this capture's search left as they were (see :attr:`clean`)."""
        if self.clean is not None and self._clean_opened:
            self.clean.save()

    def warm(self) -> threading.Thread:
        """Compile the token rules and the forms a text is searched for (:func:`_compile_rules`)
        in a thread of its own, started now (a wrapped run: beside its collectors): a capture
        whose texts were all known clean (:attr:`clean`) never needs them before the launch,
        and the child's output is searched between its end and the outcome written. Join the
        thread before that search, so that the rules are not compiled twice at once."""
        thread = threading.Thread(target=_compile_rules, name="runsnap-rules", daemon=True)
        thread.start()
        return thread

    def replace_known(self, text: str) -> str:
        """``text`` with every secret found so far replaced by its fingerprint."""
        return self.known.sub(text)

    def _scrub_remembered(self, text: str, memo: ScrubbedTexts) -> str:
        """:meth:`_scrub` of a large text, answered from ``memo`` when this text was scrubbed
        before with the same rules, key, policy and secrets already known. The secrets found in
        it are fingerprinted again from their places, so they are remembered as a search would
        have remembered them; a result whose secrets cannot all be placed is not kept. What is
        kept has the secrets already known replaced too (a cache never holds a secret), so
        they are part of its key."""
        key = self._memo_key(text)
        kept = memo.get(key)
        if kept is not None:
            out, spans = kept
            for start, length in spans:
                self.fingerprint(text[start:start + length])
            return out
        found: list[str] = []
        self._found = found
        try:
            out = self.known.sub(self._scrub(text))
        finally:
            self._found = None
        spans = [(text.find(value), len(value)) for value in dict.fromkeys(found)]
        if all(start >= 0 for start, _ in spans):
            memo.put(key, out, spans)
        return out

    def _memo_key(self, text: str) -> str:
        h = sha256()
        for part in (_code_stamp(), self.key.id, repr(self.policy),
                     "\0".join(sorted(set(self.known.values.values())))):
            h.update(part.encode("utf-8", "surrogateescape") + b"\0")
        h.update(text_sha256(text).encode())
        return str(h.hexdigest()[:40])

    def _scrub(self, text: str) -> str:
        """``text`` with the secrets the rules find in it replaced (the secrets known from
        elsewhere are not looked for here: :meth:`scrub` does that after)."""
        out = text
        if "PRIVATE KEY" in out:
            out = _PEM.sub(self._pem, out)
        if "://" in out:
            out = sub_lines(_URL, self._url, out, ("://",))
        if "=" in out and any(w in out.lower() for w in _LONG_WORDS):
            out = sub_lines(_LONG, self._long, out, ("=",))
        if "=" in out or ":" in out:
            out = sub_lines(_ASSIGN, self._assign, out, ("=", ":"))
        if "-" in out:
            out = _OPTION.sub(self._option, out)
        spans = rules.token_spans(out)
        if spans:
            parts, done = [], 0
            for a, b in spans:
                if _inside_fingerprint(out, a, b):
                    continue
                parts += [out[done:a], self.fingerprint(out[a:b])]
                done = b
            out = "".join(parts) + out[done:]
        if len(out) >= 20:
            out = sub_words(_WORD, self._opaque_word, out)
        return out

    def _opaque_word(self, m: re.Match[str]) -> str:
        """A word of a text (between spaces, quotes, ``=``, ``:``...) that is an opaque random
        string: a credential of a format no rule knows (``key = "Zq8v..."`` in a diff)."""
        word = m.group()
        if looks_opaque(word) and not harmless_value(word):
            before = m.string[max(0, m.start() - 8):m.start()].upper()
            if before.endswith(_DIGEST_NAMES):
                return word  # a key's fingerprint (SHA256:...), not a key
            return self.fingerprint(word, weak=True)
        return word

    def _pem(self, m: re.Match[str]) -> str:
        body = m.group(2)
        if not body.strip() or FINGERPRINT.fullmatch(body.strip()):
            return m.group(0)
        fp = self.fingerprint(body.strip())
        # one fingerprint per line of the block, so output lines keep their count
        lines = body.split("\n")
        kept = [fp if line.strip() else line for line in lines]
        return m.group(1) + "\n".join(kept) + m.group(3)

    def _url(self, m: re.Match[str]) -> str:
        scheme, rest = m.group(1), m.group(2)
        cut = self._userinfo_end(rest)
        if cut > 0:
            creds = rest[:cut]
            if ":" not in creds and not looks_like_credential(creds):
                pass  # a user name without a password (``ssh://git@host``) is no secret
            elif not FINGERPRINT.fullmatch(creds):
                rest = self.fingerprint(creds) + rest[cut:]
                user, colon, password = creds.partition(":")
                if colon and user:
                    self.fingerprint(password)  # remembered: hidden wherever it stands alone
        if "=" in rest:
            rest = _QUERY.sub(self._query, rest)
        return scheme + rest

    @staticmethod
    def _userinfo_end(rest: str) -> int:
        """Where the credentials of a URL (after ``scheme://``) end: the position of the ``@``
        before the host, or -1. The last ``@`` that a host follows wins, so a password holding
        ``@`` or ``/`` is taken whole."""
        end = len(rest)
        for stop in "?#":
            i = rest.find(stop)
            if i >= 0:
                end = min(end, i)
        at = rest.rfind("@", 0, end)
        while at > 0:
            before = rest[:at]
            slash = before.find("/")
            colon = before.find(":")
            if (slash < 0 or 0 <= colon < slash) and _HOST.match(rest, at + 1):
                return at
            at = rest.rfind("@", 0, at)
        return -1

    def _query(self, m: re.Match[str]) -> str:
        name, value = m.group(2), m.group(3)
        if not value or value.startswith(PREFIX):
            return m.group(0)
        if name.lower() in rules.secret_query_params() or self.is_secret(name, value):
            return f"{m.group(1)}{name}={self.fingerprint(value)}"
        return m.group(0)

    def _long(self, m: re.Match[str]) -> str:
        key, val = m.group("key"), m.group("val")
        if val.startswith(PREFIX) or not any(w in norm(key) for w in _LONG_VALUE_KEYS):
            return m.group(0)
        if not self.is_secret(key, val):
            return m.group(0)
        return f"{key}={self.fingerprint(val)}"

    def _assign(self, m: re.Match[str]) -> str:
        key, val = m.group("key"), m.group("val")
        if val.startswith(PREFIX):
            return m.group(0)
        whole = m.group(0)
        if m.group("sep") == ":" and not any(c.isspace() for c in whole):
            # a token a format rule finds whole (AAAAPIbNF2C:APA91b...): its head is no name
            spans = rules.token_spans(whole)
            if spans and spans[0][0] == 0:
                return self.fingerprint(whole[:spans[0][1]]) + whole[spans[0][1]:]
        scheme, bare, quote = "", val, ""
        sm = _SCHEME.match(bare)
        if sm and len(bare) > sm.end():
            scheme, bare = bare[: sm.end()], bare[sm.end():]
        if bare[:1] in "\"'" and bare[-1:] == bare[:1] and len(bare) >= 2:
            quote, bare = bare[0], bare[1:-1]
        if not bare or bare.startswith(PREFIX):
            return m.group(0)
        if not scheme and not quote and (_CODE_VALUE.search(bare) or _OPERATOR.match(bare)):
            return m.group(0)  # code that names a secret (api_key = args.api_key), not one
        if "://" in bare and not scheme:
            return m.group(0)  # a URL: the URL rule took its credentials, keeping the host
        if not self.is_secret(key, scheme + bare):
            return m.group(0)
        start = m.start("val") - m.start()
        return m.group(0)[:start] + scheme + quote + self.fingerprint(bare) + quote

    def _option(self, m: re.Match[str]) -> str:
        key, val = m.group("key"), m.group("val")
        if val.startswith(("--", PREFIX)) or "<redacted:" in val:
            return m.group(0)
        bare = val[1:-1] if val[:1] in "\"'" and val[-1:] == val[:1] and len(val) >= 2 else val
        if not bare or not self.is_secret(key, bare) or _CODE_VALUE.search(bare) \
                or _OPERATOR.match(bare):
            return m.group(0)
        return m.group(0)[: m.start("val") - m.start()] + val.replace(bare, self.fingerprint(bare))

    def line_filter(self) -> Callable[[bytes], bytes]:
        """A filter for a stream of whole lines (the ``--log`` file): each chunk of lines
        scrubbed, and the lines of a PEM private key block hidden even when the block's
        lines arrive in separate chunks."""
        in_block = False

        def filt(data: bytes) -> bytes:
            nonlocal in_block
            text = data.decode("utf-8", "surrogateescape")
            lines = text.split("\n")
            for i, line in enumerate(lines):
                if in_block:
                    if "-----END " in line:
                        in_block = False
                    elif line.strip():
                        lines[i] = self.fingerprint(line.strip())
                elif _PEM_BEGIN.search(line) and "-----END " not in line:
                    in_block = True
            out = self.known.sub(self._scrub("\n".join(lines)))
            return out.encode("utf-8", "surrogateescape")

        return filt

    # ------------------------------------------------------------------ values

    def value_for(self, name: str, value: str, where: str) -> str:
        """The value to store for a variable, option or key ``name``."""
        if not value or (self.kept and norm(name) in self.kept):
            return value
        if self.is_secret(name, value):
            if _URL_VALUE.match(value):
                # DATABASE_URL: keep scheme, host, port and path; drop the credentials
                return self.scrub(value, where)
            self.redacted.append(where)
            return self.fingerprint(value)
        if identifier_name(norm(name)) and "://" not in value and not rules.token_spans(value):
            return self.replace_known(value)  # BUILD_ID: random by design, of no token format
        return self.whole(value, where)

    def whole(self, value: str, where: str) -> str:
        """A value given whole (a variable, an argument, a config value) under a name that
        says nothing: hidden when it is an opaque random string, else scrubbed as text."""
        bare = value.strip().strip("\"'")
        if len(bare) >= 20 and looks_opaque(bare) and not harmless_value(bare):
            self.redacted.append(where)
            return value.replace(bare, self.fingerprint(bare))
        if bare[:1] in "{[" and bare[-1:] in "]}" and len(bare) <= _JSON_MAX:
            self._learn_json(bare)
        return self.scrub(value, where)

    def _learn_json(self, text: str) -> None:
        """The secrets of a JSON document held in one value (``APP_CONFIG='{"db": {"password":
        ...}}'``, a registry's ``auths``), found by their keys as in a config file, and
        remembered: :meth:`scrub` then replaces them wherever they stand in the text."""
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            return
        stack: list[tuple[str | None, object]] = [(None, doc)]
        while stack:
            key, node = stack.pop()
            if isinstance(node, dict):
                stack.extend((str(k), v) for k, v in node.items())
            elif isinstance(node, list):
                stack.extend((key, v) for v in node)
            elif isinstance(node, str) and node and not node.startswith(PREFIX):
                if _URL_VALUE.match(node):
                    self._scrub(node)  # a URL keeps its host: its credentials are learnt
                elif key is not None and self.is_secret(key, node):
                    self.fingerprint(node)
                elif len(node) >= 20 and looks_opaque(node) and not harmless_value(node):
                    self.fingerprint(node)


def _compile_rules() -> None:
    """Compile what searching a text needs (:meth:`TextRedactor._scrub`): the token rules and
    the forms compiled at their first use (:func:`runsnap.base.patterns.on_use`)."""
    rules.token_spans("")
    for rx in (_PEM, _URL, _HOST, _QUERY, _ASSIGN, _OPTION, _SCHEME, _LONG, _CODE_VALUE, _OPERATOR,
               _WORD, _PEM_BEGIN, _URL_VALUE):
        rx.search("")


@functools.lru_cache(maxsize=1)
def _code_stamp() -> str:
    """What the result of a scrub depends on besides its input: runsnap's version and the
    size and time of every file of the rules and of this package (an edited rule in a source
    checkout counts as another version)."""
    parts = [__version__]
    for folder in (os.path.dirname(__file__), os.path.dirname(rules.__file__)):
        for name in sorted(os.listdir(folder)):
            if name.endswith((".py", ".txt", ".tsv")):
                st = os.stat(os.path.join(folder, name))
                parts.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(parts)


# A word that may be an opaque credential: 20 to 600 characters of the alphabets tokens use,
# standing on its own (a quoted string, a value after ``=`` or ``:``, a word of a line).
_WORD = on_use(r"(?<![A-Za-z0-9+/_.~-])[A-Za-z0-9+/_.~-]{20,600}={0,3}"
               r"(?![A-Za-z0-9+/=_.~-])")
_DIGEST_NAMES = ("SHA256:", "SHA1:", "SHA384:", "SHA512:", "MD5:", "SHA256=", "SHA256-",
                 "SHA512-", "SHA384-")
_PEM_BEGIN = on_use(r"-----BEGIN [A-Z0-9 _-]{0,100}PRIVATE KEY(?: BLOCK)?-----")
_JSON_MAX = 1 << 20
_URL_VALUE = on_use(r"^[A-Za-z][A-Za-z0-9+.-]{0,30}://\S+$")


def _inside_fingerprint(text: str, start: int, end: int) -> bool:
    lo = text.rfind(PREFIX, 0, start + 1)
    return lo >= 0 and text.find(">", lo) >= end - 1

