"""A library's offline switch in runs that fetched nothing.

``HF_HUB_OFFLINE=1`` in one shell's profile (a cluster's, a container's): ``huggingface_hub``
reads it at its import, in every process, and it decides whether a file asked for by its repo
id may come from the network or only from the Hub's cache. A program that loads its model from
a folder never asks: the switch decided nothing, and listed beside the program's own read it
keeps the verdict undecided (fresh13 ``eval-max-length-from-cshrc-metric`` and fresh30
``max-seq-len-from-compose-metric``, both scored untouched).

:func:`fetched_nothing` says so, from the runs: both ran to their end (exit 0: a run that
failed may have failed for want of a file), both were traced with their file opens recorded in
full, and neither opened or wrote a file under the caches the switch decides for
(:data:`runsnap.knowledge.hfcaches.OFFLINE`), each resolved under that run's own environment:
whatever the Hub client fetches, or finds cached, is opened there by Python (its config and
index files, beside weights read from C).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from runsnap.diffing.result import Difference
from runsnap.knowledge.hfcaches import OFFLINE, datasets_cache, hub_cache

__all__ = ["fetched_nothing", "touched_under"]

_CACHES = {"hub": hub_cache, "datasets": datasets_cache}


def touched_under(snap: Any, folders: Sequence[str]) -> bool:
    """Whether the traced run of ``snap`` read or wrote a file under one of ``folders``, each
    path and folder taken as recorded and as its real path."""
    rt = snap.records.runtime
    paths = [*(str(p) for p in rt.data_files), *(str(p) for p in rt.data_files_written)]
    paths += [os.path.realpath(p) for p in paths]
    roots = {r for f in folders for r in (f.rstrip("/"), os.path.realpath(f).rstrip("/")) if r}
    return any(p == r or p.startswith(r + "/") for p in paths for r in roots)


def fetched_nothing(d: Difference, a: Any, b: Any) -> str:
    """For an offline switch of :data:`~runsnap.knowledge.hfcaches.OFFLINE`: in words, that
    neither run fetched or found a file through the caches it decides for (see the module's
    text); ``""`` when a run may have, or the runs cannot say."""
    caches = OFFLINE.get(d.key) if d.section == "env" else None
    if not caches:
        return ""
    seen: list[str] = []
    for snap in (a, b):
        rt = snap.records.runtime
        watched = rt.has("data_files") or rt.data_files_left_out == 0
        if not rt.traced or not watched or rt.data_files_left_out:
            return ""
        if snap.records.outcome.exit_status != 0:
            return ""
        folders = [_CACHES[c](snap.records.env.vars) for c in caches]
        if touched_under(snap, folders):
            return ""
        seen += [f for f in folders if f not in seen]
    return (f"both runs ran to their end and neither opened a file under {' or '.join(seen)}: "
            "no file came through the cache it decides for, so whether it may fetch never "
            "came up")
