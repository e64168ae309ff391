"""Which copy of a library the loader took (``[runtime] libraries_loaded``): evidence for a
``[system] toolchain.ld_library_path`` difference; and whether two runs computed on the CPU
alone (:func:`exact_metrics`), where a metric that moved within the noise threshold is said,
and the experiment that tells (:func:`moved_exactly`).

Two shells that set ``LD_LIBRARY_PATH`` otherwise (a CUDA container's ``/usr/local/cuda/
lib64``, a workstation with none) resolve ``libcudart.so`` to another file, or to none; capture
lists that as a difference of the toolchain. Whether it changed anything is whether a process
loaded the library: the tracing hook notes, as each traced process ends, the GPU and
interconnect libraries it has mapped (``/proc/self/maps``, by file name). Where both runs say
so and neither loaded the library under either name (its soname, or the file the link
resolves to), what the path decides never came up: ``incidental`` (torch's CPU build never
loads libcudart). Where a run loaded it, the program took it in: ``read``, with which file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runsnap.diffing.result import Difference
from runsnap.diffing.rules import RankContext
from runsnap.diffing.sections.outcome import METRIC_NOISE, tolerance
from runsnap.launch.metrics import relative_change

__all__ = ["exact_metrics", "library_evidence", "moved_exactly"]

#: The variables that set how many threads a CPU computation splits over (OpenMP, MKL,
#: OpenBLAS, Apple's vecLib, numexpr): another count sums in another order, and a float sum in
#: another order may round otherwise.
THREADS = ("OMP_NUM_THREADS", "OMP_DYNAMIC", "OMP_THREAD_LIMIT", "MKL_NUM_THREADS",
           "MKL_DYNAMIC", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
           "NUMEXPR_NUM_THREADS", "NUMEXPR_MAX_THREADS")

#: What an unset thread variable of :data:`THREADS` means, where it is a switch: OpenMP's
#: dynamic adjustment is off unless asked for (libgomp's and LLVM's libomp's default), MKL's
#: is on (Intel's documented default).
UNSET_MEANS = {"OMP_DYNAMIC": "false", "MKL_DYNAMIC": "true"}

_VIEW = "toolchain.ld_library_path."


def _names(value: Any, soname: str) -> set[str]:
    """The file names a toolchain value (``/usr/local/cuda/lib64/libcudart.so
    (libcudart.so.13.0.48)``) stands for: the soname, the path's name, the resolved file's."""
    text = str(value or "")
    path, _, resolved = text.partition(" (")
    return {n for n in (soname, path.rsplit("/", 1)[-1], resolved.rstrip(")")) if n}


def library_evidence(d: Difference, a: Any, b: Any) -> tuple[str, str] | None:
    """(kind, sentence) for a ``toolchain.ld_library_path.SONAME`` difference, from the
    libraries each run's processes had mapped; None when a run does not say."""
    if d.section != "system" or not d.key.startswith(_VIEW):
        return None
    loaded = [s.records.runtime.libraries_loaded for s in (a, b)]
    if any(x is None for x in loaded):
        return None
    soname = d.key[len(_VIEW):]
    names = _names(d.a, soname) | _names(d.b, soname)
    for label, got in zip("AB", loaded, strict=True):
        took = sorted(names & {str(x) for x in got})
        if took:
            return "read", f"{label}'s processes loaded {', '.join(took)}"
    return "incidental", (f"no process of either run loaded {soname} ([runtime] "
                          "libraries_loaded): which copy the path finds never came up")


def exact_metrics(a: Any, b: Any) -> bool:
    """Whether both runs computed on the CPU alone, with the same threads: every process of
    each was traced to its end and mapped no GPU or interconnect library (``[runtime]
    libraries_loaded`` recorded, and empty), the thread variables (:data:`THREADS`) are alike
    and so are the CPUs each run might use (its affinity). Float arithmetic on a CPU is exact
    again from one launch to the next when the work is split alike: the same program on the
    same inputs prints the same metrics to the last digit (a GPU's atomics and its library's
    choice of kernel are not), so a metric that moved at all moved for a reason (in the
    diagnosis corpus's kept pairs, every metric that moved by less than 1 %, 28 incidents,
    moved for the change planted in it) unless the program draws unseeded random numbers,
    which no snapshot shows: a reason to run GOOD again, not proof."""
    loaded = [s.records.runtime.libraries_loaded for s in (a, b)]
    if any(x is None or len(x) for x in loaded):
        return False
    va, vb = a.records.env.vars, b.records.env.vars
    if any(_threads(va, name) != _threads(vb, name) for name in THREADS):
        return False
    return bool(a.records.system.cpu.affinity == b.records.system.cpu.affinity)


def _threads(env: Any, name: str) -> str:
    """The thread variable ``name`` of ``env`` as it takes effect: a switch unset is its
    default (:data:`UNSET_MEANS`), and ``FALSE`` is ``false``.

    >>> _threads({}, "OMP_DYNAMIC") == _threads({"OMP_DYNAMIC": "FALSE"}, "OMP_DYNAMIC")
    True
    """
    value = str(env.get(name) or "").strip()
    if name in UNSET_MEANS:
        return value.lower() or UNSET_MEANS[name]
    return value


def moved_exactly(ranked: Sequence[Difference], a: Any, b: Any, rules: RankContext) -> str:
    """For two runs that ended alike and give their metrics exactly again
    (:func:`exact_metrics`): the metrics that moved within the 1 % noise threshold, in words
    with the experiment that tells whether that is noise (``runsnap why`` runs GOOD once more);
    ``""`` when none moved or the runs are not such runs. Metrics of speed and time vary in
    every run (their threshold is another), and the user's own tolerance is left alone: a move
    within it is noise as they said."""
    moved = []
    for d in ranked:
        if d.section != "outcome" or not d.key.startswith("metric ") or not d.hidden:
            continue
        name = d.key[len("metric "):]
        try:
            change = relative_change(float(d.a), float(d.b))
        except (TypeError, ValueError):
            continue
        if 0 < change <= METRIC_NOISE and tolerance(name, rules) == (METRIC_NOISE,
                                                                     "noise threshold"):
            moved.append(f"{name} moved {change * 100:.2g}%")
    if not moved or not exact_metrics(a, b):
        return ""
    return (f"{', '.join(moved[:3])}, within the noise threshold, where runs on the CPU alone "
            "with the same threads give their metrics exactly again: runsnap why runs GOOD "
            "once more to tell")
