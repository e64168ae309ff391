"""Regular expressions compiled when first used, not when their module is imported.

Python compiles a pattern in Python code (``re._compiler``), and a capture imports some sixty
module-level patterns: ~5 ms of its CPU, about half of it for patterns that capture never uses
(the parser of a program that is absent, redaction's forms for texts that hold none; measured
in benchmarks/RESULTS.md, "Capture cost, fifth round"). :func:`on_use` stands for a compiled
pattern and compiles it at its first attribute access; each attribute is then the compiled
pattern's own (``match``, ``sub``, ``pattern``...), kept on the object, so a pattern used
10,000 times costs what the compiled one would.

>>> rx = on_use(r"(?P<k>\\w+)=(?P<v>\\d+)")
>>> rx.sub(lambda m: m["k"] + "=N", "a=1 b=x c=22")
'a=N b=x c=N'
>>> rx.pattern, rx.groupindex["v"], on_use(rb"[\\[{]").search(b"x{").start()
('(?P<k>\\\\w+)=(?P<v>\\\\d+)', 2, 1)
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, AnyStr

__all__ = ["on_use"]


class _OnUse:
    """A pattern not compiled yet (see the module docstring)."""

    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        # Called only for what the object does not hold yet: compile once, then keep each
        # attribute asked for on the object (the next look-up finds it without this call).
        if name.startswith("__"):
            raise AttributeError(name)
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            compiled = self.__dict__["_compiled"] = re.compile(*self._source)
        value = getattr(compiled, name)
        self.__dict__[name] = value
        return value

    def __repr__(self) -> str:
        return f"on_use({self._source[0]!r}, {self._source[1]})"


def on_use(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """``re.compile(pattern, flags)``, compiled at the first use (see the module docstring).

    For module-level patterns on the capture path; anything that needs a real
    :class:`re.Pattern` (``isinstance``, pickling) gets one from ``re.compile``.
    """
    return _OnUse(pattern, flags)  # type: ignore[return-value]
