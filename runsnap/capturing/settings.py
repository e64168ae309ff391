"""The capture's settings from the project's files: ``metrics``, ``strict`` and the tracker.

The nearest ``pyproject.toml`` (``[tool.runsnap] metrics = [...]``, ``[tool.runsnap.capture]
strict = true``, ``track = "mlflow"``, ``track_timeout``, ``track_experiment``) or
``.runsnap.toml`` (the same keys at its top level) in the launch's folder or a parent. A file is
parsed only when it mentions one of the words (and a ``pyproject.toml`` only when it has a
runsnap table: :mod:`runsnap.base.projectfile`), so a capture in a project without them reads a
few bytes and parses nothing; a file that cannot be read or parsed adds nothing (the capture
goes on), and only a regular file is read: a FIFO or a device under that name never blocks the
launch.
"""

from __future__ import annotations

import os

from runsnap.base.files import read_regular
from runsnap.base.projectfile import may_hold_runsnap_table
from runsnap.base.records import FrozenRecord
from runsnap.base.tomlparse import toml_parser

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CaptureSettings", "load_settings", "track_settings"]


class CaptureSettings(FrozenRecord):
    """What the project's files ask of every capture."""

    metrics: tuple[str, ...] = ()
    """The project's own metrics, ``NAME=REGEX`` (as ``--metric``)."""

    strict: bool = False
    """Refuse to launch on a pre-launch finding of weight 90 or more (as ``--strict``)."""

    track: str = ""
    """The tracker every capture logs to (as ``--track``); empty: none asked."""

    track_timeout: float | None = None
    """Seconds the tracker may cost the launch (as ``--track-timeout``); None: the default."""

    track_experiment: str = ""
    """The tracker's experiment or project (as ``--track-experiment``)."""


def _parse(data: bytes, fname: str) -> CaptureSettings | None:
    tomllib = toml_parser()
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    table = doc.get("tool", {}).get("runsnap") if fname == "pyproject.toml" else doc
    if not isinstance(table, dict):
        return None
    metrics = table.get("metrics")
    if isinstance(metrics, dict):  # metrics = { tps = "([0-9.]+) tok/s" }
        metrics = [f"{k}={v}" for k, v in metrics.items() if isinstance(v, str)]
    capture = table.get("capture")
    capture = capture if isinstance(capture, dict) else {}
    timeout = capture.get("track_timeout")
    return CaptureSettings(
        metrics=tuple(m for m in metrics if isinstance(m, str)) if isinstance(metrics, list)
        else (), strict=capture.get("strict") is True,
        track=capture["track"] if isinstance(capture.get("track"), str) else "",
        track_timeout=float(timeout) if isinstance(timeout, (int, float))
        and not isinstance(timeout, bool) and timeout >= 0 else None,
        track_experiment=capture["track_experiment"]
        if isinstance(capture.get("track_experiment"), str) else "")


def load_settings(start: str | None = None) -> CaptureSettings:
    """The settings of the nearest file that has a runsnap table (see the module docstring).

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "pyproject.toml").write_text('[tool.runsnap]\\nmetrics = ["tps=([0-9.]+) tok/s"]\\n'
    ...                                       '[tool.runsnap.capture]\\nstrict = true\\n')
    >>> found = load_settings(str(d / "sub" / "dir"))
    >>> found.metrics, found.strict, found.track
    (('tps=([0-9.]+) tok/s',), True, '')
    """
    here = os.path.abspath(start or os.getcwd())
    while True:
        for fname in (".runsnap.toml", "pyproject.toml"):
            try:
                data = read_regular(os.path.join(here, fname), 1 << 20)
            except OSError:  # missing, not a regular file (a FIFO never blocks), too large
                continue
            if fname == "pyproject.toml" and not may_hold_runsnap_table(data):
                continue  # no runsnap table: nothing to parse (tomllib is costly to start)
            if not any(word in data for word in (b"metrics", b"strict", b"track")):
                continue  # nothing asked here: a file further up may ask
            found = _parse(data, fname)
            if found is not None:
                return found
        parent = os.path.dirname(here)
        if parent == here:
            return CaptureSettings()
        here = parent


def track_settings(start: str) -> dict[str, Any]:
    """``track``, ``track_timeout`` and ``track_experiment`` as the nearest project file gives
    them (:func:`load_settings`, which reads every capture setting); values of the wrong type
    are left out. Here rather than in :mod:`runsnap.track`: every capture asks, and importing
    the trackers' package for an untracked one was a cost of its own."""
    found = load_settings(start)
    out: dict[str, Any] = {}
    if found.track:
        out["track"] = found.track
    if found.track_timeout is not None:
        out["track_timeout"] = found.track_timeout
    if found.track_experiment:
        out["track_experiment"] = found.track_experiment
    return out
