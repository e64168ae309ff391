"""The keys torch's caching allocators accept in ``PYTORCH_CUDA_ALLOC_CONF`` (and its
``PYTORCH_ALLOC_CONF`` / ``PYTORCH_HIP_ALLOC_CONF`` spellings): ``torch-alloc-conf.txt``."""

from __future__ import annotations

import functools

from runsnap.knowledge import rule_lines
from runsnap.knowledge.env import osa_distance

__all__ = ["ALLOC_CONF_VARS", "alloc_conf_keys", "split_alloc_conf", "unknown_alloc_keys"]

#: The variables torch reads the allocator's settings from.
ALLOC_CONF_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF")


@functools.lru_cache(maxsize=1)
def alloc_conf_keys() -> frozenset[str]:
    """Every key some torch allocator accepts."""
    return frozenset(row[0] for row in rule_lines("torch-alloc-conf.txt"))


def split_alloc_conf(value: str) -> list[str]:
    """The keys of a ``key:value,key:value`` setting, as torch's tokenizer sees them (commas
    inside ``[...]`` belong to the value).

    >>> split_alloc_conf("expandable_segments:True,roundup_power2_divisions:[256:1,512:2]")
    ['expandable_segments', 'roundup_power2_divisions']
    >>> split_alloc_conf("backend:cudaMallocAsync")
    ['backend']
    """
    keys, depth, item = [], 0, ""
    for ch in value + ",":
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(depth - 1, 0)
        if ch == "," and depth == 0:
            key = item.split(":", 1)[0].split("=", 1)[0].strip()
            if key:
                keys.append(key)
            item = ""
        else:
            item += ch
    return keys


def unknown_alloc_keys(value: str) -> list[tuple[str, str | None]]:
    """The keys torch does not know in ``value``, each with the known key it is closest to
    (two edits at most), or None.

    >>> unknown_alloc_keys("expandable_segment:True,max_split_size_mb:128,bogus:1")
    [('expandable_segment', 'expandable_segments'), ('bogus', None)]
    """
    known = alloc_conf_keys()
    out: list[tuple[str, str | None]] = []
    for key in split_alloc_conf(value):
        if key in known:
            continue
        best = min(((osa_distance(key, k, 3), k) for k in known), default=(3, ""))
        out.append((key, best[1] if best[0] <= 2 else None))
    return out
