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
from runsnap.views.hostsummary import Groups, environment

__all__ = [
    "NOTABLE_LIBS",
    "NOTABLE_PREFIXES",
    "Facts",
    "GitRepo",
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



class GitRepo(FrozenRecord):
    """One repository in play."""

    name: str
    commit: str
    """The full commit id (empty: no commit yet)."""
    branch: str
    """The branch, ``detached HEAD``, or empty."""
    dirty: bool
    roles: tuple[str, ...]
    """Why it is recorded: ``cwd``, ``--repo``, ``editable install of X``."""
    changed: int
    untracked: int
    diff_bytes: int
    diff_truncated: bool
    flags: tuple[str, ...]
    """``bare``, ``shallow``, ``unborn`` where they hold."""


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

    outcome: Mapping[str, Any] | None
    """``[outcome]`` as recorded (None: no run, or it never reported back)."""
    outcome_missing: bool
    """A wrapped launch whose outcome was never written (runsnap killed, or still running)."""

    runtime: Mapping[str, Any] | None
    """``[runtime]``: what the run read and imported, when it was traced (or why not)."""

    process: Mapping[str, Any] | None
    """``[process]`` of ``capture --pid``."""
    tests: Mapping[str, Any] | None
    """``[tests]`` of a pytest session (``pytest --runsnap``)."""
    notable_libraries: tuple[str, ...]
    """``libnccl 2.21.5`` ... of the libraries the process mapped."""

    repos: tuple[GitRepo, ...]
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

    system: Mapping[str, Any]
    gpu_names: tuple[str, ...]

    variable_count: int
    secret_count: int
    notable_env: tuple[tuple[str, Any], ...]
    """The variables of :data:`NOTABLE_PREFIXES`, in the snapshot's order."""

    errors: tuple[tuple[str, str], ...]
    """``(where, message)`` of every error a collector recorded."""

    environment: Groups = field(default_factory=list)
    """The environment in ``torch.utils.collect_env``'s order (:mod:`runsnap.views.hostsummary`)."""


def max_positions(cfg: Mapping[str, Any]) -> Any:
    """The context length a model config declares (top level or ``text_config``).

    >>> max_positions({"text_config": {"max_position_embeddings": 262144}}), max_positions({})
    (262144, None)
    """
    if "max_position_embeddings" in cfg:
        return cfg["max_position_embeddings"]
    text = cfg.get("text_config")
    if isinstance(text, Mapping):
        return text.get("max_position_embeddings")
    return None


def _repo(name: str, repo: Mapping[str, Any]) -> GitRepo:
    return GitRepo(
        name=name,
        commit=str(repo.get("commit") or ""),
        branch=str(repo.get("branch") or ("detached HEAD" if repo.get("detached") else "")),
        dirty=bool(repo.get("dirty")),
        roles=tuple(repo.get("roles") or ()),
        changed=len(repo.get("changed") or ()),
        untracked=int(repo.get("untracked_count") or 0),
        diff_bytes=int(repo.get("diff_bytes") or 0),
        diff_truncated=bool(repo.get("diff_truncated")),
        flags=tuple(f for f in ("bare", "shallow", "unborn") if repo.get(f)),
    )


def _model(source: str, model: Mapping[str, Any]) -> Model:
    cfg = model.get("config") or {}
    return Model(
        source=source,
        path=str(model.get("path", "?")),
        architecture=",".join(cfg.get("architectures") or []) or str(cfg.get("model_type", "?")),
        max_positions=max_positions(cfg),
        weights_count=int(model.get("weights_count") or 0),
        weights_bytes=int(model.get("weights_bytes") or 0),
        repo_id=str(model.get("repo_id") or ""),
        revision=str(model.get("revision") or ""),
    )


def facts(snap: Snapshot) -> Facts:
    """The key facts of ``snap``."""
    meta = snap.meta
    cmd = snap.get("command") or {}
    argv = tuple(cmd.get("argv") or ())
    process = snap.get("process")
    libs: Mapping[str, Any] = (process or {}).get("libraries") or {}
    git = snap.get("git") or {}
    repos: Mapping[str, Any] = git.get("repos") or {}
    pk = snap.get("packages") or {}
    dists: Mapping[str, Any] = pk.get("distributions") or {}
    models: Mapping[str, Any] = (snap.get("models") or {}).get("models") or {}
    system = snap.get("system") or {}
    gpu = system.get("gpu") or {}
    variables: Mapping[str, Any] = (snap.get("env") or {}).get("vars") or {}
    errors = [(name, str(e)) for name in ordered_sections(snap.sections)
              for e in snap.sections[name].get("errors", [])]
    errors += [(f"git.{n}", str(e)) for n, r in repos.items() for e in r.get("errors", [])]
    errors += [(f"models.{n}", str(e)) for n, m in models.items() for e in m.get("errors", [])]
    track = snap.meta.get("track")
    if isinstance(track, dict):  # capture --track: why the tracked run is missing or partial
        errors += [("meta.track", str(e)) for e in track.get("errors") or ()]
    return Facts(
        id=snap.id,
        label=snap.label,
        captured_at=str(meta.get("captured_at", "?")),
        host=str(meta.get("host", "?")),
        runsnap_version=str(meta.get("runsnap_version", "?")),
        schema=snap.schema,
        path=snap.path_text,
        argv=argv,
        cwd=str(cmd.get("cwd", "")),
        executable=(cmd.get("executable") or None) if argv else None,
        executable_real=(cmd.get("executable_real") or None) if argv else None,
        option_count=len(cmd.get("options") or {}),
        outcome=snap.get("outcome") or None,
        outcome_missing=not snap.get("outcome") and meta.get("launch") == "wrapped",
        runtime=snap.get("runtime") or None,
        process=process or None,
        tests=snap.get("tests") or None,
        notable_libraries=tuple(f"{lib.get('name')} {lib.get('version', '?')}"
                                for lib in libs.values()
                                if str(lib.get("name", "")).startswith(NOTABLE_LIBS)),
        repos=tuple(_repo(n, r) for n, r in repos.items()),
        not_repositories=tuple(git.get("not_repositories") or ()),
        package_count=int(pk.get("count") or 0),
        interpreter=str(pk.get("interpreter", "?")),
        python_version=str(pk.get("python_version", "?")),
        interpreter_reason=str(pk.get("reason", "?")),
        editable=tuple(n for n, d in dists.items() if d.get("editable")),
        stack_versions=tuple((n, str(dists[n].get("version", ""))) for n in stack_packages("summary")
                             if n in dists),
        shadowed=len(pk.get("shadowed") or ()),
        models=tuple(_model(s, m) for s, m in models.items()),
        system=system,
        gpu_names=tuple(sorted({str(d.get("name", "?")) for d in gpu.get("devices", [])
                                if d.get("usable") is not False})),
        variable_count=len(variables),
        secret_count=sum(1 for v in variables.values() if is_fingerprint(v)),
        notable_env=tuple((k, v) for k, v in variables.items() if k.startswith(NOTABLE_PREFIXES)),
        errors=tuple(errors),
        environment=environment(snap),
    )
