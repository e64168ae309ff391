"""A package's public names imported from their modules when first asked for (PEP 562's
module ``__getattr__``): ``import runsnap`` or ``runsnap.capturing`` loads none of the
journeys it names until one is used.

>>> ns = {}
>>> getattr_ = lazy_names("pkg", {"dedent": "textwrap"}, ns)
>>> getattr_("dedent")("  x") == "x" and "dedent" in ns
True
>>> getattr_("nope")
Traceback (most recent call last):
AttributeError: module 'pkg' has no attribute 'nope'
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, where: Mapping[str, str], namespace: dict[str, Any]
               ) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: name -> ``getattr(where[name] module, name)``,
    kept in ``namespace`` (the package's globals) so that it is looked up once."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # __import__, not importlib: the capture path never imports importlib (~0.5 ms)
        value = getattr(__import__(module, fromlist=[name]), name)
        namespace[name] = value
        return value

    return __getattr__
