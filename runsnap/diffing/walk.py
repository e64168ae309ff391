"""What every section's comparison shares: a walk over plain values, tables keyed by name,
lists whose order matters, collector errors, and locators.

A plain recursive walk, not DeepDiff: it yields the exact keys and change kinds the report
needs, without importing or translating DeepDiff's tree (measured in benchmarks/RESULTS.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from runsnap.diffing.result import Difference
from runsnap.snapshot.compared import BY_DECLARATION, NOT_COMPARED
from runsnap.snapshot.records import Sections

__all__ = ["Parts", "compare_lists", "declared", "declared_score", "dedupe", "dotted", "errors",
           "generic", "keyed", "locator", "walk"]

Parts = tuple[str | int, ...]
"""Keys inside a value: table keys (str) and list indexes (int)."""


def locator(*parts: str | int) -> tuple[str, ...]:
    """A :attr:`Difference.path`: every part as text (a list index in decimal).

    >>> locator("models", "--model-path", "config", "architectures", 0)
    ('models', '--model-path', 'config', 'architectures', '0')
    """
    return tuple(str(p) for p in parts)


def dotted(parts: Parts) -> str:
    """Parts written as a key: tables joined with ``.``, list indexes in brackets.

    >>> dotted(("text_config", "rope_scaling", "factor")), dotted(("architectures", 0))
    ('text_config.rope_scaling.factor', 'architectures[0]')
    """
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out


def compare_lists(xs: Sequence[str], ys: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """The change kind and evidence lines for two lists whose order matters.

    >>> compare_lists(["/a", "/b", "/c"], ["/b", "/a", "/c"])
    ('reordered', ('moved: /b (position 2 in A, 1 in B)',))
    >>> compare_lists(["0", "1"], ["0", "1", "2"])
    ('changed', ('added: 2 (position 3)',))

    Lists of one entry at most on both sides say nothing their two values do not:

    >>> compare_lists(["lo"], ["eth9"])
    ('changed', ())
    """
    if len(xs) <= 1 and len(ys) <= 1:
        return "changed", ()
    in_a, in_b = set(xs), set(ys)
    lines: list[str] = []
    lines += [f"added: {y} (position {i + 1})" for i, y in enumerate(ys) if y not in in_a]
    lines += [f"removed: {x} (was position {i + 1})" for i, x in enumerate(xs) if x not in in_b]
    common_a = dedupe(x for x in xs if x in in_b)
    common_b = dedupe(y for y in ys if y in in_a)
    moved: list[str] = []
    if common_a != common_b:
        import difflib  # only for lists whose common entries moved (~1.5 ms to import)

        matcher = difflib.SequenceMatcher(None, common_a, common_b, autojunk=False)
        kept = {common_a[blk.a + k] for blk in matcher.get_matching_blocks()
                for k in range(blk.size)}
        pos_a = {x: i + 1 for i, x in reversed(list(enumerate(xs)))}
        pos_b = {y: i + 1 for i, y in reversed(list(enumerate(ys)))}
        moved = [f"moved: {x} (position {pos_a[x]} in A, {pos_b[x]} in B)"
                 for x in common_a if x not in kept]
    if not lines and not moved and list(xs) != list(ys):
        lines.append("the same entries, repeated differently")
    change = "reordered" if moved and not lines else "changed"
    return change, tuple(lines + moved)


def dedupe(items: Any) -> list[str]:
    """``items`` without repeats, in first-seen order."""
    seen: set[str] = set()
    return [x for x in items if not (x in seen or seen.add(x))]  # type: ignore[func-returns-value]


def walk(a: Any, b: Any, path: Parts = ()) -> Iterator[tuple[Parts, str, Any, Any]]:
    """``(parts, change, a, b)`` for every leaf that differs between two plain values.

    Tables are walked key by key (``("text_config", "rope_scaling", "factor")``); lists of
    equal length item by item (``("architectures", 0)``: an index is an int); lists of other
    lengths are one change, and so is a table of data (:func:`data_table`: ``id2label``,
    ``label2id``), whose entries are one value. :func:`dotted` writes the parts as a key.

    >>> list(walk({"x": {"y": 1, "z": [1, 2]}}, {"x": {"y": 2, "z": [1, 3]}, "w": True}))
    [(('x', 'y'), 'changed', 1, 2), (('x', 'z', 1), 'changed', 2, 3), (('w',), 'added', None, True)]
    >>> list(walk({"id2label": {"0": "neg", "1": "pos"}},
    ...           {"id2label": {"0": "neg", "1": "neu", "2": "pos"}}))[0][:2]
    (('id2label',), 'changed')
    """
    if a == b:
        return
    if isinstance(a, Mapping) and isinstance(b, Mapping) and path and (
            data_table(a) or data_table(b)):
        yield path, "changed", a, b
        return
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for k in a:
            sub = (*path, str(k))
            if k not in b:
                yield sub, "removed", a[k], None
            else:
                yield from walk(a[k], b[k], sub)
        for k in b:
            if k not in a:
                yield (*path, str(k)), "added", None, b[k]
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from walk(x, y, (*path, i))
        return
    yield path, "changed", a, b


def data_table(value: Mapping[Any, Any]) -> bool:
    """Whether a table holds data, not fields: every key a number (``id2label``'s ``"0"``,
    ``"1"``) or every value a distinct index from 0 (``label2id``'s ``{"neg": 0, "pos": 1}``),
    two entries or more. Its entries are one value: a label added is one change of the map.

    >>> data_table({"0": "neg", "1": "pos"}), data_table({"neg": 0, "pos": 1})
    (True, True)
    >>> data_table({"factor": 8.0, "type": "yarn"}), data_table({"a": 1, "b": 1})
    (False, False)
    """
    if len(value) < 2:
        return False
    if all(str(k).lstrip("-").isdigit() for k in value):
        return True
    vals = list(value.values())
    return all(isinstance(v, int) and not isinstance(v, bool) for v in vals) and sorted(
        vals) == list(range(len(vals)))


def generic(section: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """A section this runsnap has no special rules for: every leaf that differs, but the fields
    its declaration marks ``NotCompared`` (:data:`runsnap.snapshot.compared.NOT_COMPARED`) and
    those :func:`declared` compares."""
    skip = {"errors", *NOT_COMPARED.get(section, ()), *BY_DECLARATION.get(section, ())}
    a = {k: v for k, v in a.items() if k not in skip}
    b = {k: v for k, v in b.items() if k not in skip}
    return [Difference(section, dotted(parts), change, x, y, path=locator(section, *parts))
            for parts, change, x, y in walk(a, b)]


def declared(section: str, a: Mapping[str, Any], b: Mapping[str, Any], where: str = "",
             *, under: Parts = (), key: str = "") -> list[Difference]:
    """Every leaf that differs in the fields compared from their declaration alone (``Compare(
    score, reason)``: :data:`runsnap.snapshot.compared.BY_DECLARATION` under ``where``, the
    section by default). ``under`` and ``key`` prefix each difference's locator and key. A
    field absent on one side and ``False`` on the other is the same (a flag added later).

    >>> [(d.key, d.a, d.b) for d in declared("git", {"branch": "main", "bare": False},
    ...                                      {"branch": "dev"}, "git.repos", key="r.")]
    [('r.branch', 'main', 'dev')]
    """
    out: list[Difference] = []
    for field in BY_DECLARATION.get(where or section, ()):
        x, y = a.get(field), b.get(field)
        if x == y or (x is None or x is False) and (y is None or y is False):
            continue
        if x is None or y is None:  # absent on one side: each entry of the other is a change
            empty: Any = {} if isinstance(x if y is None else y, Mapping) else None
            x, y = (empty, y) if x is None else (x, empty)
        for parts, change, fx, fy in walk(x, y):
            out.append(Difference(section, key + dotted((field, *parts)), change, fx, fy,
                                  path=locator(section, *under, field, *parts)))
    return out


def declared_score(where: str, field: str) -> tuple[int, str] | None:
    """The score and reason a field's declaration gives it (``None``: the comparer's own rule).

    >>> declared_score("git.repos", "branch")[0], declared_score("env", "vars")
    (35, None)
    """
    return BY_DECLARATION.get(where, {}).get(field)


def errors(section: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Collector errors present in one snapshot only: the capture could not see something
    (read as the section's record: ``errors`` is declared on every one, and on a section no
    declaration covers, :class:`~runsnap.snapshot.sectionrecord.OtherSection`)."""
    ea, eb = list(Sections.read(section, a).errors), list(Sections.read(section, b).errors)
    where = (section, "errors")
    out = [Difference(section, "errors", "removed", e, None, path=where) for e in ea if e not in eb]
    out += [Difference(section, "errors", "added", None, e, path=where) for e in eb if e not in ea]
    return out


def keyed(section: str, a: Mapping[str, Any], b: Mapping[str, Any], label: str = "{}",
          changed_evidence: tuple[str, ...] = (), *, under: Parts = (),
          name: str = "{}") -> list[Difference]:
    """Entries of a table keyed by name: removed (in A only), changed, then added (in B only).

    ``label`` writes an entry's key; its path is the section, ``under``, then ``name``.

    >>> [(d.key, d.path, d.change) for d in keyed(
    ...     "command", {"tp": "8", "x": True}, {"tp": "4"}, "--{}", under=("options",),
    ...     name="--{}")]
    [('--tp', ('command', 'options', '--tp'), 'changed'), ('--x', ('command', 'options', '--x'), 'removed')]
    """
    def diff(k: str, change: str, x: Any, y: Any, evidence: tuple[str, ...] = ()) -> Difference:
        return Difference(section, label.format(k), change, x, y, evidence=evidence,
                          path=locator(section, *under, name.format(k)))

    out: list[Difference] = []
    for k, x in a.items():
        if k not in b:
            out.append(diff(k, "removed", x, None))
        elif b[k] != x:
            out.append(diff(k, "changed", x, b[k], changed_evidence))
    out += [diff(k, "added", None, y) for k, y in b.items() if k not in a]
    return out
