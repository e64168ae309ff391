"""Where a command's end is decided, in one place: its :class:`~runsnap.commands.Result`
becomes output and an exit status (:func:`finish`), runsnap's own errors a one-line message
and theirs (:func:`guarded`), and a bug of runsnap's own one line too, ``runsnap: internal
error: ...``, exit 70, unless ``RUNSNAP_TRACEBACK`` is set (the test suite sets it: a bug is
a traceback there). The statuses are listed once, in :data:`runsnap.errors.EXIT_STATUSES`.

Shared by the fast paths and the click commands; free of click.
"""

from __future__ import annotations

import functools
import os
import sys

from runsnap.base.terminal import clean, say  # a message may quote a stranger's snapshot
from runsnap.errors import FAILED, INTERNAL, INTERRUPTED, RunsnapError, UsageError, describe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from runsnap.commands import Result

    F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["CONTEXT_SETTINGS", "finish", "guarded", "runsnap_command"]

#: click's context settings for every command.
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _write(text: str, color: bool) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def finish(result: Result, out: Callable[[str, bool], None] = _write) -> int:
    """Write ``result``'s text (to its ``output`` file, atomically, or through ``out(text,
    color)``) and its notes on stderr; its exit status."""
    if result.output:
        from runsnap.base.atomic import atomic_write  # only with -o

        try:
            atomic_write(result.output, result.text.encode("utf-8"))
        except OSError as exc:
            raise UsageError(f"cannot write {result.output}: {exc.strerror or exc}") from None
    elif result.text:
        out(result.text, result.color)
    if result.notes:
        sys.stderr.write("".join(f"{line}\n" for line in result.notes))
        sys.stderr.flush()
    return result.status


def guarded(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``func``; runsnap's own errors become ``runsnap: message`` and their exit status,
    a bug ``runsnap: internal error: ...`` and 70 (``RUNSNAP_TRACEBACK`` set: the traceback)."""
    try:
        return func(*args, **kwargs)
    except RunsnapError as exc:
        say(f"runsnap: {clean(str(exc))}\n")
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        raise  # the reader of stdout went away: each entry point ends that its own way
    except OSError as exc:  # a system call of runsnap's own failed where nothing else caught it
        say(f"runsnap: {clean(describe(exc))}\n")
        sys.exit(FAILED)
    except KeyboardInterrupt:
        say("runsnap: interrupted\n")
        sys.exit(INTERRUPTED)
    except Exception as exc:
        if type(exc).__module__.startswith("click") or os.environ.get("RUNSNAP_TRACEBACK"):
            raise  # click's own (Abort, usage errors) end as click ends them
        where = exc.__traceback__
        while where is not None and where.tb_next is not None:
            where = where.tb_next
        at = "" if where is None else \
            f" (at {os.path.basename(where.tb_frame.f_code.co_filename)}:{where.tb_lineno})"
        say(f"runsnap: internal error: {clean(describe(exc))[:200]}{at}; please report it "
            f"(RUNSNAP_TRACEBACK=1 shows the traceback)\n")
        sys.exit(INTERNAL)


def runsnap_command(func: F) -> F:
    """Decorate a command: runsnap's own errors become a message on stderr and their status."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return guarded(func, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
