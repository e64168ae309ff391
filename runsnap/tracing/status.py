"""What a ``[runtime]`` section tells about one variable (``runsnap.tracing.read_status``),
read from the section's records: off the capture path, which never imports the record classes."""

from __future__ import annotations

from runsnap.knowledge.readers import native_reader
from runsnap.snapshot.records_host import VariableRead
from runsnap.snapshot.runtime import record, variable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from runsnap.snapshot.records_host import Runtime

__all__ = ["read_status"]


def read_status(runtime: Runtime | Mapping[str, Any] | None, name: str) -> tuple[str, str]:
    """``(kind, sentence)`` for what ``[runtime]`` says about variable ``name``.

    kinds: ``read`` (from Python, or natively when the interposer saw it), ``bulk`` (only in a
    copy or iteration of the whole environment), ``native-maybe`` (not read from Python, but a
    native library may read it), ``unread`` (traced, not read), ``untraced``.

    >>> read_status({"traced": True, "vars": {"HF_HOME": [0]}, "stacks": [[]]}, "HF_HOME")
    ('read', '1 read(s) from Python')
    """
    rt = record(runtime)
    if not rt.traced:
        return "untraced", "the run was not traced"
    got = variable(rt, name)
    entry = VariableRead(got, f"env.{name}", "[runtime] ") if got is not None else None
    if entry is not None and (entry.reads or entry.native):
        where = []
        if entry.reads:
            where.append(f"{entry.reads} read(s) from Python")
        if entry.native:
            where.append("read by native code")
        return "read", ", ".join(where)
    if entry is not None and entry.bulk_reads:
        return "bulk", "only seen in copies of the whole environment"
    who = native_reader(name)
    observed = (rt.native or "").startswith("observed")
    if who and not observed:
        return "native-maybe", f"not read from Python (native libraries may read it: {who})"
    return "unread", "not read by the program" + (" (native reads observed)" if observed else "")
