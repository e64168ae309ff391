"""A one-node torchrun job as one launch ``runsnap why`` can start again: its launcher's line.

A rank's snapshot records the rank's program (``python train.py``) and the environment torchrun
gave it: its rank, the world, the rendezvous (``MASTER_ADDR``, ``MASTER_PORT``, the run id).
Started again alone, a rank waits for a world that never comes. The job itself is the launch:
``torchrun --standalone --nproc-per-node N train.py`` with the environment the ranks had, less
what torchrun makes for each worker (the names torch's local elastic agent sets in
``_start_workers``, and ``LOCAL_RANK`` and the error file), which torchrun makes again.
``--standalone`` rendezvous on a port the kernel chooses, so two trials never meet on one.

:func:`as_launch` turns one rank's snapshot into that launch (its outcome is the rank's: the
pair :func:`shown_rank` picks, the rank that failed first, as the job diff shows it); ``why``
then proves or bisects it as any launch, judged by the torchrun process's exit status, first
error or metric. Run under Python's own ``-m torch.distributed.run`` with the ranks'
interpreter (what ``torchrun`` is), so no ``PATH`` is needed. Only a one-node torchrun job of a
Python script or module is relaunched; a job of several nodes, or of mpirun or srun, is said as
an experiment (:mod:`runsnap.experiments.yourself`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from runsnap.base.argv import is_python_name
from runsnap.diffing.result import SnapInfo
from runsnap.snapshot import Snapshot
from runsnap.views.jobs import shown_rank as job_rank

__all__ = ["TORCHRUN_MADE", "as_launch", "shown_rank"]

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


def as_launch(rank: Snapshot) -> Snapshot | None:
    """``rank``'s job as one launch (see the module's text), or None when it is no rank of a
    one-node torchrun job of a Python program."""
    launcher = rank.records.meta.launcher
    per_node, world = launcher.local_world_size, launcher.world_size
    if str(launcher.name or "") != "torchrun" or not world or (per_node or world) != world:
        return None
    command = rank.records.command
    rest = _script([str(a) for a in command.argv])
    python = str(command.executable or "")
    if rest is None or not python:
        return None
    sections: dict[str, Mapping[str, Any]] = dict(rank.sections)
    sections["command"] = {**command.raw, "argv": [
        python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(world),
        *rest]}
    env = rank.records.env
    sections["env"] = {**env.raw, "vars": {k: v for k, v in env.vars.items()
                                           if k not in TORCHRUN_MADE}}
    meta = {k: v for k, v in rank.meta.items() if k != "launcher"}
    return Snapshot(meta, sections, rank.schema, rank.path_text)
