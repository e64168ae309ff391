"""Which rank of which job a process is, read from its launcher's own variables.

runsnap is one process per rank: ``srun``, ``mpirun`` and ``torchrun`` start it, and it learns
its place from the variables they set (never from a cluster layer of its own). When launchers
nest (``srun`` starting ``torchrun``, ``mpirun`` inside an ``sbatch`` job) the innermost one
numbered this process: torchrun's ``RANK`` is the global rank of a worker, while
``SLURM_PROCID`` there numbers the torchrun agents. The job id comes from the outermost
scheduler (Slurm's job id names the allocation, and every rank shares it).

The capture records it (:func:`detect`, into ``[meta] launcher``); the diff reads a snapshot's
place back from there (``snap.records.meta.launcher``), or, for a snapshot older than that
field, detects it again from the recorded environment. Stdlib only, cheap to import: it is on
the capture path.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["EXTRA_VARS", "LAUNCHERS", "detect", "launcher_variables"]

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

def launcher_variables() -> frozenset[str]:
    """Every variable a launcher of :data:`LAUNCHERS` sets or is recognised by, and
    :data:`EXTRA_VARS`: the launchers' names, whose prefixes (``SLURM_``, ``OMPI_``,
    ``PMIX_``) are theirs, never a program's.

    >>> {"SLURM_NODELIST", "OMPI_COMM_WORLD_RANK", "RANK"} <= launcher_variables()
    True
    """
    names = {n for _name, present, fields in LAUNCHERS
             for n in (*present, *(v for vs in fields.values() for v in vs))}
    return frozenset(names | set(EXTRA_VARS))


#: What torchrun puts in ``TORCHELASTIC_RUN_ID`` when it was given no ``--rdzv-id`` (its
#: default; the same for every job).
TORCHRUN_NO_ID = "none"


def _torchrun_job(env: Mapping[str, str], run_id: str) -> str:
    """A torchrun job's id: its ``TORCHELASTIC_RUN_ID``, unless that is torchrun's ``none`` on
    one node, where every rank's ``TORCHELASTIC_ERROR_FILE`` lies in its agent's own run folder
    (``none_k2x9q``), made afresh for each run: a folder of that job's own, not one shared by
    every job started without ``--rdzv-id``. On several nodes each agent has its own folder, so
    ``none`` stays (no variable names the job there).

    >>> _torchrun_job({"GROUP_WORLD_SIZE": "1",
    ...     "TORCHELASTIC_ERROR_FILE": "/tmp/te_1/none_k2x9q/attempt_0/3/error.json"}, "none")
    'none_k2x9q'
    >>> _torchrun_job({"GROUP_WORLD_SIZE": "2"}, "none"), _torchrun_job({}, "job-42")
    ('none', 'job-42')
    """
    if run_id != TORCHRUN_NO_ID or env.get("GROUP_WORLD_SIZE") != "1":
        return run_id
    parts = env.get("TORCHELASTIC_ERROR_FILE", "").split("/")
    return next((p for p in parts if p.startswith(run_id + "_")), run_id)


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
            if raw is not None and name == "torchrun":
                raw = _torchrun_job(env, raw)
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

