"""Which names a scan of the environment keeps: the literals of its filter, from the source.

Code that iterates ``os.environ`` and keeps some names writes what it keeps as a literal in a
filter: ``key.startswith("SGL_")`` (SGLang's ``_handle_deprecated_envs``, python/sglang/srt/
environ.py), ``name[-6:] == '_proxy'`` (urllib's ``getproxies_environment``),
``k.startswith(("A_", "B_"))``, ``re.match(r"^FSSPEC_", k)``. Those literals, and only those,
are what the scan reads: a name the filter rejects was not read, even when the code near it
writes another prefix for its own reasons (SGLang writes ``"SGLANG_"`` as the new name of each
``SGL_`` variable it keeps). :func:`filter_literals` finds them; code without such a filter
leaves the decision to the caller (a prefix written nearby, or a copy of every name).
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["PLUMBING", "SCAN_BELOW", "SCAN_LINES", "filter_literals", "filter_names",
           "scan_filter"]

# A string literal without escapes: "SGL_", 'SGL_', r"^SGL_" (its text: one of two groups).
_LIT = r"""[rRbBuU]{0,2}(?:"([^"\\\n]*)"|'([^'\\\n]*)')"""
# k.startswith(LIT) / k.startswith((LIT, LIT)) and the same for endswith.
_AFFIX_CALL = re.compile(r"""\.(startswith|endswith)\(\s*(\([^()\n]*\)|""" + _LIT + r")")
# k[:4] == LIT (a prefix), k[-6:] == LIT (a suffix).
_SLICE = re.compile(r"""\[\s*(-\d+\s*:|:\s*\d+)\s*\]\s*==\s*""" + _LIT)
# re.match(r"^SGL_", k), re.compile(r"^SGL_.*"), re.search(r"_PROXY$", k, ...).
_REGEX = re.compile(r"""\bre\.(match|fullmatch|search|compile)\(\s*""" + _LIT)
# "NCCL" in k: a substring every kept name holds.
_CONTAINS = re.compile(_LIT + r"""\s+in\s+[A-Za-z_]\w*(?!\s*\()""")
# k in ("A", "B"), k in {"A"}, k not in [...]: the names themselves.
_MEMBER = re.compile(r"""\b[A-Za-z_]\w*\s+(?:not\s+)?in\s+([(\[{][^()\[\]{}\n]*[)\]}])""")
# {"A", "B"}.issubset(os.environ.keys()), REQUIRED.issubset(os.environ): a test that names
# are set, which iterates the environment's names to build a set (Lightning's LSF detect).
_SUBSET = re.compile(r"""([A-Za-z_]\w*|\{[^{}\n]*\})\s*\.\s*issubset\(\s*(?:set\(\s*)?os\.environ""")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME_PART = re.compile(r"[A-Za-z0-9_]+")
_PREFIX_SHAPE = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*_?")
_SUFFIX_SHAPE = re.compile(r"_[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*")


def _literals(group: str) -> list[str]:
    return [m.group(1) or m.group(2) or "" for m in re.finditer(_LIT, group)]


def _from_regex(kind: str, pattern: str) -> tuple[str, str] | None:
    """A regular expression's fixed prefix (``^SGL_``, or any start for ``match``) or fixed
    suffix (``_PROXY$``) as (``prefix`` | ``suffix``, literal).

    >>> _from_regex("match", "SGL_(.*)"), _from_regex("search", "_proxy$")
    (('prefix', 'SGL_'), ('suffix', '_proxy'))
    >>> _from_regex("search", "GL_") is None
    True
    """
    if pattern.startswith("^") or kind in ("match", "fullmatch"):
        head = _NAME_PART.match(pattern.lstrip("^"))
        return ("prefix", head.group(0)) if head else None
    tail = re.search(r"([A-Za-z0-9_]+)\$$", pattern)
    return ("suffix", tail.group(1)) if tail else None


def filter_literals(window: str) -> tuple[list[str], list[str]] | None:
    """The (prefixes, suffixes) the filters in ``window`` keep, or None when it holds no
    filter with a literal.

    >>> code = '''for key, value in list(os.environ.items()):
    ...     if key.startswith("SGL_") and key not in _DEPRECATED_ENVS:
    ...         new_key = key.replace("SGL_", "SGLANG_", 1)'''
    >>> filter_literals(code)
    (['SGL_'], [])
    >>> filter_literals("if value and name[-6:] == '_proxy':")
    ([], ['_proxy'])
    >>> filter_literals('k.startswith(("MYLIB_", "ML_")) or re.match(r"^XLIB_.*", k)')
    (['ML_', 'MYLIB_', 'XLIB_'], [])
    >>> filter_literals('out = {k: v for k, v in os.environ.items()}') is None
    True
    """
    prefixes: set[str] = set()
    suffixes: set[str] = set()
    for m in _AFFIX_CALL.finditer(window):
        found = _literals(m.group(2))
        (prefixes if m.group(1) == "startswith" else suffixes).update(found)
    for m in _SLICE.finditer(window):
        (suffixes if m.group(1).lstrip().startswith("-") else prefixes).add(
            m.group(2) or m.group(3) or "")
    for m in _REGEX.finditer(window):
        got = _from_regex(m.group(1), m.group(2) or m.group(3) or "")
        if got:
            (prefixes if got[0] == "prefix" else suffixes).add(got[1])
    # the shape of a variable's name: a prefix ``SGL_`` (or ``CUDA``), a suffix ``_proxy``;
    # not ``"/"``, ``"#"`` or ``"http"``, which filter paths and lines, not names
    prefixes = {p for p in prefixes if _PREFIX_SHAPE.fullmatch(p) and (
        p.endswith("_") or p.isupper())}
    suffixes = {s for s in suffixes if _SUFFIX_SHAPE.fullmatch(s)}
    if not (prefixes or suffixes):
        return None
    return sorted(prefixes), sorted(suffixes)


def filter_names(window: str) -> tuple[list[str], list[str]] | None:
    """The (substrings, whole names) the membership filters in ``window`` keep: ``"NCCL" in
    key`` keeps the names that hold ``NCCL``, ``key in ("HF_HOME", "HF_TOKEN")`` those two;
    ``{"LSB_JOBID", ...}.issubset(os.environ.keys())`` the names of its set (a test that
    they are set); None when it holds none of those. A substring has a variable name's shape
    (upper case, or with an ``_``), and so does each name of a literal collection
    (``mode in ("train", "eval")`` filters no variable), with nothing else in it.

    >>> filter_names('keep = {k: v for k, v in os.environ.items() if "NCCL" in k}')
    (['NCCL'], [])
    >>> filter_names("for key in os.environ:\\n    if key in ('HF_HOME', 'HF_TOKEN'):")
    ([], ['HF_HOME', 'HF_TOKEN'])
    >>> filter_names('if "=" in line or "#" in line:') is None
    True
    >>> filter_names('if mode in ("train", "eval"):') is None
    True
    >>> filter_names('need = {"LSB_JOBID", "JSM_NAMESPACE_SIZE"}\\n'
    ...              'return need.issubset(os.environ.keys())')
    ([], ['JSM_NAMESPACE_SIZE', 'LSB_JOBID'])
    """
    contains = {m.group(1) or m.group(2) or "" for m in _CONTAINS.finditer(window)}
    contains = {c for c in contains if _PREFIX_SHAPE.fullmatch(c.strip("_")) and len(c) >= 3
                and (c.isupper() or "_" in c)}
    names: set[str] = set()
    for m in _MEMBER.finditer(window):
        inner = m.group(1)[1:-1]
        found = _literals(inner)
        rest = re.sub(_LIT, "", inner).replace(",", "").strip()
        if found and not rest and all(_VARIABLE.fullmatch(f) and (f.isupper() or "_" in f)
                                      for f in found):
            names.update(found)
    for m in _SUBSET.finditer(window):
        held = m.group(1)
        if not held.startswith("{"):  # a name: the set literal assigned to it nearby
            given = re.search(r"\b" + re.escape(held) + r"\s*=\s*(?:frozenset\(|set\()?\s*"
                              r"([({\[][^(){}\[\]\n]*[)}\]])", window)
            held = given.group(1) if given else ""
        found = _literals(held)
        if found and all(_VARIABLE.fullmatch(f) for f in found):
            names.update(found)
    if not (contains or names):
        return None
    return sorted(contains), sorted(names)


# The patterns of scan_filter, compiled (by re's cache) only when a bulk read is judged: most
# traces have none, and compiling them was most of this module's import, after the child ended.
# A name prefix written as a literal in code that scans the environment: "WANDB_", 'MYLIB_'.
_PREFIX = r"""["']([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_)["']"""
# Any literal that can be a prefix ('mylib_') or a suffix ('_proxy') of variable names.
_AFFIX = r"""["']([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*_|_[A-Za-z][A-Za-z0-9_]*)["']"""
# Code that keeps some names of what it iterates: k.startswith(P), k.endswith(S), k[-6:] == S.
_FILTER = r"""\.(?:startswith|endswith)\(|\[[^\]\n]*:[^\]\n]*\]\s*[=!]="""
#: Lines above a bulk read searched for the prefix it filters by.
SCAN_LINES = 25
#: Lines below it: a copy filtered just after it is taken (``envdict = dict(os.environ)``,
#: then ``for key in envdict: if key.startswith("FSSPEC_")``: fsspec's config).
SCAN_BELOW = 12
#: Modules that only carry a bulk read out for its caller (the mapping protocol of
#: ``os.environ``, copies): the caller's code is what filters, or not.
PLUMBING = frozenset({"os", "_collections_abc", "collections", "copy", "typing"})


def scan_filter(stack: list[Any], sys_path: Sequence[str]) -> dict[str, Any]:
    """Whether a bulk read of the environment was a *scan* that keeps some names (``scan``:
    true, with the literal ``prefixes`` and ``suffixes`` it filters by) or a *copy* of them
    all (``scan``: false); ``{}`` when the code is not here to read.

    The code read is that of the innermost frame that is not plumbing (:data:`PLUMBING`):
    its line, the :data:`SCAN_LINES` above it and the :data:`SCAN_BELOW` below it (a copy
    filtered as soon as it is taken), from the source, after the run. A scan
    filters names there (``k.startswith(PREFIX)``, ``name.endswith("_proxy")``,
    ``name[-6:] == '_proxy'``: urllib's proxies), and then keeps only the literals of its
    filter (:func:`filter_literals`: SGLang keeps ``SGL_`` and writes
    ``"SGLANG_"`` for other reasons), or names a prefix of the ``"WANDB_"`` shape. Python's
    own library counts: urllib scans for ``*_proxy``."""
    for entry in stack[:4]:
        text = str(entry)
        path, sep, rest = text.rpartition(":")
        line = rest.split(" in ", 1)[0]
        if not sep or not line.isdigit():
            continue
        top = path.replace("\\", "/").lstrip("/").split("/", 1)[0].removesuffix(".py")
        if path.startswith("<") or (top in PLUMBING and not os.path.isabs(path)):
            continue
        file = _source_file(path, sys_path)
        if file is None:
            return {}
        lines = _source_lines(file)
        n = int(line)
        window = "".join(lines[max(0, n - SCAN_LINES): n + SCAN_BELOW])
        # a filter's own literals decide what it keeps, nearest the read first (the loop's
        # body, or a comprehension on the read's line); other literals are not names it read
        near = "".join(lines[max(0, n - 2): n + SCAN_BELOW])
        kept = filter_literals(near) or filter_literals(window)
        # "NCCL" in k, k in ("A", "B"): only next to the read, where the loop's test is
        member = filter_names(near)
        if kept is not None or member is not None:
            pre, suf = kept or ([], [])
            sub, whole = member or ([], [])
            return {"scan": True, **({"prefixes": pre[:8]} if pre else {}),
                    **({"suffixes": suf[:8]} if suf else {}),
                    **({"contains": sub[:8]} if sub else {}),
                    **({"kept": whole[:32]} if whole else {})}
        named = re.findall(_PREFIX, window)
        if not named and not re.search(_FILTER, window):
            return {"scan": False}
        affixes = set(named) | {a for a in re.findall(_AFFIX, window)
                                if not a.startswith("__") and len(a.strip("_")) >= 2}
        out: dict[str, Any] = {"scan": True}
        prefixes = sorted(a for a in affixes if a.endswith("_") and not a.startswith("_"))
        suffixes = sorted(a for a in affixes if a.startswith("_") and not a.endswith("_"))
        if prefixes:
            out["prefixes"] = prefixes[:8]
        if suffixes:
            out["suffixes"] = suffixes[:8]
        return out
    return {}


def _source_file(path: str, sys_path: Sequence[str]) -> str | None:
    if os.path.isabs(path):
        return path if os.path.isfile(path) else None
    for entry in sys_path:
        if entry:
            full = os.path.join(entry, path)
            if os.path.isfile(full):
                return full
    return None


def _source_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            return fh.readlines()
    except OSError:
        return []
