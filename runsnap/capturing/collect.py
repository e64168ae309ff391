"""Build the context, run the collectors, redact, and return (or save) the snapshot.

:func:`run` is the whole capture journey: snapshot saved *before* the child starts, the child
run by :mod:`runsnap.launch`, then the same file rewritten atomically with ``[outcome]``.
Every section, the outcome included, goes through one redaction step (:func:`with_section`).
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import time

from runsnap._paths import path_str
from runsnap._plain import FrozenRecord
from runsnap._version import __version__
from runsnap.context import DEFAULT_MAX_DIFF_BYTES, CaptureContext, check_python
from runsnap.redact import FingerprintKey, Redactor, load_key, load_policy
from runsnap.snapshot import SCHEMA_VERSION, Snapshot

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from runsnap.launch import LaunchResult, LaunchSpec

__all__ = [
    "RunRecord",
    "build_context",
    "capture",
    "capture_pid",
    "default_output",
    "ensure_snapshot_dir",
    "launch_spec",
    "resolve_output",
    "run",
    "snapshot_from_context",
    "with_section",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def build_context(
    argv: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    label: str = "",
    repos: Sequence[str] = (),
    models: Sequence[str] = (),
    python: str | None = None,
    max_diff_bytes: int = DEFAULT_MAX_DIFF_BYTES,
) -> CaptureContext:
    """A :class:`CaptureContext` for a child launched with ``argv`` in ``cwd`` with ``env``.

    Raises :class:`~runsnap.errors.UsageError` when ``python`` is missing or not Python.
    """
    env = dict(os.environ if env is None else env)
    where = os.path.abspath(os.fspath(cwd) if cwd is not None else os.getcwd())
    if python:
        python = check_python(python, where, env)
    return CaptureContext(
        argv=tuple(argv),
        env=env,
        cwd=where,
        label=label,
        repos=tuple(repos),
        models=tuple(models),
        python=python,
        max_diff_bytes=max_diff_bytes,
    )


def _uuid4_hex() -> str:
    """A random (version 4) UUID as 32 hex digits, as ``uuid.uuid4().hex`` gives it.

    Built here from 16 random bytes: importing :mod:`uuid` costs every capture ~3 ms of CPU (it
    imports :mod:`platform`). Version 4 and the RFC 4122 variant are set as uuid4 sets them.
    """
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4 in the high nibble of byte 6
    raw[8] = (raw[8] & 0x3F) | 0x80  # variant 10xx in the top bits of byte 8
    return raw.hex()


def snapshot_from_context(
    ctx: CaptureContext,
    *,
    key: FingerprintKey | None = None,
    extra: Mapping[str, Mapping[str, Any]] | None = None,
    redactor: Redactor | None = None,
) -> Snapshot:
    """Run every collector over ``ctx``; a failing collector becomes an entry in its ``errors``.

    ``extra`` sections (``[process]`` of ``capture --pid``) join the collected ones and go
    through the same redaction; ``key`` is the fingerprint key (default: this user's);
    ``redactor`` one made for this capture (it then remembers the secrets it redacted, so the
    outcome written later hides them too).
    """
    from runsnap.collectors import REGISTRY, start
    from runsnap.collectors.system import hostname

    start(ctx)  # the probe, git and nvidia-smi run side by side while the others work
    if redactor is None:
        if key is None:
            key = load_key()  # runsnap's own user and environment, not the child's
        redactor = Redactor(key, load_policy(ctx.cwd))
    key = redactor.key
    sections: dict[str, dict[str, Any]] = {}
    timings: dict[str, float] = {}
    for name, collector in REGISTRY.items():
        t0 = time.perf_counter()
        try:
            section = collector(ctx)
        except Exception as exc:  # a collector never fails the capture
            section = {"errors": [f"{name} collector failed: {type(exc).__name__}: {exc}"]}
        section.setdefault("errors", [])
        timings[name] = round((time.perf_counter() - t0) * 1000, 2)
        # Redacted section by section (the same pass), so it overlaps the programs still running.
        sections.update(redactor.sections({name: section}))
    for name, extra_section in (extra or {}).items():
        sections.update(redactor.sections(
            {name: {**extra_section, "errors": list(extra_section.get("errors", []))}}))
    meta = redactor.sections({"meta": {
        "runsnap_version": __version__,
        "captured_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds"),
        "label": ctx.label,
        "host": hostname(),
        "id": _uuid4_hex(),
        "fingerprint_key": key.id,
        "collect_ms": timings,
    }})["meta"]
    meta["redacted"] = sorted(set(redactor.redacted))
    return Snapshot(meta=meta, sections=sections, schema=SCHEMA_VERSION)


def capture(
    argv: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    label: str = "",
    repos: Sequence[str] = (),
    models: Sequence[str] = (),
    python: str | None = None,
    max_diff_bytes: int = DEFAULT_MAX_DIFF_BYTES,
    output: str | os.PathLike[str] | None = None,
    redact: Sequence[str] = (),
    keep: Sequence[str] = (),
) -> Snapshot:
    """Snapshot the context of a launch of ``argv`` (nothing is run); save it if ``output``.

    ``env`` defaults to this process's environment and ``cwd`` to the current directory: the
    child would inherit both. Secrets are replaced with fingerprints before anything is kept.
    """
    ctx = build_context(
        argv, env=env, cwd=cwd, label=label, repos=repos, models=models, python=python,
        max_diff_bytes=max_diff_bytes,
    )
    redactor = Redactor(load_key(), load_policy(ctx.cwd, redact, keep))
    snap = snapshot_from_context(ctx, redactor=redactor)
    if output is not None:
        snap = snap.save(output)
    return snap


def default_output(snapshot: Snapshot, cwd: str | os.PathLike[str] | None = None) -> str:
    """``.runsnap/<UTC timestamp>-<label or command name>.toml`` under ``cwd``.

    >>> default_output(Snapshot(meta={"captured_at": "2026-11-29T16:14:35.123+00:00",
    ...     "label": "good run"}, sections={}), "/w")
    '/w/.runsnap/20261129T161435.123Z-good-run.toml'
    """
    stamp = str(snapshot.meta.get("captured_at", ""))
    stamp = stamp.replace("-", "").replace(":", "").replace("+0000", "Z")
    argv = snapshot.get("command", {}).get("argv") or []
    name = snapshot.label or (os.path.basename(argv[0]) if argv else "context")
    if not snapshot.label and len(argv) > 2 and argv[1] == "-m":
        name = argv[2]  # python -m sglang.launch_server -> sglang.launch_server
    name = _UNSAFE.sub("-", name).strip("-")[:60] or "run"
    base = os.fspath(cwd) if cwd is not None else os.getcwd()
    return path_str(os.path.join(base, ".runsnap", f"{stamp}-{name}.toml"))


def capture_pid(
    pid: int,
    *,
    label: str = "",
    repos: Sequence[str] = (),
    models: Sequence[str] = (),
    python: str | None = None,
    max_diff_bytes: int = DEFAULT_MAX_DIFF_BYTES,
    output: str | os.PathLike[str] | None = None,
    redact: Sequence[str] = (),
    keep: Sequence[str] = (),
) -> Snapshot:
    """Snapshot the process ``pid`` that is already running: its argv, environment and cwd go
    through every collector, and ``[process]`` records what only a live process shows.

    Raises :class:`~runsnap.errors.ProcessError` when it does not exist or cannot be read.
    """
    from runsnap.process import context_for_pid

    if python:
        python = check_python(python, os.getcwd(), os.environ)
    ctx, section = context_for_pid(
        pid, label=label, repos=tuple(repos), models=tuple(models), python=python,
        max_diff_bytes=max_diff_bytes,
    )
    redactor = Redactor(load_key(), load_policy(ctx.cwd, redact, keep))
    snap = snapshot_from_context(ctx, extra={"process": section}, redactor=redactor)
    snap = snap.replace(meta={**snap.meta, "launch": "pid"})
    if output is not None:
        snap = snap.save(output)
    return snap


def with_section(
    snapshot: Snapshot, name: str, section: Mapping[str, Any], key: FingerprintKey,
    redactor: Redactor | None = None,
) -> Snapshot:
    """``snapshot`` with section ``name`` added or replaced, after the same redaction pass.

    The one way a section joins an existing snapshot (the outcome after the child ran), so
    nothing reaches the disk unredacted; where something was redacted is added to
    ``meta.redacted``. ``key`` must be the key the snapshot was made with; ``redactor``, the
    capture's own, also hides the secrets it redacted before wherever they reappear.
    """
    if redactor is None:
        redactor = Redactor(key)
    redactor.redacted = []
    clean = redactor.sections({name: section})[name]
    meta = dict(snapshot.meta)
    if redactor.redacted:
        meta["redacted"] = sorted(set(meta.get("redacted") or ()) | set(redactor.redacted))
    return snapshot.replace(meta=meta, sections={**snapshot.sections, name: clean})


def resolve_output(
    snapshot: Snapshot,
    output: str | os.PathLike[str] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
) -> str:
    """Where to write ``snapshot``: ``output`` if given, else :func:`default_output`'s name in
    ``out_dir`` (or ``./.runsnap``), that folder made ready by :func:`ensure_snapshot_dir`."""
    if output:
        return path_str(output)
    target = default_output(snapshot)
    if out_dir:
        target = path_str(os.path.join(out_dir, os.path.basename(target)))
    ensure_snapshot_dir(os.path.dirname(target), ours=not out_dir)
    return target


#: What runsnap writes into a snapshot folder it creates: git, and tools that read
#: ``.gitignore``, then never see snapshots (the convention of virtualenv and pytest's cache).
GITIGNORE = "# created by runsnap: snapshots are not part of the project\n*\n"


def ensure_snapshot_dir(folder: str, ours: bool = False) -> None:
    """Create ``folder`` with a ``.gitignore`` holding ``*`` when runsnap creates it; the
    default ``.runsnap`` folder (``ours``) gets one even when it already exists without."""
    created = not os.path.isdir(folder)
    if created:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError:
            return  # the save reports it, with the file's name
    ignore = os.path.join(folder, ".gitignore")
    if (created or ours) and not os.path.lexists(ignore):
        try:
            with open(ignore, "x", encoding="utf-8") as fh:
                fh.write(GITIGNORE)
        except OSError:
            pass  # a read-only folder still takes no snapshot; the save says why


def launch_spec(ctx: CaptureContext) -> LaunchSpec:
    """What is launched for the recorded context ``ctx``: its argv, cwd and environment exactly,
    and the interpreter when the child itself is Python. Tracing, replay and bisect derive
    their launches from such a spec; the snapshot keeps recording ``ctx``."""
    from runsnap.launch import LaunchSpec

    interpreter = ctx.interpreter if ctx.argv else None
    return LaunchSpec(argv=tuple(ctx.argv), cwd=ctx.cwd, env=dict(ctx.env),
                      python=interpreter.path if interpreter and interpreter.runs_child else None)


class RunRecord(FrozenRecord):
    """What :func:`run` did: the final snapshot, the exit status to use, and the raw result."""

    snapshot: Snapshot
    """The snapshot as last written (with ``[outcome]`` unless ``--exec`` succeeded)."""

    exit_status: int
    """The child's status, 128+N when killed by signal N, 127 not found, 126 not runnable."""

    result: LaunchResult
    """What :mod:`runsnap.launch` saw."""

    errors: tuple[str, ...] = ()
    """Problems of runsnap's own that did not change the exit status (outcome not written)."""


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    label: str = "",
    repos: Sequence[str] = (),
    models: Sequence[str] = (),
    python: str | None = None,
    max_diff_bytes: int = DEFAULT_MAX_DIFF_BYTES,
    output: str | os.PathLike[str] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    tail_lines: int | None = None,
    log: str | os.PathLike[str] | None = None,
    inherit_tty: bool = False,
    kill_grace: float | None = None,
    exec_: bool = False,
    on_saved: Callable[[Snapshot], None] | None = None,
    timeout: float | None = None,
    redact: Sequence[str] = (),
    keep: Sequence[str] = (),
) -> RunRecord:
    """Snapshot the launch of ``argv``, save it, run it, and rewrite the file with its outcome.

    The snapshot is on disk before the child starts (``on_saved`` is called then), so a launch
    that hangs or takes the machine down still leaves it. With ``exec_`` runsnap replaces itself
    with the child after saving and this function only returns when that failed. ``timeout``:
    seconds after which the child is stopped (its outcome then says ``timed_out``). Raises
    :class:`~runsnap.errors.CaptureError` when the snapshot or the log cannot be written.
    """
    from runsnap import launch, outcome
    from runsnap.errors import CaptureError

    if not argv:
        raise CaptureError("nothing to run: give the command after --")
    tail = outcome.DEFAULT_TAIL_LINES if tail_lines is None else tail_lines
    grace = launch.DEFAULT_KILL_GRACE if kill_grace is None else kill_grace
    ctx = build_context(
        argv, env=env, cwd=cwd, label=label, repos=repos, models=models, python=python,
        max_diff_bytes=max_diff_bytes,
    )
    key = load_key()  # runsnap's own user and environment, as in every capture
    redactor = Redactor(key, load_policy(ctx.cwd, redact, keep))
    tee = None
    if log is not None:
        try:
            tee = launch.LogTee(log, line_filter=redactor.line_filter())
        except OSError as exc:
            raise CaptureError(f"cannot write the log {log}: {exc.strerror or exc}") from None
    snap = snapshot_from_context(ctx, redactor=redactor)
    meta = {**snap.meta, "launch": "exec" if exec_ else "wrapped"}
    if tee is not None:
        meta["log"] = tee.path
    snap = snap.replace(meta=meta)
    target = resolve_output(snap, output, out_dir)
    snap = snap.save(target)
    if on_saved is not None:
        on_saved(snap)

    final = snap
    errors: list[str] = []

    def write_outcome(result: LaunchResult) -> None:
        nonlocal final
        section = outcome.build(result, tail_lines=tail)
        try:
            final = with_section(snap, "outcome", section, key, redactor).save(target)
        except CaptureError as exc:
            errors.append(f"the outcome was not written: {exc}")

    spec = launch_spec(ctx)
    if exec_:
        result = launch.exec_child(spec)
        write_outcome(result)  # only reached when exec failed
    else:
        result = launch.run(spec, timeout=timeout, tail_lines=tail, log=tee,
                            inherit_tty=inherit_tty, kill_grace=grace, on_exit=write_outcome)
    return RunRecord(final, result.exit_status, result, tuple(errors))
