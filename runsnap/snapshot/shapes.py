"""Each snapshot section's shape, declared once, as a :class:`~typing.TypedDict`.

A declaration here is what the section holds: its collector returns it (annotated, so mypy
checks every key the collector writes) and ``schema.json``'s part for the section is generated
from it (:func:`schema_of`; ``python -m runsnap.snapshot.shapes`` rewrites those parts,
``tests/test_shapes.py`` fails when they differ, or when a real snapshot holds a field not
declared here). Adding a field to a section touches its collector and this file. Every section
is declared (:data:`DECLARED`). Every field says how ``diff`` compares it (``Compare(score,
reason)``, ``Compare()`` for a comparer's own rule, or ``NotCompared(why)``;
:mod:`runsnap.snapshot.shape_compare`); redaction and ``show`` still read sections as plain
mappings.

The module is read only where types are checked and by the schema's writer and test: the
capture path imports it under ``TYPE_CHECKING`` only (:mod:`typing` costs a capture 2-4 ms).
"""

from __future__ import annotations

import json
import os
from typing import Annotated, Any, TypedDict

from runsnap.snapshot.shape_compare import write_table
from runsnap.snapshot.shape_marks import (
    Compare,
    Doc,
    Errors,
    Extra,
    NotCompared,
    OptionValue,
    Ref,
)
from runsnap.snapshot.shape_records import write_records
from runsnap.snapshot.shape_schema import schema_of
from runsnap.snapshot.shapes_host import RuntimeSection, SystemSection
from runsnap.snapshot.shapes_run import (
    Frame,
    LogFile,
    OutcomeSection,
    PeakRss,
    ProcessChild,
    ProcessLibrary,
    ProcessSection,
    Stream,
    TestResult,
    TestsSection,
    Traceback,
)

__all__ = ["CommandSection", "Compare", "DECLARED", "DEFS", "EnvSection", "Frame", "LogFile",
           "NotCompared", "OutcomeSection", "PeakRss", "ProcessChild", "ProcessLibrary",
           "ProcessSection", "Ref", "Stream", "TestResult", "TestsSection", "Traceback",
           "schema_of", "write_schema"]




class CommandSection(TypedDict, total=False):
    """``[command]``: the command line exactly as given, where it runs and what it runs."""

    errors: Errors
    argv: Annotated[list[str], Compare()]
    cwd: Annotated[str | None, Compare()]
    executable: Annotated[str | None, Compare()]
    executable_real: Annotated[str | None, Compare()]
    options: Annotated[dict[str, OptionValue], Compare()]


class EnvSection(TypedDict, total=False):
    """``[env]``: the child's complete environment (secrets replaced by fingerprints)."""

    errors: Errors
    vars: Annotated[dict[str, str | None], Compare()]
    count: Annotated[int | None, NotCompared("the number of vars, whose entries are compared one by one")]


#: A file the work tree changed (``git status``); ``from``: its path before a rename or copy
#: (a keyword of Python, hence this form).
RepoChange = TypedDict("RepoChange", {
    "path": str | None,
    "status": str | None,
    "from": str | None,
}, total=False)


class UntrackedFile(TypedDict, total=False):
    """An untracked file, with its digest when small enough."""

    path: str | None
    sha256: str | None
    size: int | None
    link: str | None
    """A symbolic link's target (never followed)."""
    kind: str | None
    """Neither a file nor a link (a FIFO, a device): never opened."""
    error: str | None
    """Why it could not be read."""


class Submodule(TypedDict, total=False):
    """A submodule of the repository (``git submodule status``)."""

    path: str | None
    commit: str | None
    state: str | None
    """``in sync``, ``not initialized``, ``checked out at another commit``, ``merge conflicts``."""


class GitRepo(TypedDict, total=False):
    """One repository of ``[git] repos`` (``$defs/repo``)."""

    path: Annotated[str | None, NotCompared(
        "where the repository sits on this machine; the repository's name is compared")]
    commit: Annotated[str | None, Compare()]
    branch: Annotated[str | None, Compare(35, "another branch (the commit decides the code)")]
    describe: Annotated[str | None, NotCompared("follows commit; written as the commit's evidence")]
    upstream: Annotated[str | None, Compare(15, "another upstream branch")]
    dirty: Annotated[bool | None, Compare()]
    detached: Annotated[bool | None, Compare(30, "HEAD detached in one run only")]
    bare: Annotated[bool | None, Compare(30, "a bare repository (no work tree) in one run only")]
    shallow: Annotated[bool | None, Compare(
        25, "a shallow clone in one run only: commits between may be missing")]
    unborn: Annotated[bool | None, Compare(40, "a repository with no commit yet in one run only")]
    in_progress: Annotated[str | None, Compare(
        60, "a rebase, merge, cherry-pick or bisect was under way in one run: the work tree held its "
            "half-done state")]
    ahead: Annotated[int | None, NotCompared(
        "counted against the upstream, which moves on its own; commit is compared")]
    behind: Annotated[int | None, NotCompared(
        "counted against the upstream, which moves on its own; commit is compared")]
    diff: Annotated[str | None, Compare()]
    diff_bytes: Annotated[int | None, NotCompared("the size of diff, whose files are compared one by one")]
    diff_sha256: Annotated[str | None, Compare()]
    diff_truncated: Annotated[bool | None, Compare()]
    diff_stat: Annotated[str | None, NotCompared("a summary of diff, whose files are compared one by one")]
    """``git diff --stat`` when the diff is over the cap (the diff keeps its first 64 KiB)."""
    untracked_count: Annotated[int | None, NotCompared(
        "the number of untracked, whose entries are compared one by one")]
    roles: Annotated[list[str], NotCompared("why runsnap looked at the repository, not what it holds")]
    errors: Annotated[Errors, Compare()]
    remotes: Annotated[dict[str, str | None], Compare(15, "another remote")]
    changed: Annotated[list[RepoChange], NotCompared(
        "the files git status lists; their changes are compared through diff")]
    untracked: Annotated[list[UntrackedFile], Compare()]
    submodules: Annotated[list[Submodule], Compare()]


class ModelConfig(TypedDict, total=False):
    """The fields of a model's ``config.json`` that runsnap reads itself, as the file holds
    them: a third-party file, copied whole, so a field of another type than the convention's
    (``"model_type": 7``) is the model's, not a malformed snapshot; readers check the type."""

    architectures: Any
    model_type: Any
    text_config: dict[str, Any] | None


class ModelEntry(TypedDict, total=False):
    """One model of ``[models] models`` (``$defs/model``)."""

    path: str | None
    real_path: str | None
    given: str | None
    repo_id: str | None
    revision: str | None
    config: ModelConfig | None
    errors: Errors
    sources: list[str]
    files_sha256: dict[str, str | None]
    weights: dict[str, int | None]
    weights_bytes: int | None
    weights_count: int | None


class TrackedRun(TypedDict, total=False):
    """The experiment tracker's run that holds the snapshot."""

    tracker: str
    run: str
    where: str
    errors: list[str]


class Launcher(TypedDict, total=False):
    """Who the snapshot is in a job: the launcher and the rank (``capturing/naming.py``)."""

    name: str | None
    """``torchrun``, ``mpirun``, ``srun``, ...; ``local`` outside a launcher."""
    rank: int | None
    local_rank: int | None
    world_size: int | None
    local_world_size: int | None
    node_rank: int | None
    job: str | None
    also: list[str]
    """Other launchers whose variables are set too."""
    vars: dict[str, str | None]
    """The launcher's variables it was told by."""


class _MetaKeys(TypedDict):
    """The fields every ``[meta]`` has (``required``; a base of its own, because ``Required``
    is not seen under postponed annotations before Python 3.13)."""

    id: Annotated[str, NotCompared(
        "who captured what, when: it names the run, it is not what ran (the header shows it)")]
    """The snapshot's own id."""
    captured_at: Annotated[str, NotCompared(
        "who captured what, when: it names the run, it is not what ran (the header shows it)")]
    """When the capture began (UTC, ISO 8601)."""


class MetaSection(_MetaKeys, total=False):
    """``[meta]``: who captured what, when, and how the capture went."""

    label: Annotated[str | None, NotCompared(
        "who captured what, when: it names the run, it is not what ran (the header shows it)")]
    host: Annotated[str | None, NotCompared(
        "who captured what, when: it names the run, it is not what ran (the header shows it)")]
    runsnap_version: Annotated[str | None, NotCompared(
        "who captured what, when: it names the run, it is not what ran (the header shows it)")]
    fingerprint_key: Annotated[str | None, NotCompared(
        "decides whether fingerprints compare (a note of the diff)")]
    launch: Annotated[str | None, NotCompared(
        "who captured what, when: it names the run, it is not what ran (the header shows it)")]
    launcher: Annotated[Launcher, NotCompared("which rank of which job: N-way diff groups ranks by it")]
    log: Annotated[str | None, NotCompared(
        "who captured what, when: it names the run, it is not what ran (the header shows it)")]
    redacted: Annotated[list[str], NotCompared(
        "the names of the secrets hidden; their fingerprints are compared in [env]")]
    collect_ms: Annotated[dict[str, float], NotCompared(
        "who captured what, when: it names the run, it is not what ran (the header shows it)")]
    track: Annotated[TrackedRun, NotCompared(
        "who captured what, when: it names the run, it is not what ran (the header shows it)"), Doc(
        "The experiment tracker's run that holds this snapshot (capture --track): tracker, run "
        "(mlflow:RUN_ID, wandb:...), where (its page or folder), errors (why it is not tracked, "
        "or not completely).")]


class DirectUrl(TypedDict, total=False):
    """What a distribution's ``direct_url.json`` (PEP 610) says about where it came from."""

    url: str | None
    editable: bool | None
    vcs: str | None
    commit_id: str | None
    requested_revision: str | None
    error: str | None
    """Why the file could not be read."""


class Distribution(TypedDict, total=False):
    """One installed distribution (``[packages]``' comparer reads it field by field: another
    version is one difference, with where it lives as its evidence)."""

    version: Annotated[str | None, Compare()]
    location: Annotated[str | None, Compare()]
    editable: Annotated[bool | None, Compare()]
    source: Annotated[str | None, Compare()]
    """Where an editable or direct-URL install came from (its URL or folder)."""
    metadata_dir: Annotated[str | None, NotCompared(
        "where its metadata sits, which follows location, compared")]
    direct_url: Annotated[DirectUrl, Compare()]
    shadowed_by: Annotated[str | None, NotCompared(
        "the copy that hides it; [packages] shadowed compares the hidden copies")]


class ShadowedDistribution(Distribution, total=False):
    """A copy of a distribution hidden behind one found earlier on ``sys.path``."""

    name: Annotated[str | None, Compare()]


class Library(TypedDict, total=False):
    """Where a family of CUDA/ROCm libraries (``nccl``, ``cudnn``...) comes from, first found
    first."""

    dir: str | None
    files: list[str]
    source: str | None
    """The ``nvidia-*`` wheel (``nvidia-nccl-cu12 (pip)``), or ``torch/lib`` for bundled copies."""
    version: str | None
    other_dirs: list[str]
    """Other folders that hold the family too."""


class TorchBuild(TypedDict, total=False):
    """How the installed torch was built (``torch.__config__``)."""

    version: str
    version_from: str
    """``distribution`` where torch had no version file and its distribution's version is used."""
    path: str
    git_version: str
    debug: bool
    cuda: str
    """The CUDA version torch was built with (``torch.version.cuda``)."""
    hip: str
    """The HIP version torch was built with (``torch.version.hip``)."""
    rocm: str
    xpu: str
    built_for: str
    """``cuda``, ``rocm``, ``xpu`` or ``cpu``."""
    bundled_libraries: list[str]
    config: dict[str, str]
    switches: dict[str, bool]
    cxx11_abi: bool
    cuda_available: bool
    cuda_available_reason: str
    xpu_available: bool
    xpu_available_reason: str
    xnnpack_available: bool
    xnnpack_available_reason: str


class Build(TypedDict, total=False):
    """How an engine other than torch was built (vLLM, SGLang's kernels, xformers, Triton...),
    read from its files (``capturing/collectors/builds.py``)."""

    path: str | None
    version: str | None
    version_file: str | None
    """The file its version was read from."""
    version_from: str | None
    """``distribution`` where it has no version file (SGLang, Triton): its distribution's."""
    built_for: str | None
    """``cuda`` or ``rocm`` (vLLM, from its native extension's name)."""
    built_with: dict[str, str]
    """What it was built against (``xformers/cpp_lib.json``: ``cuda``, ``torch``...)."""
    native: list[str]
    """Its native extensions."""
    backends: list[str]
    """Triton's backends."""
    architectures: list[str]
    """The GPU architectures it carries (``sgl_kernel``: ``sm90``, ``sm100``)."""


class Builds(TypedDict, total=False):
    """Build facts of packages whose build matters: torch's declared here, the other engines'
    as :class:`Build`."""

    torch: TorchBuild


class CondaPackage(TypedDict, total=False):
    """One package of a conda environment (its ``conda-meta`` record's name)."""

    version: str | None
    build: str | None


class Conda(TypedDict, total=False):
    """The conda environment's own package list."""

    packages: dict[str, CondaPackage] | None
    prefix: str | None
    count: int | None


class PackagesSection(TypedDict, total=False):
    """``[packages]``: the child's interpreter and what it can import."""

    errors: Errors
    count: Annotated[int | None, NotCompared(
        "the number of distributions, whose entries are compared one by one")]
    interpreter: Annotated[str | None, Compare()]
    interpreter_real: Annotated[str | None, Compare()]
    reason: Annotated[str | None, NotCompared("why packages could not be listed; errors says it")]
    python_version: Annotated[str | None, Compare()]
    implementation: Annotated[str | None, Compare()]
    prefix: Annotated[str | None, Compare()]
    base_prefix: Annotated[str | None, NotCompared("follows prefix, which is compared")]
    probe: Annotated[str | None, NotCompared("how the packages were listed, not what is installed")]
    probe_exit_status: Annotated[int | None, NotCompared(
        "how the packages were listed, not what is installed")]
    """The package probe's exit status when it failed."""
    sys_path: Annotated[list[str], Compare()]
    shadowed: Annotated[list[ShadowedDistribution], Compare()]
    distributions: Annotated[dict[str, Distribution], Compare(fields=True)]
    builds: Annotated[Builds, Extra(Build), Compare()]
    libraries: Annotated[dict[str, Library], Compare()]
    conda: Annotated[Conda | None, Compare()]


class GitSection(TypedDict, total=False):
    """``[git]``: the repositories in play."""

    errors: Errors
    repos: Annotated[dict[str, Annotated[GitRepo, Ref("repo")]], Compare(fields=True)]
    not_repositories: Annotated[list[str], NotCompared("folders runsnap looked at that hold no repository")]


class ModelsSection(TypedDict, total=False):
    """``[models]``: the model directories and Hugging Face repos in play."""

    errors: Errors
    models: Annotated[dict[str, Annotated[ModelEntry, Ref("model")]], Compare()]




#: Section name -> its declaration.
DECLARED: dict[str, type] = {
    "meta": MetaSection, "command": CommandSection, "env": EnvSection,
    "packages": PackagesSection, "git": GitSection, "models": ModelsSection,
    "system": SystemSection, "process": ProcessSection, "outcome": OutcomeSection,
    "runtime": RuntimeSection, "tests": TestsSection,
}

#: Shared definitions (``$defs``) declared here -> their declaration.
DEFS: dict[str, type] = {"stream": Stream, "repo": GitRepo, "model": ModelEntry}

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schema.json")


def write_schema(path: str = SCHEMA) -> dict[str, Any]:
    """``schema.json`` with each declared section's part generated from its declaration;
    written to ``path`` and returned."""
    with open(path, encoding="utf-8") as fh:
        schema = json.load(fh)
    for name, shape in DECLARED.items():
        schema["properties"][name] = schema_of(shape)
    for name, shape in DEFS.items():
        schema["$defs"][name] = schema_of(shape)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(schema, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    return schema


if __name__ == "__main__":  # python -m runsnap.snapshot.shapes
    write_schema()
    write_table(DECLARED)
    write_records(DECLARED)
