"""The record a grouper returns (:class:`Group`: a cause and the differences that came with
it), and the helpers groupers share; :mod:`runsnap.diffing.grouping` applies the groupers."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from runsnap.base.records import FrozenRecord
from runsnap.diffing.result import Difference

__all__ = ["Group", "Grouper", "by_key", "under"]


class Group(FrozenRecord):
    """One cause and the differences that came with it."""

    cause: Difference
    """The difference that explains the others (one of the differences found)."""

    members: tuple[Difference, ...]
    """Its consequences (other differences found)."""

    lines: tuple[str, ...] = ()
    """Evidence lines added to the cause: what links the members to it."""

    title: str = ""
    """A sentence for the group as a whole (``another virtual environment: A ... B ...``)."""


Grouper = Callable[[Sequence[Difference], Any, Any], list[Group]]


def by_key(diffs: Iterable[Difference]) -> dict[tuple[str, str], Difference]:
    """The differences by ``(section, key)``."""
    return {(d.section, d.key): d for d in diffs}


def under(path: Any, prefixes: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``prefixes`` or lies below one."""
    text = str(path or "")
    return any(p and (text == p or text.startswith(p.rstrip("/") + "/")) for p in prefixes)
