"""Run a launch specification: the child's exact environment, cwd and argv; signals; exit
status; output relay and tee; timing; a timeout.

:func:`run` starts the child of a :class:`LaunchSpec` and waits for it; :func:`exec_child`
replaces runsnap with it. Nothing here knows about snapshots: :mod:`runsnap.capturing` writes
the snapshot before calling :func:`run` and the outcome from the :class:`LaunchResult` (inside
``on_exit``, while signals are still held, so a late Ctrl-C cannot interrupt the rewrite).
How streams are wired and signals handled: docs/launch.md,
:mod:`~runsnap.launch.relay` and :mod:`~runsnap.launch.signals`.

The modules: :mod:`~runsnap.launch.spec` (what is launched), :mod:`~runsnap.launch.start`
(starting it, 127/126), :mod:`~runsnap.launch.relay` (pipes, ptys, the log tee),
:mod:`~runsnap.launch.signals` (holding, forwarding, escalating, the timeout),
:mod:`~runsnap.launch.watch` (peak memory), :mod:`~runsnap.launch.supervise` (the run itself),
:mod:`~runsnap.launch.result` (what happened).
"""

from __future__ import annotations

from runsnap.base.lazy import lazy_names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.launch.relay import LogTee
    from runsnap.launch.result import LaunchResult, exit_status_for
    from runsnap.launch.signals import DEFAULT_KILL_GRACE, FORWARDED_SIGNALS, STOP_SIGNALS
    from runsnap.launch.spec import LaunchSpec
    from runsnap.launch.start import exec_child
    from runsnap.launch.supervise import DRAIN_SECONDS, Watch, run

# Each name is imported from its module when first asked for: the diff reads
# ``runsnap.launch.outcome`` and ``runsnap.launch.metrics`` without the launcher's modules.
_WHERE = {
    "LogTee": "relay", "LaunchResult": "result", "exit_status_for": "result",
    "DEFAULT_KILL_GRACE": "signals", "FORWARDED_SIGNALS": "signals", "STOP_SIGNALS": "signals",
    "LaunchSpec": "spec", "exec_child": "start", "DRAIN_SECONDS": "supervise",
    "Watch": "supervise", "run": "supervise",
}


__getattr__ = lazy_names(__name__, {n: f"{__name__}.{m}" for n, m in _WHERE.items()}, globals())


__all__ = [
    "DEFAULT_KILL_GRACE",
    "DRAIN_SECONDS",
    "FORWARDED_SIGNALS",
    "STOP_SIGNALS",
    "LaunchResult",
    "LaunchSpec",
    "LogTee",
    "Watch",
    "exec_child",
    "exit_status_for",
    "run",
]
