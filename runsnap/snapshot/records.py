"""Each other declared section, and each record within, as frozen records: GENERATED from
the declarations of ``runsnap/snapshot/shapes*.py`` by ``python -m runsnap.snapshot.shapes``;
do not edit (``tests/test_shapes.py`` fails when it differs from them). The fields' meanings
are documented in the declarations; how a record is read from its mapping, in
:mod:`runsnap.snapshot.sectionrecord`. Read through ``snap.records``.
"""

from __future__ import annotations

from runsnap.snapshot.records_host import (
    Runtime,
    System,
)
from runsnap.snapshot.records_run import (
    Frame,
    LogFile,
    Outcome,
    PeakRss,
    Process,
    ProcessChild,
    ProcessLibrary,
    Stream,
    TestResult,
    Tests,
    Traceback,
)
from runsnap.snapshot.sectionrecord import SectionRecord
from runsnap.snapshot.sectionrecord import Sections as _Sections

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

__all__ = ["Build", "Builds", "Command", "Conda", "CondaPackage", "DirectUrl", "Distribution",
           "Env", "Frame", "Git", "GitRepo", "Launcher", "Library", "LogFile", "Meta",
           "ModelConfig", "ModelEntry", "Models", "Outcome", "Packages", "PeakRss", "Process",
           "ProcessChild", "ProcessLibrary", "RepoChange", "Sections", "ShadowedDistribution",
           "Stream", "Submodule", "TestResult", "Tests", "TorchBuild", "Traceback", "TrackedRun",
           "UntrackedFile"]


class Launcher(SectionRecord):
    """Who the snapshot is in a job: the launcher and the rank (``capturing/naming.py``)."""

    name: str | None
    rank: int | None
    local_rank: int | None
    world_size: int | None
    local_world_size: int | None
    node_rank: int | None
    job: str | None
    also: Sequence[str]
    vars: Mapping[str, str | None]


class TrackedRun(SectionRecord):
    """The experiment tracker's run that holds the snapshot."""

    tracker: str | None
    run: str | None
    where: str | None
    errors: Sequence[str]


class Meta(SectionRecord):
    """``[meta]``: who captured what, when, and how the capture went."""

    id: str | None
    captured_at: str | None
    label: str | None
    host: str | None
    runsnap_version: str | None
    fingerprint_key: str | None
    launch: str | None
    launcher: Launcher
    log: str | None
    redacted: Sequence[str]
    collect_ms: Mapping[str, float]
    track: TrackedRun


class Command(SectionRecord):
    """``[command]``: the command line exactly as given, where it runs and what it runs."""

    errors: Sequence[str]
    argv: Sequence[str]
    cwd: str | None
    executable: str | None
    executable_real: str | None
    options: Mapping[str, str | bool | int | float | Sequence[str | bool | int | float | None] | None]


class Env(SectionRecord):
    """``[env]``: the child's complete environment (secrets replaced by fingerprints)."""

    errors: Sequence[str]
    vars: Mapping[str, str | None]
    count: int | None


class DirectUrl(SectionRecord):
    """What a distribution's ``direct_url.json`` (PEP 610) says about where it came from."""

    url: str | None
    editable: bool | None
    vcs: str | None
    commit_id: str | None
    requested_revision: str | None
    error: str | None


class ShadowedDistribution(SectionRecord):
    """A copy of a distribution hidden behind one found earlier on ``sys.path``."""

    version: str | None
    location: str | None
    editable: bool | None
    source: str | None
    metadata_dir: str | None
    direct_url: DirectUrl
    shadowed_by: str | None
    name: str | None


class Distribution(SectionRecord):
    """One installed distribution (``[packages]``' comparer reads it field by field: another
    version is one difference, with where it lives as its evidence)."""

    version: str | None
    location: str | None
    editable: bool | None
    source: str | None
    metadata_dir: str | None
    direct_url: DirectUrl
    shadowed_by: str | None


class Build(SectionRecord):
    """How an engine other than torch was built (vLLM, SGLang's kernels, xformers, Triton...),
    read from its files (``capturing/collectors/builds.py``)."""

    path: str | None
    version: str | None
    version_file: str | None
    version_from: str | None
    built_for: str | None
    built_with: Mapping[str, str]
    native: Sequence[str]
    backends: Sequence[str]
    architectures: Sequence[str]


class TorchBuild(SectionRecord):
    """How the installed torch was built (``torch.__config__``)."""

    version: str | None
    version_from: str | None
    path: str | None
    git_version: str | None
    debug: bool | None
    cuda: str | None
    hip: str | None
    rocm: str | None
    xpu: str | None
    built_for: str | None
    bundled_libraries: Sequence[str]
    config: Mapping[str, str]
    switches: Mapping[str, bool]
    cxx11_abi: bool | None
    cuda_available: bool | None
    cuda_available_reason: str | None
    xpu_available: bool | None
    xpu_available_reason: str | None
    xnnpack_available: bool | None
    xnnpack_available_reason: str | None


class Builds(SectionRecord):
    """Build facts of packages whose build matters: torch's declared here, the other engines'
    as :class:`Build`."""

    torch: TorchBuild


class Library(SectionRecord):
    """Where a family of CUDA/ROCm libraries (``nccl``, ``cudnn``...) comes from, first found
    first."""

    dir: str | None
    files: Sequence[str]
    source: str | None
    version: str | None
    other_dirs: Sequence[str]


class CondaPackage(SectionRecord):
    """One package of a conda environment (its ``conda-meta`` record's name)."""

    version: str | None
    build: str | None


class Conda(SectionRecord):
    """The conda environment's own package list."""

    packages: Mapping[str, CondaPackage]
    prefix: str | None
    count: int | None


class Packages(SectionRecord):
    """``[packages]``: the child's interpreter and what it can import."""

    errors: Sequence[str]
    count: int | None
    interpreter: str | None
    interpreter_real: str | None
    reason: str | None
    python_version: str | None
    implementation: str | None
    prefix: str | None
    base_prefix: str | None
    probe: str | None
    probe_exit_status: int | None
    sys_path: Sequence[str]
    shadowed: tuple[ShadowedDistribution, ...]
    distributions: Mapping[str, Distribution]
    builds: Builds
    libraries: Mapping[str, Library]
    conda: Conda | None


class RepoChange(SectionRecord):
    """"""

    path: str | None
    status: str | None
    from_: str | None


class UntrackedFile(SectionRecord):
    """An untracked file, with its digest when small enough."""

    path: str | None
    sha256: str | None
    size: int | None
    link: str | None
    kind: str | None
    error: str | None


class Submodule(SectionRecord):
    """A submodule of the repository (``git submodule status``)."""

    path: str | None
    commit: str | None
    state: str | None


class GitRepo(SectionRecord):
    """One repository of ``[git] repos`` (``$defs/repo``)."""

    path: str | None
    commit: str | None
    branch: str | None
    describe: str | None
    upstream: str | None
    dirty: bool | None
    detached: bool | None
    bare: bool | None
    shallow: bool | None
    unborn: bool | None
    in_progress: str | None
    ahead: int | None
    behind: int | None
    diff: str | None
    diff_bytes: int | None
    diff_sha256: str | None
    diff_truncated: bool | None
    diff_stat: str | None
    untracked_count: int | None
    roles: Sequence[str]
    errors: Sequence[str]
    remotes: Mapping[str, str | None]
    changed: tuple[RepoChange, ...]
    untracked: tuple[UntrackedFile, ...]
    submodules: tuple[Submodule, ...]


class Git(SectionRecord):
    """``[git]``: the repositories in play."""

    errors: Sequence[str]
    repos: Mapping[str, GitRepo]
    not_repositories: Sequence[str]


class ModelConfig(SectionRecord):
    """The fields of a model's ``config.json`` that runsnap reads itself, as the file holds
    them: a third-party file, copied whole, so a field of another type than the convention's
    (``"model_type": 7``) is the model's, not a malformed snapshot; readers check the type."""

    architectures: Any
    model_type: Any
    text_config: Mapping[str, Any] | None


class ModelEntry(SectionRecord):
    """One model of ``[models] models`` (``$defs/model``)."""

    path: str | None
    real_path: str | None
    given: str | None
    repo_id: str | None
    revision: str | None
    config: ModelConfig | None
    errors: Sequence[str]
    sources: Sequence[str]
    files_sha256: Mapping[str, str | None]
    weights: Mapping[str, int | None]
    weights_bytes: int | None
    weights_count: int | None


class Models(SectionRecord):
    """``[models]``: the model directories and Hugging Face repos in play."""

    errors: Sequence[str]
    models: Mapping[str, ModelEntry]


class Sections(_Sections):
    """Each declared section of one snapshot as its record, built on first use
    (``snap.records.env``)."""

    __slots__ = ()
    _records = {
        'meta': Meta, 'command': Command, 'env': Env, 'packages': Packages, 'git': Git, 'models':
        Models, 'system': System, 'process': Process, 'outcome': Outcome, 'runtime': Runtime,
        'tests': Tests,
    }

    @property
    def meta(self) -> Meta:
        return self._section('meta', Meta)

    @property
    def command(self) -> Command:
        return self._section('command', Command)

    @property
    def env(self) -> Env:
        return self._section('env', Env)

    @property
    def packages(self) -> Packages:
        return self._section('packages', Packages)

    @property
    def git(self) -> Git:
        return self._section('git', Git)

    @property
    def models(self) -> Models:
        return self._section('models', Models)

    @property
    def system(self) -> System:
        return self._section('system', System)

    @property
    def process(self) -> Process:
        return self._section('process', Process)

    @property
    def outcome(self) -> Outcome:
        return self._section('outcome', Outcome)

    @property
    def runtime(self) -> Runtime:
        return self._section('runtime', Runtime)

    @property
    def tests(self) -> Tests:
        return self._section('tests', Tests)
