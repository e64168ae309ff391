"""``runsnap check SNAPSHOT``: what is wrong inside one snapshot, most important first.

Each check reads plain snapshot data and returns :class:`Finding` records, each with a sentence
that says what was seen and where, and a locator (``path``) into the snapshot:

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

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from runsnap.knowledge.env import family_of, is_known_name, likely_misspelling
from runsnap.knowledge.packages import normalize_name
from runsnap.knowledge.readers import rejects

__all__ = ["CHECKS", "CheckReport", "Finding", "check", "unshared"]

#: ``who_reads(name) -> places``: static readers in the installed packages (who-reads).
WhoReads = Callable[[str], Sequence[str]]


@dataclasses.dataclass(frozen=True)
class Finding:
    """One thing wrong inside a snapshot."""

    kind: str
    """``misspelled-variable``, ``draft-target``, ``shadowed-import``, ``rejected-value``."""

    score: int
    """How likely it breaks the run, 0-100 (the order of the report)."""

    message: str
    """What was seen, where, in a sentence."""

    path: tuple[str, ...]
    """Where in the snapshot: ``("env", NAME)``, ``("models", SOURCE, "config", ...)``."""

    details: tuple[str, ...] = ()
    """More lines: both values, which option pointed at each model, the reader."""

    @property
    def key(self) -> str:
        """A stable identity, to tell which findings two snapshots share."""
        return f"{self.kind}:{'/'.join(self.path)}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"kind": self.kind, "score": self.score, "message": self.message,
                "path": list(self.path), "details": list(self.details)}


@dataclasses.dataclass(frozen=True)
class CheckReport:
    """Every finding of one snapshot, most important first; true when there is any."""

    snapshot: str
    findings: tuple[Finding, ...]

    def __bool__(self) -> bool:
        return bool(self.findings)

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (``format = runsnap-check/1``)."""
        return {"format": "runsnap-check/1", "snapshot": self.snapshot, "clean": not self,
                "count": len(self.findings), "findings": [f.to_dict() for f in self.findings]}


def _env(snap: Any) -> Mapping[str, Any]:
    return (snap.get("env") or {}).get("vars") or {}


def _runtime(snap: Any) -> Mapping[str, Any]:
    return snap.get("runtime") or {}


# --------------------------------------------------------------------------- checks


def misspelled_variables(snap: Any, who_reads: WhoReads | None = None) -> list[Finding]:
    """Set variables of a known family that nothing knows, with the closest known name."""
    read = set(_runtime(snap).get("env") or {})
    out = []
    for name, value in _env(snap).items():
        if family_of(name) is None or is_known_name(name) or name in read:
            continue
        if who_reads is not None and list(who_reads(name)):
            continue
        meant = likely_misspelling(name)
        if meant is None:
            continue
        set_too = meant in _env(snap)
        out.append(Finding("misspelled-variable", 90, (
            f"{name} is set, but no installed package or list knows it: a misspelling of "
            f"{meant}?" + (f" ({meant} is set too)" if set_too else
                           f" {meant} is not set, so the setting meant is not in effect")),
            ("env", name), (f"{name}={value}",)))
    return out


_CONTEXT = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length")


def _text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's config: ``text_config`` (or ``llm_config``) of a multimodal
    wrapper, else the config itself."""
    for key in ("text_config", "llm_config", "language_config"):
        sub = config.get(key)
        if isinstance(sub, Mapping) and sub:
            return sub
    return config


def _field(config: Mapping[str, Any], names: Iterable[str]) -> tuple[str, Any] | None:
    text = _text_config(config)
    prefix = "text_config." if text is not config else ""
    for name in names:
        if name in text and text[name] is not None:
            return prefix + name, text[name]
    return None


def _is_draft(source: str) -> bool:
    return "draft" in source.lower() or source.lower() in ("--speculative-model",)


def draft_target_disagreement(snap: Any) -> list[Finding]:
    """A draft and a target model whose configs disagree where speculative decoding needs
    them to agree."""
    models: Mapping[str, Any] = (snap.get("models") or {}).get("models") or {}
    drafts = [(s, m) for s, m in models.items() if _is_draft(s) and m.get("config")]
    targets = [(s, m) for s, m in models.items() if not _is_draft(s) and m.get("config")]
    if not drafts or not targets:
        return []
    targets.sort(key=lambda sm: (sm[0] not in ("--model-path", "--model"), sm[0]))
    tsrc, target = targets[0]
    out: list[Finding] = []
    env = _env(snap)
    options = (snap.get("command") or {}).get("options") or {}

    def given(src: str, model: Mapping[str, Any]) -> str:
        """The model as the command line gave it (else where it was found)."""
        value = options.get(src[2:]) if src.startswith("--") else None
        return str(value if isinstance(value, str) else model.get("path", "?"))

    for dsrc, draft in drafts:
        tc, dc = target["config"], draft["config"]
        where = (f"target {tsrc} {given(tsrc, target)}", f"draft {dsrc} {given(dsrc, draft)}")
        tl, dl = _field(tc, _CONTEXT), _field(dc, _CONTEXT)
        if tl and dl and isinstance(tl[1], int) and isinstance(dl[1], int) and tl[1] > dl[1]:
            allow = str(env.get("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "")).lower()
            note = ("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is set here, so SGLang warns and "
                    "overrides the draft's context length" if allow in ("1", "true", "yes", "y")
                    else "SGLang raises ValueError for it unless "
                         "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 is set")
            out.append(Finding("draft-target", 88, (
                f"the draft model's context length ({dl[0]} = {dl[1]}) is shorter than the "
                f"target's ({tl[0]} = {tl[1]}): {note}; vLLM caps the draft's max_model_len "
                f"at {dl[1]}"), ("models", dsrc, "config", *dl[0].split("."))
                , (*where, f"target {tl[0]} = {tl[1]}", f"draft {dl[0]} = {dl[1]}")))
        tv, dv = _field(tc, ("vocab_size",)), _field(dc, ("vocab_size",))
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
        th = _field(tc, ("hidden_size",))
        dh = ("target_hidden_size", dc["target_hidden_size"]) if dc.get("target_hidden_size") \
            else _field(dc, ("hidden_size",))
        eagle = any("eagle" in str(a).lower() for a in dc.get("architectures") or ()) \
            or "eagle_config" in dc
        if eagle and th and dh and th[1] != dh[1]:
            out.append(Finding("draft-target", 84, (
                f"the EAGLE draft reads the target's hidden states with {dh[0]} = {dh[1]}, "
                f"but the target's {th[0]} is {th[1]}"),
                ("models", dsrc, "config", dh[0]), where))
    return out


def shadowed_imports(snap: Any) -> list[Finding]:
    """Packages imported from somewhere other than where they are installed."""
    pkgs = snap.get("packages") or {}
    dists: Mapping[str, Any] = pkgs.get("distributions") or {}
    by_norm = {normalize_name(k): (k, v) for k, v in dists.items()}
    out: list[Finding] = []
    modules = _runtime(snap).get("modules") or {}
    for mod, table in modules.items():
        if not isinstance(table, Mapping) or table.get("origin") not in ("pythonpath", "cwd",
                                                                         "other"):
            continue
        installed = by_norm.get(normalize_name(mod))
        if installed is None:
            continue
        name, dist = installed
        loc = str(dist.get("location") or "")
        file = str(table.get("file") or "")
        if loc and file.startswith(loc.rstrip("/") + "/"):
            continue
        out.append(Finding("shadowed-import", 87, (
            f"{mod} was imported from {file} ({table.get('origin')}), not from the installed "
            f"{name} {dist.get('version', '?')} in {loc or '?'}"), ("runtime", "modules", mod),
            (f"imported: {file}", f"installed: {name} {dist.get('version', '?')} at {loc}")))
    seen = {f.path[-1] for f in out}
    for s in pkgs.get("shadowed") or ():
        if not isinstance(s, Mapping):
            continue
        name = str(s.get("name", "?"))
        if normalize_name(name) in {normalize_name(m) for m in seen}:
            continue
        out.append(Finding("shadowed-import", 80, (
            f"a second copy of {name} ({s.get('version', '?')} at {s.get('location', '?')}) is "
            f"hidden behind the one found first on sys.path"), ("packages", name, "shadowed")))
    return out


def rejected_values(snap: Any) -> list[Finding]:
    """Variables set to a value their reader cannot accept."""
    out = []
    for name, value in _env(snap).items():
        if not isinstance(value, str) or value.startswith("<redacted"):
            continue
        rule = rejects(name, value)
        if rule is not None:
            out.append(Finding("rejected-value", 89, (
                f"{name}={value!r}: its reader ({rule.reader}) accepts {rule.describe()}"),
                ("env", name)))
    return out


#: The checks, in the order their findings are listed on a tie.
CHECKS: list[Callable[[Any], list[Finding]]] = [
    rejected_values, draft_target_disagreement, shadowed_imports,
]


def check(snap: Any, who_reads: WhoReads | None = None) -> CheckReport:
    """Every finding of snapshot ``snap``, most important first."""
    found = misspelled_variables(snap, who_reads)
    for one in CHECKS:
        found += one(snap)
    found.sort(key=lambda f: -f.score)
    where = getattr(snap, "path_text", None) or getattr(snap, "id", "")
    return CheckReport(str(where), tuple(found))


def unshared(a: CheckReport, b: CheckReport) -> tuple[list[Finding], list[Finding]]:
    """The findings of A that B does not share, and of B that A does not share."""
    ka, kb = {f.key for f in a.findings}, {f.key for f in b.findings}
    return ([f for f in a.findings if f.key not in kb], [f for f in b.findings if f.key not in ka])
