"""The key facts of one snapshot, as plain data: what ``show`` prints, and what reports and
Markdown summaries print too, so every face says the same thing. No formatting here: the
renderers (:mod:`runsnap.render.show`) decide how facts read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runsnap.base.records import FrozenRecord, field
from runsnap.knowledge.packages import stack_packages
from runsnap.redact import is_fingerprint
from runsnap.snapshot import Snapshot, ordered_sections
from runsnap.snapshot.records import (
    GitRepo,
    ModelConfig,
    ModelEntry,
    Outcome,
    Process,
    Runtime,
    System,
    Tests,
)
from runsnap.views.hostsummary import Groups, environment

__all__ = [
    "NOTABLE_LIBS",
    "NOTABLE_PREFIXES",
    "Facts",
    "Model",
    "facts",
    "max_positions",
]

#: Variable families worth listing by name in a summary (the rest are only counted).
NOTABLE_PREFIXES = ("SGLANG_", "SGL_", "VLLM_", "NCCL_", "CUDA_", "TORCH_", "PYTORCH_", "HF_",
                    "TRANSFORMERS_", "NVIDIA_", "OMP_", "MKL_", "LD_", "PYTHON", "TRITON_",
                    "FLASHINFER_", "TOKENIZERS_", "RUNSNAP_")

#: Shared libraries of a running process worth naming with their version.
NOTABLE_LIBS = ("libnccl", "libcudart", "libcublas", "libcudnn", "libtorch", "libcuda",
                "libnvrtc")



class Model(FrozenRecord):
    """One model in play."""

    source: str
    """What named it: ``--model-path``, ``argv[N]``, ``runsnap --model``."""
    path: str
    architecture: str
    max_positions: Any
    weights_count: int
    weights_bytes: int
    repo_id: str
    revision: str


class Facts(FrozenRecord):
    """The key facts of a snapshot, section by section (absent sections: empty values)."""

    id: str
    label: str
    captured_at: str
    host: str
    runsnap_version: str
    schema: int
    path: str | None

    argv: tuple[str, ...]
    cwd: str
    executable: str | None
    """What argv[0] resolved to (None: not found; only with a command)."""
    executable_real: str | None
    option_count: int

    outcome: Outcome | None
    """``[outcome]`` as recorded (None: no run, or it never reported back)."""
    outcome_missing: bool
    """A wrapped launch whose outcome was never written (runsnap killed, or still running)."""

    runtime: Runtime | None
    """``[runtime]``: what the run read and imported, when it was traced (or why not)."""

    process: Process | None
    """``[process]`` of ``capture --pid``."""
    tests: Tests | None
    """``[tests]`` of a pytest session (``pytest --runsnap``)."""
    notable_libraries: tuple[str, ...]
    """``libnccl 2.21.5`` ... of the libraries the process mapped."""

    repos: Mapping[str, GitRepo]
    """Name -> the repository as recorded."""
    not_repositories: tuple[str, ...]

    package_count: int
    interpreter: str
    python_version: str
    interpreter_reason: str
    editable: tuple[str, ...]
    stack_versions: tuple[tuple[str, str], ...]
    """``(name, version)`` of the stack's packages installed (``summary`` in
    ``knowledge/stack-packages.tsv``)."""
    shadowed: int

    models: tuple[Model, ...]

    system: System
    gpu_names: tuple[str, ...]

    variable_count: int
    secret_count: int
    notable_env: tuple[tuple[str, Any], ...]
    """The variables of :data:`NOTABLE_PREFIXES`, in the snapshot's order."""

    errors: tuple[tuple[str, str], ...]
    """``(where, message)`` of every error a collector recorded."""

    environment: Groups = field(default_factory=list)
    """The environment in ``torch.utils.collect_env``'s order (:mod:`runsnap.views.hostsummary`)."""


def max_positions(cfg: ModelConfig) -> Any:
    """The context length a model config declares (top level or ``text_config``): a key of
    ``config.json`` runsnap does not declare, read as written.

    >>> max_positions(ModelConfig({"text_config": {"max_position_embeddings": 262144}}))
    262144
    >>> max_positions(ModelConfig({})) is None
    True
    """
    if cfg.has("max_position_embeddings"):
        return cfg.raw["max_position_embeddings"]
    text = cfg.text_config
    return text.get("max_position_embeddings") if text else None


def _architecture(cfg: ModelConfig | None) -> str:
    """What the model is, from its ``config.json`` as the file holds it: its ``architectures``
    (a list by convention; a single name or another type is the file's own), else its
    ``model_type``.

    >>> _architecture(ModelConfig({"architectures": ["LlamaForCausalLM"]}))
    'LlamaForCausalLM'
    >>> _architecture(ModelConfig({"architectures": "LlamaForCausalLM", "model_type": 7}))
    'LlamaForCausalLM'
    >>> _architecture(ModelConfig({"model_type": 7}))
    '7'
    """
    archs = cfg.architectures if cfg else None
    if isinstance(archs, list) and archs:
        return ",".join(str(a) for a in archs)
    if isinstance(archs, str) and archs:
        return archs
    return str(_or(cfg.model_type if cfg else None))


def _model(source: str, model: ModelEntry) -> Model:
    cfg = model.config
    return Model(
        source=source,
        path=str(_or(model.path)),
        architecture=_architecture(cfg),
        max_positions=max_positions(cfg) if cfg else None,
        weights_count=int(model.weights_count or 0),
        weights_bytes=int(model.weights_bytes or 0),
        repo_id=str(model.repo_id or ""),
        revision=str(model.revision or ""),
    )


def _or(found: Any, what: Any = "?") -> Any:
    """A field as written, ``what`` when it was not (``mapping.get(key, what)``)."""
    return what if found is None else found


def _errors(snap: Snapshot) -> list[tuple[str, str]]:
    """``(where, message)`` of every error a collector recorded: in every section as written
    (declared or not), in each repository and model, in the tracked run."""
    records = snap.records
    errors = [(name, str(e)) for name in ordered_sections(snap.sections)
              for e in records.named(name).errors]
    errors += [(f"git.{n}", str(e)) for n, r in records.git.repos.items() for e in r.errors]
    errors += [(f"models.{n}", str(e)) for n, m in records.models.models.items() for e in m.errors]
    # capture --track: why the tracked run is missing or partial
    errors += [("meta.track", str(e)) for e in records.meta.track.errors]
    return errors


def facts(snap: Snapshot) -> Facts:
    """The key facts of ``snap``."""
    records = snap.records
    meta, cmd, pk = records.meta, records.command, records.packages
    argv = tuple(cmd.argv)
    dists = pk.distributions
    variables = records.env.vars
    return Facts(
        id=snap.id,
        label=snap.label,
        captured_at=str(_or(meta.captured_at)),
        host=str(_or(meta.host)),
        runsnap_version=str(_or(meta.runsnap_version)),
        schema=snap.schema,
        path=snap.path_text,
        argv=argv,
        cwd=str(_or(cmd.cwd, "")),
        executable=(cmd.executable or None) if argv else None,
        executable_real=(cmd.executable_real or None) if argv else None,
        option_count=len(cmd.options),
        outcome=records.outcome or None,
        outcome_missing=not records.outcome and meta.launch == "wrapped",
        runtime=records.runtime or None,
        process=records.process or None,
        tests=records.tests or None,
        notable_libraries=tuple(f"{lib.name} {_or(lib.version)}"
                                for lib in records.process.libraries.values()
                                if str(_or(lib.name, "")).startswith(NOTABLE_LIBS)),
        repos=records.git.repos,
        not_repositories=tuple(records.git.not_repositories),
        package_count=int(pk.count or 0),
        interpreter=str(_or(pk.interpreter)),
        python_version=str(_or(pk.python_version)),
        interpreter_reason=str(_or(pk.reason)),
        editable=tuple(n for n, d in dists.items() if d.editable),
        stack_versions=tuple((n, str(_or(dists[n].version, ""))) for n in stack_packages("summary")
                             if n in dists),
        shadowed=len(pk.shadowed),
        models=tuple(_model(s, m) for s, m in records.models.models.items()),
        system=records.system,
        gpu_names=tuple(sorted({str(_or(d.name)) for d in records.system.gpu.devices or ()
                                if d.usable is not False})),
        variable_count=len(variables),
        secret_count=sum(1 for v in variables.values() if is_fingerprint(v)),
        notable_env=tuple((k, v) for k, v in variables.items() if k.startswith(NOTABLE_PREFIXES)),
        errors=tuple(_errors(snap)),
        environment=environment(snap),
    )
