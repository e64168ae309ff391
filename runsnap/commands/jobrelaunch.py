"""A one-node torchrun or Open MPI job as one launch ``runsnap why`` can start again: its
launcher's line.

A rank's snapshot records the rank's program (``python train.py``) and the environment torchrun
gave it: its rank, the world, the rendezvous (``MASTER_ADDR``, ``MASTER_PORT``, the run id).
Started again alone, a rank waits for a world that never comes. The job itself is the launch:
``torchrun --standalone --nproc-per-node N train.py`` with the environment the ranks had, less
what torchrun makes for each worker (the names torch's local elastic agent sets in
``_start_workers``, and ``LOCAL_RANK`` and the error file), which torchrun makes again.
``--standalone`` rendezvous on a port the kernel chooses, so two trials never meet on one.

:func:`as_launch` turns one rank's snapshot into that launch (the pair :func:`shown_rank`
picks, the rank that failed first, as the job diff shows it); its outcome is the job's, as
its launcher reports it (:func:`job_outcome`: the error of the rank that failed first, and
torchrun's own exit status), since a trial is judged by the relaunched launcher's exit
status, first error or metric: a job whose other rank failed is no good launch because the
shown rank ended well. Run under Python's own ``-m torch.distributed.run`` with the ranks'
interpreter (what ``torchrun`` is), so no ``PATH`` is needed.

A one-node Open MPI job is relaunched the same way: ``mpirun -np N python train.py`` (the
``mpirun`` on the ranks' ``PATH``; ``--allow-run-as-root`` when ``why`` runs as root), with the
ranks' environment less what mpirun made for each rank and for the job (:func:`mpirun_made`:
``OMPI_COMM_WORLD_*``, ``PMIX_*``, the job's ``OMPI_MCA_orte_*`` and ``OMPI_MCA_ess*``, ...).
What its command line set for the ranks comes back as the ``OMPI_MCA_*`` variables it gave them
(``--oversubscribe`` is ``OMPI_MCA_rmaps_base_oversubscribe=1``), which the relaunched mpirun
reads again. A job of several nodes, or of another launcher (srun, MPICH), is said as an
experiment (:mod:`runsnap.experiments.yourself`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

from runsnap.base.argv import is_python_name
from runsnap.diffing.result import SnapInfo
from runsnap.snapshot import Snapshot
from runsnap.views.jobs import shown_rank as job_rank

__all__ = ["MPIRUN_MADE", "TORCHRUN_MADE", "as_launch", "job_outcome", "mpirun_made", "shown_rank"]

#: What torchrun's agent sets for each worker (torch/distributed/elastic/agent/server/
#: local_elastic_agent.py, ``_start_workers``; ``LOCAL_RANK`` by ``_set_local_rank_env``, the
#: error file by the multiprocessing API): made again by the relaunch. Not among them:
#: ``TORCH_NCCL_ASYNC_ERROR_HANDLING`` and ``OMP_NUM_THREADS``, which the agent passes on
#: from its own environment when set there (the ranks' value is kept, and given back).
TORCHRUN_MADE = frozenset({
    "RANK", "LOCAL_RANK", "GROUP_RANK", "ROLE_RANK", "ROLE_NAME", "LOCAL_WORLD_SIZE",
    "WORLD_SIZE", "GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
    "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE"})


#: Variables Open MPI's mpirun (4.x, ORTE; 5.x, PRRTE) makes for each rank or for the job,
#: besides the prefixes of :data:`MPIRUN_MADE_PREFIXES`: made again by the relaunch, and left
#: out of its environment (a job's ``OMPI_MCA_orte_hnp_uri`` would send the new mpirun to the
#: old job's daemon).
MPIRUN_MADE = frozenset({
    "OMPI_APP_CTX_NUM_PROCS", "OMPI_ARGV", "OMPI_COMMAND", "OMPI_FILE_LOCATION",
    "OMPI_FIRST_RANKS", "OMPI_NUM_APP_CTX", "OMPI_UNIVERSE_SIZE", "OMPI_MCA_initial_wdir",
    "OMPI_MCA_pmix", "OMPI_MCA_shmem_RUNTIME_QUERY_hint", "OMPI_MCA_mpi_oversubscribe",
    "OMPI_MCA_mpi_yield_when_idle", "IPATH_NO_BACKTRACE", "PSM_NO_BACKTRACE"})
MPIRUN_MADE_PREFIXES = ("OMPI_COMM_WORLD_", "OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_prte_",
                        "PMIX_", "PRTE_")


def mpirun_made(name: str) -> bool:
    """Whether mpirun made variable ``name`` for a rank (see :data:`MPIRUN_MADE`).

    >>> mpirun_made("OMPI_COMM_WORLD_RANK"), mpirun_made("OMPI_MCA_btl")
    (True, False)
    """
    return name in MPIRUN_MADE or name.startswith(MPIRUN_MADE_PREFIXES)


def shown_rank(good: Sequence[Snapshot], bad: Sequence[Snapshot]) -> tuple[Snapshot, Snapshot]:
    """The pair of ranks the job diff shows (:func:`runsnap.views.jobs.shown_rank`: the rank
    that failed first), else the first snapshot of each."""
    a = {SnapInfo.of(s).rank: s for s in good}
    b = {SnapInfo.of(s).rank: s for s in bad}
    a_ids = {r: s for r, s in a.items() if r is not None}
    b_ids = {r: s for r, s in b.items() if r is not None}
    if not set(a_ids) & set(b_ids):
        return good[0], bad[0]
    r = job_rank(a_ids, b_ids)[0]
    return a_ids[r], b_ids[r]


def _script(argv: Sequence[str]) -> list[str] | None:
    """What follows the interpreter in a rank's argv when torchrun can run it (a script, or
    ``-m MODULE``), else None (interpreter options torchrun does not take)."""
    if len(argv) < 2 or not is_python_name(os.path.basename(argv[0])):
        return None
    rest = list(argv[1:])
    if rest[0] == "-m" and len(rest) > 1:
        return rest
    return None if rest[0].startswith("-") else rest


def _mpirun(rank: Snapshot, world: int) -> list[str] | None:
    """``mpirun -np N`` as the ranks' ``PATH`` finds it; as root (mpirun refuses root unless
    told), ``--allow-run-as-root``."""
    path = rank.records.env.vars.get("PATH")
    found = shutil.which("mpirun", path=str(path) if isinstance(path, str) else None)
    if found is None:
        return None
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    return [found, *root, "-np", str(world)]


def _failed(rank: Snapshot) -> bool:
    out = rank.records.outcome
    return bool(out.signal) or (out.exit_status is not None and out.exit_status != 0)


def job_outcome(rank: Snapshot, ranks: Sequence[Snapshot]) -> Mapping[str, Any]:
    """The ``[outcome]`` of ``rank``'s job as its launcher ends: where a rank of ``ranks``
    failed, the outcome of the one that ended first among those (the others were often
    stopped by the launcher after it), with torchrun's exit status (its agent raises
    ``ChildFailedError``: 1, whatever the rank's own status; mpirun passes the rank's on);
    else ``rank``'s own."""
    failed = [r for r in ranks if _failed(r)]
    if not failed:
        return rank.sections.get("outcome") or {}
    first = min(failed, key=lambda r: str(r.records.outcome.ended_at or "~"))
    outcome = dict(first.sections.get("outcome") or {})
    if str(rank.records.meta.launcher.name or "") == "torchrun":
        outcome.update(status="exited", exit_status=1)
        for key in ("signal", "signal_number"):
            outcome.pop(key, None)
    return outcome


def as_launch(rank: Snapshot, ranks: Sequence[Snapshot] = ()) -> Snapshot | None:
    """``rank``'s job as one launch (see the module's text), with the outcome of the job its
    ``ranks`` make (:func:`job_outcome`), or None when it is no rank of a one-node torchrun or
    Open MPI job of a Python program."""
    launcher = rank.records.meta.launcher
    name, per_node, world = str(launcher.name or ""), launcher.local_world_size, \
        launcher.world_size
    if name not in ("torchrun", "openmpi") or not world or (per_node or world) != world:
        return None
    command = rank.records.command
    argv = [str(a) for a in command.argv]
    rest = _script(argv)
    python = str(command.executable or "")
    if rest is None or not python:
        return None
    env = rank.records.env
    if name == "torchrun":
        line = [python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
                str(world), *rest]
        kept = {k: v for k, v in env.vars.items() if k not in TORCHRUN_MADE}
    else:
        mpirun = _mpirun(rank, int(world))
        if mpirun is None:
            return None
        line = [*mpirun, python, *rest]
        kept = {k: v for k, v in env.vars.items() if not mpirun_made(k)}
    sections: dict[str, Mapping[str, Any]] = dict(rank.sections)
    sections["command"] = {**command.raw, "argv": line}
    sections["env"] = {**env.raw, "vars": kept}
    if ranks:
        sections["outcome"] = job_outcome(rank, ranks)
    meta = {k: v for k, v in rank.meta.items() if k != "launcher"}
    return Snapshot(meta, sections, rank.schema, rank.path_text)
