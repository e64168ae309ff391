"""``runsnap check SNAPSHOT``: what is wrong inside one snapshot, most important first.

Each check reads the snapshot's sections as their records (``snap.records``; a model's
``config.json`` as written) and returns :class:`Finding` records, each with a sentence that says
what was seen and where, and a locator (``path``) into the snapshot:

* :func:`misspelled_variables` - a set variable of a known family that no installed package or
  list knows, with the closest known name (``NCCL_P2P_DISABEL`` -> ``NCCL_P2P_DISABLE``);
  known names are runsnap's list, the names the program read at run time, and those
  ``who-reads`` finds in the installed packages when it is given;
* :func:`draft_target_disagreement` - a speculative-decoding draft model whose config disagrees
  with its target's where the engines need them to agree: the context length (SGLang's
  ``ModelConfig._derive_context_length`` raises for a draft shorter than the target unless
  ``SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN`` is set; vLLM caps the draft's
  ``max_model_len``), the vocabulary (vLLM's ``verify_equal_vocab_size_if_draft_model``; a
  draft's ``draft_vocab_size`` no larger than the target's), and the hidden size EAGLE drafts
  read the target's hidden states with; the target's language model is looked up under
  ``text_config`` when a multimodal target nests it (Kimi-K2.5 does);
* :func:`shadowed_imports` - a package imported from somewhere other than where it is installed
  (a source checkout on ``PYTHONPATH``), from ``[runtime] modules`` or the probe's ``shadowed``;
* :func:`rejected_values` - a variable set to a value its reader cannot accept, where the
  knowledge says what it accepts (``runsnap/knowledge/env-values.tsv``).

``diff`` shows each side's findings the other side does not share (:func:`unshared`).
"""

from __future__ import annotations

import functools

from runsnap.checks.config import alloc_conf_keys, context_length, job_transports
from runsnap.checks.finding import (
    CONTEXT_FIELDS,
    CheckReport,
    Finding,
    config_field,
    configured,
    shown,
)
from runsnap.knowledge.env import (
    closest_name,
    family_of,
    is_known_name,
    likely_misspelling,
    named_by_family,
)
from runsnap.knowledge.packages import normalize_name
from runsnap.knowledge.readers import rejects

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from runsnap.snapshot import Snapshot
    from runsnap.snapshot.records import ModelEntry

    #: ``who_reads(name) -> places``: static readers in the installed packages (who-reads).
    WhoReads = Callable[[str], Sequence[str]]

__all__ = ["CHECKS", "CheckReport", "Finding", "check", "unshared"]


# --------------------------------------------------------------------------- checks


def read_by_name(snap: Snapshot) -> set[str]:
    """Variables some process of the run read by name (from Python or natively): a bulk copy
    of the environment (``dict(os.environ)``, handed to every torch or subprocess launch) knows
    every name and so tells nothing about any."""
    runtime = snap.records.runtime
    if not runtime:  # the pre-launch guard's case: nothing has run yet
        return set()
    # deferred: the reader of [runtime], which the capture path's pre-launch guard (no
    # [runtime] yet) never needs
    from runsnap.snapshot.runtime import read_by_name as runtime_read_by_name

    return set(runtime_read_by_name(runtime))


@functools.lru_cache(maxsize=4096)
def _closest_read(name: str, read: frozenset[str]) -> str | None:
    """The name read by name that ``name`` is one edit from (two for long names); kept for
    the next snapshot of the same program (``diff`` checks both sides, which read the same
    names)."""
    return closest_name(name, read)


def misspelled_variables(snap: Snapshot, who_reads: WhoReads | None = None) -> list[Finding]:
    """Set variables that nothing knows, with the closest known name: known are the names some
    process of the run read by name, the names installed packages read (who-reads, when
    given), and runsnap's lists; never a name only seen in a bulk copy of the environment."""
    read = read_by_name(snap)
    env = snap.records.env.vars
    unset_read = frozenset(n for n in read if n not in env and len(n) >= 6)
    out = []
    for name, value in env.items():
        if name in read or is_known_name(name) or named_by_family(name) or len(name) < 6:
            continue
        meant = likely_misspelling(name) if family_of(name) is not None else None
        how = "no installed package or list knows it"
        if meant is None:
            meant = _closest_read(name, unset_read)
            how = "the run never read it, and read a name one letter away instead"
        if meant is None:
            continue
        if who_reads is not None and list(who_reads(name)):
            continue
        set_too = meant in env
        out.append(Finding("misspelled-variable", 90, (
            f"{name} is set, but {how}: a misspelling of {meant}?"
            + (f" ({meant} is set too)" if set_too else
               f" {meant} is not set, so the setting meant is not in effect")),
            ("env", name), (f"{name}={value}",), meant))
    return out


def draft_target_disagreement(snap: Snapshot) -> list[Finding]:
    """A draft and a target model whose configs disagree where speculative decoding needs
    them to agree."""
    drafts, targets = configured(snap)
    if not drafts or not targets:
        return []
    tsrc, target, tconf = targets[0]
    out: list[Finding] = []
    env = snap.records.env.vars
    options = snap.records.command.options

    def given(src: str, model: ModelEntry) -> str:
        """The model as the command line gave it (else where it was found)."""
        value = options.get(src[2:]) if src.startswith("--") else None
        return value if isinstance(value, str) else shown(model.path)

    for dsrc, draft, dconf in drafts:
        tc, dc = tconf.raw, dconf.raw
        where = (f"target {tsrc} {given(tsrc, target)}", f"draft {dsrc} {given(dsrc, draft)}")
        tl, dl = config_field(tc, CONTEXT_FIELDS), config_field(dc, CONTEXT_FIELDS)
        if tl and dl and isinstance(tl[1], int) and isinstance(dl[1], int) and tl[1] > dl[1]:
            allow = str(env.get("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "")).lower()
            note = ("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is set here, so SGLang warns and "
                    "overrides the draft's context length" if allow in ("1", "true", "yes", "y")
                    else "SGLang raises ValueError for it unless "
                         "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 is set")
            out.append(Finding("draft-target", 60 if allow in ("1", "true", "yes", "y") else 92, (
                f"the draft model's context length ({dl[0]} = {dl[1]}) is shorter than the "
                f"target's ({tl[0]} = {tl[1]}): {note}; vLLM caps the draft's max_model_len "
                f"at {dl[1]}"), ("models", dsrc, "config", *dl[0].split("."))
                , (*where, f"target {tl[0]} = {tl[1]}", f"draft {dl[0]} = {dl[1]}")))
        tv, dv = config_field(tc, ("vocab_size",)), config_field(dc, ("vocab_size",))
        if tv and dv and tv[1] != dv[1]:
            out.append(Finding("draft-target", 86, (
                f"the draft's vocab_size ({dv[1]}) differs from the target's ({tv[0]} = "
                f"{tv[1]}): token ids do not mean the same words (vLLM refuses it, "
                f"verify_equal_vocab_size_if_draft_model)"),
                ("models", dsrc, "config", "vocab_size"), where))
        dd = dc.get("draft_vocab_size")
        if tv and isinstance(dd, int) and isinstance(tv[1], int) and dd > tv[1]:
            out.append(Finding("draft-target", 84, (
                f"the draft's draft_vocab_size ({dd}) is larger than the target's vocabulary "
                f"({tv[0]} = {tv[1]})"), ("models", dsrc, "config", "draft_vocab_size"), where))
        th = config_field(tc, ("hidden_size",))
        dh = ("target_hidden_size", dc["target_hidden_size"]) if dc.get("target_hidden_size") \
            else config_field(dc, ("hidden_size",))
        # config.json as written: a third-party file, whose values of the wrong type (an
        # "architectures" string) must not stop a launch the guard runs before
        eagle = any("eagle" in str(a).lower() for a in dc.get("architectures") or ()) \
            or "eagle_config" in dc
        if eagle and th and dh and th[1] != dh[1]:
            out.append(Finding("draft-target", 84, (
                f"the EAGLE draft reads the target's hidden states with {dh[0]} = {dh[1]}, "
                f"but the target's {th[0]} is {th[1]}"),
                ("models", dsrc, "config", dh[0]), where))
    return out


def shadowed_imports(snap: Snapshot) -> list[Finding]:
    """Packages imported from somewhere other than where they are installed."""
    pkgs = snap.records.packages
    by_norm = {normalize_name(k): (k, v) for k, v in pkgs.distributions.items()}
    out: list[Finding] = []
    for mod, table in snap.records.runtime.modules.items():
        if table.origin not in ("pythonpath", "cwd", "other"):
            continue
        installed = by_norm.get(normalize_name(mod))
        if installed is None:
            continue
        name, dist = installed
        loc = str(dist.location or "")
        file = str(table.file or "")
        if loc and file.startswith(loc.rstrip("/") + "/"):
            continue
        out.append(Finding("shadowed-import", 87, (
            f"{mod} was imported from {file} ({table.origin}), not from the installed "
            f"{name} {shown(dist.version)} in {loc or '?'}"), ("runtime", "modules", mod),
            (f"imported: {file}", f"installed: {name} {shown(dist.version)} at {loc}")))
    seen = {f.path[-1] for f in out}
    for s in pkgs.shadowed:
        name = str(shown(s.name))
        if normalize_name(name) in {normalize_name(m) for m in seen}:
            continue
        out.append(Finding("shadowed-import", 80, (
            f"a second copy of {name} ({shown(s.version)} at {shown(s.location)}) is "
            f"hidden behind the one found first on sys.path"), ("packages", name, "shadowed")))
    return out


def rejected_values(snap: Snapshot) -> list[Finding]:
    """Variables set to a value their reader cannot accept."""
    out = []
    for name, value in snap.records.env.vars.items():
        if not isinstance(value, str) or value.startswith("<redacted"):
            continue
        rule = rejects(name, value)
        if rule is not None:
            out.append(Finding("rejected-value", 89, (
                f"{name}={value!r}: its reader ({rule.reader}) accepts {rule.describe()}"),
                ("env", name)))
    return out


#: The checks, in the order their findings are listed on a tie.
CHECKS: list[Callable[[Snapshot], list[Finding]]] = [
    rejected_values, draft_target_disagreement, shadowed_imports,
]


def check(snap: Snapshot, who_reads: WhoReads | None = None, installed: bool = False
          ) -> CheckReport:
    """Every finding of snapshot ``snap``, most important first. ``installed``: also read the
    installed distributions' metadata on this machine for unmet requirements (``pip check``,
    :mod:`runsnap.checks.requirements`)."""
    found = misspelled_variables(snap, who_reads)
    for one in (*CHECKS, alloc_conf_keys, context_length, job_transports):
        found += one(snap)
    if installed:
        # deferred: runsnap.checks.requirements, ~12 ms measured under load; only check() needs it
        from runsnap.checks.requirements import unmet_requirements

        found += unmet_requirements(snap)
    found.sort(key=lambda f: -f.score)
    return CheckReport(snap.path_text or snap.id, tuple(found))


def unshared(a: CheckReport, b: CheckReport) -> tuple[list[Finding], list[Finding]]:
    """The findings of A that B does not share, and of B that A does not share."""
    ka, kb = {f.key for f in a.findings}, {f.key for f in b.findings}
    return ([f for f in a.findings if f.key not in kb], [f for f in b.findings if f.key not in ka])
