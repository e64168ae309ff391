"""The only module that decides what is a secret, and replaces each one with a fingerprint.

Snapshots are attached to public bug reports, so every writer passes what it writes through a
:class:`Redactor` first. A secret is replaced by a *fingerprint*::

    <redacted:hmac-sha256:3f9a0c1d2e4b5a69>

an HMAC of the value under a key that stays on this machine (``RUNSNAP_KEY_FILE``, or
``$XDG_CONFIG_HOME/runsnap/fingerprint.key``), so two snapshots of one user say "same
secret" or "changed secret" while the value cannot be recovered from either.

What counts as a secret (the rules are data in :mod:`runsnap.knowledge.secrets`):

* the value of a variable, option, config key or text assignment whose *name* is a secret
  name (``*TOKEN*``, ``*_CONNECTION_STRING``, ``SSHPASS``), or a name that holds a secret when
  its *value* looks like a credential (``HF_AUTH=hf_...``, ``AUTH_HEADER=Bearer ...``, but not
  ``TORCH_CUDNN_V8_API_DISABLED=1``), or a name the user listed (``--redact``, ``redact = [...]``
  in ``[tool.runsnap.capture]``); ``--keep NAME`` keeps one;
* in any text: a value shaped like a known token (gitleaks' and detect-secrets' shapes: JWTs,
  npm, GitHub, Hugging Face, Slack, Stripe, AWS, OpenAI and Anthropic keys...), a PEM private
  key block, ``name = value`` / ``"name": "value"`` / ``--name value`` / ``Authorization:
  Bearer ...`` where the name is a secret name, and any value already redacted elsewhere in
  the same capture;
* in URLs: the credentials (``scheme://user:password@``) and secret query parameters
  (``?token=``, ``?sig=``); scheme, host, port and path stay readable;
* in command lines: the values of secret options, also when they start with ``-``, options
  that take a password for particular programs (``sshpass -p``, ``mysql -pSECRET``), and
  command lines inside arguments (``bash -c "... --api-key X"``).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import re
from collections.abc import Mapping

from runsnap.fingerprint import FingerprintKey, load_key
from runsnap.knowledge import secrets as rules
from runsnap.knowledge.secrets import Policy, load_policy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "FingerprintKey",
    "Policy",
    "Redactor",
    "is_fingerprint",
    "is_secret_name",
    "load_key",
    "load_policy",
    "looks_like_credential",
]

_PREFIX = "<redacted:hmac-sha256:"
_FINGERPRINT = re.compile(r"<redacted:hmac-sha256:[0-9a-f]{16}>")

#: Known values shorter than this are not searched for in text (``HF_TOKEN=1``).
MIN_KNOWN = 6


def _norm(name: str) -> str:
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
    upper = _norm(name)
    return always.match(upper) and not never.match(upper)


@functools.lru_cache(maxsize=8192)
def _secret_if_credential(name: str) -> bool:
    _, by_value, never = rules.name_rules()
    upper = _norm(name)
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
    if len(v) < 4 or v.startswith(_PREFIX):
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


# --------------------------------------------------------------------------- text rules

# PEM private key blocks; the END line may be missing (a cut output tail).
_PEM = re.compile(r"(-----BEGIN [A-Z0-9 _-]{0,100}PRIVATE KEY(?: BLOCK)?-----)(.*?)"
                  r"(-----END [A-Z0-9 _-]{0,100}-----|\Z)", re.S)
# A URL: scheme, then everything up to a space, a quote or an angle bracket.
_URL = re.compile(r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{0,30}://)([^\s\"'<>`]+)")
_HOST = re.compile(r"(?:[A-Za-z0-9_.~%-]+|\[[0-9A-Fa-f:.]+\])(?::\d*)?(?=[/?#]|$)")
_QUERY = re.compile(r"([?&;])([^=&#;\s]{1,80})=([^&#;\s]*)")
# name = value, name: value, "name": "value", name=value;... (a value may be quoted, or carry an
# authorization scheme: "Authorization: Bearer abc").
_ASSIGN = re.compile(
    r"(?<![A-Za-z0-9_])(?P<key>[A-Za-z_][A-Za-z0-9_.-]{0,80})[\"']?\]?[ \t]{0,3}"
    r"(?P<sep>:=|=>|\+=|=|:)[ \t]{0,3}"
    r"(?P<val>(?:(?i:bearer|basic|token|digest|bot|negotiate|apikey)[ \t]+)?"
    r"(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"',;&<>{}\[\]()]+))")
# --name value, -name value (in free text: a command line inside a string, an echoed command)
# (written ``-(?<![\w-]-)`` rather than ``(?<![\w-])-``: the same matches, but a pattern that
# starts with a literal lets the regex engine skip to each ``-`` instead of trying every position)
_OPTION = re.compile(r"-(?<![\w-]-)-?(?P<key>[A-Za-z][\w-]{1,60})[ \t]+"
                     r"(?P<val>\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']+)")
_SCHEME = re.compile(r"(?i)(?:bearer|basic|token|digest|bot|negotiate|apikey)[ \t]+")
# Azure connection strings: SharedAccessSignature=sv=...&sig=...; runs to the next ';'.
_LONG = re.compile(r"(?<![A-Za-z0-9_])(?P<key>[A-Za-z][A-Za-z0-9_]{0,60})=(?P<val>[^;\s\"']+)")
_CODE_VALUE = re.compile(r"^(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|None|True|False|null|nil|"
                         r"true|false|undefined)$|^[$%{]")
_LONG_VALUE_KEYS = ("SIGNATURE", "CONNECTION", "CONN_STR", "SAS")
#: A text holding none of those words (in any case) has no long value to look at.
_LONG_WORDS = tuple(k.lower() for k in _LONG_VALUE_KEYS)
_URL_NAMES = ("_URL", "_URI", "_DSN", "_ENDPOINT", "_HOST", "URL", "DSN")
#: Programs that take a command line as one argument: ``bash -c "..."``.
_WRAPPERS = ("sudo", "env", "nohup", "time", "timeout", "nice", "stdbuf", "taskset", "numactl",
             "srun", "mpirun", "ssh", "exec", "xargs", "chrt", "ionice", "setsid")


class Redactor:
    """Replaces secrets with fingerprints; one instance per capture (it remembers what it
    redacted, so a value hidden in ``[env]`` is also hidden where it reappears)."""

    def __init__(self, key: FingerprintKey, policy: Policy | None = None) -> None:
        self.key = key
        self.policy = policy or Policy()
        self.redacted: list[str] = []
        """Where something was redacted (``env.HF_TOKEN``, ``command.argv[3]``), for the record."""
        self.known: dict[str, str] = {}
        """Raw secret -> fingerprint, for every secret redacted so far (long enough to search)."""
        self._known_rx: re.Pattern[str] | None = None
        self._user = rules.GlobSet(_norm(g) for g in self.policy.redact)
        self._keep = frozenset(_norm(n) for n in self.policy.keep)

    # ------------------------------------------------------------------ decisions

    def is_secret(self, name: str, value: str) -> bool:
        """Whether ``value``, held by a variable, option or key named ``name``, is a secret."""
        upper = _norm(name)
        if not upper or upper in self._keep:
            return False
        if self.policy.redact and self._user.match(upper):
            return True
        if is_secret_name(upper):
            return True
        return _secret_if_credential(upper) and looks_like_credential(value)

    def fingerprint(self, value: str) -> str:
        """The placeholder that stands for ``value``; the value is remembered as a secret."""
        if value.startswith(_PREFIX) and _FINGERPRINT.fullmatch(value):
            return value
        raw = value.encode("utf-8", "surrogateescape")
        digest = hmac.new(self.key.key, raw, hashlib.sha256).hexdigest()[:16]
        fp = f"{_PREFIX}{digest}>"
        self._remember(value, fp)
        return fp

    def _remember(self, value: str, fp: str) -> None:
        new = False
        for piece in {value, value.strip(), *value.splitlines()}:
            piece = piece.strip()
            if len(piece) >= MIN_KNOWN and piece not in self.known and _PREFIX not in piece:
                self.known[piece] = fp
                new = True
        if new:
            self._known_rx = None

    # ------------------------------------------------------------------ text

    def scrub(self, text: str, where: str) -> str:
        """``text`` with every secret the rules find replaced by its fingerprint."""
        if not text:
            return text
        out = self._scrub(text)
        if out != text:
            self.redacted.append(where)
        return out

    def _scrub(self, text: str) -> str:
        out = self._known(text)
        if "PRIVATE KEY" in out:
            out = _PEM.sub(self._pem, out)
        if "://" in out:
            out = _sub_lines(_URL, self._url, out, ("://",))
        if "=" in out and any(w in out.lower() for w in _LONG_WORDS):
            out = _sub_lines(_LONG, self._long, out, ("=",))
        if "=" in out or ":" in out:
            out = _sub_lines(_ASSIGN, self._assign, out, ("=", ":"))
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
        return out

    def _assignments(self, out: str) -> str:
        """``name=value``, ``"name": "value"``, ``--name value`` where the name is secret."""
        if "=" in out:
            out = _LONG.sub(self._long, out)
        if "=" in out or ":" in out:
            out = _ASSIGN.sub(self._assign, out)
        if "-" in out:
            out = _OPTION.sub(self._option, out)
        return out

    def _known(self, text: str) -> str:
        if not self.known:
            return text
        if self._known_rx is None:
            ordered = sorted(self.known, key=len, reverse=True)
            self._known_rx = re.compile("|".join(re.escape(k) for k in ordered))
        return self._known_rx.sub(lambda m: self.known[m.group()], text)

    def _pem(self, m: re.Match[str]) -> str:
        body = m.group(2)
        if not body.strip() or _FINGERPRINT.fullmatch(body.strip()):
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
            if not _FINGERPRINT.fullmatch(creds):
                rest = self.fingerprint(creds) + rest[cut:]
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
        if not value or value.startswith(_PREFIX):
            return m.group(0)
        if name.lower() in rules.secret_query_params() or self.is_secret(name, value):
            return f"{m.group(1)}{name}={self.fingerprint(value)}"
        return m.group(0)

    def _long(self, m: re.Match[str]) -> str:
        key, val = m.group("key"), m.group("val")
        if val.startswith(_PREFIX) or not any(w in _norm(key) for w in _LONG_VALUE_KEYS):
            return m.group(0)
        if not self.is_secret(key, val):
            return m.group(0)
        return f"{key}={self.fingerprint(val)}"

    def _assign(self, m: re.Match[str]) -> str:
        key, val = m.group("key"), m.group("val")
        if val.startswith(_PREFIX):
            return m.group(0)
        scheme, bare, quote = "", val, ""
        sm = _SCHEME.match(bare)
        if sm and len(bare) > sm.end():
            scheme, bare = bare[: sm.end()], bare[sm.end():]
        if bare[:1] in "\"'" and bare[-1:] == bare[:1] and len(bare) >= 2:
            quote, bare = bare[0], bare[1:-1]
        if not bare or bare.startswith(_PREFIX):
            return m.group(0)
        if not scheme and not quote and _CODE_VALUE.search(bare):
            return m.group(0)  # code that names a secret (api_key = args.api_key), not one
        if "://" in bare and not scheme:
            return m.group(0)  # a URL: the URL rule took its credentials, keeping the host
        if not self.is_secret(key, scheme + bare):
            return m.group(0)
        start = m.start("val") - m.start()
        return m.group(0)[:start] + scheme + quote + self.fingerprint(bare) + quote

    def _option(self, m: re.Match[str]) -> str:
        key, val = m.group("key"), m.group("val")
        if val.startswith(("--", _PREFIX)) or "<redacted:" in val:
            return m.group(0)
        bare = val[1:-1] if val[:1] in "\"'" and val[-1:] == val[:1] and len(val) >= 2 else val
        if not bare or not self.is_secret(key, bare) or _CODE_VALUE.search(bare):
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
            out = self._scrub("\n".join(lines))
            return out.encode("utf-8", "surrogateescape")

        return filt

    # ------------------------------------------------------------------ values and structures

    def value_for(self, name: str, value: str, where: str) -> str:
        """The value to store for a variable, option or key ``name``."""
        if not value or _norm(name) in self._keep:
            return value
        if self.is_secret(name, value):
            if _URL_VALUE.match(value) and _norm(name).endswith(_URL_NAMES):
                # DATABASE_URL: keep scheme, host, port and path; drop the credentials
                return self.scrub(value, where)
            self.redacted.append(where)
            return self.fingerprint(value)
        return self.scrub(value, where)

    def walk(self, value: Any, where: str, key: str | None = None) -> Any:
        """Scrub every string inside plain data; a value under a secret key is a secret."""
        if isinstance(value, str):
            if key is not None and value and self.is_secret(key, value):
                return self.value_for(key, value, where)
            return self.scrub(value, where)
        if isinstance(value, Mapping):
            return {k: self.walk(v, f"{where}.{k}", str(k)) for k, v in value.items()}
        if isinstance(value, list):
            if len(value) > 1 and all(isinstance(v, str) for v in value):
                joined = "\n".join(value)
                if "\n" not in "".join(value):
                    out = self.scrub(joined, where)
                    parts = out.split("\n")
                    if len(parts) == len(value):
                        return parts
            return [self.walk(v, f"{where}[{i}]", key) for i, v in enumerate(value)]
        if (key is not None and isinstance(value, int) and not isinstance(value, bool)
                and _norm(key) not in self._keep and is_secret_name(key)
                and not key.lower().endswith(("count", "_s", "bytes", "len", "length", "size"))):
            self.redacted.append(where)
            return self.fingerprint(str(value))
        return value

    def argv(self, argv: list[str], where: str, depth: int = 0) -> list[str]:
        """``argv`` with the values of secret options replaced by fingerprints.

        ``--hf-token VALUE`` (also a VALUE that starts with ``-``), ``--hf-token=VALUE``,
        ``--header "Authorization: Bearer X"``, program-specific password options
        (``sshpass -p X``, ``mysql -pX``), ``NAME=VALUE`` words, URL credentials, token shapes,
        and command lines held in one argument (``bash -c "... --api-key X"``).
        """
        out: list[str] = []
        pending = False
        tool_opts: frozenset[str] = frozenset()
        table = rules.password_options()
        for i, arg in enumerate(argv):
            here = f"{where}[{i}]"
            if pending:
                pending = False
                if arg != "--" and not _LONG_OPTION.match(arg):
                    self.redacted.append(here)
                    out.append(self.fingerprint(arg))
                    continue
            prog = os.path.basename(arg)
            if prog in table:
                tool_opts = table[prog]
            if arg.startswith("-") and len(arg) > 1 and arg != "--":
                name, eq, val = arg.partition("=")
                if name in tool_opts or (not name.startswith("--") and name[:2] in tool_opts
                                         and len(name[:2]) == 2 and not eq):
                    if name in tool_opts:
                        if eq and val:
                            self.redacted.append(here)
                            out.append(f"{name}={self.fingerprint(val)}")
                        elif eq:
                            out.append(arg)
                        else:
                            pending = True
                            out.append(arg)
                        continue
                    if len(arg) > 2:  # -pSECRET
                        self.redacted.append(here)
                        out.append(arg[:2] + self.fingerprint(arg[2:]))
                        continue
                nxt = argv[i + 1] if i + 1 < len(argv) else ""
                if eq and val and not val.startswith(_PREFIX) and self.is_secret(name, val):
                    self.redacted.append(here)
                    out.append(f"{name}={self.fingerprint(val)}")
                    continue
                if not eq and nxt and self.is_secret(name, nxt):
                    pending = True
                    out.append(arg)
                    continue
            out.append(self._arg_text(arg, here, depth))
        return out

    def _arg_text(self, arg: str, where: str, depth: int) -> str:
        """One argument as text; one that holds a command line is redacted as a command line."""
        if depth < 3 and any(ch.isspace() for ch in arg) and not arg.startswith(_PREFIX):
            import shlex

            try:
                words = shlex.split(arg)
            except ValueError:
                words = []
            if len(words) > 1:
                self.argv(words, where, depth + 1)  # learns the secrets it finds
        return self.scrub(arg, where)

    def sections(self, sections: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        """Redact whole sections: names and shapes, in every section, the meta included."""
        out: dict[str, dict[str, Any]] = {}
        for name, section in sections.items():
            sec = dict(section)
            if name == "env" and isinstance(sec.get("vars"), Mapping):
                sec["vars"] = {
                    k: self.value_for(k, v, f"env.vars.{k}") if isinstance(v, str) else v
                    for k, v in sec["vars"].items()
                }
                rest = {k: v for k, v in sec.items() if k != "vars"}
                sec = {"vars": sec["vars"], **self.walk(rest, name)}
            elif name == "command":
                if isinstance(sec.get("argv"), list):
                    sec["argv"] = self.argv([str(a) for a in sec["argv"]], "command.argv")
                if isinstance(sec.get("options"), Mapping):
                    sec["options"] = {
                        k: self._option_value(k, v) for k, v in sec["options"].items()
                    }
                rest = {k: v for k, v in sec.items() if k not in ("argv", "options")}
                sec.update(self.walk(rest, name))
            elif name == "runtime":
                sec = self._runtime(sec)
            elif name == "process":
                sec = self._with_argvs(sec, name)
            elif name == "meta":
                sec = self._meta(sec)
            else:
                sec = self.walk(sec, name)
            out[name] = sec
        return out

    def _with_argvs(self, value: Any, where: str) -> Any:
        if isinstance(value, Mapping):
            return {k: (self.argv([str(a) for a in v], f"{where}.{k}")
                        if k == "argv" and isinstance(v, list) else
                        self._with_argvs(v, f"{where}.{k}"))
                    for k, v in value.items()}
        if isinstance(value, list):
            return [self._with_argvs(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return self.walk(value, where)

    def _meta(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        """``[meta]``: the label and everything else scrubbed as text (names of where things
        were redacted and runsnap's own fields are not secrets)."""
        return {k: (v if k in ("redacted", "fingerprint_key", "id", "captured_at")
                    else self.walk(v, f"meta.{k}")) for k, v in meta.items()}

    def _runtime(self, sec: dict[str, Any]) -> dict[str, Any]:
        """``[runtime]``: values read are judged by the variable's name, as in ``[env]``; the
        processes' argv as ``command.argv``; shapes everywhere."""
        out = dict(sec)
        variables = sec.get("env")
        if isinstance(variables, Mapping):
            clean: dict[str, Any] = {}
            for var, entry in variables.items():
                if isinstance(entry, Mapping):
                    entry = dict(entry)
                    for field in ("value", "other_values"):
                        val = entry.get(field)
                        where = f"runtime.env.{var}.{field}"
                        if isinstance(val, str):
                            entry[field] = self.value_for(var, val, where)
                        elif isinstance(val, list):
                            entry[field] = [self.value_for(var, v, where)
                                            if isinstance(v, str) else v for v in val]
                    entry = {k: v if k in ("value", "other_values")
                             else self.walk(v, f"runtime.env.{var}.{k}") for k, v in entry.items()}
                clean[var] = entry
            out["env"] = clean
        if isinstance(sec.get("processes"), list):
            out["processes"] = self._with_argvs(sec["processes"], "runtime.processes")
        rest = self.walk({k: v for k, v in out.items() if k not in ("env", "processes")},
                         "runtime")
        return {**out, **rest}

    def _option_value(self, name: str, value: Any) -> Any:
        where = f"command.options.{name}"
        if isinstance(value, str):
            if value.startswith(_PREFIX):
                return value
            return self.value_for(name, value, where)
        if isinstance(value, list):
            return [self._option_value(name, v) for v in value]
        return value


_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 _-]{0,100}PRIVATE KEY(?: BLOCK)?-----")
#: Texts longer than this are searched for assignments line by line, and only the lines that
#: hold one of :data:`_NAME_WORDS` (a 1 MiB diff: ~15x faster).
_LONG_TEXT = 4096
#: Every secret name (secret-names*.txt) holds one of these words; a test checks it.
_NAME_WORDS = re.compile(
    r"(?i)token|secret|pass|pwd|key|auth|api|access|cred|sig|jwt|bearer|priv|session|conn|dsn"
    r"|cookie|salt|licen|webhook|sas|_pat|database_url|redis_url")
_LONG_OPTION = re.compile(r"^--[A-Za-z][A-Za-z0-9_-]*(?:=.*)?$", re.S)
_URL_VALUE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]{0,30}://\S+$")


def _sub_lines(rx: re.Pattern[str], repl: Callable[[re.Match[str]], str], text: str,
               needles: tuple[str, ...]) -> str:
    """``rx.sub(repl, text)`` for a pattern whose matches never cross a line and need one of
    ``needles`` on their line: only the lines holding one are searched (a long text, such as a
    git diff, mostly has none). The patterns' look-behinds see a newline or the start of the
    text, which neither of them matches, so each line gives what the whole text would.

    >>> _sub_lines(re.compile(r"(?<!\\w)k=\\w+"), lambda m: "k=X", "k=1\\nj k=2\\nno", ("=",))
    'k=X\\nj k=X\\nno'
    """
    if len(text) < 4096 or "\n" not in text:
        return rx.sub(repl, text)
    lines: set[tuple[int, int]] = set()  # (start, end) of every line holding a needle
    for needle in needles:
        at = text.find(needle)
        while at >= 0:  # from one such line to the next, skipping the lines between
            lo = text.rfind("\n", 0, at) + 1
            hi = text.find("\n", at)
            hi = len(text) if hi < 0 else hi
            lines.add((lo, hi))
            at = text.find(needle, hi)
    parts, done = [], 0
    for lo, hi in sorted(lines):
        parts += [text[done:lo], rx.sub(repl, text[lo:hi])]
        done = hi
    return "".join(parts) + text[done:]


def _inside_fingerprint(text: str, start: int, end: int) -> bool:
    lo = text.rfind(_PREFIX, 0, start + 1)
    return lo >= 0 and text.find(">", lo) >= end - 1


def is_fingerprint(value: Any) -> bool:
    """Whether ``value`` is a redaction placeholder."""
    return isinstance(value, str) and value.startswith(_PREFIX)
