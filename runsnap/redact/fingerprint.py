"""The local key that fingerprints secrets: created once per user, never written anywhere else."""

from __future__ import annotations

import os
from collections.abc import Mapping

from runsnap.base.digest import sha256
from runsnap.base.paths import expand_user, path_str
from runsnap.base.records import FrozenRecord

__all__ = ["FingerprintKey", "load_key"]


class FingerprintKey(FrozenRecord):
    """The local key that fingerprints secrets; never written into a snapshot."""

    key: bytes
    """The HMAC key."""

    source: str
    """Where it came from: the key file's path, or ``"ephemeral"`` when none could be kept."""

    def __repr__(self) -> str:
        # never the key itself: a repr ends up in logs and tracebacks
        return f"FingerprintKey(id={self.id!r}, source={self.source!r})"

    @property
    def id(self) -> str:
        """A short public id of the key: snapshots with the same id have comparable fingerprints."""
        return str(sha256(b"runsnap-key-id\0" + self.key).hexdigest()[:12])


def _key_path(env: Mapping[str, str]) -> str:
    if env.get("RUNSNAP_KEY_FILE"):
        return expand_user(env["RUNSNAP_KEY_FILE"])
    base = env.get("XDG_CONFIG_HOME") or os.path.join(expand_user("~"), ".config")
    return path_str(os.path.join(base, "runsnap", "fingerprint.key"))


def _read_key(path: str) -> FingerprintKey | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return FingerprintKey(data, path) if len(data) >= 32 else None


def load_key(env: Mapping[str, str] | None = None) -> FingerprintKey:
    """This user's fingerprint key, created (mode 0600) on first use.

    When no key can be read or created (read-only home), a random key for this process alone is
    used: secrets stay hidden, but fingerprints then compare only within one capture.
    """
    path = _key_path(os.environ if env is None else env)
    existing = _read_key(path)
    if existing:
        return existing
    key = os.urandom(32)  # what secrets.token_bytes does, without importing random
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(key)
        return FingerprintKey(key, path)
    except FileExistsError:
        # Another runsnap created it between our read and our create: use theirs.
        existing = _read_key(path)
        if existing:
            return existing
    except OSError:
        pass
    return FingerprintKey(key, "ephemeral")
