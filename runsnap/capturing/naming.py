"""Output names with placeholders, filled from which rank of which job this is (read from the
launcher's own variables: :mod:`runsnap.knowledge.launchers`, which the diff reads too); claiming
a file name that no other rank has taken.

Stdlib only, cheap to import: it is on the capture path.
"""

from __future__ import annotations

import os
import string

from runsnap.base.atomic import exclusive_write

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["PLACEHOLDERS", "claim", "file_stamp", "fill", "short_host", "values_for"]

#: Output-name placeholders and what fills them.
PLACEHOLDERS = {
    "host": "this machine's short host name",
    "rank": "the global rank (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID); 0 "
            "outside a launcher",
    "local_rank": "the rank on this node (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, "
                  "MPI_LOCALRANKID, SLURM_LOCALID); 0 outside a launcher",
    "world_size": "how many ranks (WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS); "
                  "1 outside a launcher",
    "node_rank": "the node's number in the job (GROUP_RANK, SLURM_NODEID, "
                 "OMPI_COMM_WORLD_NODE_RANK); 0 outside a launcher",
    "job": "the job id (SLURM_JOB_ID, TORCHELASTIC_RUN_ID, the MPI job id); 'local' outside a "
           "launcher",
    "time": "the capture time, UTC (20261130T161435.123Z)",
    "label": "--label, or the command's name",
    "pid": "runsnap's process id",
}


#: The placeholders ``[meta] launcher`` fills, and what each stands for outside a launcher (or
#: where the launcher did not say it): rank 0 of 1, on node 0, of the job ``local``.
_OUTSIDE: Mapping[str, Any] = {"rank": 0, "local_rank": 0, "world_size": 1, "node_rank": 0,
                              "job": "local"}


def values_for(launcher: Mapping[str, Any] | None, *, host: str, time: str, label: str
               ) -> dict[str, str]:
    """What each placeholder stands for in this process (outside a launcher: rank 0 of 1)."""
    said = {**_OUTSIDE, **(launcher or {})}
    return {
        "host": short_host(host),
        **{name: str(said[name]) for name in _OUTSIDE},
        "time": file_stamp(time),
        "label": label,
        "pid": str(os.getpid()),
    }


def file_stamp(time: str) -> str:
    """A capture time as file names carry it: no ``-`` or ``:``, UTC as ``Z``.

    >>> file_stamp("2026-11-29T16:14:35.123+0000")
    '20261129T161435.123Z'
    """
    return time.replace("-", "").replace(":", "").replace("+0000", "Z")


def short_host(host: str) -> str:
    """A host name without its domain, as file names carry it.

    >>> short_host("node7.cluster.example")
    'node7'
    """
    return host.split(".", 1)[0]


def _safe(value: str) -> str:
    """A value as one path component: no ``/``, no NUL, not ``.`` or ``..``."""
    text = value.replace("/", "_").replace("\0", "_")
    return "_" if text in ("", ".", "..") else text


def has_placeholders(template: str) -> bool:
    """Whether ``template`` names any placeholder (``{{`` is a literal brace).

    >>> has_placeholders("snaps/{job}/{rank}.toml"), has_placeholders("a{{b}}.toml")
    (True, False)
    """
    return "{" in template.replace("{{", "").replace("}}", "")


def fill(template: str, values: Mapping[str, str]) -> str:
    """``template`` with each ``{name}`` replaced (``{{`` and ``}}`` are literal braces); a
    value never adds a path separator. Raises :class:`ValueError` naming what is wrong.

    >>> fill("snaps/{job}/{host}-{rank}.toml", {"job": "7", "host": "n1", "rank": "3"})
    'snaps/7/n1-3.toml'
    >>> fill("r{rank:03d}.toml", {"rank": "3"})
    'r003.toml'
    """

    out: list[str] = []
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"bad placeholder in {template!r}: {exc}") from None
    for literal, name, spec, conv in parsed:
        out.append(literal)
        if name is None:
            continue
        if name not in values:
            known = ", ".join("{" + k + "}" for k in PLACEHOLDERS)
            raise ValueError(f"unknown placeholder {{{name}}} in {template!r} (known: {known})")
        if conv:
            raise ValueError(f"placeholder {{{name}!{conv}}}: conversions are not supported")
        value = values[name]
        if spec:
            try:
                value = format(int(value), spec) if value.lstrip("-").isdigit() else \
                    format(value, spec)
            except ValueError as exc:
                raise ValueError(f"placeholder {{{name}:{spec}}}: {exc}") from None
        out.append(_safe(value))
    return "".join(out)


def claim(path: str, data: bytes, sweep: bool = True) -> str:
    """Write ``data`` to ``path`` exclusively and return it; when another process (another
    rank on this node) already has it, ``NAME.1.toml``, ``NAME.2.toml``, ... instead.

    The name appears with the whole snapshot in it or not at all
    (:func:`runsnap.base.atomic.exclusive_write`): a full disk or a kill never leaves an
    empty file; later writes replace it atomically.
    """
    stem, dot, suffix = path.rpartition(".")
    if not dot or "/" in suffix:
        stem, suffix = path, ""
    names = (path if n == 0 else f"{stem}.{n}{'.' + suffix if suffix else ''}"
             for n in range(10000))
    return exclusive_write(names, data, points="snapshot", sweep=sweep)
