"""Build the context, run the collectors, redact, and return (or save) the snapshot.

Every section, the outcome included, goes through one redaction step (:func:`with_section`).
"""

from __future__ import annotations

import os
import time

from runsnap._version import __version__
from runsnap.base.cache import CleanTexts, ScrubbedTexts
from runsnap.base.paths import current_dir
from runsnap.base.pythons import check_python
from runsnap.base.timestamps import utc_timestamp
from runsnap.capturing.collectors import DERIVED, REGISTRY, merge, start
from runsnap.capturing.collectors.system import hostname
from runsnap.capturing.context import CaptureContext
from runsnap.capturing.options import DEFAULT_MAX_DIFF_BYTES, CaptureOptions
from runsnap.knowledge.launchers import detect
from runsnap.redact import FingerprintKey, Redactor, load_key, load_policy
from runsnap.snapshot import SCHEMA_VERSION, Snapshot

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any


__all__ = ["build_context", "capture", "capture_context", "capture_pid", "capture_process",
           "capture_redactor", "snapshot_from_context", "with_meta", "with_section"]

def build_context(
    argv: Sequence[str] = (),
    options: CaptureOptions | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> CaptureContext:
    """A :class:`CaptureContext` for a child launched with ``argv`` in ``cwd`` with ``env``, as
    ``options`` ask.

    Raises :class:`~runsnap.errors.UsageError` when ``options.python`` is missing or not Python.
    """
    options = CaptureOptions() if options is None else options
    env = dict(os.environ if env is None else env)
    where = os.path.abspath(os.fspath(cwd) if cwd is not None else current_dir())
    if options.python:
        options = options.replace(python=check_python(options.python, where, env))
    return CaptureContext(argv=tuple(argv), env=env, cwd=where, options=options)


def capture_redactor(key: FingerprintKey, cwd: str, redact: Sequence[str] = (),
                     keep: Sequence[str] = ()) -> Redactor:
    """The redactor of one capture: the user's policy (``redact``/``keep`` and the project's
    settings found from ``cwd``), and the cache of large texts scrubbed before."""
    return Redactor(key, load_policy(cwd, redact, keep), ScrubbedTexts(), CleanTexts())


def _uuid4_hex() -> str:
    """A random (version 4) UUID as 32 hex digits, as ``uuid.uuid4().hex`` gives it.

    Built here from 16 random bytes: :mod:`uuid` imports :mod:`platform`, which the capture
    path otherwise never needs (its cost: benchmarks/RESULTS.md). Version 4 and the RFC 4122
    variant are set as uuid4 sets them.
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

    start(ctx)  # the probe, git and nvidia-smi run side by side while the others work
    if redactor is None:
        if key is None:
            key = load_key()  # runsnap's own user and environment, not the child's
        redactor = capture_redactor(key, ctx.cwd)
    key = redactor.key
    sections: dict[str, dict[str, Any]] = {}
    timings: dict[str, float] = {}
    for name, collector in REGISTRY.items():
        t0 = time.perf_counter()
        try:
            section = {"errors": [], **collector(ctx)}
        except Exception as exc:  # a collector never fails the capture
            section = {"errors": [f"{name} collector failed: {type(exc).__name__}: {exc}"]}
        timings[name] = round((time.perf_counter() - t0) * 1000, 2)
        # Secrets found section by section (the first pass), so it overlaps the programs still
        # running; replaced everywhere once every section is in (the second pass, below).
        parent = name.partition(".")[0]
        clean = redactor.find({parent: section}, remember=True)[parent]
        if parent != name:  # a part of a section (``system.gpu``): see collectors.merge
            merge(sections.setdefault(parent, {"errors": []}), name, clean)
        else:
            sections[name] = clean
    for name, derive in DERIVED.items():
        t0 = time.perf_counter()
        try:
            part = derive(ctx, sections)
        except Exception as exc:  # an inference never fails the capture either
            part = {"errors": [f"{name} failed: {type(exc).__name__}: {exc}"]}
        timings[name] = round((time.perf_counter() - t0) * 1000, 2)
        parent = name.partition(".")[0]
        merge(sections.setdefault(parent, {"errors": []}), name,
              redactor.find({parent: {"errors": [], **part}}, remember=True)[parent])
    for name, extra_section in (extra or {}).items():
        sections.update(redactor.find(
            {name: {**extra_section, "errors": list(extra_section.get("errors", []))}}))
    meta = redactor.find({"meta": {
        "runsnap_version": __version__,
        "captured_at": utc_timestamp(time.time()),
        "label": ctx.label,
        "host": hostname(),
        "id": _uuid4_hex(),
        "fingerprint_key": key.id,
        "collect_ms": timings,
        **_launcher(ctx.env),
    }})["meta"]
    sections, meta = redactor.finish(sections), redactor.finish(meta, "meta")
    meta["redacted"] = sorted(set(redactor.redacted))
    redactor.save_clean()
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
    started: Mapping[str, Any] | None = None,
) -> Snapshot:
    """Snapshot the context of a launch of ``argv`` (nothing is run); save it if ``output``.

    ``env`` defaults to this process's environment and ``cwd`` to the current directory: the
    child would inherit both. Secrets are replaced with fingerprints before anything is kept.
    ``started``: work begun early for this capture (``{"git": runsnap.capturing.collectors.git.
    prestart(...)}``), taken over when it suits. The other keywords are
    :class:`~runsnap.capturing.options.CaptureOptions`' fields (:func:`capture_context`).
    """
    options = CaptureOptions.of(label=label, repos=repos, models=models, python=python,
                                max_diff_bytes=max_diff_bytes, output=output, redact=redact,
                                keep=keep, started=started)
    return capture_context(argv, options, env=env, cwd=cwd)


def capture_context(argv: Sequence[str], options: CaptureOptions, *,
                    env: Mapping[str, str] | None = None,
                    cwd: str | os.PathLike[str] | None = None) -> Snapshot:
    """:func:`capture` with its options as one record."""
    ctx = build_context(argv, options, env=env, cwd=cwd)
    redactor = capture_redactor(load_key(), ctx.cwd, options.redact, options.keep)
    snap = snapshot_from_context(ctx, redactor=redactor)
    if options.output is not None:
        snap = snap.save(options.output)
    return snap


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
    return capture_process(pid, CaptureOptions.of(
        label=label, repos=repos, models=models, python=python, max_diff_bytes=max_diff_bytes,
        output=output, redact=redact, keep=keep))


def capture_process(pid: int, options: CaptureOptions) -> Snapshot:
    """:func:`capture_pid` with its options as one record."""
    # deferred: capturing.process imports psutil (~50 ms measured under load): only for --pid
    from runsnap.capturing.process import context_for_pid

    if options.python:
        options = options.replace(python=check_python(options.python, current_dir(), os.environ))
    ctx, section = context_for_pid(pid, options)
    redactor = capture_redactor(load_key(), ctx.cwd, options.redact, options.keep)
    snap = snapshot_from_context(ctx, extra={"process": section}, redactor=redactor)
    snap = snap.replace(meta={**snap.meta, "launch": "pid"})
    if options.output is not None:
        snap = snap.save(options.output)
    return snap


def with_section(
    snapshot: Snapshot, name: str, section: Mapping[str, Any], key: FingerprintKey,
    redactor: Redactor | None = None, after: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Snapshot:
    """``snapshot`` with section ``name`` added or replaced, after the same redaction pass.

    The one way a section joins an existing snapshot (the outcome after the child ran), so
    nothing reaches the disk unredacted; where something was redacted is added to
    ``meta.redacted``. ``key`` must be the key the snapshot was made with; ``redactor``, the
    capture's own, also hides the secrets it redacted before wherever they reappear.
    ``after`` is applied to the redacted section (cutting texts to their lengths: a secret is
    hidden whole before it is cut).
    """
    if redactor is None:
        redactor = Redactor(key)
    redactor.redacted = []
    before = redactor.known.version
    clean = redactor.sections({name: section})[name]
    if after is not None:
        clean = after(clean)
    others = {n: s for n, s in snapshot.sections.items() if n != name}
    meta = dict(snapshot.meta)
    if redactor.known.version != before:
        # a secret first found here (a password the child printed) is hidden wherever else it
        # stands in the snapshot too
        others, meta = redactor.finish(others), redactor.finish(meta, "meta")
    _note_redacted(meta, redactor)
    return snapshot.replace(meta=meta, sections={**snapshot.sections, **others, name: clean})


def with_meta(snapshot: Snapshot, extra: Mapping[str, Any], redactor: Redactor) -> Snapshot:
    """``snapshot`` with the entries ``extra`` added to (or replacing) its ``[meta]``, after the
    same redaction as every section; what was redacted joins ``meta.redacted``."""
    redactor.redacted = []
    clean = redactor.sections({"meta": dict(extra)})["meta"]
    meta = {**snapshot.meta, **clean}
    _note_redacted(meta, redactor)
    return snapshot.replace(meta=meta)


def _note_redacted(meta: dict[str, Any], redactor: Redactor) -> None:
    """What ``redactor`` redacted last joins ``meta.redacted`` (sorted, each name once)."""
    if redactor.redacted:
        meta["redacted"] = sorted(set(meta.get("redacted") or ()) | set(redactor.redacted))


def _launcher(env: Mapping[str, str]) -> dict[str, Any]:
    """``{"launcher": {...}}`` when torchrun, Slurm or MPI started this process (the rank, the
    job and the launcher's variables: :func:`runsnap.knowledge.launchers.detect`), else nothing."""
    found = detect(env)
    return {"launcher": found} if found else {}
