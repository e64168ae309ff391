"""The capture's settings from the project's files: ``metrics`` and ``strict``.

The nearest ``pyproject.toml`` (``[tool.runsnap] metrics = [...]``, ``[tool.runsnap.capture]
strict = true``) or ``.runsnap.toml`` (``metrics = [...]``, ``[capture] strict = true``) in the
launch's folder or a parent. A file is parsed only when it mentions one of the words, so a
capture in a project without them reads a few bytes and parses nothing; a file that cannot be
read or parsed adds nothing (the capture goes on).
"""

from __future__ import annotations

import os

from runsnap.base.records import FrozenRecord

__all__ = ["CaptureSettings", "load_settings"]


class CaptureSettings(FrozenRecord):
    """What the project's files ask of every capture."""

    metrics: tuple[str, ...] = ()
    """The project's own metrics, ``NAME=REGEX`` (as ``--metric``)."""

    strict: bool = False
    """Refuse to launch on a pre-launch finding of weight 90 or more (as ``--strict``)."""


def _parse(data: bytes, fname: str) -> CaptureSettings | None:
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
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
    strict = capture.get("strict") if isinstance(capture, dict) else None
    return CaptureSettings(
        metrics=tuple(m for m in metrics if isinstance(m, str)) if isinstance(metrics, list)
        else (), strict=strict is True)


def load_settings(start: str | None = None) -> CaptureSettings:
    """The settings of the nearest file that has a runsnap table (see the module docstring).

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "pyproject.toml").write_text('[tool.runsnap]\\nmetrics = ["tps=([0-9.]+) tok/s"]\\n'
    ...                                       '[tool.runsnap.capture]\\nstrict = true\\n')
    >>> load_settings(str(d / "sub" / "dir"))
    CaptureSettings(metrics=('tps=([0-9.]+) tok/s',), strict=True)
    """
    here = os.path.abspath(start or os.getcwd())
    while True:
        for fname in (".runsnap.toml", "pyproject.toml"):
            try:
                with open(os.path.join(here, fname), "rb") as fh:
                    data = fh.read(1 << 20)
            except OSError:
                continue
            if b"runsnap" not in data and fname == "pyproject.toml":
                continue
            if b"metrics" not in data and b"strict" not in data:
                return CaptureSettings()  # the project's runsnap file: nothing asked here
            found = _parse(data, fname)
            if found is not None:
                return found
        parent = os.path.dirname(here)
        if parent == here:
            return CaptureSettings()
        here = parent
