"""A wrapped run: snapshot saved *before* the child starts (one rank among many writing into a
shared folder: once the child has run a few seconds, :mod:`runsnap.capturing.firstsave`), the
child run by :mod:`runsnap.launch` from a launch specification built from the recorded context,
then the same file rewritten atomically with ``[outcome]`` (the launch half:
:mod:`runsnap.capturing.launching`, imported only when a command runs)."""

from __future__ import annotations

import os
import sys

from runsnap.base.cache import OwnFiles
from runsnap.base.faults import reached
from runsnap.base.records import FrozenRecord
from runsnap.capturing.collect import build_context, snapshot_from_context
from runsnap.capturing.context import CaptureContext
from runsnap.capturing.options import DEFAULT_MAX_DIFF_BYTES, CaptureOptions
from runsnap.capturing.output import resolve_output
from runsnap.capturing.prelaunch import prelaunch_guard
from runsnap.capturing.settings import load_settings
from runsnap.capturing.writes import SnapshotWrites
from runsnap.errors import CaptureError, UsageError, describe
from runsnap.launch import LaunchSpec
from runsnap.launch.metrics import parse_metric
from runsnap.snapshot import Snapshot, dumps

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from runsnap.capturing.launching import Companion
    from runsnap.launch import LaunchResult, LogTee
    from runsnap.redact import Redactor


__all__ = ["RunRecord", "launch_spec", "open_log", "prelaunch_guard", "refuse_empty_command",
           "run", "run_with", "snapshot_to_launch", "user_metrics"]


def launch_spec(ctx: CaptureContext) -> LaunchSpec:
    """What is launched for the recorded context ``ctx``: its argv, cwd and environment exactly,
    and the interpreter when the child itself is Python. Tracing, replay and bisect derive
    their launches from such a spec; the snapshot keeps recording ``ctx``."""
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
    trace: bool = True,
    started: Mapping[str, Any] | None = None,
    companion: Companion | None = None,
    metrics: Sequence[str] = (),
    strict: bool = False,
) -> RunRecord:
    """Snapshot the launch of ``argv``, save it, run it, and rewrite the file with its outcome.

    The snapshot is on disk before the child starts (``on_saved`` is called then), so a launch
    that hangs or takes the machine down still leaves it. Into a shared folder (a template
    name, a launcher's ranks) it is saved once the child has run
    :data:`~runsnap.capturing.firstsave.FIRST_SAVE_DELAY` seconds, or only with the outcome
    when the child ended first (``on_saved`` called at that first save; a failure to save then
    does not stop the child and is in :attr:`RunRecord.errors`). With ``exec_`` runsnap replaces itself
    with the child after saving and this function only returns when that failed. ``timeout``:
    seconds after which the child is stopped (its outcome then says ``timed_out``). With
    ``trace`` (the default) a Python child runs with runsnap's tracing hook and ``[runtime]``
    records what it read and imported (:mod:`runsnap.tracing`); the launch specification gets
    the hook's variables, ``[env]`` stays the environment given. A ``companion`` (a tracked
    run, :mod:`runsnap.track`) adds its variables to the launch specification too, and its
    entries to ``[meta]`` with the outcome. ``metrics``: the user's own (``NAME=REGEX``,
    beside the project's ``[tool.runsnap] metrics``), recorded in ``[outcome] metrics``. Raises
    :class:`~runsnap.errors.CaptureError` when the snapshot or the log cannot be written. The
    other keywords are :class:`~runsnap.capturing.options.CaptureOptions`' fields
    (:func:`run_with`).
    """
    options = CaptureOptions.of(
        label=label, repos=repos, models=models, python=python, max_diff_bytes=max_diff_bytes,
        output=output, out_dir=out_dir, tail_lines=tail_lines, log=log,
        inherit_tty=inherit_tty, kill_grace=kill_grace, exec_=exec_, timeout=timeout,
        redact=redact, keep=keep, trace=trace, started=started, metrics=metrics, strict=strict)
    return run_with(argv, options, env=env, cwd=cwd, on_saved=on_saved, companion=companion)


def run_with(
    argv: Sequence[str],
    options: CaptureOptions,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    on_saved: Callable[[Snapshot], None] | None = None,
    companion: Companion | None = None,
) -> RunRecord:
    """:func:`run` with its options as one record. The steps: the command checked, the context
    built, the snapshot collected and checked (:func:`snapshot_to_launch`) and saved before the
    launch (:class:`~runsnap.capturing.writes.SnapshotWrites`), then the child launched and the
    outcome written (:class:`~runsnap.capturing.launching.WrappedLaunch`); with ``-o -`` the
    snapshot printed when the command ends."""
    # deferred: runsnap.capturing.launching, ~10 ms measured under load; only run_with() needs it
    from runsnap.capturing.launching import Redaction, WrappedLaunch

    refuse_empty_command(argv, options.exec_)
    try:  # an operating-system error before the launch: one line, exit 2, nothing run
        ctx = build_context(argv, options, env=env, cwd=cwd)
        reached("capture.context")
        settings = load_settings(ctx.cwd)
        metrics = user_metrics((*settings.metrics, *options.metrics))
        redaction = Redaction.of_capture(ctx.cwd, options)
        tee = None if options.log is None else open_log(options.log, redaction.redactor)
        snap = snapshot_to_launch(ctx, redaction.redactor, tee, exec_=options.exec_,
                                  strict=options.strict or settings.strict)
        to_stdout = options.output == "-"
        target = None if to_stdout else resolve_output(snap, options.output, options.out_dir)
        writes = SnapshotWrites(target, on_saved, deferred=not options.exec_)
        saved = writes.before_launch(snap)
    except OSError as exc:
        raise CaptureError(f"not launched: {describe(exc)}") from None
    launched = WrappedLaunch(ctx, saved, writes, redaction, options, companion)
    spec = launch_spec(ctx)
    if companion is not None:  # the tracked run's id: the launch gets it, [env] does not
        spec = spec.with_env(companion.launch_env())
    result = launched.run(spec, tee, metrics)
    errors = list(launched.errors)
    if to_stdout:
        errors += print_snapshot(launched.final)
    return RunRecord(launched.final, result.exit_status, result, tuple(errors))


def print_snapshot(snap: Snapshot) -> list[str]:
    """``-o -``: the snapshot on standard output when the command ends. A write that fails (a
    full disk under ``-o - > FILE``) is a line returned, the command's status kept; a reader
    gone away (a closed pipe) ends runsnap as it ends every command."""
    try:
        sys.stdout.write(dumps(snap))
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        null = os.open(os.devnull, os.O_WRONLY)  # what is left unflushed goes nowhere
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
        return [f"the snapshot was not written to standard output: {describe(exc)}"]
    return []


def refuse_empty_command(argv: Sequence[str], exec_: bool) -> None:
    """A wrapped run needs a command (a :class:`~runsnap.errors.CaptureError` otherwise), and
    ``--exec`` one that is not empty (a usage error: exit 2)."""
    if not argv:
        raise CaptureError("nothing to run: give the command after --")
    if exec_ and not argv[0]:
        raise UsageError("--exec: the command is empty (nothing to replace runsnap with)")


def snapshot_to_launch(ctx: CaptureContext, redactor: Redactor, log: LogTee | None, *,
                       exec_: bool, strict: bool) -> Snapshot:
    """The snapshot of ``ctx`` as it is saved before the launch: collected, checked by the
    pre-launch guard (:func:`prelaunch_guard`: with ``strict``, no launch after a heavy
    finding), and its ``[meta]`` saying how the command is launched and where its log goes."""
    snap = snapshot_from_context(ctx, redactor=redactor)
    prelaunch_guard(snap, strict)
    meta = {**snap.meta, "launch": "exec" if exec_ else "wrapped"}
    return snap.replace(meta=meta if log is None else {**meta, "log": log.path})


def open_log(log: str, redactor: Redactor) -> LogTee:
    """``--log``: the file the child's output is copied to, redacted line by line; runsnap's
    own, so no capture lists it in ``[git]``."""
    # deferred: runsnap.launch, ~9 ms measured under load; only open_log() needs it
    from runsnap.launch import LogTee

    try:
        tee = LogTee(log, line_filter=redactor.line_filter())
    except OSError as exc:
        raise CaptureError(f"cannot write the log {log}: {exc.strerror or exc}") from None
    OwnFiles().record(tee.path)
    return tee


def user_metrics(specs: Sequence[str]) -> list[tuple[str, re.Pattern[bytes]]]:
    """``NAME=REGEX`` metrics compiled; a malformed one is the user's mistake (exit 2)."""

    try:
        return [parse_metric(spec) for spec in specs]
    except ValueError as exc:
        raise UsageError(str(exc)) from None
