"""runsnap's pytest plugin: ``pytest --runsnap[=FILE]`` snapshots the test session's context
and records each test's outcome as its behaviour (docs/pytest.md).

Installing runsnap registers this module with pytest (``pytest11`` entry point). It is off by
default, and while it is off it imports nothing of runsnap beyond this module and the
package's own ``__init__`` (the version and a table of lazy names): every pytest run in an
environment that has runsnap installed pays for one option. ``--runsnap`` imports
:mod:`runsnap.pytestplugin.session`, which does the work.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import pytest

__all__ = ["pytest_addoption", "pytest_configure"]

#: The option's name, and the value it takes when given without ``=FILE``.
OPTION, DEFAULT = "--runsnap", ""


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--runsnap[=FILE]``: off unless given."""
    group = parser.getgroup("runsnap", "runsnap: the session's context and each test's outcome")
    group.addoption(
        OPTION, dest="runsnap", nargs="?", const=DEFAULT, default=None, metavar="FILE",
        help="Snapshot this session's context (as `runsnap capture` does) with each test's "
             "outcome to FILE (a .toml; default .runsnap/<time>-pytest.toml); compare two "
             "with `runsnap diff A B`. Give FILE with `=` (--runsnap=ci.toml).")


def pytest_configure(config: pytest.Config) -> None:
    """With ``--runsnap``: start recording (in pytest-xdist's workers: nothing, the controller
    gathers their reports)."""
    value = config.getoption("runsnap", None)
    if value is None or hasattr(config, "workerinput"):
        return
    # the capture and the tracing machinery: only for a session asked to record itself
    from runsnap.pytestplugin.session import start

    start(config, value)
