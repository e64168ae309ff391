"""Where runsnap's own errors become a one-line message and an exit status.

Shared by the fast capture path and the click commands; free of click.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["CONTEXT_SETTINGS", "guarded", "runsnap_command"]

#: click's context settings for every command.
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def guarded(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``func``; runsnap's own errors become ``runsnap: message`` and their exit status."""
    from runsnap.errors import RunsnapError

    try:
        return func(*args, **kwargs)
    except RunsnapError as exc:
        sys.stderr.write(f"runsnap: {exc}\n")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("runsnap: interrupted\n")
        sys.exit(130)


def runsnap_command(func: F) -> F:
    """Decorate a command: runsnap's own errors become a message on stderr and their status."""
    import functools

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return guarded(func, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
