"""``[env]``: variables added, removed, changed, reordered; scored by name (families, noise,
known names, misspellings from :mod:`runsnap.knowledge.env`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runsnap.diffing.result import Difference
from runsnap.diffing.rules import RankContext, Verdict
from runsnap.diffing.walk import compare_lists
from runsnap.diffing.written import record
from runsnap.knowledge.env import (
    family_of,
    is_known_name,
    likely_misspelling,
    list_separator,
    noise_reason,
    split_list,
)
from runsnap.knowledge.launchers import LAUNCHERS, launcher_variables
from runsnap.snapshot.records import Env

__all__ = ["compare", "hand_set", "inert_misspellings", "score"]


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Variables added, removed, changed; list-like values (``PATH``, ``CUDA_VISIBLE_DEVICES``)
    compared entry by entry, so a reordering is called ``reordered``."""
    va, vb = record(Env, a).vars, record(Env, b).vars
    out: list[Difference] = []
    for name, x in va.items():
        y = vb.get(name)
        if y is None:
            out.append(Difference("env", name, "removed", x, None, path=("env", name)))
        elif x != y:
            out.append(_env_changed(name, x, y))
    out += [Difference("env", n, "added", None, y, path=("env", n))
            for n, y in vb.items() if n not in va]
    return out


def _env_changed(name: str, x: Any, y: Any) -> Difference:
    if isinstance(x, str) and isinstance(y, str):
        sep = list_separator(name, x, y)
        if sep:
            change, evidence = compare_lists(split_list(x, sep), split_list(y, sep))
            return Difference("env", name, change, x, y, evidence=evidence, path=("env", name))
    return Difference("env", name, "changed", x, y, path=("env", name))


#: What activating a virtual or conda environment sets: which environment the shell points
#: at, not which one a run used (``[packages] prefix`` says that).
ACTIVATION = frozenset({"VIRTUAL_ENV", "VIRTUAL_ENV_PROMPT", "CONDA_PREFIX", "CONDA_DEFAULT_ENV",
                        "CONDA_PROMPT_MODIFIER", "CONDA_SHLVL", "CONDA_PYTHON_EXE", "CONDA_EXE"})


def _head(name: str) -> str:
    """A variable's first word with its ``_`` (``FIT_`` of ``FIT_OPTIM__LR``), or ``""``."""
    first, sep, rest = name.partition("_")
    return f"{first}_" if sep and rest and len(first) >= 2 and first.isupper() else ""


def own_families(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Prefixes (:func:`_head`) of no known family, no noise, whose members include one both
    environments ``a`` and ``b`` hold at the same value: ``FIT_`` when both shells launched
    with ``FIT_STEPS=200``. A prefix only one shell has (``JPY_*`` of a Jupyter terminal) is
    the shell's, not the program's; nor is a launcher's (``SLURM_``, ``OMPI_``)."""
    theirs = {_head(n) for n in launcher_variables()}  # SLURM_, OMPI_: a launcher's
    out: dict[str, list[str]] = {}
    for name in sorted(set(a) & set(b)):
        head = _head(name)
        if (head and head not in theirs and a[name] == b[name] and family_of(name) is None
                and not is_known_name(name) and noise_reason(name) is None):
            out.setdefault(head, []).append(name)
    return {head: tuple(names) for head, names in out.items()}


def inert_misspellings(a: Mapping[str, Any], b: Mapping[str, Any]) -> frozenset[str]:
    """The variables set otherwise in ``a`` and ``b`` that look like a misspelling of a name
    both hold at one value, or neither sets (``OMP_NUM_THREAD`` where no shell sets
    ``OMP_NUM_THREADS``): no program reads them, so both runs took the same setting.

    >>> sorted(inert_misspellings({"OMP_NUM_THREAD": "4"}, {}))
    ['OMP_NUM_THREAD']
    >>> sorted(inert_misspellings({"CUDA_VISIBLE_DEVICE": "0"}, {"CUDA_VISIBLE_DEVICES": "0"}))
    []
    """
    out = set()
    for name in set(a) ^ set(b) | {n for n in set(a) & set(b) if a[n] != b[n]}:
        meant = likely_misspelling(name)
        if meant and a.get(meant) == b.get(meant):
            out.add(name)
    return frozenset(out)


#: The variables that give a process's place in a job (its rank, local rank, node rank), as
#: each launcher of :data:`~runsnap.knowledge.launchers.LAUNCHERS` sets them.
PLACE = frozenset(n for _name, _marks, fields in LAUNCHERS
                  for f in ("rank", "local_rank", "node_rank") for n in fields[f])


def hand_set(a: Mapping[str, Any], la: Mapping[str, Any], b: Mapping[str, Any],
             lb: Mapping[str, Any]) -> frozenset[str]:
    """Variables of a process's place in a job (:data:`PLACE`), noise by name, set otherwise
    in environments ``a`` and ``b``, that a run holds with no launcher having set them
    (``la``, ``lb``: the variables the runs' launchers set, :func:`~runsnap.diffing.result.
    launcher_of`): ``RANK=1``
    left exported in a terminal is a setting the program reads, not which rank it is. (A
    job's id is the scheduler's, whoever's shell holds it: an ``salloc`` shell's.)

    >>> sorted(hand_set({}, {}, {"RANK": "1"}, {}))
    ['RANK']
    >>> sorted(hand_set({"RANK": "0"}, {"RANK": "0"}, {"RANK": "1"}, {"RANK": "1"}))
    []
    """
    made = (la, lb)
    out = set()
    for name in (set(a) | set(b)) & PLACE:
        if a.get(name) != b.get(name) and noise_reason(name) and any(
                name in env and name not in by for env, by in zip((a, b), made, strict=True)):
            out.add(name)
    return frozenset(out)


def score(d: Difference, rules: RankContext) -> Verdict:
    """Variables, in this order:

    1. host-bound noise (hidden): ``PWD``, ``SHLVL``, ``SSH_*``... differ between any two
       shells and would drown the one that matters; a launcher's (``RANK``) only where a
       launcher set it (:func:`hand_set`);
    2. a likely misspelling of a known name (90): the program ignores it, so the setting the
       user meant is not in effect (40 where the name meant has one value in both runs, or
       neither sets it: :func:`inert_misspellings`);
    3. families that steer serving and training stacks (70-85, ``env-families.tsv``), one
       point more for a name the stack declares (``env-known-names.txt``) than for one it
       does not;
    4. other names a stack is known to read (70); any other variable (40); a variable that
       activating an environment sets (:data:`ACTIVATION`) when both runs ran in one
       environment (40).
    """
    name = d.key
    noise = noise_reason(name)
    if noise and name not in rules.hand_set:
        return 3, f"noise: {noise}", True
    head = _head(name)
    if head in rules.own_families and family_of(name) is None and not is_known_name(name):
        kept = rules.own_families[head]
        return 80, (f"one of the {head}* settings this program's launches carry ("
                    f"{', '.join(kept[:2])}{' ...' if len(kept) > 2 else ''} the same in both "
                    "runs): its own configuration"), False
    if rules.same_prefix and name in ACTIVATION:
        # the shell's activation state: both runs ran in one environment whatever it says
        return 40, (f"both runs ran in the same Python environment ({rules.same_prefix}): "
                    "the shell's activation variable did not choose the packages"), False
    meant = likely_misspelling(name)
    if meant and name in rules.inert_misspellings:
        return 40, (f"looks like a misspelling of {meant}, which both runs set alike or "
                    "neither sets: what it keeps from taking effect is the same in both "
                    "runs"), False
    if meant:
        return 90, (f"looks like a misspelling of {meant}: no known program reads {name}, "
                    f"so the setting meant is probably not in effect"), False
    fam = family_of(name)
    if fam and is_known_name(name):
        score, reason = fam[0] + 1, fam[1] + f" ({name} is a name they declare)"
    elif fam:
        score, reason = fam
    elif is_known_name(name):
        score, reason = 70, "a variable that serving and training stacks are known to read"
    else:
        score, reason = 40, "an environment variable the program or its libraries may read"
    if d.change == "reordered":
        reason += "; the same entries in another order, and the first match wins"
    return score, reason, False
