"""Each snapshot section's shape, declared once, as a :class:`~typing.TypedDict`.

A declaration here is what the section holds: its collector returns it (annotated, so mypy
checks every key the collector writes), its comparer and its renderer read it, and
``schema.json``'s part for the section is generated from it (:func:`schema_of`;
``python -m runsnap.snapshot.shapes`` rewrites those parts, ``tests/test_shapes.py`` fails
when they differ). Adding a field to a declared section touches its collector and this file.

Sections declared so far: :data:`DECLARED`. The others are still described by ``schema.json``
alone (docs/development.md says which).

The module is read only where types are checked and by the schema's writer and test: the
capture path imports it under ``TYPE_CHECKING`` only (:mod:`typing` costs a capture 2-4 ms).
"""

from __future__ import annotations

import json
import os
import types
import typing
from typing import Annotated, Any, TypedDict, Union

__all__ = ["DECLARED", "DEFS", "CommandSection", "EnvSection", "OutcomeSection", "ProcessSection",
           "Ref", "Traceback", "schema_of", "write_schema"]


class Ref:
    """A field whose shape is a shared definition of ``schema.json`` (``$defs``)."""

    def __init__(self, name: str) -> None:
        self.name = name


Errors = Annotated[list[str], Ref("errors")]
"""What went wrong while collecting the section, one sentence each."""
OptionValue = Annotated[str | bool | int | float | list[str | bool | int | float | None] | None,
                        Ref("optionValue")]
"""A long option's value: a string, ``true`` for a bare flag, a list when given more than once."""


class CommandSection(TypedDict, total=False):
    """``[command]``: the command line exactly as given, where it runs and what it runs."""

    errors: Errors
    argv: list[str]
    cwd: str | None
    executable: str | None
    executable_real: str | None
    options: dict[str, OptionValue]


class EnvSection(TypedDict, total=False):
    """``[env]``: the child's complete environment (secrets replaced by fingerprints)."""

    errors: Errors
    vars: dict[str, str | None]
    count: int | None


class ProcessChild(TypedDict, total=False):
    """A child process of a process snapshotted with ``capture --pid``."""

    argv: list[str]
    pid: int | None
    ppid: int | None
    name: str | None
    error: str | None
    """Why its details could not be read (the exception's name)."""


class ProcessLibrary(TypedDict, total=False):
    """A shared library the running process has mapped."""

    name: str | None
    path: str | None
    version: str | None


class ProcessSection(TypedDict, total=False):
    """``[process]``: what only a process already running shows (``capture --pid``)."""

    errors: Errors
    pid: int | None
    ppid: int | None
    name: str | None
    exe: str | None
    user: str | None
    status: str | None
    started_at: str | None
    num_threads: int | None
    libraries_count: int | None
    children: list[ProcessChild]
    libraries: dict[str, ProcessLibrary]


class Stream(TypedDict, total=False):
    """What one of the child's output streams showed (``[outcome] stdout``/``stderr``)."""

    mode: str | None
    """How runsnap read it: ``pty``, ``pipe``, ``inherit``, ``none``, ``exec``."""
    lines: int | None
    bytes: int | None
    unscanned_bytes: int | None
    tail: list[str]
    captured: bool | None
    reason: str | None
    """Why it was not captured."""


class Frame(TypedDict, total=False):
    """One frame of a Python traceback the child printed."""

    file: str | None
    line: int | None
    function: str | None
    code: str | None
    """The source line Python printed under it."""
    names: list[str]
    """Config keys and option names standing in that function's code (``launch.frame_names``)."""


class Traceback(TypedDict, total=False):
    """A complete Python traceback the child printed."""

    type: str | None
    message: str | None
    frames: list[Frame]


class LogFile(TypedDict, total=False):
    """The ``--log`` file the child's whole output went to."""

    path: str | None
    sha256: str | None
    bytes: int | None


class PeakRss(TypedDict, total=False):
    """How ``peak_rss_bytes`` was measured."""

    how: str | None
    samples: int | None
    interval_s: float | None


class OutcomeSection(TypedDict, total=False):
    """``[outcome]``: how the launch ended, written when the child ends."""

    errors: Errors
    status: str | None
    """``exited``, ``signalled``, ``not_found``, ``not_executable``, ``failed``."""
    exit_status: int | None
    signal: str | None
    signal_number: int | None
    error: str | None
    started_at: str | None
    ended_at: str | None
    duration_s: float | None
    pid: int | None
    peak_rss_bytes: int | None
    tail_lines: int | None
    first_error: str | None
    first_error_stream: str | None
    warnings: list[str]
    warnings_count: int | None
    timed_out: bool | None
    stdout: Annotated[Stream, Ref("stream")]
    stderr: Annotated[Stream, Ref("stream")]
    log: LogFile
    peak_rss: PeakRss
    traceback: Traceback
    earlier_tracebacks: list[Traceback]
    """Complete tracebacks printed before the last one (a worker's, then its launcher's)."""


#: Section name -> its declaration.
DECLARED: dict[str, type] = {"command": CommandSection, "env": EnvSection,
                             "process": ProcessSection, "outcome": OutcomeSection}

#: Shared definitions (``$defs``) declared here -> their declaration.
DEFS: dict[str, type] = {"stream": Stream}

_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number",
               type(None): "null", list: "array", dict: "object"}


def schema_of(shape: Any) -> dict[str, Any]:
    """The JSON Schema (as ``schema.json`` writes it) of a declared type.

    >>> schema_of(EnvSection)["properties"]["vars"]
    {'type': 'object', 'additionalProperties': {'type': ['string', 'null']}}
    """
    if typing.get_origin(shape) is Annotated:
        ref = next(m for m in shape.__metadata__ if isinstance(m, Ref))
        return {"$ref": f"#/$defs/{ref.name}"}
    if typing.is_typeddict(shape):
        hints = typing.get_type_hints(shape, include_extras=True)
        out: dict[str, Any] = {"type": "object",
                               "properties": {k: schema_of(v) for k, v in hints.items()}}
        required = sorted(getattr(shape, "__required_keys__", ()))
        if required:
            out["required"] = required
        return out
    origin, args = typing.get_origin(shape), typing.get_args(shape)
    if origin in (Union, types.UnionType):
        names = [_JSON_TYPES[typing.get_origin(a) or a] for a in args]
        out = {"type": names}
        lists = [a for a in args if typing.get_origin(a) is list]
        if lists:
            out["items"] = schema_of(typing.get_args(lists[0])[0])
        return out
    if origin is list:
        return {"type": "array", "items": schema_of(args[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": schema_of(args[1])}
    return {"type": _JSON_TYPES[shape]}


SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schema.json")


def write_schema(path: str = SCHEMA) -> dict[str, Any]:
    """``schema.json`` with each declared section's part generated from its declaration;
    written to ``path`` and returned."""
    with open(path, encoding="utf-8") as fh:
        schema = json.load(fh)
    for name, shape in DECLARED.items():
        schema["properties"][name] = schema_of(shape)
    for name, shape in DEFS.items():
        schema["$defs"][name] = schema_of(shape)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(schema, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    return schema


if __name__ == "__main__":  # python -m runsnap.snapshot.shapes
    write_schema()
