"""What a library says about a variable it no longer heeds (``deprecation-notices.tsv``): a
warning such as ``TORCH_HUB is deprecated, please use env TORCH_HOME instead`` names the
variable, but says that it decided nothing but that line. Each row keeps its provenance (the
source file and line in the library's public repository) and whether an incident of the tune
half exercises it."""

from __future__ import annotations

import functools
import re

from runsnap.base.records import FrozenRecord
from runsnap.knowledge import rule_lines

__all__ = ["Notice", "notice_about", "rows"]

# {name}: the variable (quotes around it optional); {} and printf fields: any text between
_FIELD = re.compile(r"\{name\}|\{\}|%[-+ #0-9.]*[sdr]")
_NAME = r"""(?<!\w)[`'"]?(?P<name>[A-Za-z_][A-Za-z0-9_]*)[`'"]?"""
#: Text a field stands for: a few words, within the line.
_ANY = r".{1,200}?"


class Notice(FrozenRecord):
    """One row of ``deprecation-notices.tsv``."""

    library: str
    notice: str
    """The words as the source writes them, ``{name}`` the variable the notice is about."""
    effect: str
    """``none`` (the value is not used any more) or ``renamed`` (copied to a new name)."""
    source: str
    half: str

    @property
    def pattern(self) -> re.Pattern[str]:
        """The notice as a regular expression over one line; group ``name`` is the variable.

        >>> row = Notice("torch", "{name} is deprecated, please use env {} instead", "none", "", "")
        >>> row.pattern.search("UserWarning: TORCH_HUB is deprecated, please use env TORCH_HOME "
        ...                    "instead")["name"]
        'TORCH_HUB'
        """
        return _compile(self.notice)

    def says(self) -> str:
        """What the notice means for the variable, in words."""
        if self.effect == "none":
            return "the library that printed it no longer uses the value"
        return "the library that printed it asks for another setting (it may copy the value there)"


@functools.cache
def _compile(notice: str) -> re.Pattern[str]:
    parts = []
    for piece, field in zip(_FIELD.split(notice), [*_FIELD.findall(notice), None], strict=True):
        parts.append(r"\s+".join(re.escape(w) for w in piece.split(" ")))
        if field is not None:
            parts.append(_NAME if field == "{name}" else _ANY)
    return re.compile("".join(parts), re.IGNORECASE)


@functools.lru_cache(maxsize=1)
def rows() -> tuple[Notice, ...]:
    """Every row of the table, in its order (the first that matches a line is the one told).

    >>> any(r.library == "torch" and r.effect == "none" for r in rows())
    True
    """
    return tuple(Notice(*row) for row in rule_lines("deprecation-notices.tsv"))


def notice_about(line: str, name: str) -> Notice | None:
    """The first row whose notice ``line`` prints about the variable ``name``, or None.

    >>> notice_about("[W1204 10:00:00 Utils.hpp:94] Warning: Environment variable "
    ...              "NCCL_BLOCKING_WAIT is deprecated; use TORCH_NCCL_BLOCKING_WAIT instead "
    ...              "(function getCvarBool)", "NCCL_BLOCKING_WAIT").effect
    'renamed'
    >>> notice_about("... use TORCH_NCCL_BLOCKING_WAIT instead", "TORCH_NCCL_BLOCKING_WAIT") is None
    True
    """
    if name not in line:
        return None
    for row in rows():
        for m in row.pattern.finditer(line):
            if m["name"] == name:
                return row
    return None
