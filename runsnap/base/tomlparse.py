"""The TOML parser, found once: :mod:`tomllib`, or :mod:`tomli` before Python 3.11."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["toml_parser"]


def toml_parser() -> Any:
    """The TOML parser module (``loads``, ``TOMLDecodeError``).

    >>> toml_parser().loads("a = 1")
    {'a': 1}
    """
    # deferred: tomllib costs a capture ~1-2 ms (and ~8 ms where measured under load), and most
    # captures of a folder without pyproject.toml never parse TOML
    if sys.version_info >= (3, 11):
        # deferred: tomllib costs a few imports, and only toml_parser() needs it
        import tomllib
    else:  # pragma: no cover - Python 3.10
        # deferred: tomli costs a few imports, only on toml_parser()'s path
        import tomli as tomllib
    return tomllib
