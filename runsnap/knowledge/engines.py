"""The engines' own error messages as data (``engine-messages.tsv``): which settings govern a
message that names none of them (NCCL's ``Bootstrap : no socket interface found`` is about
``NCCL_SOCKET_IFNAME``; c10d's ``The server socket has failed to listen on any local network
address`` about ``MASTER_PORT``). Each row keeps its provenance: the source file and line in the
engine's public repository, and whether an incident of the tune half exercises it."""

from __future__ import annotations

import functools
import re

from runsnap.base.records import FrozenRecord
from runsnap.knowledge import Glob, rule_lines

__all__ = ["EngineMessage", "governing", "rows"]

# printf fields (%s, %d, %zu, %lx, %.2f) and fmt fields ({}, {:d}) stand for any text
_FIELD = re.compile(r"%[-+ #0-9.]*(?:hh|h|ll|l|z|j|t)?[sdiuxXfgcp]|\{[^{}]*\}")


class EngineMessage(FrozenRecord):
    """One row of ``engine-messages.tsv``."""

    engine: str
    message: str
    """The format string as the source writes it, or ``type:REGEX`` (the exception's type)."""
    names: tuple[str, ...]
    """Globs of variables and options, each maybe with ``~WORD`` (see :meth:`governs`)."""
    source: str
    half: str

    @property
    def pattern(self) -> re.Pattern[str]:
        """The message as a regular expression over one line of text.

        >>> EngineMessage("gloo", "Unable to find address for: %s", (), "", "tune"
        ...               ).pattern.search("RuntimeError: Unable to find address for: eth9") is None
        False
        """
        return _compile(self.message)

    def governs(self, name: str, value: object) -> bool:
        """Whether the row names ``name`` (a variable or an option), whose value on the failing
        side is ``value``: ``NAME~WORD`` asks that value to hold WORD.

        >>> row = EngineMessage("cpython", "type:\\\\w*Warning", ("PYTHONWARNINGS~error", "-W"), "", "")
        >>> row.governs("PYTHONWARNINGS", "error::UserWarning"), row.governs("PYTHONWARNINGS", "ignore")
        (True, False)
        """
        for spec in self.names:
            glob, _, word = spec.partition("~")
            if Glob(glob).match(name) and (not word or word in str(value or "").lower()):
                return True
        return False


@functools.cache
def _compile(message: str) -> re.Pattern[str]:
    if message.startswith("type:"):
        return re.compile(r"^(?:" + message[5:] + r")$")
    return re.compile(".+?".join(re.escape(p) for p in _FIELD.split(message)))


@functools.lru_cache(maxsize=1)
def rows() -> tuple[EngineMessage, ...]:
    """Every row of the table.

    >>> any(r.engine == "nccl" and "NCCL_SOCKET_IFNAME" in r.names for r in rows())
    True
    """
    out = []
    for row in rule_lines("engine-messages.tsv"):
        engine, message, names, source, half = row
        out.append(EngineMessage(engine, message, tuple(n.strip() for n in names.split(",")),
                                 source, half))
    return tuple(out)


@functools.lru_cache(maxsize=16)
def governing(texts: tuple[str, ...], error_type: str) -> tuple[EngineMessage, ...]:
    """The rows whose message one of ``texts`` (a failing run's error lines) prints, or whose
    type pattern ``error_type`` (the failing exception's type) is. Remembered: a diff asks it
    for every difference of a pair with the same lines (a pair of 2,178 differences took
    135 s in it, every row's pattern over every line once per difference; 2.8 s in all now).

    >>> [r.engine for r in governing(("NCCL WARN Bootstrap : no socket interface found",), "")]
    ['nccl']
    >>> [r.engine for r in governing((), "UserWarning")]
    ['cpython']
    """
    out = []
    for row in rows():
        if row.message.startswith("type:"):
            if error_type and row.pattern.match(error_type.rsplit(".", 1)[-1]):
                out.append(row)
        elif any(row.pattern.search(t) for t in texts):
            out.append(row)
    return tuple(out)
