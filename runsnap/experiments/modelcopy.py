"""A model directory copied for a trial, with GOOD's recorded config.json and the chosen
field changes applied (:func:`copy_model`): the user's files are never written."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["COPY_MAX_BYTES", "copy_model"]

#: Files of a model directory up to this size are copied into a trial's copy; bigger ones and
#: weight files are links to the originals.
COPY_MAX_BYTES = 1024 * 1024


def _config_of(snap: Snapshot, src: str) -> Mapping[str, Any]:
    """The config.json of model ``src`` as recorded (``{}``: none)."""
    model = snap.records.models.models.get(src)
    return model.config.raw if model and model.config else {}



def copy_model(
    src_dir: str, src: str, chosen: Sequence[Any], good: Snapshot, bad: Snapshot,
    workdir: str,
) -> str:
    """A copy of ``src_dir`` under ``workdir`` whose config.json is GOOD's (as recorded: the
    file may have been edited since) with the ``chosen`` field changes (GOOD -> BAD) applied by
    DeepDiff's ``Delta``; other files are copied when small and linked to the originals
    otherwise. Returns the copy's path."""
    # deferred: deepdiff, ~1701 ms measured under load; only copy_model() needs it
    from deepdiff import DeepDiff, Delta
    from deepdiff.path import parse_path

    from runsnap.capturing.collectors.models import WEIGHT_SUFFIXES

    cfg_a, cfg_b = (_config_of(s, src) for s in (good, bad))
    wanted = [[str(p) for p in c.path[3:]] for c in chosen]
    full = DeepDiff(cfg_a, cfg_b, verbose_level=2) if wanted else {}
    subset: dict[str, Any] = {}
    for kind, entries in full.items():
        if not isinstance(entries, Mapping):
            continue
        keep = {p: v for p, v in entries.items()
                if any([str(x) for x in parse_path(p)][: len(w)] == w for w in wanted)}
        if keep:
            subset[kind] = keep
    config = cfg_a + Delta(diff=subset, raise_errors=True) if subset else cfg_a
    os.makedirs(workdir, exist_ok=True)
    dest = os.path.join(workdir, os.path.basename(os.path.normpath(src_dir)) or "model")
    os.makedirs(dest)
    for entry in os.scandir(src_dir):
        target = os.path.join(dest, entry.name)
        if entry.name == "config.json":
            continue
        if (entry.is_file() and not entry.name.lower().endswith(WEIGHT_SUFFIXES)
                and entry.stat().st_size <= COPY_MAX_BYTES):
            with open(entry.path, "rb") as fin, open(target, "wb") as fout:
                fout.write(fin.read())
        else:
            os.symlink(os.path.realpath(entry.path), target)
    with open(os.path.join(dest, "config.json"), "w", encoding="utf-8") as fh:
        json.dump(config, fh, indent=2)
    return dest
