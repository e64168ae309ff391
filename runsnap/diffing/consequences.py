"""What the runs did differently because they went apart, folded under the outcome.

A run that stopped at start-up never reached the variables and modules the other run read and
imported later; ranks of one job take different paths by design. Those run-time differences
(``[runtime]``: a variable read in one run only, a module imported or a data file opened in one
run only, reads from
other places, another number of Python processes) are effects of where each run went, not
causes: the cause is what made the paths part (a variable set differently, another package,
another commit), and it is ranked on its own. The run-time differences that belong to such a
cause are grouped under it first (:func:`runsnap.diffing.grouping.by_runtime`); what is left is
folded here: kept out of the ranking, counted on one line under the outcome.

:func:`outcome_of` says whether the two runs ended the same way (what the verdict says first).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from runsnap.diffing.result import UNCHANGED, Difference, SnapInfo
from runsnap.diffing.runfacts import RunFacts, differential, failure_key
from runsnap.diffing.sections.tests import changed_tests
from runsnap.knowledge.notices import notice_about

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["AMBIENT", "failed_with_traceback", "fold", "from_shell", "is_consequence",
           "notices_only", "outcome_of", "per_rank", "unchanged"]


def is_consequence(d: Difference) -> bool:
    """Whether ``d`` is a run-time difference of the paths taken (see the module's text)."""
    if d.section != "runtime" or len(d.path) < 2:
        return False
    part = d.path[1]
    if part == "processes":
        return True
    if part in ("env", "modules", "data_files") and (
            d.change in ("added", "removed") or len(d.path) > 3):
        return True
    return False


def _took_in_failing(d: Difference) -> bool:
    """A data file one run alone opened with evidence that it was an input: opened in a
    function of its own failing traceback, quoted by its error, or found in its git tree while
    the other run ran to its end (:func:`runsnap.diffing.foundalone.found_alone`): what that
    run found and the other did not, not only where it went. It stays a cause."""
    return d.path[:2] == ("runtime", "data_files") and d.evidence_kind in (
        "failing-path", "named", "read")


def fold(diffs: Sequence[Difference]) -> tuple[tuple[Difference, ...], tuple[Difference, ...]]:
    """``(kept, folded)``: the differences without the consequences, and the consequences
    (marked hidden, with the reason), in their order."""
    kept: list[Difference] = []
    folded: list[Difference] = []
    for d in diffs:
        if is_consequence(d) and not _took_in_failing(d):
            folded.append(d.replace(hidden=True, reason=(
                "in one run only: an effect of the path each run took, not a cause")))
        else:
            kept.append(d)
    return tuple(kept), tuple(folded)


def _ended(f: RunFacts) -> str:
    if not f.failed:
        return f"exited {f.status}"
    tb = f.traceback
    if tb:
        return f"failed with {tb.type or 'an error'}"
    return f"failed (exit status {f.status})"


def outcome_of(a: Snapshot, b: Snapshot) -> tuple[str, str]:
    """``(kind, words)``: ``same`` (both exited 0, or both failed the same way:
    :func:`runsnap.diffing.runfacts.failure_key`), ``different``, or ``""`` when a snapshot
    has no outcome (a context captured without a launch)."""
    oa, ob = a.records.outcome, b.records.outcome
    if not oa or not ob or not oa.has("exit_status") or not ob.has("exit_status"):
        return "", ""
    fa, fb = RunFacts.of(a, "A"), RunFacts.of(b, "B")
    if fa.failed != fb.failed or failure_key(fa) != failure_key(fb) or fa.status != fb.status:
        return "different", f"A {_ended(fa)}, B {_ended(fb)}"
    tests = changed_tests(a.records.tests.raw, b.records.tests.raw)
    if tests:  # two pytest sessions that failed alike as a whole, but not test by test
        return "different", (f"A {_ended(fa)}, B {_ended(fb)}, but {len(tests)} test"
                             f"{'s' if len(tests) != 1 else ''} ended otherwise")
    if not fa.failed:
        return "same", f"both exited {fa.status}"
    return "same", f"both {_ended(fa)}, the same way"


def failed_with_traceback(a: Snapshot, b: Snapshot) -> bool:
    """Whether a run failed in a way the other did not, with a traceback that shows where."""
    fa, fb = differential(RunFacts.of(a, "A"), RunFacts.of(b, "B"))
    return any(f.views() and f.traceback is not None and f.traceback.frames for f in (fa, fb))


def seed_drawn(ranked: Sequence[Difference], a: Snapshot, b: Snapshot) -> tuple[Difference, ...]:
    """``ranked`` with a ``PYTHONHASHSEED`` difference made incidental where the run that
    failed (the other did not) left it unset or ``random``: that run drew its hash seed at
    random as it started, so a failure its launch gives again is not the seed's doing; where
    the failing run pinned a seed, or where both ran well (a metric that moved with the
    order sets iterate in), it stays what it was."""
    fa, fb = differential(RunFacts.of(a, "A"), RunFacts.of(b, "B"))
    failing = [side for side, f in (("A", fa), ("B", fb)) if f.failed and not f.shared_failure]
    if len(failing) != 1:
        return tuple(ranked)
    out = []
    for d in ranked:
        value = d.a if failing[0] == "A" else d.b
        if d.section == "env" and d.key == "PYTHONHASHSEED" and not d.hidden and (
                value is None or str(value).strip().lower() == "random"):
            d = d.replace(evidence_kind="incidental", score=min(d.score, 40), reason=(
                f"unset in the failing run {failing[0]}: it drew its hash seed at random as it "
                f"started, so a failure it gives again is not that seed's doing; {d.reason}"))
        out.append(d)
    return tuple(out)


#: What a run that ran out of a resource says: memory, files, processes, disk (CPython's
#: ``MemoryError``, errno's strerror texts, concurrent.futures' ``BrokenProcessPool``, torch's
#: DataLoader on a full ``/dev/shm``, the kernel's OOM killer as the shell reports it).
_RAN_OUT = re.compile(r"MemoryError|out of memory|Cannot allocate memory|Too many open files|"
                      r"Resource temporarily unavailable|No space left on device|"
                      r"BrokenProcessPool|insufficient shared memory|Bus error|"
                      r"\bKilled\b|\bOOM\b", re.I)


def ran_out(a: Snapshot, b: Snapshot) -> bool:
    """Whether a run failed as one that ran out of a resource does (killed by SIGKILL, exit
    status 137, or its error or last lines saying so), where how many work at once matters."""
    for f in (RunFacts.of(a, "A"), RunFacts.of(b, "B")):
        if not f.failed:
            continue
        if f.status in (137, -9) or any(_RAN_OUT.search(line)
                                        for line in (*f.errors, *f.tail[-20:])):
            return True
    return False


def notices_only(a: Snapshot, b: Snapshot, keys: Sequence[str]) -> str:
    """Words when the warnings two runs printed differ only by a library's notices about a
    variable of ``keys`` (those that differ) that it no longer heeds under that name
    (``knowledge/deprecation-notices.tsv``, a row of a named library): not used at all
    (huggingface_hub's ``FutureWarning: The `HF_HUB_ENABLE_HF_TRANSFER` environment variable
    is deprecated as 'hf_transfer' is not used anymore``), or renamed (c10d's ``Environment
    variable TORCH_NCCL_TRACE_BUFFER_SIZE is deprecated; use TORCH_FR_BUFFER_SIZE instead``)
    in the run whose shell set it. This is asked only where nothing else of what happened
    differs (exit, error, metrics): whatever a renamed value did, the runs show none of it.
    The runs did the same; one was told about its shell. ``""`` otherwise: a program's own
    warning ("results may differ") is no library's notice."""
    wa = set(RunFacts.of(a, "A").warnings)
    wb = set(RunFacts.of(b, "B").warnings)

    def unused(line: str, key: str) -> bool:
        row = notice_about(line, key)
        return row is not None and row.effect in ("none", "renamed") and row.library != "any"

    named: list[str] = []
    for line in wa ^ wb:
        key = next((k for k in keys if unused(line, k)), None)
        if key is None:
            return ""
        named.append(key)
    if not named:
        return ""
    return f"only a library's notice about {', '.join(sorted(set(named)))} differs"


#: Sections whose differences are the state of the shell a run was launched from, not the
#: definition of the run (its command, code, packages, models): with the same outcome they
#: changed nothing (:func:`unchanged`).
AMBIENT = ("env",)


#: Where ``[system] toolchain cuda_home`` came from when the shell chose it (a variable, or the
#: first ``nvcc`` on ``PATH``), not the host (``/usr/local/cuda``).
_FROM_SHELL = ("CUDA_HOME", "CUDA_PATH", "nvcc on PATH")


def from_shell(a: Snapshot, b: Snapshot) -> frozenset[tuple[str, str]]:
    """The host facts that ``a`` and ``b`` hold because of the shell each was launched from:
    ``toolchain.cuda_home`` where either side found it through a variable or ``PATH`` (a
    ``module load cuda`` in one shell), and the ``nvcc`` found under it. With the same outcome
    they changed nothing either (:func:`unchanged`), as the variables they come from did not;
    nor did the CPU affinity whoever launched each run gave it, nor the libraries found on a
    ``LD_LIBRARY_PATH`` the two shells set otherwise (``toolchain.ld_library_path``: a
    container's ``/usr/local/cuda/lib64``), which follow that variable."""
    ta, tb = a.records.system.toolchain, b.records.system.toolchain
    out = set(_GIVEN_AT_LAUNCH)
    if any(h in _FROM_SHELL for h in (ta.cuda_home_from, tb.cuda_home_from)):
        # nvcc is looked for under that CUDA_HOME first
        out |= {("system", "toolchain.cuda_home"), ("system", "toolchain.nvcc")}
    if a.records.env.vars.get("LD_LIBRARY_PATH") != b.records.env.vars.get("LD_LIBRARY_PATH"):
        out |= {("system", f"toolchain.ld_library_path.{name}")
                for name in (*ta.ld_library_path, *tb.ld_library_path)}
    return frozenset(out)


#: Host facts a run holds because of how it was launched: the CPUs it may use are given by
#: whoever started it (``taskset``, ``numactl``, ``mpirun``'s binding, a container's cpuset).
_GIVEN_AT_LAUNCH = frozenset({("system", "cpu.affinity")})


def unchanged(diffs: Sequence[Difference], words: str,
              shell: frozenset[tuple[str, str]] = frozenset(),
              keep: frozenset[str] = frozenset()) -> tuple[Difference, ...]:
    """``diffs`` of two runs that ended the same way (``words``: how), with the differences of
    the shell's state (:data:`AMBIENT`: variables, whatever the program read) marked hidden:
    they changed nothing the runs show, so none counts (``--all`` lists them, with what they
    were scored). What defines the run (its command, code, packages, models) still counts:
    two setups compared with a run that does little are still two setups. Those whose evidence
    is of a kind in ``keep`` stay shown too (a metric moved where it should not have:
    :func:`runsnap.diffing.loaded.moved_exactly`).

    >>> d = unchanged([Difference("env", "X", "added", None, "1", reason="read")], "both exited 0")
    >>> d[0].hidden, d[0].reason
    (True, 'changed nothing the runs show (both exited 0); read')
    """

    return tuple(d if d.hidden or d.evidence_kind in keep or (
        d.section not in AMBIENT and (d.section, d.key) not in shell) else d.replace(
        hidden=True, reason=f"{UNCHANGED} ({words}); {d.reason}".rstrip("; ")) for d in diffs)


def _renumbered(x: str, y: str, pairs: Sequence[tuple[int, int]]) -> bool:
    """Whether ``y`` is ``x`` with some of its whole numbers equal to the first of a pair
    written as the second (and nothing else changed).

    >>> _renumbered("/tmp/e_0k/attempt_0/0/error.json", "/tmp/e_0k/attempt_0/1/error.json",
    ...             [(0, 1)])
    True
    >>> _renumbered("/data/shard-0", "/data/shard-7", [(0, 1)])
    False
    """

    px, py = re.split(r"([0-9]+)", x), re.split(r"([0-9]+)", y)
    if len(px) != len(py):
        return False
    changed = False
    for i, (u, v) in enumerate(zip(px, py, strict=True)):
        if u == v:
            continue
        if i % 2 == 0 or (int(u), int(v)) not in pairs:
            return False
        changed = True
    return changed


def per_rank(diffs: Sequence[Difference], a: SnapInfo, b: SnapInfo) -> tuple[Difference, ...]:
    """``diffs`` with the values that are one per rank marked hidden: two ranks of one job
    (the same launcher job id, other ranks), and B's value is A's with A's rank and local
    rank numbers written as B's (``.../attempt_0/0/error.json`` on local rank 0,
    ``.../1/error.json`` on local rank 1). The launcher numbers them; they differ by design."""
    if not a.job or a.job != b.job:
        return tuple(diffs)
    pairs = [(x, y) for x, y in ((a.rank, b.rank), (a.local_rank, b.local_rank))
             if x is not None and y is not None and x != y]
    if not pairs:
        return tuple(diffs)

    out: list[Difference] = []
    for d in diffs:
        if (not d.hidden and d.change == "changed" and isinstance(d.a, str)
                and isinstance(d.b, str) and d.section in ("env", "command")):
            if _renumbered(d.a, d.b, pairs):
                d = d.replace(hidden=True, reason=(
                    f"one value per rank in one job: A's value with its rank numbers made "
                    f"B's ({d.reason})"))
        out.append(d)
    return tuple(out)
