"""The frozen records sections are read as, written from their declarations
(:mod:`runsnap.snapshot.shapes`) into :mod:`runsnap.snapshot.records`.

Generated rather than built at run time, so mypy reads every record's attributes and their
types (a reader's wrong field name is a type error, not a silent ``None``), and a diff or a
``show`` pays nothing for :mod:`typing`'s evaluation of the declarations.
``python -m runsnap.snapshot.shapes`` writes the module with ``schema.json`` and the comparers'
table; ``tests/test_shapes.py`` fails when it is stale.
"""

from __future__ import annotations

import keyword
import os
import re
import textwrap
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Any, Union

from runsnap.snapshot.shape_marks import Extra

__all__ = ["HERE", "MODULES", "record_name", "write_records"]

HERE = os.path.dirname(os.path.abspath(__file__))

_SCALARS = {str: "str", int: "int", float: "float", bool: "bool"}


def record_name(shape: type, sections: Mapping[str, type]) -> str:
    """A declaration's record class: a section's without ``Section`` (``EnvSection`` -> ``Env``),
    others by their own name."""
    if shape in sections.values() and shape.__name__.endswith("Section"):
        return shape.__name__[: -len("Section")]
    return shape.__name__


def _bare(hint: Any) -> Any:
    return typing.get_args(hint)[0] if typing.get_origin(hint) is Annotated else hint


def _members(hint: Any) -> tuple[Any, ...]:
    return typing.get_args(hint) if typing.get_origin(hint) in (Union, types.UnionType) else (hint,)


def _leaf(hint: Any) -> str:
    """The read-only annotation of a value kept as written (``list`` -> ``Sequence``)."""
    hint = _bare(hint)
    if hint is type(None):
        return "None"
    if hint is Any:
        return "Any"
    if hint in _SCALARS:
        return _SCALARS[hint]
    if typing.get_origin(hint) in (Union, types.UnionType):
        return " | ".join(_leaf(m) for m in typing.get_args(hint))
    if typing.is_typeddict(hint):
        return "Mapping[str, Any]"
    args = typing.get_args(hint)
    if typing.get_origin(hint) is list:
        return f"Sequence[{_leaf(args[0])}]"
    if typing.get_origin(hint) is dict:
        return f"Mapping[{_leaf(args[0])}, {_leaf(args[1])}]"
    raise TypeError(f"no record type for {hint!r}")


def _field(hint: Any, names: Mapping[type, str]) -> tuple[str, str, bool, str]:
    """``(kind, argument, optional, annotation)`` of one declared field."""
    members = _members(_bare(hint))
    optional = type(None) in members
    rest = [_bare(m) for m in members if m is not type(None)]
    if len(rest) > 1 or rest[0] is Any:
        if all(m in _SCALARS for m in rest):
            types_ = ", ".join(_SCALARS[m] for m in rest)
            return "SCALAR", f"({types_},)", True, " | ".join([*(_SCALARS[m] for m in rest), "None"])
        return "ANY", "None", True, _leaf(hint) + ("" if optional or rest[0] is Any else " | None")
    one = rest[0]
    origin, args = typing.get_origin(one), typing.get_args(one)
    if one in _SCALARS:
        return "SCALAR", f"({_SCALARS[one]},)", True, f"{_SCALARS[one]} | None"
    if typing.is_typeddict(one):
        return "RECORD", names[one], optional, names[one] + (" | None" if optional else "")
    inner = _bare(args[-1]) if args else Any
    if origin is list and typing.is_typeddict(inner):
        return "RECORDS", names[inner], optional, f"tuple[{names[inner]}, ...]"
    if origin is dict and typing.is_typeddict(inner):
        return "RECORD_TABLE", names[inner], optional, f"Mapping[str, {names[inner]}]"
    kind = "LIST" if origin is list else "TABLE"
    return kind, "None", optional, _leaf(one) + (" | None" if optional else "")


def _records_in(hint: Any) -> Iterator[type]:
    """The declarations a field's value holds (itself, its items, its table's values, the
    entries an :class:`~runsnap.snapshot.shape_marks.Extra` mark declares beside its fields)."""
    if typing.get_origin(hint) is Annotated:
        for mark in hint.__metadata__:
            if isinstance(mark, Extra):
                yield from _records_in(mark.shape)
    hint = _bare(hint)
    if typing.is_typeddict(hint):
        yield hint
        return
    for arg in typing.get_args(hint):
        yield from _records_in(arg)


def _ordered(declared: Mapping[str, type]) -> list[type]:
    """Every declaration reachable from the sections, each after the records it holds."""
    seen: list[type] = []

    def visit(shape: type) -> None:
        if shape in seen:
            return
        for hint in typing.get_type_hints(shape, include_extras=True).values():
            for inner in _records_in(hint):
                visit(inner)
        seen.append(shape)

    for shape in declared.values():
        visit(shape)
    return seen


def _attr(key: str) -> str:
    """The attribute a field is read as (``from``, a keyword, as ``from_``)."""
    if keyword.iskeyword(key) or key in ("raw", "has"):
        return key + "_"
    return key


def _class(shape: type, names: Mapping[type, str]) -> str:
    doc = (shape.__doc__ or "").strip().split("\n\n")[0].replace('"""', "'''")
    hints = typing.get_type_hints(shape, include_extras=True)
    fields = {key: _field(hint, names) for key, hint in hints.items()}
    lines = [f"class {names[shape]}(SectionRecord):", f'    """{doc}"""', ""]
    lines += [f"    {_attr(k)}: {ann}" for k, (_, _, _, ann) in fields.items()]
    return "\n".join(lines) + "\n"


_HEAD = '''"""%s as frozen records: GENERATED from
the declarations of ``runsnap/snapshot/shapes*.py`` by ``python -m runsnap.snapshot.shapes``;
do not edit (``tests/test_shapes.py`` fails when it differs from them). The fields' meanings
are documented in the declarations; how a record is read from its mapping, in
:mod:`runsnap.snapshot.sectionrecord`. Read through ``snap.records``.
"""

from __future__ import annotations

%sfrom runsnap.snapshot.sectionrecord import SectionRecord
%s
TYPE_CHECKING = False
if TYPE_CHECKING:
%s
__all__ = [%s]

'''

#: The declarations' module -> the module of their records, in the order they are written (a
#: module each keeps each under 500 lines; one imports only from those before it).
MODULES = {"runsnap.snapshot.shapes_host": "records_host", "runsnap.snapshot.shapes_run": "records_run",
           "runsnap.snapshot.shapes": "records"}
#: What each records module holds, for its docstring.
_WHAT = {"records_host": "The host's sections (``[system]``, ``[runtime]``)",
         "records_run": "The run's sections (``[process]``, ``[outcome]``, ``[tests]``)",
         "records": "Each other declared section, and each record within,"}


def _sections(declared: Mapping[str, type], names: Mapping[type, str]) -> str:
    props = [f"    @property\n    def {name}(self) -> {names[shape]}:\n"
             f"        return self._section({name!r}, {names[shape]})\n"
             for name, shape in declared.items()]
    table = textwrap.fill(", ".join(f"{name!r}: {names[shape]}" for name, shape in declared.items()),
                          96, subsequent_indent=" " * 8)
    return ('class Sections(_Sections):\n    """Each declared section of one snapshot as its '
            'record, built on first use\n    (``snap.records.env``)."""\n\n'
            f"    __slots__ = ()\n    _records = {{\n        {table},\n    }}\n\n" + "\n".join(props))


def _module(what: str, shapes: list[type], names: Mapping[type, str], imports: str,
            tail: str = "", again: Sequence[str] = ()) -> str:
    exported = sorted([names[s] for s in shapes] + (["Sections"] if tail else []) + list(again))
    listed = textwrap.fill(", ".join(f'"{n}"' for n in exported), 100, initial_indent=" " * 11,
                           subsequent_indent=" " * 11).strip()
    sections = "from runsnap.snapshot.sectionrecord import Sections as _Sections\n" if tail else ""
    body = [*(_class(s, names) + "\n" for s in shapes), tail]
    text = "".join(body)
    abc = [n for n in ("Mapping", "Sequence") if re.search(rf"\b{n}\[", text)]
    typing_only = (f"    from collections.abc import {', '.join(abc)}\n" if abc else "") + (
        "    from typing import Any\n" if re.search(r"\bAny\b", text) else "")
    parts = [_HEAD % (what, imports, sections, typing_only or "    pass\n", listed), *body]
    return "\n".join(parts).rstrip() + "\n"


def write_records(declared: Mapping[str, type], folder: str = HERE) -> dict[str, str]:
    """The records modules' texts for ``declared`` (one module a declarations' module,
    :data:`MODULES`, in that order: each imports the records of the earlier ones it uses; the
    last holds :class:`Sections` and names the run's records again, where readers import
    them), written into ``folder``; path -> text."""
    shapes = _ordered(declared)
    names = {shape: record_name(shape, declared) for shape in shapes}
    groups = {module: [s for s in shapes if MODULES.get(s.__module__, "records") == module]
              for module in MODULES.values()}
    texts: dict[str, str] = {}
    done: list[type] = []
    for module, group in groups.items():
        last = module == "records"
        used = {r for s in group for hint in typing.get_type_hints(s, include_extras=True).values()
                for r in _records_in(hint) if r in done}
        used |= {s for s in done if last and s in declared.values()}
        again = [names[s] for s in groups["records_run"]] if last else []
        if last:  # readers import the run's records from ``records``, as they did before
            used |= set(groups["records_run"])
        imports = "".join(
            f"from runsnap.snapshot.{other} import (\n"
            + "".join(f"    {n},\n" for n in sorted(names[s] for s in used if s in earlier))
            + ")\n"
            for other, earlier in groups.items() if other != module
            and any(s in earlier for s in used))
        texts[module] = _module(_WHAT[module], group, names, imports,
                                _sections(declared, names) if last else "", again)
        done += group
    out = {}
    for module, text in texts.items():
        path = os.path.join(folder, module + ".py")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        out[path] = text
    return out

