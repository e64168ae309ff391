"""The only module that knows what a secret looks like.

Snapshots are attached to public bug reports, so every writer passes its sections
through :func:`redact_sections` before anything reaches the disk. A secret is
replaced by a *fingerprint*::

    <redacted:hmac-sha256:3f9a0c1d2e4b5a69>

an HMAC of the value under a key that stays on this machine (``RUNSNAP_KEY_FILE``, or
``$XDG_CONFIG_HOME/runsnap/fingerprint.key``), so two snapshots of one user say "same
secret" or "changed secret" while the value cannot be recovered from either.

What counts as a secret:

* an environment variable or command-line option whose *name* matches a glob in
  ``knowledge/secret-names.txt`` and none in ``knowledge/not-secret-names.txt``;
* credentials inside a URL (``https://user:pass@host``), wherever the URL appears;
* a value shaped like a well-known token (``hf_...``, ``ghp_...``, ``sk-...``, ``AKIA...``),
  wherever it appears.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = [
    "FingerprintKey",
    "Redactor",
    "is_secret_name",
    "load_key",
]

_PREFIX = "<redacted:hmac-sha256:"

# Credentials in a URL: scheme://user:password@host or scheme://token@host.
_URL_CREDS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<creds>[^/\s:@]*(?::[^/\s@]*)?)@")

# Tokens whose shape alone gives them away (prefixes documented by their issuers).
_TOKEN_SHAPES = re.compile(
    r"\b(?:"
    r"hf_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|gh[pousr]_[A-Za-z0-9]{36,}"  # GitHub classic tokens
    r"|github_pat_[A-Za-z0-9_]{40,}"  # GitHub fine-grained tokens
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"  # OpenAI, Anthropic
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key ids
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API keys
    r"|nvapi-[A-Za-z0-9_-]{20,}"  # NVIDIA
    r"|wandb_v1_[A-Za-z0-9_]{20,}"  # Weights & Biases
    r")"
)


def _globs(name: str) -> tuple[str, ...]:
    text = resources.files("runsnap.knowledge").joinpath(name).read_text("utf-8")
    lines = (line.strip() for line in text.splitlines())
    return tuple(line.upper() for line in lines if line and not line.startswith("#"))


@functools.lru_cache(maxsize=1)
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    def compile_all(globs: Iterable[str]) -> re.Pattern[str]:
        return re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs))

    return compile_all(_globs("secret-names.txt")), compile_all(_globs("not-secret-names.txt"))


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a variable or option named ``name`` holds a secret.

    >>> is_secret_name("HF_TOKEN"), is_secret_name("SGLANG_MAX_NEW_TOKENS_LIMIT")
    (True, False)
    """
    secret, not_secret = _patterns()
    upper = name.upper().replace("-", "_")
    return bool(secret.match(upper)) and not not_secret.match(upper)


@dataclass(frozen=True)
class FingerprintKey:
    """The local key that fingerprints secrets; never written into a snapshot."""

    key: bytes
    """The HMAC key."""

    source: str
    """Where it came from: the key file's path, or ``"ephemeral"`` when none could be kept."""

    @property
    def id(self) -> str:
        """A short public id of the key: snapshots with the same id have comparable fingerprints."""
        return hashlib.sha256(b"runsnap-key-id\0" + self.key).hexdigest()[:12]


def _key_path(env: Mapping[str, str]) -> Path:
    if env.get("RUNSNAP_KEY_FILE"):
        return Path(env["RUNSNAP_KEY_FILE"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "runsnap" / "fingerprint.key"


def _read_key(path: Path) -> FingerprintKey | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return FingerprintKey(data, str(path)) if len(data) >= 32 else None


def load_key(env: Mapping[str, str] | None = None) -> FingerprintKey:
    """This user's fingerprint key, created (mode 0600) on first use.

    When no key can be read or created (read-only home), a random key for this process alone is
    used: secrets stay hidden, but fingerprints then compare only within one capture.
    """
    path = _key_path(os.environ if env is None else env)
    existing = _read_key(path)
    if existing:
        return existing
    key = secrets.token_bytes(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(key)
        return FingerprintKey(key, str(path))
    except FileExistsError:
        # Another runsnap created it between our read and our create: use theirs.
        existing = _read_key(path)
        if existing:
            return existing
    except OSError:
        pass
    return FingerprintKey(key, "ephemeral")


class Redactor:
    """Replaces secrets with fingerprints; one instance per capture."""

    def __init__(self, key: FingerprintKey) -> None:
        self.key = key
        self.redacted: list[str] = []
        """Where something was redacted (``env.HF_TOKEN``, ``command.argv[3]``), for the record."""

    def fingerprint(self, value: str) -> str:
        """The placeholder that stands for ``value`` in a snapshot."""
        if value.startswith(_PREFIX):
            return value
        raw = value.encode("utf-8", "surrogateescape")
        digest = hmac.new(self.key.key, raw, hashlib.sha256).hexdigest()[:16]
        return f"{_PREFIX}{digest}>"

    def scrub(self, text: str, where: str) -> str:
        """``text`` with URL credentials and token-shaped values replaced by fingerprints."""
        out = text
        if "://" in out and "@" in out:
            out = _URL_CREDS.sub(
                lambda m: m["scheme"] + self.fingerprint(m["creds"]) + "@"
                if m["creds"] and not m["creds"].startswith(_PREFIX)
                else m[0],
                out,
            )
        out = _TOKEN_SHAPES.sub(lambda m: self.fingerprint(m[0]), out)
        if out != text:
            self.redacted.append(where)
        return out

    def value_for(self, name: str, value: str, where: str) -> str:
        """The value to store for a variable or option ``name``."""
        if value and is_secret_name(name):
            self.redacted.append(where)
            return self.fingerprint(value)
        return self.scrub(value, where)

    def walk(self, value: Any, where: str) -> Any:
        """Scrub every string inside plain data."""
        if isinstance(value, str):
            return self.scrub(value, where)
        if isinstance(value, Mapping):
            return {k: self.walk(v, f"{where}.{k}") for k, v in value.items()}
        if isinstance(value, list):
            return [self.walk(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return value

    def argv(self, argv: list[str], where: str) -> list[str]:
        """``argv`` with the values of secret-named options replaced by fingerprints.

        Handles ``--hf-token VALUE``, ``--hf-token=VALUE`` and URL credentials anywhere.
        """
        out: list[str] = []
        secret_next = False
        for i, arg in enumerate(argv):
            here = f"{where}[{i}]"
            if secret_next and not arg.startswith("-"):
                self.redacted.append(here)
                out.append(self.fingerprint(arg))
                secret_next = False
                continue
            secret_next = False
            if arg.startswith("-") and len(arg) > 1:
                name, eq, val = arg.lstrip("-").partition("=")
                if is_secret_name(name):
                    if eq:
                        self.redacted.append(here)
                        out.append(arg[: len(arg) - len(val)] + self.fingerprint(val))
                        continue
                    secret_next = True
            out.append(self.scrub(arg, here))
        return out

    def sections(self, sections: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        """Redact whole sections: names decide in ``env`` and ``command``, shapes everywhere."""
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
                    sec["argv"] = self.argv(sec["argv"], "command.argv")
                if isinstance(sec.get("options"), Mapping):
                    sec["options"] = {
                        k: self._option_value(k, v) for k, v in sec["options"].items()
                    }
                rest = {k: v for k, v in sec.items() if k not in ("argv", "options")}
                sec.update(self.walk(rest, name))
            elif name == "process" and isinstance(sec.get("children"), list):
                children = [
                    {**c, "argv": self.argv(c["argv"], f"process.children[{i}].argv")}
                    if isinstance(c, Mapping) and isinstance(c.get("argv"), list) else c
                    for i, c in enumerate(sec["children"])
                ]
                sec = {**self.walk({k: v for k, v in sec.items() if k != "children"}, name),
                       "children": children}
            else:
                sec = self.walk(sec, name)
            out[name] = sec
        return out

    def _option_value(self, name: str, value: Any) -> Any:
        where = f"command.options.{name}"
        if isinstance(value, str):
            return self.value_for(name, value, where)
        if isinstance(value, list):
            return [self._option_value(name, v) for v in value]
        return value


def is_fingerprint(value: Any) -> bool:
    """Whether ``value`` is a redaction placeholder."""
    return isinstance(value, str) and value.startswith(_PREFIX)
