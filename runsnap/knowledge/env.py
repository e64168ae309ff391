"""What runsnap knows about environment variable names: families, noise, known names,
misspellings, and which values are lists.

The rules are data beside this module (``env-families.tsv``, ``env-noise.tsv``,
``env-known-names.txt``), each with its reason in words; diff ranks with them, and so can any
other reader of a snapshot (check, who-reads, reports).
"""

from __future__ import annotations

import functools
import re

from runsnap.knowledge import Glob, name_list, rule_lines

__all__ = [
    "COLON_LISTS",
    "COMMA_LISTS",
    "closest_name",
    "family_of",
    "family_owners",
    "is_known_name",
    "known_names",
    "likely_misspelling",
    "named_by_family",
    "list_separator",
    "noise_reason",
    "osa_distance",
    "split_list",
]

@functools.lru_cache(maxsize=1)
def _families() -> tuple[tuple[Glob, int | None, str, frozenset[str]], ...]:
    return tuple((Glob(row[0]), None if row[1] == "-" else int(row[1]),
                  row[2], frozenset(o for o in (row[3] if len(row) > 3 else "").split(",") if o))
                 for row in rule_lines("env-families.tsv"))


@functools.lru_cache(maxsize=1)
def _noise() -> tuple[tuple[Glob, str], ...]:
    return tuple((Glob(g), r) for g, r in rule_lines("env-noise.tsv"))


_Index = dict[tuple[str, int], list[str]]


@functools.lru_cache(maxsize=8192)
def _letters(name: str) -> int:
    """A bit for each letter ``name`` holds: one edit changes at most two of them, so names
    whose bits differ in more than 2k places are more than k edits apart."""
    bits = 0
    for ch in name:
        bits |= 1 << (ord(ch) & 63)
    return bits


@functools.lru_cache(maxsize=1)
def _known() -> frozenset[str]:
    """The known names alone: the pre-launch guard asks whether a name is known for every set
    variable on the capture path, and needs the index below only for a suspicious one."""
    return name_list("env-known-names.txt")


@functools.lru_cache(maxsize=1)
def _known_index() -> tuple[frozenset[str], _Index, _Index]:
    """Known names, and indexes by first word and by the rest, each with the name's length (a
    name k edits away from another is within k letters of its length) and letters: near misses
    found fast."""
    names = _known()
    by_head: _Index = {}
    by_tail: _Index = {}
    for n in names:  # letters are computed for the few candidates a look-up meets, not here
        head, _, tail = n.partition("_")
        by_head.setdefault((head, len(n)), []).append(n)
        by_tail.setdefault((tail, len(n)), []).append(n)
    return names, by_head, by_tail


def is_known_name(name: str) -> bool:
    """Whether a serving or training stack is known to read the variable ``name``.

    >>> is_known_name("NCCL_P2P_DISABLE"), is_known_name("MY_OWN_SETTING")
    (True, False)
    """
    return name in _known()


@functools.lru_cache(maxsize=1)
def _family_names() -> frozenset[str]:
    return frozenset(row[0] for row in rule_lines("env-families.tsv")
                     if not any(c in row[0] for c in "*?["))


def named_by_family(name: str) -> bool:
    """Whether a family rule names the variable ``name`` itself, not by a pattern: a real
    variable, never a misspelling (``MASTER_ADDR``, ``VIRTUAL_ENV``).

    >>> named_by_family("MASTER_ADDR"), named_by_family("MASTER_ADRR"), named_by_family("NCCL_ALGO")
    (True, False, False)
    """
    return name in _family_names()


def known_names() -> frozenset[str]:
    """Every variable name a serving or training stack is known to read."""
    return _known()


@functools.lru_cache(maxsize=1 << 16)
def family_of(name: str) -> tuple[int, str] | None:
    """The score and reason of the first family rule that matches ``name``.

    Names another program owns under a stack's prefix (Terraform's ``TF_CLI_CONFIG_FILE``
    beside TensorFlow's ``TF_*``) belong to no family.

    >>> family_of("NCCL_P2P_DISABLE")[0], family_of("HOME"), family_of("TF_CLI_CONFIG_FILE")
    (82, None, None)
    """
    for pattern, score, reason, _owners in _families():
        if pattern.match(name):
            return None if score is None else (score, reason)
    return None


def family_owners(name: str) -> frozenset[str]:
    """The distributions whose presence puts ``name``'s family in play (PEP 503 names); empty
    when the family belongs to every stack (``NCCL_*``, ``CUDA_*``) or ``name`` is in none.

    >>> sorted(family_owners("JAX_PLATFORMS")), family_owners("NCCL_ALGO")
    (['jax', 'jaxlib'], frozenset())
    """
    for pattern, score, _reason, owners in _families():
        if pattern.match(name):
            return frozenset() if score is None else owners
    return frozenset()


@functools.lru_cache(maxsize=1 << 16)
def noise_reason(name: str) -> str | None:
    """Why ``name`` is noise, or None when it is not.

    >>> noise_reason("SHLVL"), noise_reason("NCCL_DEBUG")
    ('how deeply shells are nested', None)
    """
    for pattern, reason in _noise():
        if pattern.match(name):
            return reason
    return None


def osa_distance(a: str, b: str, limit: int = 3) -> int:
    """Edit distance with adjacent transpositions (optimal string alignment), capped at ``limit``.

    >>> osa_distance("NCCL_P2P_DISABEL", "NCCL_P2P_DISABLE"), osa_distance("ab", "xyz")
    (1, 3)
    >>> osa_distance("NCCL_ALGO", "NCCL_ALGO"), osa_distance("NCCL_AGLO", "NCCL_ALGO")
    (0, 1)
    """
    if abs(len(a) - len(b)) >= limit:
        return limit
    # A common prefix and suffix cost nothing and never take part in a cheaper alignment (as
    # rapidfuzz trims them for this distance): the table shrinks to the part that differs.
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end = 0
    while end < len(a) - start and end < len(b) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    a, b = a[start:len(a) - end], b[start:len(b) - end]
    if not a or not b:
        return min(max(len(a), len(b)), limit)
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) >= limit:
            return limit
        prev2, prev = prev, cur
    return min(prev[-1], limit)


@functools.lru_cache(maxsize=8)
def _by_length(names: frozenset[str]) -> dict[int, list[tuple[str, int]]]:
    """``names`` by length, each with its letters (:func:`_letters`)."""
    out: dict[int, list[tuple[str, int]]] = {}
    for n in names:
        out.setdefault(len(n), []).append((n, _letters(n)))
    return out


def closest_name(name: str, names: frozenset[str]) -> str | None:
    """The name of ``names`` (other than ``name``) one edit from ``name`` (two for names of
    12 letters or more), the closest and then the first in order; ``None`` when there is none.
    Only the names of a length within reach whose letters could be are measured.

    >>> closest_name("NCCL_DEBUG_FILE", frozenset({"NCCL_DEBUG_FIEL", "NCCL_DEBUG"}))
    'NCCL_DEBUG_FIEL'
    >>> closest_name("HF_HOME", frozenset({"HF_HUB", "HF_HOME"})) is None
    True
    """
    allowed = 2 if len(name) >= 12 else 1
    index = _by_length(names)
    letters = _letters(name)
    best: tuple[int, str] | None = None
    for size in range(len(name) - allowed, len(name) + allowed + 1):
        for cand, bits in index.get(size, ()):
            if cand == name or (letters ^ bits).bit_count() > 2 * allowed:
                continue
            d = osa_distance(name, cand, allowed + 1)
            if d <= allowed and (best is None or (d, cand) < best):
                best = (d, cand)
    return best[1] if best else None


@functools.lru_cache(maxsize=4096)
def likely_misspelling(name: str) -> str | None:
    """The known variable that ``name`` looks like a misspelling of, or None.

    A name that is itself known is never a misspelling. Candidates share the first word
    (``NCCL``) or everything after it, so a typo in either half is found; one edit (a letter
    wrong, missing, extra, or two swapped) is allowed, two for names of 12 letters or more.

    >>> likely_misspelling("NCCL_P2P_DISABEL"), likely_misspelling("NCCL_P2P_DISABLE")
    ('NCCL_P2P_DISABLE', None)
    >>> likely_misspelling("NCLL_P2P_DISABLE"), likely_misspelling("MY_OWN_SETTING")
    ('NCCL_P2P_DISABLE', None)
    """
    names, by_head, by_tail = _known_index()
    if name in names or len(name) < 6:
        return None
    head, _, tail = name.partition("_")
    allowed = 2 if len(name) >= 12 else 1
    best: tuple[int, str] | None = None
    sizes = range(len(name) - allowed, len(name) + allowed + 1)
    letters = _letters(name)
    for cand in (*(c for n in sizes for c in by_head.get((head, n), ())),
                 *(c for n in sizes for c in by_tail.get((tail, n), ()))):
        if (letters ^ _letters(cand)).bit_count() > 2 * allowed:
            continue
        d = osa_distance(name, cand, allowed + 1)
        if d <= allowed and (best is None or (d, cand) < best):
            best = (d, cand)
    return best[1] if best else None


#: Variables whose value is a ``:``-separated search path: the first entry that has what is
#: looked for wins, so order matters as much as content.
COLON_LISTS = frozenset({
    "PATH", "LD_LIBRARY_PATH", "LIBRARY_PATH", "PYTHONPATH", "MANPATH", "CPATH", "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH", "PKG_CONFIG_PATH", "DYLD_LIBRARY_PATH", "XDG_DATA_DIRS",
    "XDG_CONFIG_DIRS", "CLASSPATH", "INFOPATH", "GOPATH", "PERL5LIB", "LD_PRELOAD",
})
#: Variables whose value is a ``,``-separated list (device order decides which GPU is cuda:0).
COMMA_LISTS = frozenset({
    "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "NCCL_SOCKET_IFNAME",
    "NCCL_IB_HCA", "GLOO_SOCKET_IFNAME", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF",
    "TORCH_CUDA_ARCH_LIST", "NO_PROXY", "no_proxy", "TORCH_LOGS", "TORCHINDUCTOR_CACHE_DIR",
})


def list_separator(name: str, a: str, b: str) -> str | None:
    """The separator that makes both values of ``name`` lists, or None when they are scalars.

    Known names decide first; otherwise a value with ``,`` in both is a comma list, and a value
    whose ``:``-separated entries are all absolute paths is a search path.

    >>> list_separator("PATH", "/a:/b", "/b:/a"), list_separator("X", "1,2", "2,1")
    (':', ',')
    >>> list_separator("URL", "http://h:1", "http://h:2") is None
    True
    """
    if name in COLON_LISTS or name.endswith(("PATH", "_DIRS")):
        return ":"
    if name in COMMA_LISTS or name.endswith("_DEVICES"):
        return ","
    if "," in a and "," in b:
        return ","
    if ":" in a and ":" in b and all(p.startswith(("/", "~")) or not p
                                     for p in (*a.split(":"), *b.split(":"))):
        return ":"
    return None


def split_list(value: str, sep: str) -> list[str]:
    """Entries of a list value, blanks dropped (``LD_PRELOAD`` also takes spaces).

    >>> split_list("/a::/b:", ":"), split_list("0, 1", ",")
    (['/a', '/b'], ['0', '1'])
    """
    parts = re.split(r"[:\s]+", value) if sep == ":" else value.split(sep)
    return [p.strip() for p in parts if p.strip()]
