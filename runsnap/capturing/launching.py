"""The launch half of a wrapped run (:func:`runsnap.capturing.run_with`): the child started from
its launch specification (or runsnap replaced by it, ``--exec``), traced when it is Python, and
the snapshot saved before the launch completed with ``[outcome]`` and ``[runtime]`` when the
child ends. Imported only when a command is run: ``runsnap capture`` without one never pays
for the launcher, the tracer or the outcome's modules."""

from __future__ import annotations

from runsnap import launch, tracing
from runsnap.base.cache import OwnFiles
from runsnap.base.faults import reached
from runsnap.base.records import FrozenRecord
from runsnap.capturing.collect import capture_redactor, with_meta, with_section
from runsnap.capturing.keptcopies import keep_read_configs
from runsnap.launch import frame_names, outcome
from runsnap.redact import load_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    import threading
    from collections.abc import Mapping, Sequence
    from typing import Any, Protocol

    from runsnap.capturing.context import CaptureContext
    from runsnap.capturing.options import CaptureOptions
    from runsnap.capturing.writes import SnapshotWrites
    from runsnap.launch import LaunchResult, LaunchSpec, LogTee
    from runsnap.redact import FingerprintKey, Redactor
    from runsnap.snapshot import Snapshot

    class Companion(Protocol):
        """Something that goes with a run (an experiment tracker's run: runsnap.track)."""

        def launch_env(self) -> Mapping[str, str]:
            """Variables the launch gets (never [env]); called right before the launch."""

        def meta(self) -> Mapping[str, Any]:
            """Entries joining [meta] when the outcome is written (redacted like the rest)."""

__all__ = ["Redaction", "WrappedLaunch"]

#: Why an ``--exec`` run has no ``[runtime]``.
EXEC_NOT_TRACED = "--exec: runsnap is gone when the command ends, so nothing is traced"


class Redaction(FrozenRecord):
    """What every section of one wrapped run is redacted with, before the launch and after."""

    key: FingerprintKey
    """runsnap's fingerprint key (its own user's and environment's, as in every capture)."""

    redactor: Redactor
    """The user's policy (``--redact``/``--keep``, the project's settings) and the caches."""

    warming: tuple[threading.Thread, ...] = ()
    """The token rules being compiled in the background: joined before the outcome is written."""

    @classmethod
    def of_capture(cls, cwd: str, options: CaptureOptions) -> Redaction:
        """The redaction of a wrapped run from ``cwd``. The token rules are compiled beside the
        collectors (they wait on git and the probe): a capture whose texts were all known clean
        does not need them before the launch, but the child's output is searched between its end
        and the outcome written. With ``--exec`` there is no outcome to wait for."""
        key = load_key()
        redactor = capture_redactor(key, cwd, options.redact, options.keep)
        return cls(key, redactor, () if options.exec_ else (redactor.warm(),))

    def ready(self) -> None:
        """Wait for the token rules being compiled."""
        for thread in self.warming:
            thread.join()


class WrappedLaunch:
    """The child of a wrapped run launched, and the snapshot saved before the launch
    (``saved``) completed when it ends and written over the first through ``writes``:
    :attr:`final` is the snapshot as last written, :attr:`errors` runsnap's own problems that
    did not change the exit status. A Python child is traced (unless ``--no-trace`` or
    ``--exec``): the tracer's folder is made here, before the launch."""

    def __init__(self, ctx: CaptureContext, saved: Snapshot, writes: SnapshotWrites,
                 redaction: Redaction, options: CaptureOptions,
                 companion: Companion | None) -> None:
        self.ctx, self.saved, self.writes = ctx, saved, writes
        self.redaction, self.options, self.companion = redaction, options, companion
        self.final = saved
        self.errors: list[str] = []
        self.tail = outcome.DEFAULT_TAIL_LINES if options.tail_lines is None else options.tail_lines
        self.tracer, self.why_not_traced = (None, EXEC_NOT_TRACED) if options.exec_ else \
            tracing.prepare(ctx.argv, ctx.env, ctx.cwd, enabled=options.trace)

    def run(self, spec: LaunchSpec, log: LogTee | None,
            metrics: Sequence[tuple[str, re.Pattern[bytes]]]) -> LaunchResult:
        """The child launched from ``spec``: with ``--exec`` runsnap is replaced by it (so this
        only returns when that failed, with the failure's outcome written), else it is run and
        watched to its end (:meth:`run_watched`)."""
        if self.options.exec_:
            result = launch.exec_child(spec)
            self.write_outcome(result)  # only reached when exec failed
            return result
        return self.run_watched(spec, log, metrics)

    def run_watched(self, spec: LaunchSpec, log: LogTee | None,
                    metrics: Sequence[tuple[str, re.Pattern[bytes]]]) -> LaunchResult:
        """The child run under runsnap (signals forwarded, ``--timeout``, output relayed and
        copied to ``log``, ``metrics`` read from it); the outcome written on its exit while
        signals are still held; a deferred first save made even when runsnap failed."""
        if self.tracer is not None:  # the launch gets the hook; the snapshot keeps the user's env
            spec = spec.replace(env=self.tracer.launch_env(spec.env))
        options = self.options
        grace = launch.DEFAULT_KILL_GRACE if options.kill_grace is None else options.kill_grace
        watch = launch.Watch(timeout=options.timeout, tail_lines=self.tail, kill_grace=grace,
                             metrics=tuple(metrics))
        try:
            result = launch.run(spec, watch, log=log, inherit_tty=options.inherit_tty,
                                on_exit=self.write_outcome, on_start=self.started)
        finally:  # also when runsnap failed before the outcome: the launch's record
            late = self.writes.ended()
        self.errors[:0] = late
        if log is not None:  # as it is now, written
            OwnFiles().record(log.path)
        return result

    def started(self, _result: LaunchResult) -> None:
        """The child runs: the deferred first save's delay starts, the tracer's index warms."""
        self.writes.started()
        if self.tracer is not None:
            self.tracer.warm(self.saved.get("packages"))

    def write_outcome(self, result: LaunchResult) -> None:
        """The child ended (or could not be started): ``[outcome]``, the companion's
        ``[meta]`` and ``[runtime]`` added to the saved snapshot and written over it. A write
        that fails, or anything else of runsnap's own that fails here, leaves what is on disk
        and a line in :attr:`errors`: the child ran, its status is kept."""
        key, redactor = self.redaction.key, self.redaction.redactor
        try:
            reached("capture.ended")
            self.redaction.ready()
            section = self.outcome_section(result)
            runtime = self.runtime_section(section)
            done = with_section(self.saved, "outcome", section, key, redactor, after=outcome.cut)
            if self.companion is not None:
                done = with_meta(done, self.companion.meta(), redactor)
            self.final = self.writes.final(with_section(done, "runtime", runtime, key, redactor))
        except Exception as exc:  # noqa: BLE001 - the child ran: its status is kept, whatever failed
            self.final, line = self.writes.not_written(exc, self.saved)
            self.errors.append(line)
            return
        try:  # after the record is written: a copy that cannot be kept is only not kept
            keep_read_configs(runtime, redactor)
        except Exception:  # noqa: BLE001, S110 - best effort, like every cache
            pass

    def outcome_section(self, result: LaunchResult) -> dict[str, Any]:
        """``[outcome]`` of ``result``, its tracebacks' frames named after the models' config
        keys where they read one."""
        return frame_names.named(outcome.build(result, tail_lines=self.tail),
                                 frame_names.config_keys(self.saved.records.models))

    def runtime_section(self, outcome: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``[runtime]``: what the traced child read and imported, or why it was not traced;
        ``outcome``, the run's ``[outcome]``, for the config values its error quoted."""
        if self.tracer is None:
            return tracing.not_traced(self.why_not_traced)
        return self.tracer.finish(self.saved.get("packages"), self.ctx.env, outcome)
