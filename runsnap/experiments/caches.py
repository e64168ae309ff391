"""On-disk result caches that a trial must not share with the runs, nor with another trial.

A library that caches what it computed on disk, keyed by a fingerprint of its inputs, makes a
launch depend on what earlier launches left there: Hugging Face ``datasets`` writes a
``Dataset.map`` result as ``cache-<fingerprint>.arrow`` beside the data, and a later call
whose fingerprint matches loads it instead of computing it. BAD's launch left its results in
the cache; a trial that applies only one of BAD's options (``--writer-batch-size``, part of
the fingerprint) then loads BAD's result and goes bad, though that option changes nothing of
the computation. The search is led astray by state outside the launch.

So where a snapshot shows that the program used such a cache (it read or wrote files under the
cache's folder), every launch of ``why`` and ``bisect`` gets a cache folder of its own
(``HF_DATASETS_CACHE`` pointing under the trial's folder): it computes what it needs, as the
first run did, and no launch sees another's results. Files the library downloads from the Hub
stay in the Hub's own cache (``HF_HUB_CACHE``), which is shared as before. Where a variable
that places the cache is itself a change under test, the trials leave it alone.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from runsnap.base.records import FrozenRecord
from runsnap.diffing.fetching import touched_under
from runsnap.knowledge.hfcaches import datasets_cache

if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["ResultCache", "fresh_caches", "used_caches"]


class ResultCache(FrozenRecord):
    """A cache the runs used, and how a trial is given one of its own."""

    library: str
    """What writes it (``datasets``)."""
    variable: str
    """The variable that places it (``HF_DATASETS_CACHE``)."""
    folder: str
    """Where the runs' cache was (as one of the snapshots resolves it)."""


#: library -> (the variable that places its cache, the variables its folder is made from,
#: the folder under a run's environment).
_CACHES = {
    "datasets": ("HF_DATASETS_CACHE", ("HF_DATASETS_CACHE", "HF_HOME", "XDG_CACHE_HOME", "HOME"),
                 datasets_cache),
}


def used_caches(good: Snapshot, bad: Snapshot, under_test: Collection[str] = ()
                ) -> tuple[ResultCache, ...]:
    """The result caches GOOD's or BAD's program read or wrote files under (traced runs
    only), leaving out any placed by a variable in ``under_test`` (the variables the
    trials apply: the cache's place is then a change searched, not state to isolate)."""
    out = []
    for library, (variable, placed_by, folder_of) in _CACHES.items():
        if any(name in under_test for name in placed_by):
            continue
        for snap in (good, bad):
            folder = folder_of(snap.records.env.vars)
            if touched_under(snap, (folder,)):
                out.append(ResultCache(library, variable, folder))
                break
    return tuple(out)


def fresh_caches(env: Mapping[str, str], caches: Collection[ResultCache], folder: str,
                 name: str) -> dict[str, str]:
    """``env`` with each cache placed in a folder of this launch's own
    (``FOLDER/NAME-caches/LIBRARY``), made empty now: a launch run again gets a new one."""
    out = dict(env)
    for cache in caches:
        where = os.path.join(folder, f"{name}-caches", cache.library)
        os.makedirs(where, exist_ok=True)
        out[cache.variable] = where
    return out


def cache_note(caches: Collection[ResultCache]) -> list[str]:
    """What the trials do about the caches, in words (one line a cache).

    >>> cache_note([ResultCache("datasets", "HF_DATASETS_CACHE", "/h/datasets")])[0][:58]
    'the runs used the on-disk cache of datasets (/h/datasets):'
    """
    return [f"the runs used the on-disk cache of {c.library} ({c.folder}): every launch gets one "
            f"of its own ({c.variable}), so none loads a result another launch left there"
            for c in caches]
