"""Starting the child of a :class:`~runsnap.launch.LaunchSpec`, or replacing runsnap with it,
and saying why a start failed the way shells do (127 not found, 126 not runnable)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from runsnap.base.paths import child_cwd, current_dir
from runsnap.launch.relay import flush_own_streams
from runsnap.launch.result import LaunchResult, utc_now

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from runsnap.launch.relay import Streams
    from runsnap.launch.spec import LaunchSpec

__all__ = ["classify_failure", "exec_child", "find_program", "popen"]


def popen(spec: LaunchSpec, streams: Streams) -> subprocess.Popen[bytes]:
    """Start the child with exactly the spec's argv, environment and cwd.

    File descriptors runsnap inherited pass on to the child, as from a shell; signals go back
    to their defaults; the kernel kills the child if runsnap itself dies (see
    :func:`_die_with_parent`). Raises :class:`OSError` when it cannot start.
    """
    return subprocess.Popen(
        spec.argv, env=spec.env, cwd=child_cwd(spec.cwd), stdin=None,
        stdout=streams.child_fd("stdout"), stderr=streams.child_fd("stderr"),
        close_fds=False, restore_signals=True, preexec_fn=_die_with_parent(),
    )


def find_program(prog: str, env: Mapping[str, str], cwd: str) -> str | None:
    """The file ``prog`` names (executable or not), as a shell's PATH search would find it."""
    if os.sep in prog:
        path = prog if os.path.isabs(prog) else os.path.join(cwd, prog)
        return path if os.path.exists(path) else None
    for d in os.get_exec_path(dict(env)):
        cand = os.path.join(d or ".", prog)
        if os.path.isfile(cand):
            return cand
    return None


def classify_failure(result: LaunchResult, exc: OSError, spec: LaunchSpec) -> None:
    """Fill in why the start failed, the way shells do: 127 not found, 126 found but not
    runnable (or no such working directory)."""
    prog, cwd = result.argv[0], spec.cwd
    if not prog:  # what a shell says of an empty command word
        result.status, result.exit_status = "not_found", 127
        result.error = "'': command not found"
        return
    if child_cwd(cwd) is None:
        cwd = "."
    elif not os.path.isdir(cwd):
        result.status, result.exit_status = "failed", 126
        result.error = f"{cwd}: working directory does not exist"
        return
    found = find_program(prog, spec.env, cwd)
    if isinstance(exc, FileNotFoundError) and found is None:
        result.status, result.exit_status = "not_found", 127
        result.error = f"{prog}: command not found"
        return
    result.status, result.exit_status = "not_executable", 126
    reason = exc.strerror or str(exc)
    if isinstance(exc, FileNotFoundError):
        reason = "bad interpreter (the #! line names a program that does not exist)"
    elif os.path.isdir(found or ""):
        reason = "is a directory"
    result.error = f"{found or prog}: {reason}"


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the kernel SIGKILL the child if runsnap itself dies.

    runsnap never exits while its child runs, but SIGKILL (the OOM killer, ``kill -9``) cannot
    be caught: without this the child would be left an orphan, reparented to init. Linux only
    (``prctl(PR_SET_PDEATHSIG)``); elsewhere, or without libc, None (no hook). The hook costs
    the child's start a plain ``fork`` instead of ``vfork`` (measured: well under a millisecond).
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        # deferred: ctypes, ~15 ms measured under load; only _die_with_parent() needs it
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def hook() -> None:
        prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        if os.getppid() != parent:  # runsnap died between fork and prctl
            os._exit(137)

    return hook


def exec_child(spec: LaunchSpec) -> LaunchResult:
    """Replace runsnap with the spec's child; return only when that failed (127, 126), with
    the reason.

    Before ``exec``, SIGPIPE and SIGXFSZ go back to their defaults (Python ignores them, and an
    ignored signal stays ignored across ``exec``), as :class:`subprocess.Popen` does.
    """
    result = LaunchResult(argv=spec.argv, started_at=utc_now())
    result.modes = {"stdout": "exec", "stderr": "exec"}
    flush_own_streams()
    restore = {s: signal.getsignal(s) for s in (signal.SIGPIPE, signal.SIGXFSZ)}
    old_cwd = child_cwd(current_dir())
    try:
        for sig in restore:
            signal.signal(sig, signal.SIG_DFL)
        cwd = child_cwd(spec.cwd)
        if cwd is not None:
            os.chdir(cwd)
        os.execvpe(spec.argv[0], list(spec.argv), dict(spec.env))
    except OSError as exc:
        classify_failure(result, exc, spec)
    except ValueError as exc:  # an empty command word, a NUL in an argument
        result.status, result.exit_status = "not_found", 127
        result.error = f"{spec.argv[0]!r}: cannot be run ({exc})"
    finally:
        for sig, handler in restore.items():
            signal.signal(sig, handler)
        try:
            if old_cwd is not None:
                os.chdir(old_cwd)
        except OSError:
            pass
    result.ended_at = utc_now()
    return result
