"""Build the context, run the collectors, redact, and return (or save) the snapshot."""

from __future__ import annotations

import datetime as _dt
import os
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runsnap._version import __version__
from runsnap.context import DEFAULT_MAX_DIFF_BYTES, CaptureContext
from runsnap.redact import Redactor, load_key
from runsnap.snapshot import SCHEMA_VERSION, Snapshot

__all__ = ["build_context", "capture", "default_output", "snapshot_from_context"]

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
    """A :class:`CaptureContext` for a child launched with ``argv`` in ``cwd`` with ``env``."""
    return CaptureContext(
        argv=tuple(argv),
        env=dict(os.environ if env is None else env),
        cwd=os.path.abspath(os.fspath(cwd) if cwd is not None else os.getcwd()),
        label=label,
        repos=tuple(repos),
        models=tuple(models),
        python=python,
        max_diff_bytes=max_diff_bytes,
    )


def snapshot_from_context(ctx: CaptureContext) -> Snapshot:
    """Run every collector over ``ctx``; a failing collector becomes an entry in its ``errors``."""
    from runsnap.collectors import REGISTRY, start
    from runsnap.collectors.system import hostname

    start(ctx)  # the probe, git and nvidia-smi run side by side while the others work
    key = load_key()  # runsnap's own user and environment, not the child's
    redactor = Redactor(key)
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
    meta = {
        "runsnap_version": __version__,
        "captured_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds"),
        "label": ctx.label,
        "host": hostname(),
        "id": uuid.uuid4().hex,
        "fingerprint_key": key.id,
        "redacted": sorted(set(redactor.redacted)),
        "collect_ms": timings,
    }
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
) -> Snapshot:
    """Snapshot the context of a launch of ``argv`` (nothing is run); save it if ``output``.

    ``env`` defaults to this process's environment and ``cwd`` to the current directory: the
    child would inherit both. Secrets are replaced with fingerprints before anything is kept.
    """
    ctx = build_context(
        argv, env=env, cwd=cwd, label=label, repos=repos, models=models, python=python,
        max_diff_bytes=max_diff_bytes,
    )
    snap = snapshot_from_context(ctx)
    if output is not None:
        snap = snap.save(output)
    return snap


def default_output(snapshot: Snapshot, cwd: str | os.PathLike[str] | None = None) -> Path:
    """``.runsnap/<UTC timestamp>-<label or command name>.toml`` under ``cwd``.

    >>> default_output(Snapshot(meta={"captured_at": "2026-11-29T16:14:35.123+00:00",
    ...     "label": "good run"}, sections={}), "/w").as_posix()
    '/w/.runsnap/20261129T161435.123Z-good-run.toml'
    """
    stamp = str(snapshot.meta.get("captured_at", ""))
    stamp = stamp.replace("-", "").replace(":", "").replace("+0000", "Z")
    argv = snapshot.get("command", {}).get("argv") or []
    name = snapshot.label or (os.path.basename(argv[0]) if argv else "context")
    if not snapshot.label and len(argv) > 2 and argv[1] == "-m":
        name = argv[2]  # python -m sglang.launch_server -> sglang.launch_server
    name = _UNSAFE.sub("-", name).strip("-")[:60] or "run"
    base = Path(cwd if cwd is not None else os.getcwd()) / ".runsnap"
    return base / f"{stamp}-{name}.toml"
