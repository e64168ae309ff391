"""Which rank of which job this is, read from the launcher's own variables; output names with
placeholders; claiming a file name that no other rank has taken.

runsnap is one process per rank: ``srun``, ``mpirun`` and ``torchrun`` start it, and it learns
its place from the variables they set (never from a cluster layer of its own). When launchers
nest (``srun`` starting ``torchrun``, ``mpirun`` inside an ``sbatch`` job) the innermost one
numbered this process: torchrun's ``RANK`` is the global rank of a worker, while
``SLURM_PROCID`` there numbers the torchrun agents. The job id comes from the outermost
scheduler (Slurm's job id names the allocation, and every rank shares it).

Stdlib only, cheap to import: it is on the capture path.
"""

from __future__ import annotations

import os

from runsnap.base.atomic import exclusive_write

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["LAUNCHERS", "PLACEHOLDERS", "claim", "detect", "file_stamp", "fill", "identity", "short_host",
           "values_for"]

#: Launchers, innermost first: name, the variable whose presence says it started this
#: process, then the variables giving rank, local rank, world size, local world size, node
#: rank and job id (first one set wins).
LAUNCHERS: tuple[tuple[str, tuple[str, ...], dict[str, tuple[str, ...]]], ...] = (
    ("torchrun", ("TORCHELASTIC_RUN_ID", "GROUP_RANK"), {
        "rank": ("RANK",), "local_rank": ("LOCAL_RANK",), "world_size": ("WORLD_SIZE",),
        "local_world_size": ("LOCAL_WORLD_SIZE",), "node_rank": ("GROUP_RANK",),
        "job": ("TORCHELASTIC_RUN_ID",)}),
    ("openmpi", ("OMPI_COMM_WORLD_RANK",), {
        "rank": ("OMPI_COMM_WORLD_RANK",), "local_rank": ("OMPI_COMM_WORLD_LOCAL_RANK",),
        "world_size": ("OMPI_COMM_WORLD_SIZE",),
        "local_world_size": ("OMPI_COMM_WORLD_LOCAL_SIZE",),
        "node_rank": ("OMPI_COMM_WORLD_NODE_RANK",),
        "job": ("OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid")}),
    ("mpich", ("PMI_RANK",), {
        "rank": ("PMI_RANK",), "local_rank": ("MPI_LOCALRANKID", "PMI_LOCAL_RANK"),
        "world_size": ("PMI_SIZE",), "local_world_size": ("MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"),
        "node_rank": (), "job": ("PMI_JOBID", "PMIX_NAMESPACE")}),
    ("pmix", ("PMIX_RANK",), {
        "rank": ("PMIX_RANK",), "local_rank": ("PMIX_LOCAL_RANK",), "world_size": ("PMIX_SIZE",),
        "local_world_size": ("PMIX_LOCAL_SIZE",), "node_rank": ("PMIX_NODE_RANK",),
        "job": ("PMIX_NAMESPACE",)}),
    ("slurm", ("SLURM_PROCID",), {
        "rank": ("SLURM_PROCID",), "local_rank": ("SLURM_LOCALID",),
        "world_size": ("SLURM_NTASKS", "SLURM_NPROCS"), "local_world_size": (),
        "node_rank": ("SLURM_NODEID",), "job": ("SLURM_JOB_ID", "SLURM_JOBID")}),
)

#: Variables recorded with the launcher, beside those above (where and as what it ran).
EXTRA_VARS = ("MASTER_ADDR", "MASTER_PORT", "SLURM_STEP_ID", "SLURM_JOB_NAME", "SLURM_NODELIST",
              "SLURM_JOB_NODELIST", "SLURM_NNODES", "SLURM_JOB_NUM_NODES", "SLURM_ARRAY_JOB_ID",
              "SLURM_ARRAY_TASK_ID", "SLURMD_NODENAME", "TORCHELASTIC_RESTART_COUNT",
              "TORCHELASTIC_MAX_RESTARTS", "OMPI_COMM_WORLD_NODE_RANK", "OMPI_UNIVERSE_SIZE")

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


def _first(env: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    for n in names:
        v = env.get(n)
        if v not in (None, ""):
            return v
    return None


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def detect(env: Mapping[str, str]) -> dict[str, Any] | None:
    """The launcher that started this process, from its variables, or ``None``.

    ``{"name", "rank", "local_rank", "world_size", "local_world_size", "node_rank", "job",
    "also": [outer launchers], "vars": {every launcher variable set}}``; numbers are ints
    (absent when the launcher does not say).

    >>> detect({"SLURM_PROCID": "3", "SLURM_LOCALID": "1", "SLURM_NTASKS": "8",
    ...         "SLURM_JOB_ID": "77"})["rank"]
    3
    >>> detect({"PATH": "/bin"}) is None
    True
    """
    found = [(name, fields) for name, marks, fields in LAUNCHERS
             if any(env.get(m) not in (None, "") for m in marks)]
    if not found and env.get("RANK") and env.get("WORLD_SIZE"):  # torch.distributed by hand
        found = [("torch.distributed", LAUNCHERS[0][2])]
    if not found:
        return None
    name, fields = found[0]
    out: dict[str, Any] = {"name": name}
    for field, names in fields.items():
        raw = _first(env, names)
        if field == "job":
            job = _first(env, ("SLURM_JOB_ID", "SLURM_JOBID")) if "slurm" in dict(found) else None
            raw = job or raw
            if raw is not None:
                out[field] = raw
        elif _int(raw) is not None:
            out[field] = _int(raw)
    out["also"] = [n for n, _ in found[1:]]
    known = {v for _, _, fs in LAUNCHERS for vs in fs.values() for v in vs}
    known.update(EXTRA_VARS)
    out["vars"] = {k: env[k] for k in sorted(known) if k in env}
    return out


def identity(meta: Mapping[str, Any], env: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Rank, local rank, node rank, world size and job of a snapshot: its ``[meta] launcher``
    when it has one, else read from its recorded environment (older snapshots)."""
    launcher = meta.get("launcher")
    if not isinstance(launcher, dict):
        launcher = detect({k: v for k, v in (env or {}).items() if isinstance(v, str)}) or {}
    return {k: launcher[k] for k in ("name", "rank", "local_rank", "node_rank", "world_size",
                                     "job") if k in launcher}


def values_for(launcher: Mapping[str, Any] | None, *, host: str, time: str, label: str
               ) -> dict[str, str]:
    """What each placeholder stands for in this process (outside a launcher: rank 0 of 1)."""
    lz = launcher or {}
    return {
        "host": short_host(host),
        "rank": str(lz.get("rank", 0)),
        "local_rank": str(lz.get("local_rank", 0)),
        "world_size": str(lz.get("world_size", 1)),
        "node_rank": str(lz.get("node_rank", 0)),
        "job": str(lz.get("job", "local")),
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
    import string

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
