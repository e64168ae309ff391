"""Whether a project's ``pyproject.toml`` can hold a runsnap table, told without parsing it.

A capture looks for its settings in the nearest ``pyproject.toml`` (``[tool.runsnap]``) on
every run, and parsing TOML costs the import of :mod:`tomllib` (with :mod:`typing`,
:mod:`datetime` and :mod:`string`) and the parse itself: a large share of a capture. A file
that only *mentions* runsnap (a dependency ``"runsnap>=1"``, a lint rule naming
``"runsnap.track"``) holds no runsnap setting; only a file with a runsnap table or key is
parsed.
"""

from __future__ import annotations

from runsnap.base.patterns import on_use

__all__ = ["may_hold_runsnap_table"]

# A table header [tool.runsnap], [tool.runsnap.capture] (spaces, quotes allowed); or a key
# tool.runsnap.x = (at the top level), or runsnap = { ... } / runsnap.x = (in the [tool] table).
_NAME = rb"""(?:runsnap|"runsnap"|'runsnap')"""
_TABLE = on_use(
    rb"(?m)^[ \t]*(?:(?P<header>\[[ \t]*tool[ \t]*\.[ \t]*" + _NAME + rb"[ \t]*[\].])"
    rb"|(?P<dotted>tool[ \t]*\.[ \t]*)?" + _NAME + rb"[ \t]*[.=])")
_SPACE = on_use(rb"[ \t\"']")
_HEADER = on_use(rb"(?m)^[ \t]*\[([^\]\n]*)\]")


def may_hold_runsnap_table(data: bytes) -> bool:
    """Whether ``pyproject.toml`` text ``data`` can hold ``[tool.runsnap]`` settings (a
    cheap test: True may still mean none, False means none).

    >>> may_hold_runsnap_table(b'[tool.runsnap.capture]\\nstrict = true\\n')
    True
    >>> may_hold_runsnap_table(b'[tool]\\nrunsnap = { metrics = ["a=(1)"] }\\n')
    True
    >>> may_hold_runsnap_table(b'tool.runsnap.capture.redact = ["X_*"]\\n')
    True
    >>> may_hold_runsnap_table(b'[project.scripts]\\nrunsnap = "runsnap.cli:main"\\n')
    False
    >>> may_hold_runsnap_table(b'dependencies = [\\n  "runsnap>=1",\\n  "runsnap.track",\\n]\\n')
    False
    """
    if b"runsnap" not in data:
        return False
    for m in _TABLE.finditer(data):
        if m.group("header"):
            return True
        table = _table_before(data, m.start())
        if table == (b"" if m.group("dotted") else b"tool"):
            return True
    return False


def _table_before(data: bytes, pos: int) -> bytes:
    """The name of the table a line at ``pos`` is in (``b""``: the top level)."""
    last = None
    for last in _HEADER.finditer(data, 0, pos):  # noqa: B007 - the last header is wanted
        pass
    return b"" if last is None else _SPACE.sub(b"", last.group(1))
