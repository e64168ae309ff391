"""What is launched: argv, working directory, environment and interpreter, apart from what is
recorded.

Capture builds a :class:`LaunchSpec` from the recorded context; tracing adds its variables to
the spec only (never to the snapshot's ``[env]``); replay and bisect build specs from a snapshot
with chosen differences applied. :func:`runsnap.launch.run` runs one.
"""

from __future__ import annotations

import os

from runsnap.base.paths import current_dir
from runsnap.base.records import FrozenRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["LaunchSpec"]


class LaunchSpec(FrozenRecord):
    """One launch, exactly: the child gets this argv, this cwd and this environment, nothing
    more. Frozen: :meth:`with_env`, :meth:`without_env` and :meth:`replace` give new specs.

    >>> spec = LaunchSpec(("python", "app.py"), "/w", {"PATH": "/bin"})
    >>> spec.with_env(NCCL_ALGO="Ring").env
    {'PATH': '/bin', 'NCCL_ALGO': 'Ring'}
    >>> spec.without_env("PATH").env, spec.env
    ({}, {'PATH': '/bin'})
    """

    argv: tuple[str, ...]
    """The command line; ``argv[0]`` is looked up on the ``PATH`` of :attr:`env`."""

    cwd: str
    """The child's working directory (absolute)."""

    env: dict[str, str]
    """The child's complete environment."""

    python: str | None = None
    """The Python interpreter the child runs (``argv[0]``, its ``#!`` line, or ``--python``),
    or None when the child is not known to be Python."""

    @classmethod
    def of(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        python: str | None = None,
    ) -> LaunchSpec:
        """A spec for ``argv``: ``env`` defaults to this process's environment and ``cwd`` to
        the current directory, as a child started from here would have them."""
        return cls(
            argv=tuple(argv),
            cwd=os.path.abspath(os.fspath(cwd)) if cwd is not None else current_dir(),
            env=dict(os.environ if env is None else env),
            python=python,
        )

    def with_env(self, extra: Mapping[str, str] | None = None, /, **more: str) -> LaunchSpec:
        """This spec with variables set (added or replaced)."""
        env = dict(self.env)
        env.update(extra or {})
        env.update(more)
        return self.replace(env=env)

    def without_env(self, *names: str) -> LaunchSpec:
        """This spec with the variables ``names`` unset."""
        return self.replace(env={k: v for k, v in self.env.items() if k not in names})
