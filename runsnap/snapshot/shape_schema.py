"""The JSON Schema of a declared type, as ``schema.json`` writes it: the part of
:mod:`runsnap.snapshot.shapes` that turns a declaration and its marks into schema."""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Union

from runsnap.snapshot.shape_marks import Doc, Extra, Minimum, Ref

__all__ = ["schema_of"]

_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number",
               type(None): "null", list: "array", dict: "object"}


def schema_of(shape: Any) -> dict[str, Any]:
    """The JSON Schema (as ``schema.json`` writes it) of a declared type.

    >>> schema_of(dict[str, str | None])
    {'type': 'object', 'additionalProperties': {'type': ['string', 'null']}}
    >>> schema_of(dict[str, Any] | None)
    {'type': ['object', 'null']}
    """
    origin, args = typing.get_origin(shape), typing.get_args(shape)
    if origin is Annotated:
        marks = shape.__metadata__
        ref = next((m for m in marks if isinstance(m, Ref)), None)
        out: dict[str, Any] = {"$ref": f"#/$defs/{ref.name}"} if ref is not None else schema_of(args[0])
        for mark in marks:
            if isinstance(mark, Doc):
                out["description"] = mark.text
            elif isinstance(mark, Minimum):
                out["minimum"] = mark.least
            elif isinstance(mark, Extra):
                out["additionalProperties"] = schema_of(mark.shape)
        return out
    if typing.is_typeddict(shape):
        hints = typing.get_type_hints(shape, include_extras=True)
        out = {"type": "object", "properties": {k: schema_of(v) for k, v in hints.items()}}
        required = sorted(getattr(shape, "__required_keys__", ()))
        if required:
            out["required"] = required
        return out
    if origin in (Union, types.UnionType):
        out = {"type": []}
        for member in args:  # one type a member; what else a member says is merged in
            part = schema_of(member)
            out["type"].append(part.pop("type"))
            out.update(part)
        return out
    if shape is Any:
        return {}
    if origin is list:
        return {"type": "array", **({} if args[0] is Any else {"items": schema_of(args[0])})}
    if origin is dict:
        return {"type": "object",
                **({} if args[1] is Any else {"additionalProperties": schema_of(args[1])})}
    return {"type": _JSON_TYPES[shape]}
