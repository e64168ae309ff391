"""A finding of ``runsnap check`` and the report of one snapshot, and the small readers of
snapshot data the rules share. Light on purpose: the pre-launch guard imports it on the capture
path (no dataclasses, no typing at run time). The rules read sections as their records
(``snap.records``); a model's ``config.json`` is read as written (any key an engine reads)."""

from __future__ import annotations

from collections.abc import Mapping

from runsnap.base.records import FrozenRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from runsnap.snapshot import Snapshot
    from runsnap.snapshot.records import ModelConfig, ModelEntry

    #: A model whose config was read: the option that found it, the model, its config.
    Configured = tuple[str, ModelEntry, ModelConfig]

__all__ = ["CONSEQUENCES", "CONTEXT_FIELDS", "LAUNCHER_PRINTS", "CheckReport", "Finding",
           "config_field", "configured", "is_draft", "shown"]

#: What a run shows when a finding of each kind is why it failed, as its rule's message states
#: it (a regular expression over the failing error): ``diff`` takes a finding of the failing
#: side only whose consequence the failure shows as evidence for the difference it is about.
#: Kinds whose consequence is no message of their own (a misspelled variable: the setting meant
#: is silently not in effect) have none.
CONSEQUENCES = {
    # torch's caching allocator: TORCH_CHECK_VALUE(..., "Unrecognized key '", key, "' in CUDA
    # allocator config.") (pytorch/pytorch c10/cuda/CUDAAllocatorConfig.cpp, parseArgs)
    "alloc-conf-key": r"Unrecognized key|allocator config",
    # SGLang's ModelConfig._derive_context_length and vLLM's max_model_len check
    "context-length": r"context.?len|max_model_len|max_position_embeddings",
    "draft-target": r"context.?len|max_model_len|vocab|hidden.?size",
    "shadowed-import": r"ImportError|ModuleNotFoundError|cannot import name|has no attribute",
    # Open MPI's bml/r2 and ompi_mpi_init help texts (help-mca-bml-r2.txt, help-mpi-runtime)
    "mpi-unreachable": r"unable to reach each other|unreachable from another|MPI_INIT",
}

#: Kinds whose message the launcher prints, not the failing process: Open MPI's ranks send
#: their help texts to ``mpirun`` (``orte/util/show_help.c``), so a rank that stops so has no
#: error of its own, and a failure with none is what the finding says happens.
LAUNCHER_PRINTS = frozenset({"mpi-unreachable"})


class Finding(FrozenRecord):
    """One thing wrong inside a snapshot."""

    kind: str
    """``misspelled-variable``, ``draft-target``, ``shadowed-import``, ``rejected-value``,
    ``alloc-conf-key``, ``context-length``, ``mpi-unreachable``, ``unmet-requirement``."""

    score: int
    """How likely it breaks the run, 0-100 (the order of the report)."""

    message: str
    """What was seen, where, in a sentence."""

    path: tuple[str, ...]
    """Where in the snapshot: ``("env", NAME)``, ``("models", SOURCE, "config", ...)``."""

    details: tuple[str, ...] = ()
    """More lines: both values, which option pointed at each model, the reader."""

    meant: str = ""
    """For a misspelled variable, the name it looks like a misspelling of."""

    @property
    def key(self) -> str:
        """A stable identity, to tell which findings two snapshots share."""
        return f"{self.kind}:{'/'.join(self.path)}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"kind": self.kind, "score": self.score, "message": self.message,
                "path": list(self.path), "details": list(self.details)}


class CheckReport(FrozenRecord):
    """Every finding of one snapshot, most important first; true when there is any."""

    snapshot: str
    findings: tuple[Finding, ...]

    def __bool__(self) -> bool:
        return bool(self.findings)

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (``format = runsnap-check/1``)."""
        return {"format": "runsnap-check/1", "snapshot": self.snapshot, "clean": not self,
                "count": len(self.findings), "findings": [f.to_dict() for f in self.findings]}


#: Config fields that hold a model's own context length, in the order engines read them.
CONTEXT_FIELDS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length")


def _text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's config: ``text_config`` (or ``llm_config``) of a multimodal
    wrapper, else the config itself."""
    for key in ("text_config", "llm_config", "language_config"):
        sub = config.get(key)
        if isinstance(sub, Mapping) and sub:
            return sub
    return config


def config_field(config: Mapping[str, Any], names: Iterable[str]) -> tuple[str, Any] | None:
    """The first of ``names`` set in the language model's config, as (dotted path, value)."""
    text = _text_config(config)
    prefix = "text_config." if text is not config else ""
    for name in names:
        if name in text and text[name] is not None:
            return prefix + name, text[name]
    return None


def is_draft(source: str) -> bool:
    """Whether the model found under ``source`` (an option) is a speculative draft."""
    return "draft" in source.lower() or source.lower() in ("--speculative-model",)


def configured(snap: Snapshot) -> tuple[list[Configured], list[Configured]]:
    """The models of ``[models]`` whose ``config.json`` was read, as (the option that found
    it, the model, its config): (drafts, targets), the target given as ``--model-path`` or
    ``--model`` first."""
    found = [(source, m, m.config) for source, m in snap.records.models.models.items()
             if m.config]
    drafts = [one for one in found if is_draft(one[0])]
    targets = sorted((one for one in found if not is_draft(one[0])),
                     key=lambda one: (one[0] not in ("--model-path", "--model"), one[0]))
    return drafts, targets


def shown(found: str | None) -> str:
    """A recorded text as a finding shows it: ``?`` when none was written."""
    return "?" if found is None else found
