"""Scores, reasons and noise rules: which difference most likely changed the behaviour.

Evidence from the runs (:mod:`runsnap.diffing.evidence`: read on the failing path, named by
the outcome, read at run time, read by an installed package) outranks every rule below; the
rules here decide among differences the runs say nothing about.

Every rule lives here or in :mod:`runsnap.knowledge` (variable families, noise, known names,
misspellings, core packages, config fields, with their data files), each with its reason in
words. A score is 0-100;
the report lists differences by :func:`ranking_key`. The scale, from the top:

====  ==========================================================================================
89-99 evidence from the runs (:mod:`runsnap.diffing.evidence`, docs/ranking.md)
90    a variable name that looks like a misspelling of a known one; a user priority rule
84-88 launch options and arguments, the executable, the interpreter, model config and revision
80-85 variable families that steer serving and training stacks (``SGLANG_*``, ``NCCL_*``, ...)
78-82 code: another commit, other uncommitted changes; core packages (torch, sglang, vllm)
70-76 other packages, weight files, tokenizer files, GPU model and count
50-66 drivers and CUDA, install locations, untracked files, sys.path, the outcome (an effect)
15-45 host facts (kernel, CPU, host name), branch names, remotes, collector errors
0-5   noise: hidden unless ``--all``, never counted (``PWD``, ``SHLVL``, ``SSH_*``, timings)
====  ==========================================================================================

User rules come from ``--ignore PATTERN`` and from ``[tool.runsnap.diff]`` in
``pyproject.toml`` or ``[diff]`` in ``.runsnap.toml`` (``ignore = [...]``, ``priority = [...]``);
a pattern is a shell-style glob matched against ``KEY`` and ``SECTION.KEY``.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from runsnap.diffing.evidence import Evidence
from runsnap.diffing.report import Difference
from runsnap.errors import UsageError
from runsnap.knowledge.env import family_of, is_known_name, likely_misspelling, noise_reason
from runsnap.knowledge.models import config_field_reason
from runsnap.knowledge.packages import is_core_package
from runsnap.redact import is_fingerprint
from runsnap.snapshot import SECTION_ORDER

__all__ = [
    "Rules",
    "assess",
    "load_user_rules",
    "rank",
    "ranking_key",
]

Verdict = tuple[int, str, bool]
"""What a scorer returns: (score, reason, hidden)."""


@dataclasses.dataclass(frozen=True)
class Rules:
    """What ranking needs besides the difference itself."""

    ignore: tuple[str, ...] = ()
    """Globs of differences to hide (``--ignore``, config ``ignore``)."""

    priority: tuple[str, ...] = ()
    """Globs of differences to rank at the top (config ``priority``)."""

    proofs: Mapping[tuple[str, str], Evidence] = dataclasses.field(default_factory=dict)
    """The strongest evidence from the runs per ``(section, key)``
    (:func:`runsnap.diffing.evidence.gather`)."""

    fingerprints_comparable: bool = True
    """False when the two snapshots' secrets were fingerprinted with different keys."""

    same_models: frozenset[str] = frozenset()
    """Options (``--model-path``) whose model differs only in its directory: config, weights
    and side files are equal, so another path there is not another model."""

    def with_ignore(self, patterns: Iterable[str]) -> Rules:
        """These rules with more ignore patterns."""
        return dataclasses.replace(self, ignore=(*self.ignore, *patterns))


# --------------------------------------------------------------------------- scorers


def score_env(d: Difference, rules: Rules) -> Verdict:
    """Variables, in this order:

    1. host-bound noise (hidden): ``PWD``, ``SHLVL``, ``SSH_*``... differ between any two
       shells and would drown the one that matters;
    2. a likely misspelling of a known name (90): the program ignores it, so the setting the
       user meant is not in effect;
    3. families that steer serving and training stacks (70-85, ``env-families.tsv``), one
       point more for a name the stack declares (``env-known-names.txt``) than for one it
       does not;
    4. other names a stack is known to read (70); any other variable (40).
    """
    name = d.key
    noise = noise_reason(name)
    if noise:
        return 3, f"noise: {noise}", True
    meant = likely_misspelling(name)
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


def score_packages(d: Difference, rules: Rules) -> Verdict:
    """The interpreter first (84: every package may differ), then core packages (80-82), then
    other packages (70-72, a downgrade above an upgrade: regressions are more often the cause),
    the same version from another location (66) and ``sys.path`` order (62)."""
    if d.key in ("interpreter", "python_version", "implementation"):
        return 84, "another Python interpreter: every installed package may differ", False
    if d.key == "sys.path":
        return 62, "sys.path decides which copy of a module is imported", False
    name, _, field = d.key.partition(".")
    if field == "shadowed":
        return 64, "a second copy of this package is hidden behind the one imported", False
    if field:
        return 66, f"the same {name} installed from elsewhere: its code may differ", False
    core = is_core_package(name)
    bump = {"downgraded": 2, "upgraded": 1}.get(d.change, 0)
    if core:
        return 80 + bump, f"{name} is at the core of the serving or training stack", False
    return 70 + bump, "another package version changes the code that runs", False


def score_models(d: Difference, rules: Rules) -> Verdict:
    """Another revision or model (84, 80); config fields that set the context length, dtype,
    positions or shape (88), any other config field (85): the model is built from them; weight
    files (78); tokenizer and generation files (76); other side files (65); the same model in
    another directory (20)."""
    src, _, what = d.key.partition(": ")
    if not what:
        return 80, f"the model given by {src} is present in one run only", False
    if what in ("revision", "repo_id"):
        return 84, "another revision of the model in the Hugging Face cache", False
    if what == "path":
        return 20, "the model is read from another directory (its files are compared)", False
    if what.startswith("weights "):
        return 78, "weight files added, removed or resized: other weights are loaded", False
    if what.startswith("file "):
        fname = what[5:].lower()
        if "token" in fname or "generation" in fname or "chat" in fname or "template" in fname:
            return 76, "tokenizer or generation settings changed", False
        return 65, "a side file of the model changed", False
    why = config_field_reason(what)
    if why:
        return 88, f"config.json field {what}: {why}", False
    return 85, f"config.json field {what}: the model is built from its config", False


def score_command(d: Difference, rules: Rules) -> Verdict:
    """Launch options (88) and arguments (86): the program was asked for something else; the
    executable (84): the same command name runs another program; the working directory (30):
    relative paths resolve differently; an option naming another directory that holds the same
    model (20): the model section proves nothing changed but the path."""
    if d.key in rules.same_models:
        return 20, "another path to the same model (config, weights and side files equal)", False
    if d.key.startswith("--"):
        return 88, "a launch option: the program was asked for something else", False
    if d.key == "executable":
        return 84, "the command resolves to another program (PATH or a virtualenv)", False
    if d.key == "cwd":
        return 30, "relative paths and files found from the working directory change", False
    return 86, "the program or its arguments differ", False


def score_git(d: Difference, rules: Rules) -> Verdict:
    """Another commit (82) and other uncommitted changes to a file (80): the code changed;
    submodules (78); untracked files (65 for code, 55 else); dirty vs clean (50); branch
    (35: the commit decides the code); remotes (15)."""
    repo, sep, path = d.key.partition(": ")
    if sep:
        if any("uncommitted" in e for e in d.evidence) or "uncommitted" in str(d.a or d.b):
            return 80, "uncommitted changes to this file differ: the code that runs differs", False
        if path.endswith((".py", ".so", ".pth", ".cu", ".cpp", ".yaml", ".json", ".toml")):
            return 65, "an untracked code or config file: it runs or is read if found", False
        return 55, "an untracked file differs", False
    if d.evidence and d.evidence[0].startswith("repository at"):
        return 70, "a repository present in one run only", False
    if ".submodules." in d.key:
        return 78, "a submodule at another commit", False
    field = d.key.rpartition(".")[2]
    table: dict[str, tuple[int, str]] = {
        "commit": (82, "another commit: the code changed"),
        "diff": (78, "the uncommitted changes differ"),
        "dirty": (50, "uncommitted changes in one working tree only"),
        "branch": (35, "another branch (the commit decides the code)"),
        "detached": (30, "HEAD detached in one run only"),
        "upstream": (15, "another upstream branch"),
        "errors": (20, "the capture could not see something in one run"),
    }
    if field in table:
        return (*table[field], False)
    return 15, "repository metadata", False


#: System facts: score and reason.
SYSTEM_FIELDS = {
    "gpu.models": (72, "another GPU model or count"),
    "gpu.count": (72, "another number of GPUs"),
    "gpu.available": (72, "GPUs visible in one run only"),
    "gpu.driver_version": (66, "another NVIDIA driver"),
    "gpu.cuda_version": (66, "another CUDA version supported by the driver"),
    "machine": (60, "another CPU architecture"),
    "cpu.affinity": (45, "another number of usable CPUs (thread counts follow it)"),
    "os": (45, "another operating system release"),
    "kernel": (40, "another kernel"),
    "cpu.model": (35, "another CPU model"),
    "cpu.logical": (30, "another number of CPUs"),
    "host": (25, "another host"),
    "memory.total_bytes": (15, "another amount of memory"),
    "gpu.uuids": (15, "other physical GPUs (of the same model)"),
}


def score_system(d: Difference, rules: Rules) -> Verdict:
    """GPU model, count and availability (72), driver and CUDA version (66), then host facts
    (15-60, :data:`SYSTEM_FIELDS`); runsnap's own Python is noise (not the child's)."""
    if d.key == "runsnap_python":
        return 2, "noise: runsnap's own interpreter, not the program's", True
    score, reason = SYSTEM_FIELDS.get(d.key, (30, "another system fact"))
    return score, reason, False


def score_outcome(d: Difference, rules: Rules) -> Verdict:
    """What happened (50): an effect, not a cause, so causes rank above it (the renderers show
    it in a block of its own); timings are noise, they differ on every run."""
    if d.key in ("duration_s", "started_at", "ended_at"):
        return 2, "noise: timings differ on every run", True
    return 50, "what happened differs (an effect; the causes rank above)", False


_PROCESS_NOISE = re.compile(
    r"^(?:pid|ppid|started_at|num_threads|status|children\[\d+\]\.(?:pid|ppid))$")


def score_process(d: Difference, rules: Rules) -> Verdict:
    """A running process (``--pid``): the shared libraries it has mapped (72: another NCCL or
    CUDA runtime file is another library, whatever the packages say), its executable (70),
    its user and children (30); process ids, start times, thread counts and status are noise:
    they differ between any two processes."""
    if _PROCESS_NOISE.match(d.key):
        return 2, "noise: differs between any two processes", True
    if d.key.startswith("libraries"):
        return 72, "another shared library mapped into the running process", False
    if d.key in ("exe", "name"):
        return 70, "another executable runs", False
    return 30, f"differs in [{d.section}]", False


def score_other(d: Difference, rules: Rules) -> Verdict:
    """A section this runsnap has no rules for (30); collector errors (20)."""
    if d.key == "errors":
        return 20, "the capture could not see something in one run", False
    return 30, f"differs in [{d.section}]", False


#: Section -> scorer; sections not listed use :func:`score_other`.
SCORERS: dict[str, Callable[[Difference, Rules], Verdict]] = {
    "env": score_env,
    "command": score_command,
    "packages": score_packages,
    "models": score_models,
    "git": score_git,
    "system": score_system,
    "outcome": score_outcome,
    "process": score_process,
}


def _secret_note(d: Difference, rules: Rules, score: int, reason: str) -> tuple[int, str]:
    """Secrets compare by fingerprint; say so, and say when fingerprints cannot compare."""
    if not (is_fingerprint(d.a) or is_fingerprint(d.b)):
        return score, reason
    if d.change != "changed" or not (is_fingerprint(d.a) and is_fingerprint(d.b)):
        return score, reason + "; a secret (kept as a fingerprint)"
    if not rules.fingerprints_comparable:
        return 10, (reason + "; fingerprints not comparable: the snapshots were made with "
                    "different fingerprint keys, so the secret may be the same")
    return score, reason + "; secret changed (fingerprints differ)"


def matches(patterns: Sequence[str], d: Difference) -> str | None:
    """The first pattern that matches ``KEY`` or ``SECTION.KEY``.

    >>> matches(["env.WANDB_*"], Difference("env", "WANDB_MODE", "added", None, "x"))
    'env.WANDB_*'
    """
    full = f"{d.section}.{d.key}"
    for p in patterns:
        if fnmatch.fnmatchcase(d.key, p) or fnmatch.fnmatchcase(full, p):
            return p
    return None


def assess(d: Difference, rules: Rules) -> Difference:
    """``d`` with its score, reason and hidden flag: the section's scorer, then secret notes,
    then user rules (a priority rule lifts to at least 90; an ignore rule hides)."""
    if d.key == "errors" and d.section != "git":
        score, reason, hidden = score_other(d, rules)
    else:
        score, reason, hidden = SCORERS.get(d.section, score_other)(d, rules)
    score, reason = _secret_note(d, rules, score, reason)
    kind, evidence = "name", d.evidence
    proof = rules.proofs.get((d.section, d.key))
    if proof is not None:
        kind, evidence = proof.kind, (*d.evidence, *proof.lines)
        score = proof.score(score)
        if proof.kind in ("failing-path", "named"):
            hidden = False
        if proof.kind == "unread":
            reason = f"{proof.sentence}; {reason}"
        else:
            evidence, reason = (*evidence, f"also: {reason}"), proof.sentence
    p = matches(rules.priority, d)
    if p:
        score, hidden, reason = max(score, 90), False, f"matches your priority rule {p!r}; {reason}"
    p = matches(rules.ignore, d)
    if p:
        hidden, reason = True, f"ignored by your rule {p!r} ({reason})"
    return dataclasses.replace(d, score=score, reason=reason, hidden=hidden,
                               evidence_kind=kind, evidence=evidence)


_SECTION_RANK = {name: i for i, name in enumerate(
    ("command", "env", "models", "packages", "git", "system", "outcome", "runtime"))}


def ranking_key(d: Difference) -> tuple[int, int, int, str]:
    """Sort key: shown before hidden, higher score first; on a tie, the section in the order
    command, env, models, packages, git, system, outcome, others (what the user chose before
    what the machine provides), then the key alphabetically so the order is stable."""
    return (int(d.hidden), -d.score, _SECTION_RANK.get(d.section, len(SECTION_ORDER)), d.key)


def rank(diffs: Iterable[Difference], rules: Rules) -> tuple[Difference, ...]:
    """Assess every difference and order them most likely cause first."""
    return tuple(sorted((assess(d, rules) for d in diffs), key=ranking_key))


# --------------------------------------------------------------------------- user rules


def _config_table(path: Path) -> Mapping[str, Any] | None:
    from runsnap.snapshot import toml_parser

    tomllib = toml_parser()
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from None
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("runsnap", {}).get("diff")
    else:
        table = data.get("diff")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise UsageError(f"{path}: the runsnap diff settings must be a table")
    return table


def find_config(
    start: str | os.PathLike[str] | None = None,
) -> tuple[Path, Mapping[str, Any]] | None:
    """The nearest ``.runsnap.toml`` ``[diff]`` or ``pyproject.toml`` ``[tool.runsnap.diff]``,
    looking in ``start`` (default: the current directory) and its parents."""
    here = Path(start if start is not None else os.getcwd()).resolve()
    for folder in (here, *here.parents):
        for fname in (".runsnap.toml", "pyproject.toml"):
            path = folder / fname
            if path.is_file():
                table = _config_table(path)
                if table is not None:
                    return path, table
    return None


def load_user_rules(start: str | os.PathLike[str] | None = None) -> Rules:
    """The user's ignore and priority rules from the nearest config file (none: no rules)."""
    found = find_config(start)
    if found is None:
        return Rules()
    path, table = found
    out: dict[str, tuple[str, ...]] = {}
    for key in ("ignore", "priority"):
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{path}: '{key}' must be a list of strings (glob patterns)")
        out[key] = tuple(value)
    unknown = sorted(set(table) - {"ignore", "priority"})
    if unknown:
        raise UsageError(f"{path}: unknown runsnap diff setting {unknown[0]!r} "
                         f"(known: ignore, priority)")
    return Rules(ignore=out["ignore"], priority=out["priority"])
