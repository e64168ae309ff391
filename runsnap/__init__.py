"""runsnap: snapshot the whole context of a launch, and say why two runs differ.

The public API::

    import runsnap
    snap = runsnap.capture(["python", "-m", "sglang.launch_server", ...], label="good")
    snap.save("good.toml")
    record = runsnap.run(["python", "-m", "sglang.launch_server", ...], output="run.toml")
    record.exit_status, record.snapshot["outcome"]["first_error"]
    same = runsnap.load("good.toml") == snap
    report = runsnap.diff("good.toml", "bad.toml")   # bool(report): any difference that counts
    report = runsnap.diff("@good", "@1")             # by label, by position (newest: @1)
    answer = runsnap.bisect(runsnap.load("@good"), runsnap.load("@bad"))  # launches trials
    verdict = runsnap.why()                          # the newest run's proven cause
    print(runsnap.render_markdown(report))           # or render_text / render_json
    for entry in runsnap.list_snapshots(".runsnap"): # what `runsnap ls` lists, newest first
        print(entry.ref, entry.label, entry.exit_status)
    print(runsnap.render_text(runsnap.load("@1")))   # what `runsnap show` prints

Everything here is imported lazily, so ``import runsnap`` (and ``runsnap --version``) stays cheap.
The modules behind ``capture`` and ``diff`` are ``runsnap.capturing`` and ``runsnap.diffing``: a
submodule named like a function would replace that function on the package once imported.
"""

from __future__ import annotations

from runsnap._version import __version__
from runsnap.base.lazy import lazy_names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.capturing import capture, capture_pid, run
    from runsnap.diffing import Difference, Report
    from runsnap.errors import RunsnapError, SnapshotError
    from runsnap.experiments.bisecting import bisect
    from runsnap.experiments.explaining import why
    from runsnap.render import FORMATS, render_json, render_markdown, render_text
    from runsnap.snapshot import SCHEMA_VERSION, Snapshot
    from runsnap.snapshot.store import Entry, list_snapshots
    from runsnap.views.compare import diff
    from runsnap.views.names import load

__all__ = [
    "FORMATS",
    "SCHEMA_VERSION",
    "Entry",
    "Difference",
    "Report",
    "RunsnapError",
    "Snapshot",
    "SnapshotError",
    "__version__",
    "bisect",
    "capture",
    "diff",
    "capture_pid",
    "list_snapshots",
    "load",
    "render_json",
    "render_markdown",
    "render_text",
    "run",
    "why",
]

_LAZY = {
    "capture": "runsnap.capturing",
    "bisect": "runsnap.experiments.bisecting",
    "why": "runsnap.experiments.explaining",
    "diff": "runsnap.views.compare",
    "Difference": "runsnap.diffing",
    "Report": "runsnap.diffing",
    "capture_pid": "runsnap.capturing",
    "run": "runsnap.capturing",
    "load": "runsnap.views.names",
    "list_snapshots": "runsnap.snapshot.store",
    "Entry": "runsnap.snapshot.store",
    "FORMATS": "runsnap.render",
    "render_text": "runsnap.render",
    "render_markdown": "runsnap.render",
    "render_json": "runsnap.render",
    "Snapshot": "runsnap.snapshot",
    "SCHEMA_VERSION": "runsnap.snapshot",
    "RunsnapError": "runsnap.errors",
    "SnapshotError": "runsnap.errors",
}


__getattr__ = lazy_names(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    """The public names too (they are loaded lazily), so completion in IPython and editors
    offers them."""
    return sorted(set(globals()) | set(__all__))
