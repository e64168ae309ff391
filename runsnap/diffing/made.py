"""Values the launcher, the tracker or runsnap made for one run: noise across runs.

torchrun hands every job a run id and, rendezvous-ing on port 0, a port the kernel chose;
Slurm and MPI number their jobs; ``capture --track`` gives the launch the id of the run it
created; a library gives each process an id of its own (MLflow's telemetry session). Two jobs
differ in all of these by design, and a run that reads them (torch's c10d reads
``MASTER_PORT`` on its way to the failure) made no choice with them. Which values those are is
known from the launch record (``[meta] launcher``, ``[meta] track``) and from the values
themselves, never from a list of names alone (:func:`made`):

* **the job's id**: each side's value holds that side's job id (``[meta] launcher job``:
  ``TORCHELASTIC_RUN_ID``, ``SLURM_JOB_ID``, the MPI job id), and with the ids written alike
  the values are the same, up to temporary names (torchrun's error file
  ``/tmp/torchelastic_k3j2/<run id>_9x1a/attempt_0/1/error.json``);
* **a port the kernel chose**: a ``*_PORT`` variable the launcher set (its ``vars`` in the
  launch record, or its own namespace: Slurm's ``SLURM_SRUN_COMM_PORT``), in two jobs, both
  values in the ports the kernel hands out for port 0 (:data:`EPHEMERAL`: Linux's default
  range, 32768-60999, within IANA's 49152-65535 too); a port the user picks (29500, 12355) is
  below it and stays a candidate;
* **the launcher's per-job values**: a variable of its namespace (``OMPI_*``, ``PMIX_*``,
  ``SLURM_*``) whose values differ only in its process ids, ports, job numbers and hex keys
  (mpirun's session folder ``/tmp/ompi.vm.0/pid.3458``, its ``tcp://...:35057`` URIs), never
  in words or small numbers (``eth0``, ``eth1``), and not a bare number (a count the user set);
* **the launcher's copy of the command line**: a variable of its namespace whose value, on each
  side, ends with that side's own command line (mpirun's ``OMPI_ARGV``: what it started, with
  its arguments, joined): it differs because the commands differ (listed on their own) or
  because runsnap in front of them wrote elsewhere (its ``-o``);
* **the tracked run's id**: the value is the id of that side's tracked run (``[meta] track
  run``), which runsnap gave the launch;
* **set by the program itself**: read in both runs, written by the program during the run
  (``[runtime]`` ``written``), given to neither launch (not in ``[env]``).

Each is hidden, with the reason; ``--all`` shows it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from runsnap.diffing.result import Difference
from runsnap.knowledge.launchers import LAUNCHERS
from runsnap.snapshot.records_host import VariableRead
from runsnap.snapshot.runtime import variable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot
    from runsnap.snapshot.records import Launcher

__all__ = ["EPHEMERAL", "made", "mark"]

#: Ports the kernel hands out for a bind to port 0 (Linux's ``ip_local_port_range`` default
#: starts here; IANA's dynamic range, 49152-65535, lies inside).
EPHEMERAL = range(32768, 65536)

#: A name ``tempfile`` makes (``mkdtemp(prefix=...)``: 8 of ``[a-z0-9_]``), or a hex id.
_TEMP = re.compile(r"[a-z0-9_]{8}|[0-9a-f]{12,}")
#: The 8 characters ``tempfile`` draws a name's random part from (``_RandomNameSequence``).
_RANDOM = re.compile(r"[a-z0-9_]{8}")


def _tracked(snap: Snapshot) -> str:
    return str(snap.records.meta.track.run or "").partition(":")[2]


def _same_but_temp(x: str, y: str) -> bool:
    """Whether paths ``x`` and ``y`` differ only in names ``tempfile`` makes (a prefix, then 8
    of ``[a-z0-9_]``) or a uuid's hex, component by component.

    >>> _same_but_temp("/tmp/torchelastic_k3j_l1ab/t1_a9c2x_1z/attempt_0/1/error.json",
    ...                "/tmp/torchelastic_0qpz9t4w/t1_b7d1kk2p/attempt_0/1/error.json")
    True
    >>> _same_but_temp("/data/run-a/out", "/data/run-b/out")
    False

    The 8 characters ``tempfile`` adds may hold ``_`` themselves (two real torchrun jobs):

    >>> _same_but_temp("/tmp/torchelastic__yrwwr1l/ID_xleu73cy/attempt_0/0/error.json",
    ...                "/tmp/torchelastic_ayiuqrzf/ID_ze789v3d/attempt_0/0/error.json")
    True
    """
    px, py = x.split("/"), y.split("/")
    if len(px) != len(py):
        return False
    for u, v in zip(px, py, strict=True):
        if u == v:
            continue
        if len(u) == len(v) > 8 and u[:-8] == v[:-8] and _RANDOM.fullmatch(u[-8:]) \
                and _RANDOM.fullmatch(v[-8:]) and any(c.isdigit() for c in u[-8:] + v[-8:]):
            continue  # mkdtemp(prefix=...): the prefix, then 8 of [a-z0-9_], "_" included
        n = 0
        while n < min(len(u), len(v)) and u[n] == v[n]:
            n += 1
        # the common prefix may end inside the random part: back up to the last separator
        cut = max(u.rfind("_", 0, n + 1), u.rfind("-", 0, n + 1)) + 1 if n else 0
        ru, rv = u[cut:], v[cut:]
        if u[:cut] != v[:cut] or not (_TEMP.fullmatch(ru) and _TEMP.fullmatch(rv)) \
                or not any(c.isdigit() for c in ru + rv):
            return False
    return True


def _port(value: Any) -> int | None:
    text = str(value or "").strip()
    return int(text) if text.isdigit() else None


def made(name: str, va: Any, vb: Any, a: Snapshot, b: Snapshot) -> str | None:
    """Why variable ``name``'s values ``va`` (in snapshot ``a``) and ``vb`` (in ``b``) were
    made for their run rather than chosen, or None (see the module's text)."""
    if not (isinstance(va, str) and isinstance(vb, str)) or va == vb:
        return None
    la, lb = a.records.meta.launcher, b.records.meta.launcher
    ja, jb = str(la.job or ""), str(lb.job or "")
    if ja and jb and ja != jb and len(ja) >= 2 and len(jb) >= 2 and ja in va and jb in vb:
        if va == ja and vb == jb:
            return f"the id of each run's job, which {la.name or 'the launcher'} made"
        if va.replace(ja, "\0") == vb.replace(jb, "\0") or _same_but_temp(
                va.replace(ja, "\0"), vb.replace(jb, "\0")):
            return (f"made from each run's job id ({ja}, {jb}) by "
                    f"{la.name or 'the launcher'}: another in every job")
    pa, pb = _port(va), _port(vb)
    if name.upper().endswith("PORT") and pa in EPHEMERAL and pb in EPHEMERAL and ja != jb \
            and _launchers(name, la) and _launchers(name, lb):
        return (f"a port the kernel chose for each job of {la.name or 'the launcher'} "
                f"({pa}, {pb}: both in the range it hands out for port 0, "
                f"{EPHEMERAL.start}-{EPHEMERAL.stop - 1}), another in every job")
    if ja != jb and not (va.isdigit() or vb.isdigit()) and _shape(va) == _shape(vb) \
            and _launchers(name, la) and _launchers(name, lb):
        return (f"made by {la.name or 'the launcher'} for each job: the values differ "
                "only in its process ids, ports and job numbers")
    if _echoes(va, a) and _echoes(vb, b) and _launchers(name, la) and _launchers(name, lb):
        return (f"{la.name or 'the launcher'}'s copy of each run's command line: what differs "
                "in it is the command (listed on its own) or where runsnap wrote")
    ta, tb = _tracked(a), _tracked(b)
    if ta and tb and va == ta and vb == tb:
        return "the id of each run's tracked run, which runsnap gave the launch (--track)"
    if _written_not_given(name, a) and _written_not_given(name, b):
        return "set by the program itself while it ran (given to neither launch): its own id"
    return None


def _echoes(value: str, snap: Snapshot) -> bool:
    """Whether ``value`` ends with ``snap``'s whole command line, program and arguments joined
    as a launcher joins them (mpirun's ``OMPI_ARGV``: the words after what it started, one
    space apart; with runsnap in front, they end with the program's command line).

    A program alone is not enough to tell a copy from a value that happens to end alike.
    """
    argv = [str(x) for x in snap.records.command.argv]
    return len(argv) >= 2 and value.endswith(" ".join(argv))


#: What a launcher numbers per job inside a value: process ids, ports, job numbers (3 digits
#: or more), keys and ids in hex (8 or more).
_PER_JOB = re.compile(r"[0-9a-f]{8,}|[0-9]{3,}")


def _shape(value: str) -> str:
    """``value`` with its per-job numbers written ``#``.

    >>> _shape("/tmp/ompi.vm.0/pid.3458/pmix_dstor_ds21_3458")
    '/tmp/ompi.vm.0/pid.#/pmix_dstor_ds21_#'
    >>> _shape("1635516416.0;tcp://192.0.2.2:35057") == _shape("1652424704.0;tcp://192.0.2.2:54403")
    True
    >>> _shape("eth0") == _shape("eth1")
    False
    """
    return _PER_JOB.sub("#", value)


def _launchers(name: str, launcher: Launcher) -> bool:
    """Whether the launcher of the record ``launcher`` set variable ``name``: one of the
    variables it was told by (its ``vars``), or of its own namespace or that of a launcher
    around it (``also``), the first word of the variables that mark it (``SLURM_`` for
    Slurm's ``SLURM_SRUN_COMM_PORT``, ``TORCHELASTIC_`` for torchrun, ``OMPI_`` and ``PMIX_``
    for mpirun: :data:`runsnap.knowledge.launchers.LAUNCHERS`)."""
    if name in launcher.vars:
        return True
    names = {launcher.name, *launcher.also}
    marks = [m for n, ms, _f in LAUNCHERS if n in names for m in ms]
    return any(name.startswith(m.split("_", 1)[0] + "_") for m in marks)


def _written_not_given(name: str, snap: Snapshot) -> bool:
    if name in snap.records.env.vars:
        return False
    got = variable(snap.records.runtime.raw, name)
    return got is not None and bool(VariableRead(got).written)


def _variable(d: Difference) -> str | None:
    if d.section == "env":
        return d.key
    if d.section == "runtime" and d.key.startswith("env ") and len(d.path) == 3:
        return d.path[2] if isinstance(d.path[2], str) else None
    return None


def mark(diffs: Sequence[Difference], a: Snapshot, b: Snapshot) -> tuple[Difference, ...]:
    """``diffs`` with the values made for each run (:func:`made`) marked hidden, the reason
    said: they differ between any two jobs or tracked runs, whatever read them."""
    out: list[Difference] = []
    for d in diffs:
        name = _variable(d)
        if name is not None and d.change == "changed":
            why = made(name, d.a, d.b, a, b)
            if why:
                d = d.replace(hidden=True, score=min(d.score, 3),
                              reason=f"noise: {why} ({d.reason})")
        out.append(d)
    return tuple(out)
