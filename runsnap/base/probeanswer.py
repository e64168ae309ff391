"""The package probe's answer (``runsnap/probe/packages.py``, run in the child's interpreter),
checked once where it arrives: from the probe's standard output, or from the cache
(:func:`runsnap.base.cache.load_probe`), a file on the user's disk that anything may have
changed.

:func:`checked` gives the answer with every field the collectors read present and of its type,
or one :class:`ValueError` naming the first field that is not (``modules.torch.files is not an
object``), so that the collectors read ``probe["distributions"]`` without a guard of their own
and a cache entry written by something else is probed again, never a crash of the capture.
A plain mapping, not a record: it is read on every capture, and kept in the cache as it is.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["checked", "failed"]

#: The text fields of the answer, each ``""`` when the probe left it out.
_TEXT = ("executable", "version", "implementation", "prefix", "base_prefix")
#: The text fields of a distribution (``distributions``, ``shadowed``).
_DIST_TEXT = ("name", "version", "location", "metadata_dir")


def _table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{where} is not an object")
    return value


def _array(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{where} is not an array")
    return value


def _texts(value: Any, where: str) -> list[str]:
    for i, item in enumerate(_array(value, where)):
        if not isinstance(item, str):
            raise ValueError(f"{where}[{i}] is not a string")
    return value


def _text(table: dict[str, Any], key: str, where: str) -> None:
    if not isinstance(table.setdefault(key, ""), str):
        raise ValueError(f"{where}.{key} is not a string" if where else f"{key} is not a string")


def checked(data: Any) -> dict[str, Any]:
    """``data``, the probe's answer, with its missing fields filled in (text ``""``, arrays and
    objects empty, ``user_site`` ``None``, ``customized`` false); :class:`ValueError` naming
    the first field of another type.

    >>> checked({"version": "3.12.1"})["distributions"]
    []
    >>> checked({"modules": {"torch": {"dir": "/t", "files": [], "lists": {}}}})
    Traceback (most recent call last):
    ValueError: modules.torch.files is not an object
    """
    answer = _table(data, "the answer")
    for key in _TEXT:
        _text(answer, key, "")
    if not isinstance(answer.setdefault("user_site", None), (str, type(None))):
        raise ValueError("user_site is not a string")
    if not isinstance(answer.setdefault("customized", False), bool):
        raise ValueError("customized is not true or false")
    _texts(answer.setdefault("sys_path", []), "sys_path")
    _texts(answer.setdefault("errors", []), "errors")
    for field in ("distributions", "shadowed"):
        for i, dist in enumerate(_array(answer.setdefault(field, []), field)):
            where = f"{field}[{i}]"
            for key in _DIST_TEXT:
                _text(_table(dist, where), key, where)
    for name, module in _table(answer.setdefault("modules", {}), "modules").items():
        where = f"modules.{name}"
        _text(_table(module, where), "dir", where)
        for file, text in _table(module.setdefault("files", {}), f"{where}.files").items():
            if not isinstance(text, str):
                raise ValueError(f"{where}.files.{file} is not a string")
        for sub, names in _table(module.setdefault("lists", {}), f"{where}.lists").items():
            _texts(names, f"{where}.lists.{sub}")
    for i, folder in enumerate(_array(answer.setdefault("nvidia", []), "nvidia")):
        _text(_table(folder, f"nvidia[{i}]"), "dir", f"nvidia[{i}]")
        _texts(folder.setdefault("libs", []), f"nvidia[{i}].libs")
    return answer


def failed(error: str, exit_status: int | None = None) -> dict[str, Any]:
    """The answer of a probe that could not run: ``error`` (and ``exit_status``) beside the
    fields of an empty answer, so a reader of the distributions finds none.

    >>> failed("no JSON")["error"], failed("no JSON")["distributions"]
    ('no JSON', [])
    """
    out = checked({})
    out["error"] = error
    if exit_status is not None:
        out["exit_status"] = exit_status
    return out
