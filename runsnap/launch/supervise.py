"""Run the child of a :class:`~runsnap.launch.LaunchSpec`: start it, relay its output, hold
and forward signals, stop it when a timeout expires, and report what happened."""

from __future__ import annotations

import os
import signal
import time

from runsnap.base.records import FrozenRecord
from runsnap.launch import start
from runsnap.launch.relay import Streams, flush_own_streams
from runsnap.launch.result import RSS_INTERVAL, LaunchResult, exit_status_for, utc_now
from runsnap.launch.signals import DEFAULT_KILL_GRACE, SignalGuard, reap_forcefully
from runsnap.launch.streams import DEFAULT_TAIL_LINES
from runsnap.launch.watch import RssSampler

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    import subprocess
    from collections.abc import Callable

    from runsnap.launch.relay import LogTee, Relay
    from runsnap.launch.spec import LaunchSpec

__all__ = ["DRAIN_SECONDS", "Watch", "run"]

#: After the child exits, how long its output may still take to drain (a grandchild that
#: outlives it may hold the pipe open; its output is recorded meanwhile, then handed to a
#: helper that goes on relaying it: :meth:`~runsnap.launch.relay.Relay.hand_off`).
DRAIN_SECONDS = 0.5


class Watch(FrozenRecord):
    """How :func:`run` watches the child: when to stop it, how much of its output to keep,
    which numbers to look for in it."""

    timeout: float | None = None
    """Seconds after which the child is stopped (SIGTERM, then SIGKILL after
    :attr:`kill_grace`); the result then says ``timed_out``."""

    tail_lines: int = DEFAULT_TAIL_LINES
    """Lines of each stream kept for the outcome."""

    kill_grace: float = DEFAULT_KILL_GRACE
    """Seconds between SIGTERM and SIGKILL when the child is stopped."""

    metrics: tuple[tuple[str, re.Pattern[bytes]], ...] = ()
    """The user's own (``--metric NAME=REGEX``, :func:`runsnap.launch.metrics.parse_metric`),
    recorded beside the ``key=value`` ones."""


def run(
    spec: LaunchSpec,
    watch: Watch | None = None,
    *,
    log: LogTee | None = None,
    inherit_tty: bool = False,
    on_exit: Callable[[LaunchResult], None] | None = None,
    on_start: Callable[[LaunchResult], None] | None = None,
) -> LaunchResult:
    """Run ``spec``'s child, relay its output, wait, and report; ``watch`` says how
    (:class:`Watch`).

    ``on_exit`` is called with the finished result while forwarded signals are still held, so
    writing the outcome cannot be interrupted by a late Ctrl-C. ``on_start`` is called once the
    child runs and its output is relayed: work that writing the outcome needs, done while the
    child runs, is not done after it ends.
    """
    watch = watch if watch is not None else Watch()
    result = LaunchResult(argv=spec.argv, log_path=log.path if log is not None else None)
    with SignalGuard() as guard:
        streams = Streams(inherit_tty)
        try:
            result.modes.update(streams.modes)
            flush_own_streams()
            t0 = time.monotonic()
            result.started_at = utc_now()
            try:
                proc = start.popen(spec, streams)
            except OSError as exc:
                result.ended_at = result.started_at
                start.classify_failure(result, exc, spec)
            else:
                how = _How(watch.timeout, watch.tail_lines, log, watch.kill_grace,
                           tuple(watch.metrics), on_start)
                _supervise(proc, result, streams, guard, t0, how)
        finally:
            streams.close()
        if on_exit is not None:
            on_exit(result)
    return result


class _How(FrozenRecord):
    """How :func:`run` was asked to watch the child (its keyword arguments)."""

    timeout: float | None
    tail_lines: int
    log: LogTee | None
    kill_grace: float
    metrics: tuple[tuple[str, re.Pattern[bytes]], ...] = ()
    on_start: Callable[[LaunchResult], None] | None = None


def _supervise(proc: subprocess.Popen[bytes], result: LaunchResult, streams: Streams,
               guard: SignalGuard, t0: float, how: _How) -> None:
    """From a started child to its recorded end (never leaving it running)."""
    timeout, tail_lines, log, kill_grace, metrics = (
        how.timeout, how.tail_lines, how.log, how.kill_grace, how.metrics)
    try:
        result.pid = proc.pid
        guard.hold(*([signal.SIGWINCH] if streams.uses_pty else []))
        relays = streams.start_relays(result, tail_lines, log, metrics)  # threads inherit the mask
        sampler = RssSampler(proc.pid, RSS_INTERVAL)
        sampler.start()
        if how.on_start is not None:
            how.on_start(result)
        status, result.timed_out = guard.wait(proc, kill_grace=kill_grace, relays=relays,
                                              timeout=timeout)
        result.duration_s = time.monotonic() - t0
        result.ended_at = utc_now()
        sampler.stop.set()
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code  # reaped by waitpid; keep Popen's bookkeeping right
        result.exit_status = exit_status_for(code)
        if code < 0:
            result.status, result.signal_number = "signalled", -code
        result.tree_rss_peak, result.rss_samples = sampler.peak, sampler.samples
        _drain(relays, result)
        if log is not None:
            result.log_sha256 = log.close()
            result.log_bytes = log.bytes
            if log.error:
                result.errors.append(log.error)
    finally:
        if proc.returncode is None:  # runsnap itself failed: no orphan
            reap_forcefully(proc)


def _drain(relays: list[Relay], result: LaunchResult) -> None:
    """Let the relays finish reading (for at most :data:`DRAIN_SECONDS`), noting problems."""
    deadline = time.monotonic() + DRAIN_SECONDS
    for relay in relays:
        relay.join(max(0.0, deadline - time.monotonic()))
        if relay.is_alive():
            helper = relay.hand_off()
            relayed = (f"relayed by a cat of its own (pid {helper}) and not recorded"
                       if helper is not None else "not recorded")
            result.errors.append(
                f"the child's {relay.watch.name} was still open {DRAIN_SECONDS}s after it "
                f"exited (a process it started holds it); output after that is {relayed}"
            )
        else:
            relay.close_wake()
        if relay.relay_error:
            result.errors.append(relay.relay_error)
