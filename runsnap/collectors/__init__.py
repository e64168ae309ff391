"""The collectors: one module per snapshot section, each ``collect(ctx) -> dict``.

:data:`REGISTRY` is the ordered mapping section name -> collector that a capture runs. A
collector returns plain data with an ``errors`` list; when it raises, the capture records the
exception in that section's ``errors`` and goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runsnap.collectors import command, env, git, models, packages, system

if TYPE_CHECKING:
    from runsnap.context import CaptureContext

__all__ = ["REGISTRY", "Collector"]

Collector = Callable[["CaptureContext"], dict[str, Any]]

#: Section name -> collector, in the order they run. ``packages`` runs before ``git`` because
#: git reads the editable installs it found.
REGISTRY: dict[str, Collector] = {
    "command": command.collect,
    "env": env.collect,
    "packages": packages.collect,
    "git": git.collect,
    "models": models.collect,
    "system": system.collect,
}
