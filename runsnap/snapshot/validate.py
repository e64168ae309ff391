"""A snapshot from someone else is untrusted input: bounds checked before parsing, then the
decoded document checked against the schema shipped beside this module (``schema.json``, a
JSON Schema, draft 2020-12, documented in docs/schema.md).

Every problem is one :class:`~runsnap.errors.SnapshotError` naming the file and the place, so the
command line says one line and exits 2; nothing here lets a ``RecursionError``, ``MemoryError``
or ``TypeError`` through.

Only the keywords the schema uses are interpreted (``type``, ``properties``,
``additionalProperties``, ``items``, ``required``, ``minimum``, local ``$ref``). The tests feed it
real captures and mutated snapshots (``tests/test_untrusted_snapshots.py``); no test compares it
with the ``jsonschema`` package.
"""

from __future__ import annotations

import json
import os
import re

from runsnap.base.patterns import on_use
from runsnap.base.terminal import neutralise
from runsnap.errors import SnapshotError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_BYTES", "MAX_DEPTH", "check_depth", "check_head", "schema",
           "plain_types", "section_required", "tree_depth", "validate", "validate_section",
           "validate_value"]

#: Largest snapshot file read (a capture keeps each repository's diff under 1 MiB by default).
MAX_BYTES = 64 * 1024 * 1024

#: Deepest nesting of tables and arrays accepted (a model config.json is rarely deeper than 8).
MAX_DEPTH = 64

_HERE = os.path.dirname(os.path.abspath(__file__))
_SCHEMA: dict[str, Any] | None = None

# A run of opening brackets as deep as MAX_DEPTH: refused before the TOML parser recurses.
# (Written to start with the bracket, not a group, so the regular expression engine skips to
# each bracket instead of trying every byte: 14 -> 2.7 ms over a 1 MiB snapshot.)
_DEEP = on_use(rb"[\[{](?:[ \t\r\n,]*[\[{]){%d}" % (MAX_DEPTH - 1))
_DEEP_TEXT = on_use(rf"[\[{{](?:[ \t\r\n,]*[\[{{]){{{MAX_DEPTH - 1}}}")


def schema() -> dict[str, Any]:
    """The snapshot's JSON Schema (``schema.json``)."""
    global _SCHEMA
    if _SCHEMA is None:
        with open(os.path.join(_HERE, "schema.json"), encoding="utf-8") as fh:
            _SCHEMA = json.load(fh)
    return _SCHEMA


def check_head(head: bytes, where: str) -> None:
    """Refuse early a file that does not start as a snapshot does (``schema = N``, after blank
    lines or comments), before reading or parsing the rest of it."""
    if head.startswith(b"schema = "):  # as runsnap writes it: the first line
        return
    for raw in head.splitlines()[:200]:
        line = raw.strip()
        if not line or line.startswith(b"#"):
            continue
        if re.match(rb"schema\s*=", line):
            return
        break
    raise SnapshotError(f"{where}not a runsnap snapshot (it does not start with 'schema = ')")


def check_depth(data: bytes | str, where: str) -> None:
    """Refuse text whose arrays or tables open deeper than :data:`MAX_DEPTH` in a row (the
    text itself, or its bytes: no copy of either is made)."""
    if (_DEEP_TEXT.search(data) if isinstance(data, str) else _DEEP.search(data)):
        raise SnapshotError(f"{where}nested deeper than {MAX_DEPTH} levels: not a runsnap snapshot")


def tree_depth(value: Any, where: str) -> None:
    """Refuse a parsed document nested deeper than :data:`MAX_DEPTH` (dotted table names can
    nest without brackets); iterative, so it cannot overflow the stack itself."""
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise SnapshotError(f"{where}nested deeper than {MAX_DEPTH} levels")
        if isinstance(v, dict):
            stack.extend((x, depth + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, depth + 1) for x in v)


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "object": (dict,), "array": (list,), "null": (type(None),),
}
_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "table",
          list: "array", type(None): "null"}


def _type_ok(value: Any, names: list[str]) -> bool:
    for name in names:
        if name in ("integer", "number") and isinstance(value, bool):
            continue
        if isinstance(value, _TYPES[name]):
            return True
    return False


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        ref = node["$ref"]
        target: Any = root
        for part in ref.lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node


def _place(path: list[str]) -> str:
    """``[system] gpu.count``, ``[command] argv[3]``: where a value is, as a reader finds it
    (a key of an untrusted snapshot with a newline or a control in it shown escaped: the
    message stays one line)."""
    if not path:
        return "the document"
    head, *rest = (neutralise(str(p)) for p in path)
    text, sep = f"[{head}]", " "
    for p in rest:
        if p.startswith("["):
            text += p
        else:
            text, sep = text + sep + p, "."
    return text


def validate(doc: Any, where: str = "") -> None:
    """Check a decoded snapshot document against :func:`schema`; raise :class:`SnapshotError`
    naming the first place that does not fit (``[system] gpu: expected table, got string``)."""
    root = schema()
    tree_depth(doc, where)
    _check(doc, root, [], where)


def validate_section(name: str, value: Any, where: str = "", partial: bool = False) -> None:
    """Check one top-level section (``meta`` included) of a decoded document. ``partial``:
    ``value`` holds some of the section's keys only (check :func:`section_required` on the
    whole)."""
    root = schema()
    tree_depth(value, where)
    node = root["properties"].get(name, root.get("additionalProperties", True))
    if isinstance(node, dict):
        if partial and "required" in node:
            node = {k: v for k, v in node.items() if k != "required"}
        _check(value, node, [name], where)


_AT: dict[tuple[Any, ...], tuple[Any, list[str] | None]] = {}


def validate_value(keys: tuple[Any, ...], value: Any, where: str = "") -> None:
    """Check one value at ``keys`` (the section first, then the tables down to its own key)
    as :func:`validate_section` checks it inside its section, the tables above it having been
    checked before (the bulk loader's values that differ from a piece seen before)."""
    node, simple = _at(keys)
    if isinstance(node, str):
        raise SnapshotError(f"{where}{node}")
    if isinstance(value, (dict, list)):
        wrapped = value
        for _ in keys[1:]:
            wrapped = {"": wrapped}
        tree_depth(wrapped, where)  # its depth counted from the section, as validate_section's
    elif simple is not None and _type_ok(value, simple):
        return
    if isinstance(node, dict):
        _check(value, node, [k if isinstance(k, str) else f"[{k}]" for k in keys], where)


def _at(keys: tuple[Any, ...]) -> tuple[Any, list[str] | None]:
    """The schema node at ``keys`` (or the error its place is) and, when the node checks
    only the type, the type names it accepts."""
    got = _AT.get(keys)
    if got is None:
        node = _node_at(keys)
        simple = None  # a node that checks only the type: checked here for a plain value
        if isinstance(node, dict):
            node = _resolve(node, schema())
            kinds = node.get("type")
            if kinds is not None and set(node) <= {"type", "description"}:
                simple = kinds if isinstance(kinds, list) else [kinds]
        got = _AT[keys] = (node, simple)
    return got


_PLAIN: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "null": (type(None),),
}


def plain_types(keys: tuple[Any, ...]) -> frozenset[type]:
    """The exact types of the plain values (string, integer, float, boolean) that
    :func:`validate_value` accepts at ``keys`` for their type alone, the node there checking
    nothing else; empty when it checks more (or the place is not in the schema). A bool is
    never an integer here, as in :func:`validate_value`.

    >>> sorted(t.__name__ for t in plain_types(("meta", "collect_ms", "env")))
    ['float', 'int']
    """
    node, simple = _at(keys)
    if isinstance(node, str) or simple is None:
        return frozenset()
    return frozenset(t for name in simple for t in _PLAIN.get(name, ()))


def _node_at(keys: tuple[Any, ...]) -> Any:
    """The schema node of the value at ``keys``, or the error (a string) that its place is."""
    root = schema()
    node: Any = root["properties"].get(keys[0], root.get("additionalProperties", True))
    for i, key in enumerate(keys[1:], 1):
        if not isinstance(node, dict):
            return node
        node = _resolve(node, root)
        if isinstance(key, int):  # an item of an array (of tables)
            node = node.get("items", True)
            continue
        props = node.get("properties", {})
        if key in props:
            node = props[key]
            continue
        extra = node.get("additionalProperties", True)
        if extra is False:
            return f"{_place([str(k) for k in keys[:i]])}: unknown key '{key}'"
        node = extra
    return node


def section_required(name: str) -> tuple[str, ...]:
    """The keys section ``name`` must have."""
    node = schema()["properties"].get(name)
    return tuple(node.get("required", ())) if isinstance(node, dict) else ()


def _check(doc: Any, start: dict[str, Any], at: list[str], where: str) -> None:
    root = schema()
    stack: list[tuple[Any, dict[str, Any], list[str]]] = [(doc, start, at)]
    while stack:
        value, node, path = stack.pop()
        node = _resolve(node, root)
        kinds = node.get("type")
        if kinds is not None:
            names = kinds if isinstance(kinds, list) else [kinds]
            if not _type_ok(value, names):
                want = " or ".join("table" if n == "object" else n for n in names if n != "null")
                got = _NAMES.get(type(value), type(value).__name__)
                raise SnapshotError(f"{where}{_place(path)}: expected {want}, got {got}")
        if "minimum" in node and isinstance(value, (int, float)) and value < node["minimum"]:
            raise SnapshotError(f"{where}{_place(path)}: {value!r} is below {node['minimum']}")
        if isinstance(value, dict):
            for key in node.get("required", ()):
                if key not in value:
                    raise SnapshotError(f"{where}{_place(path)}: '{key}' is missing")
            props = node.get("properties", {})
            extra = node.get("additionalProperties", True)
            for key, item in value.items():
                if key in props:
                    stack.append((item, props[key], [*path, key]))
                elif extra is False:
                    raise SnapshotError(f"{where}{_place(path)}: unknown key '{key}'")
                elif isinstance(extra, dict):
                    stack.append((item, extra, [*path, key]))
        elif isinstance(value, list) and "items" in node:
            stack.extend((item, node["items"], [*path, f"[{i}]"]) for i, item in enumerate(value))
