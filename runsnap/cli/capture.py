"""What ``runsnap capture`` does once its options are known (both faces call it); free of click."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from runsnap.snapshot import Snapshot

__all__ = ["TIMED_OUT", "run_capture"]

#: runsnap's exit status when ``--timeout`` stopped the command (as ``timeout(1)``'s).
TIMED_OUT = 124


def run_capture(
    output: str | None, out_dir: str | None, label: str, repos: tuple[str, ...],
    models: tuple[str, ...], python: str | None, max_diff_bytes: int, log: str | None,
    tail_lines: int, exec_: bool, no_run: bool, pid: int | None, inherit_tty: bool,
    kill_after: float, command: tuple[str, ...], redact: tuple[str, ...] = (),
    keep: tuple[str, ...] = (), no_trace: bool = False, started: Mapping[str, Any] | None = None,
    timeout: float | None = None,
) -> int:
    """What ``runsnap capture`` does once its options are known; returns the exit status.

    ``started``: work begun for this capture before the rest of runsnap was imported (the
    fast path's git head start), handed over to the capture."""
    from runsnap.errors import UsageError

    if pid is not None:
        if command:
            raise UsageError("--pid takes no COMMAND: give one or the other")
        if exec_ or log or no_run or timeout:
            raise UsageError("--exec, --log, --no-run and --timeout need a COMMAND, not --pid")
        from runsnap.capturing import capture_pid

        snap = capture_pid(pid, label=label, repos=repos, models=models, python=python,
                           max_diff_bytes=max_diff_bytes, redact=redact, keep=keep)
        _emit(snap, output, out_dir)
        return 0
    if not command or no_run:
        if exec_ or log or timeout:
            raise UsageError("--exec, --log and --timeout need a COMMAND to run (and no --no-run)")
        from runsnap.capturing import capture

        snap = capture(command, label=label, repos=repos, models=models, python=python,
                       max_diff_bytes=max_diff_bytes, redact=redact, keep=keep, started=started)
        _emit(snap, output, out_dir)
        return 0
    if exec_ and timeout:
        raise UsageError("--exec leaves nobody to stop the command: --timeout needs runsnap to "
                         "stay (drop --exec)")

    from runsnap.capturing import run

    def announce(snap: Snapshot) -> None:
        where = snap.path_text if output != "-" else "to standard output when the command ends"
        sys.stderr.write(f"runsnap: snapshot {where}\n")
        sys.stderr.flush()

    record = run(
        command, label=label, repos=repos, models=models, python=python,
        max_diff_bytes=max_diff_bytes, output=output, out_dir=out_dir, tail_lines=tail_lines,
        log=log, inherit_tty=inherit_tty, kill_grace=kill_after, exec_=exec_,
        on_saved=announce, redact=redact, keep=keep, trace=not no_trace, started=started,
        timeout=timeout or None,
    )
    if record.result.error:
        sys.stderr.write(f"runsnap: {record.result.error}\n")
    for problem in record.errors:
        sys.stderr.write(f"runsnap: {problem}\n")
    if record.result.timed_out:
        return TIMED_OUT
    return int(record.exit_status)


def _emit(snap: Snapshot, output: str | None, out_dir: str | None) -> None:
    """Save ``snap`` and print its path, or with ``-o -`` print the snapshot itself."""
    from runsnap.capturing import resolve_output
    from runsnap.snapshot import dumps

    if output == "-":
        sys.stdout.write(dumps(snap))
        sys.stdout.flush()
        return
    print(snap.save(resolve_output(snap, output, out_dir)).path_text, flush=True)
