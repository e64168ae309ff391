"""Each snapshot section's shape, declared once, as a :class:`~typing.TypedDict`.

A declaration here is what the section holds: its collector returns it (annotated, so mypy
checks every key the collector writes) and ``schema.json``'s part for the section is generated
from it (:func:`schema_of`; ``python -m runsnap.snapshot.shapes`` rewrites those parts,
``tests/test_shapes.py`` fails when they differ, or when a real snapshot holds a field not
declared here). Adding a field to a section touches its collector and this file. Every section
is declared (:data:`DECLARED`); the comparers, redaction and ``show`` still read sections as
plain mappings.

The module is read only where types are checked and by the schema's writer and test: the
capture path imports it under ``TYPE_CHECKING`` only (:mod:`typing` costs a capture 2-4 ms).
"""

from __future__ import annotations

import json
import os
import types
import typing
from typing import Annotated, Any, TypedDict, Union

from runsnap.snapshot.shape_marks import Doc, Errors, Extra, Minimum, OptionValue, Ref
from runsnap.snapshot.shapes_host import RuntimeSection, SystemSection

__all__ = ["DECLARED", "DEFS", "CommandSection", "EnvSection", "OutcomeSection", "ProcessSection",
           "TestResult", "TestsSection",
           "Ref", "Traceback", "schema_of", "write_schema"]




class CommandSection(TypedDict, total=False):
    """``[command]``: the command line exactly as given, where it runs and what it runs."""

    errors: Errors
    argv: list[str]
    cwd: str | None
    executable: str | None
    executable_real: str | None
    options: dict[str, OptionValue]


class EnvSection(TypedDict, total=False):
    """``[env]``: the child's complete environment (secrets replaced by fingerprints)."""

    errors: Errors
    vars: dict[str, str | None]
    count: int | None


class ProcessChild(TypedDict, total=False):
    """A child process of a process snapshotted with ``capture --pid``."""

    argv: list[str]
    pid: int | None
    ppid: int | None
    name: str | None
    error: str | None
    """Why its details could not be read (the exception's name)."""


class ProcessLibrary(TypedDict, total=False):
    """A shared library the running process has mapped."""

    name: str | None
    path: str | None
    version: str | None


class ProcessSection(TypedDict, total=False):
    """``[process]``: what only a process already running shows (``capture --pid``)."""

    errors: Errors
    pid: int | None
    ppid: int | None
    name: str | None
    exe: str | None
    user: str | None
    status: str | None
    started_at: str | None
    num_threads: int | None
    libraries_count: int | None
    children: list[ProcessChild]
    libraries: dict[str, ProcessLibrary]


class Stream(TypedDict, total=False):
    """What one of the child's output streams showed (``[outcome] stdout``/``stderr``)."""

    mode: str | None
    """How runsnap read it: ``pty``, ``pipe``, ``inherit``, ``none``, ``exec``."""
    lines: int | None
    bytes: int | None
    unscanned_bytes: int | None
    tail: list[str]
    captured: bool | None
    reason: str | None
    """Why it was not captured."""


class Frame(TypedDict, total=False):
    """One frame of a Python traceback the child printed."""

    file: str | None
    line: int | None
    function: str | None
    code: str | None
    """The source line Python printed under it."""
    names: list[str]
    """Config keys and option names standing in that function's code (``launch.frame_names``)."""


class Traceback(TypedDict, total=False):
    """A complete Python traceback the child printed."""

    type: str | None
    message: str | None
    frames: list[Frame]


class LogFile(TypedDict, total=False):
    """The ``--log`` file the child's whole output went to."""

    path: str | None
    sha256: str | None
    bytes: int | None


class PeakRss(TypedDict, total=False):
    """How ``peak_rss_bytes`` was measured."""

    how: str | None
    samples: int | None
    interval_s: float | None


class OutcomeSection(TypedDict, total=False):
    """``[outcome]``: how the launch ended, written when the child ends."""

    errors: Errors
    status: str | None
    """``exited``, ``signalled``, ``not_found``, ``not_executable``, ``failed``."""
    exit_status: int | None
    signal: str | None
    signal_number: int | None
    error: str | None
    started_at: str | None
    ended_at: str | None
    duration_s: float | None
    pid: int | None
    peak_rss_bytes: int | None
    tail_lines: int | None
    first_error: str | None
    first_error_stream: str | None
    warnings: list[str]
    warnings_count: int | None
    metrics: Annotated[dict[str, float], Doc(
        "The last value of each key=value / key: value number the run printed, and of each "
        "--metric (runsnap/launch/metrics.py).")]
    timed_out: bool | None
    stdout: Annotated[Stream, Ref("stream")]
    stderr: Annotated[Stream, Ref("stream")]
    log: LogFile
    peak_rss: PeakRss
    traceback: Traceback
    earlier_tracebacks: list[Traceback]
    """Complete tracebacks printed before the last one (a worker's, then its launcher's)."""


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
    """``git diff --stat`` when the diff is over the cap (the diff keeps its first 64 KiB)."""
    untracked_count: int | None
    roles: list[str]
    errors: Errors
    remotes: dict[str, str | None]
    changed: list[RepoChange]
    untracked: list[UntrackedFile]
    submodules: list[Submodule]


class ModelConfig(TypedDict, total=False):
    """The fields of a model's ``config.json`` that runsnap reads itself."""

    architectures: list[str] | None
    model_type: str | None
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

    id: str
    """The snapshot's own id."""
    captured_at: str
    """When the capture began (UTC, ISO 8601)."""


class MetaSection(_MetaKeys, total=False):
    """``[meta]``: who captured what, when, and how the capture went."""

    label: str | None
    host: str | None
    runsnap_version: str | None
    fingerprint_key: str | None
    launch: str | None
    launcher: Launcher
    log: str | None
    redacted: list[str]
    collect_ms: dict[str, float]
    track: Annotated[TrackedRun, Doc(
        "The experiment tracker's run that holds this snapshot (capture --track): tracker, run "
        "(mlflow:RUN_ID, wandb:...), where (its page or folder), errors (why it is not tracked, "
        "or not completely).")]


class Distribution(TypedDict, total=False):
    """One installed distribution."""

    version: str | None
    location: str | None
    editable: bool | None
    source: str | None
    metadata_dir: str | None
    direct_url: dict[str, Any]
    shadowed_by: str | None


class TorchBuild(TypedDict, total=False):
    """How the installed torch was built (``torch.__config__``)."""

    version: str
    path: str
    git_version: str
    debug: bool
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


class Builds(TypedDict, total=False):
    """Build facts of packages whose build matters (other packages: free-form)."""

    torch: TorchBuild


class Conda(TypedDict, total=False):
    """The conda environment's own package list."""

    packages: dict[str, dict[str, Any] | None] | None
    prefix: str | None
    count: int | None


class PackagesSection(TypedDict, total=False):
    """``[packages]``: the child's interpreter and what it can import."""

    errors: Errors
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
    """The package probe's exit status when it failed."""
    sys_path: list[str]
    shadowed: list[dict[str, Any]]
    distributions: dict[str, Distribution]
    builds: Annotated[Builds, Extra(dict[str, Any])]
    libraries: dict[str, dict[str, Any]]
    conda: Conda | None


class GitSection(TypedDict, total=False):
    """``[git]``: the repositories in play."""

    errors: Errors
    repos: dict[str, Annotated[GitRepo, Ref("repo")]]
    not_repositories: list[str]


class ModelsSection(TypedDict, total=False):
    """``[models]``: the model directories and Hugging Face repos in play."""

    errors: Errors
    models: dict[str, Annotated[ModelEntry, Ref("model")]]




class TestResult(TypedDict, total=False):
    """One test of a pytest session (``runsnap/pytestplugin``), keyed by its node id."""

    outcome: str | None
    """``passed``, ``failed``, ``error`` (in setup or teardown), ``skipped``, ``xfailed``,
    ``xpassed``."""
    error: str | None
    """The first line of its error (failed, error), or why it was skipped or expected to fail."""
    duration_s: float | None
    """Setup, call and teardown together."""


class TestsSection(TypedDict, total=False):
    """``[tests]``: each test's outcome in a pytest session run with ``--runsnap``
    (docs/pytest.md): the session's behaviour, as ``[outcome]`` is a launch's."""

    errors: Errors
    runner: str | None
    """``pytest 8.3.2`` (with ``xdist, N workers`` when pytest-xdist ran it)."""
    counts: dict[str, int]
    """Outcome -> how many tests had it."""
    cases: dict[str, TestResult]
    """Node id (``tests/test_x.py::test_y[param]``) -> the test's outcome."""


#: Section name -> its declaration.
DECLARED: dict[str, type] = {
    "meta": MetaSection, "command": CommandSection, "env": EnvSection,
    "packages": PackagesSection, "git": GitSection, "models": ModelsSection,
    "system": SystemSection, "process": ProcessSection, "outcome": OutcomeSection,
    "runtime": RuntimeSection, "tests": TestsSection,
}

#: Shared definitions (``$defs``) declared here -> their declaration.
DEFS: dict[str, type] = {"stream": Stream, "repo": GitRepo, "model": ModelEntry}

_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number",
               type(None): "null", list: "array", dict: "object"}


def schema_of(shape: Any) -> dict[str, Any]:
    """The JSON Schema (as ``schema.json`` writes it) of a declared type.

    >>> schema_of(EnvSection)["properties"]["vars"]
    {'type': 'object', 'additionalProperties': {'type': ['string', 'null']}}
    >>> schema_of(dict[str, Any] | None)
    {'type': ['object', 'null']}
    """
    origin, args = typing.get_origin(shape), typing.get_args(shape)
    if origin is Annotated:
        marks = shape.__metadata__
        ref = next((m for m in marks if isinstance(m, Ref)), None)
        out: dict[str, Any] = {"$ref": f"#/$defs/{ref.name}"} if ref is not None else schema_of(args[0])
        for mark in marks:
            if isinstance(mark, Doc):
                out["description"] = mark.text
            elif isinstance(mark, Minimum):
                out["minimum"] = mark.least
            elif isinstance(mark, Extra):
                out["additionalProperties"] = schema_of(mark.shape)
        return out
    if typing.is_typeddict(shape):
        hints = typing.get_type_hints(shape, include_extras=True)
        out = {"type": "object", "properties": {k: schema_of(v) for k, v in hints.items()}}
        required = sorted(getattr(shape, "__required_keys__", ()))
        if required:
            out["required"] = required
        return out
    if origin in (Union, types.UnionType):
        out = {"type": []}
        for member in args:  # one type a member; what else a member says is merged in
            part = schema_of(member)
            out["type"].append(part.pop("type"))
            out.update(part)
        return out
    if shape is Any:
        return {}
    if origin is list:
        return {"type": "array", **({} if args[0] is Any else {"items": schema_of(args[0])})}
    if origin is dict:
        return {"type": "object",
                **({} if args[1] is Any else {"additionalProperties": schema_of(args[1])})}
    return {"type": _JSON_TYPES[shape]}


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
