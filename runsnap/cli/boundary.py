"""Where runsnap's own errors become a one-line message and an exit status.

Shared by the fast capture path and the click commands; free of click.
"""

from __future__ import annotations

import functools
import sys

from runsnap.base.terminal import clean, say  # a message may quote a stranger's snapshot
from runsnap.errors import RunsnapError, SnapshotError, describe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["CONTEXT_SETTINGS", "Signalled", "guarded", "runsnap_command", "untrusted"]

#: click's context settings for every command.
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class Signalled(int):
    """runsnap's exit status (128+N) when signal N ended the child: the console script then
    ends by signal N itself (:func:`runsnap.launch.signals.die_by`), as the child did."""

    signal_number: int

    def __new__(cls, status: int, signal_number: int) -> Signalled:
        self = super().__new__(cls, status)
        self.signal_number = signal_number
        return self


def guarded(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``func``; runsnap's own errors become ``runsnap: message`` and their exit status."""
    try:
        return func(*args, **kwargs)
    except RunsnapError as exc:
        say(f"runsnap: {clean(str(exc))}\n")
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        raise  # the reader of stdout went away: each entry point ends that its own way
    except OSError as exc:  # a system call of runsnap's own failed where nothing else caught it
        say(f"runsnap: {clean(describe(exc))}\n")
        sys.exit(2)
    except KeyboardInterrupt:
        say("runsnap: interrupted\n")
        sys.exit(130)


def runsnap_command(func: F) -> F:
    """Decorate a command: runsnap's own errors become a message on stderr and their status."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return guarded(func, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class untrusted:  # noqa: N801 - used as a context manager, like contextlib's
    """Around reading and rendering snapshots from someone else: a value of a shape the schema
    does not pin down and the code did not expect becomes one line and exit 2, not a traceback.

    >>> with untrusted("x.toml"):
    ...     pass
    """

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if kind is not None and issubclass(kind, (TypeError, AttributeError, KeyError,
                                                  ValueError, IndexError)):
            raise SnapshotError(f"{self.what}: a value of an unexpected shape "
                                f"({kind.__name__}: {str(exc)[:120]})") from None
