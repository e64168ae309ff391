"""The capture journey: the context (what is recorded), the collectors run over it, redaction,
the snapshot saved; for a wrapped run, the launch specification (what is launched) and the
outcome.

The modules: :mod:`~runsnap.capturing.context` (the capture context: argv, environment, cwd,
the child's interpreter, the package probe), :mod:`~runsnap.capturing.collect` (collectors,
redaction, the snapshot), :mod:`~runsnap.capturing.options` (what a capture is asked to do, one
record), :mod:`~runsnap.capturing.output` (where snapshots go),
:mod:`~runsnap.capturing.wrapped` (snapshot, launch, outcome; its launch half in
:mod:`~runsnap.capturing.launching`), :mod:`~runsnap.capturing.process`
(``--pid``: a process already running), :mod:`~runsnap.capturing.naming` (who a snapshot is in
a job: host, rank, launcher).
"""

from __future__ import annotations

from runsnap.base.lazy import lazy_names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.capturing.collect import (
        build_context,
        capture,
        capture_context,
        capture_pid,
        capture_process,
        snapshot_from_context,
        with_meta,
        with_section,
    )
    from runsnap.capturing.options import CaptureOptions
    from runsnap.capturing.output import (
        GITIGNORE,
        default_output,
        ensure_snapshot_dir,
        resolve_output,
        save_first,
    )
    from runsnap.capturing.wrapped import RunRecord, launch_spec, run, run_with

# Each name is imported from its module when first asked for: ``runsnap diff`` reads the
# command-line options (``runsnap.capturing.options``) without the capture journey's modules.
_WHERE = {
    "build_context": "collect", "capture": "collect", "capture_context": "collect",
    "capture_pid": "collect", "capture_process": "collect", "snapshot_from_context": "collect",
    "with_meta": "collect", "with_section": "collect", "CaptureOptions": "options",
    "GITIGNORE": "output", "default_output": "output", "ensure_snapshot_dir": "output",
    "resolve_output": "output", "save_first": "output", "RunRecord": "wrapped",
    "launch_spec": "wrapped", "run": "wrapped", "run_with": "wrapped",
}


__getattr__ = lazy_names(__name__, {n: f"{__name__}.{m}" for n, m in _WHERE.items()}, globals())


__all__ = [
    "GITIGNORE",
    "CaptureOptions",
    "RunRecord",
    "build_context",
    "capture",
    "capture_context",
    "capture_pid",
    "capture_process",
    "default_output",
    "ensure_snapshot_dir",
    "launch_spec",
    "resolve_output",
    "save_first",
    "run",
    "run_with",
    "snapshot_from_context",
    "with_meta",
    "with_section",
]
