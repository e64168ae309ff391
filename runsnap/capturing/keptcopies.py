"""The config files a run read, kept in the user's cache after its snapshot is written, so
that bisect can put GOOD's content of a rewritten one back (:mod:`runsnap.base.keptfiles`).

Which: each file of ``[runtime.data_files]`` hashed whole, of a config suffix
(:data:`runsnap.tracing.datafiles.CONFIG_SUFFIXES`), at most
:data:`~runsnap.tracing.datafiles.KEYS_SIZE`, text, whose content still has the digest the
snapshot recorded, and in which the capture's own redaction finds no secret (its rules, and
every secret this capture already found, such as a token in the environment that the file
repeats). A file that fails any of these is not kept: bisect blocks on it, as it did before.
It runs after the snapshot with the outcome is written, so the run's record never waits for
it, and keeps :data:`MAX_FILES` files and :data:`BUDGET` bytes at most a run. Measured (five
1 KiB TOML files): 23 ms the first time their texts are scrubbed, 0.3-0.4 ms once the
redactor's memory of clean texts holds them (:class:`runsnap.base.cache.CleanTexts`)."""

from __future__ import annotations

from runsnap.base.digest import sha256
from runsnap.base.keptfiles import keep
from runsnap.tracing.datafiles import CONFIG_SUFFIXES, KEYS_SIZE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from runsnap.redact import Redactor

__all__ = ["BUDGET", "MAX_FILES", "keep_read_configs"]

#: Files kept per run at most, and their bytes at most.
MAX_FILES = 64
BUDGET = 1 << 20


def keep_read_configs(runtime: Mapping[str, Any], redactor: Redactor,
                      env: Mapping[str, str] | None = None) -> list[str]:
    """Keep a copy of each config file ``runtime`` (the run's ``[runtime]``, before
    redaction) lists as read and that holds no secret; returns the paths kept."""
    files = runtime.get("data_files")
    out: list[str] = []
    if not isinstance(files, dict):
        return out
    budget = BUDGET
    for path, row in files.items():
        if not _candidate(path, row) or row["size"] > budget or len(out) >= MAX_FILES:
            continue
        budget -= row["size"]
        try:
            with open(path, "rb") as fh:
                data = fh.read(KEYS_SIZE + 1)
        except OSError:
            continue
        if sha256(data).hexdigest() != row["sha256"] or not _clean(data, path, redactor):
            continue
        if keep(data, env) is not None:
            out.append(path)
    return out


def _candidate(path: Any, row: Any) -> bool:
    return (isinstance(path, str) and path.endswith(CONFIG_SUFFIXES) and isinstance(row, dict)
            and isinstance(row.get("sha256"), str) and row.get("hashed") == "whole"
            and isinstance(row.get("size"), int) and row["size"] <= KEYS_SIZE)


def _clean(data: bytes, path: str, redactor: Redactor) -> bool:
    """Whether redaction leaves ``data`` as it is: UTF-8 text with no secret in it."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    noted = list(redactor.redacted)  # a file not kept is no redaction of the snapshot's
    try:
        return redactor.replace_known(redactor.scrub(text, f"kept copy of {path}")) == text
    finally:
        redactor.redacted = noted
