"""The record a grouper returns (:class:`Group`: a cause and the differences that came with
it), and the helpers groupers and views share (:func:`echoes`: a member that only repeats its
cause); :mod:`runsnap.diffing.grouping` applies the groupers."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from runsnap.base.records import FrozenRecord
from runsnap.diffing.result import Difference

__all__ = ["Group", "Grouper", "by_key", "echoes", "under"]


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


def echoes(cause: Difference, r: Difference) -> bool:
    """Whether ``r``, grouped under ``cause``, only repeats it: the run-time record of the
    cause's own variable, each run having read the value it was launched with (the cause's
    reason already says where it was read). A run that did not read it, or read another
    value, is news and stays.

    >>> env = Difference("env", "X", "changed", "1", "2", path=("env", "X"))
    >>> seen = Difference("runtime", "env X", "changed", "1", "2", path=("runtime", "env", "X"))
    >>> echoes(env, seen), echoes(env, seen.replace(b=None))
    (True, False)
    >>> echoes(env.replace(a=None), seen.replace(a="(unset: default taken)", b="(set)"))
    True
    """
    if r.path != ("runtime", "env", *cause.path[1:]) or cause.section != "env":
        return False

    def same(launched: Any, seen: Any) -> bool:
        if launched is None:
            return isinstance(seen, str) and seen.startswith("(unset")
        return seen in (launched, "(set)")

    return same(cause.a, r.a) and same(cause.b, r.b)
