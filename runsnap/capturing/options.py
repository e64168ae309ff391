"""What a capture is asked to do, as one record: :class:`CaptureOptions`.

The command line's two faces (the fast parser and click, both reading
:data:`runsnap.cli.options.CAPTURE_OPTIONS`) build it, the public functions
(:func:`runsnap.capture`, :func:`runsnap.capture_pid`, :func:`runsnap.run`) build it from their
keyword arguments, and everything below takes the record instead of a dozen keyword arguments.
"""

from __future__ import annotations

import os

from runsnap.base.records import FrozenRecord, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["DEFAULT_MAX_DIFF_BYTES", "CaptureOptions"]

#: Cap on each repository's stored uncommitted diff, unless ``--max-diff-bytes`` says otherwise.
DEFAULT_MAX_DIFF_BYTES = 1024 * 1024


class CaptureOptions(FrozenRecord):
    """The options of one capture (``runsnap capture --help`` says each one's meaning)."""

    label: str = ""
    """The run's name, chosen by the user (``--label``)."""
    repos: tuple[str, ...] = ()
    """Extra repositories to record (``--repo``)."""
    models: tuple[str, ...] = ()
    """Model paths or Hugging Face repo ids to record (``--model``)."""
    python: str | None = None
    """The interpreter whose packages to list (``--python``; default: the command's)."""
    max_diff_bytes: int = DEFAULT_MAX_DIFF_BYTES
    """Cap on each repository's stored uncommitted diff."""
    redact: tuple[str, ...] = ()
    """More names (globs) whose values are secrets (``--redact``)."""
    keep: tuple[str, ...] = ()
    """Exact names whose values are kept although they look secret (``--keep``)."""
    output: str | None = None
    """Where the snapshot goes (``-o``; ``-``: standard output)."""
    out_dir: str | None = None
    """The folder of snapshots written without ``output`` (``--dir``)."""
    log: str | None = None
    """A file that also gets the child's whole output (``--log``)."""
    tail_lines: int | None = None
    """Last lines of each stream kept in ``[outcome]`` (None: the default, 200)."""
    exec_: bool = False
    """Replace runsnap with the child once the snapshot is saved (``--exec``)."""
    inherit_tty: bool = False
    """Give the child the terminal as it is (``--inherit-tty``)."""
    kill_grace: float | None = None
    """Seconds between SIGTERM and SIGKILL when stopping the child (None: the default, 10)."""
    timeout: float | None = None
    """Stop the child after this many seconds (None: never)."""
    trace: bool = True
    """Trace a Python child's reads and imports into ``[runtime]``."""
    metrics: tuple[str, ...] = ()
    """The user's own metrics, ``NAME=REGEX`` (``--metric``), beside the project's."""
    strict: bool = False
    """No launch when a pre-launch check finds a problem of weight 90 or more (``--strict``)."""
    started: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    """Work begun for this capture before the rest of runsnap was imported (the fast path's
    git head start), handed over to the collectors when it suits."""

    @classmethod
    def of(cls, **given: Any) -> CaptureOptions:
        """The record from the public functions' keyword arguments: sequences become tuples,
        paths strings.

        >>> CaptureOptions.of(repos=["a"], output=None).repos
        ('a',)
        """
        for name in ("repos", "models", "redact", "keep", "metrics"):
            if name in given:
                given[name] = tuple(given[name])
        for name in ("output", "out_dir", "log"):
            if given.get(name) is not None:
                given[name] = os.fspath(given[name])
        return cls(**given)
