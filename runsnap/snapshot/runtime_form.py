"""The names of ``[runtime]``'s stored form (schema 2) that its writer and its reader share.

The capture path writes the stored form (:mod:`runsnap.snapshot.runtime_write`, the writer's
one-line tables in :mod:`runsnap.snapshot.model`) and imports only this module; readers go
through :mod:`runsnap.snapshot.runtime`, which reads the section as its declared record
(:class:`runsnap.snapshot.records_host.Runtime`) and so imports the record classes, ~3.5 ms a
capture would pay for nothing.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["ONE_LINE", "SITE_KEYS", "VAR_KEYS", "is_compact"]

#: Tables and arrays of ``[runtime]`` written one entry a line (see runsnap.snapshot.writer).
ONE_LINE = frozenset({"runtime.vars", "runtime.native_reads", "runtime.frames",
                      "runtime.stacks", "runtime.values", "runtime.other_values",
                      "runtime.stdlib_modules", "runtime.submodules", "runtime.libraries_loaded",
                      "runtime.config_reads",
                      "runtime.parsed_options", "runtime.data_files", "runtime.data_files_written"})

#: The fields of a variable's record and of a read site that the stored form writes in its own
#: way; any other field (one added later) is carried as it is.
VAR_KEYS = ("set", "reads", "bulk_reads", "bulk", "python", "native", "pids", "via", "sites",
            "value", "other_values", "native_reads", "written")

SITE_KEYS = ("stack", "proc", "pid", "via", "set", "reads")


def is_compact(runtime: Mapping[str, Any] | None) -> bool:
    """Whether ``runtime`` is in the stored form of schema 2 (``vars``), not schema 1's.

    >>> is_compact({"vars": {}}), is_compact({"env": {}}), is_compact(None)
    (True, False, False)
    """
    return bool(runtime) and "vars" in runtime  # type: ignore[operator]
