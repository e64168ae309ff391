"""Load thousands of snapshots fast: parse each distinct section text once.

The ranks of one job share most of their context: the same packages, repositories, models and
command, often byte for byte. A 4,096-rank job would take tens of seconds to parse with :mod:`tomllib`
alone, three quarters of an N-way diff. So each file is cut into its top-level sections (the
text from one ``[name...]`` header to the first header of another section), and every distinct
section text is parsed and decoded once; the snapshots that share it share the same (read-only)
section object, which also lets the N-way diff compare a shared section once instead of once per
file (:mod:`runsnap.diffing.many`).

The result is exactly what :func:`runsnap.snapshot.load` gives. Cutting at a line that only
looks like a header (inside a multi-line string) leaves an unterminated string in the piece that
holds its opening quotes, which TOML rejects: any piece that does not parse, a section that
comes back in two places, a quoted top-level name or a missing end line sends that file through
:func:`runsnap.snapshot.load` itself, so errors and edge cases are the plain loader's.
"""

from __future__ import annotations

import gc
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import compress, count
from operator import ne
from typing import Any

from runsnap.base.tomlparse import toml_parser
from runsnap.diffing.tomllines import LineReader
from runsnap.errors import SnapshotError
from runsnap.snapshot import END_MARKER, Snapshot, decode, load, read_checked
from runsnap.snapshot import validate as schema_check
from runsnap.snapshot.folders import snapshot_paths
from runsnap.snapshot.store import is_bisect_folder

__all__ = ["Progress", "SectionCache", "load_many"]

#: ``progress(done, total)``, called now and then while loading.
Progress = Callable[[int, int], None]

# A table header at the start of a line: ``[env]``, ``[env.vars]``, ``[[outcome.x]]``; the first
# key is the section, the second (when there is one) the part of it. A quoted first key is left
# to the plain loader (runsnap never writes one).
_HEADER = re.compile(r"\[\[?[ \t]*([A-Za-z0-9_-]+|[\"'])"
                     r"(?:[ \t]*\.[ \t]*([A-Za-z0-9_-]+|\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'))?")


def _headers(text: str, start: int = 0) -> Iterator[re.Match[str]]:
    """``_HEADER``'s matches from ``start`` (a line's start), found from each ``\\n[`` (a
    ``^`` search tries every byte). A line that ends with a comma is an item of an array
    written one item a line (``[1, 2],``, as runsnap writes a list of lists), not a header."""
    m = _HEADER.match(text, start)
    if m is not None:
        yield m
    find, match = text.find, _HEADER.match
    at = find("\n[", start)
    while at >= 0:
        m = match(text, at + 1)
        if m is not None:
            eol = find("\n", at + 1)
            if text[eol - 1 if eol >= 0 else len(text) - 1] != ",":
                yield m
        at = find("\n[", at + 2)


def _cut_at(text: str, at: int, name: str, part: str | None) -> bool:
    """Whether a piece of section ``name``'s ``part`` ends at ``at``: the end of the text, or
    a header of another section or part there (the cut :func:`_headers` would find)."""
    if at == len(text):
        return True
    if text[at - 1] != "\n":
        return False
    m = _HEADER.match(text, at)
    if m is None or (m.group(1) == name and m.group(2) == part):
        return False
    eol = text.find("\n", at)
    return text[eol - 1 if eol >= 0 else len(text) - 1] != ","


def _typed(where: list[Any]) -> list[Any]:
    """Each value line's place (``(path, key, item)``, or ``None``) with the exact types of
    the plain values its place accepts for their type alone (:func:`plain_types`)."""
    out: list[Any] = []
    for w in where:
        if w is None:
            out.append(None)
            continue
        path, key, item = w
        keys = (*path, key) if item is None else (*path, key, 0)
        out.append((path, key, item, schema_check.plain_types(keys)))
    return out


class _Fallback(Exception):
    """This file is read by the plain loader."""


class SectionCache:
    """Distinct section texts -> their decoded data, shared by every snapshot that holds them."""

    def __init__(self) -> None:
        self._parsed: dict[str, Any] = {}
        # a piece's header line -> the last pieces (or runs of pieces) seen from it: (text,
        # each piece's (section, value, part), the last piece's section and part)
        self._known: dict[str, list[tuple[str, tuple[tuple[str, Any, str | None], ...], str,
                                          str | None]]] = {}
        self._joined: dict[tuple[Any, ...], tuple[dict[str, Any], list[Any]]] = {}
        # (first line, line count) -> [lines, document, where each line's value sits, the
        # same with the types a plain value there may have (made when first asked for: a diff
        # of two files reads few parts from a base)]
        self._bases: dict[tuple[str, int], list[Any]] = {}
        self._toml = toml_parser()
        self._reader = LineReader(self._toml)
        self.parsed = 0
        """How many section texts were parsed (the rest were found in the cache)."""

    def section(self, name: str, text: str, share: bool = True) -> Any:
        """The decoded data of section ``name`` written as ``text`` (raises :class:`_Fallback`)."""
        if share:
            hit = self._parsed.get(text)
            if hit is not None:
                return hit
        try:
            value = self._from_base(name, text)
            if value is None:
                schema_check.check_depth(text, "")
                where: list[Any] = []
                doc = self._reader.document(text, where)
                by_lines = doc is not None
                if doc is None:
                    doc = self._toml.loads(text)
                if list(doc) != [name]:
                    raise _Fallback
                # no ``~`` (nor an escape that could write one): no marker to decode (codec.py)
                plain = "~" not in text and "\\u" not in text and "\\U" not in text
                value = doc[name] if plain else decode(doc)[name]
                # checked once per distinct section text, as it is parsed once
                schema_check.validate_section(name, value, partial=True)
                if by_lines and plain:
                    lines = text.split("\n")
                    self._bases.setdefault((lines[0], len(lines)), [lines, doc, where, None])
        except (self._toml.TOMLDecodeError, RecursionError, SnapshotError):
            raise _Fallback from None
        self.parsed += 1
        if share:
            self._parsed[text] = value
        return value

    def _from_base(self, name: str, text: str) -> Any:
        """The section a piece of text gives when it is a piece parsed before (its *base*:
        same first line, as many lines) with a few one-line values changed, or ``None``.

        The ranks of a job write the same pieces but for their numbers (rank, host, pids,
        times, output lines): only the lines that are not the base's are parsed, and the
        tables that hold them copied from the base's with the new values; the rest is shared.
        The new text must be the base's with exactly those lines replaced, and each replaced
        line must be a ``key = value`` line (or an item of an array written one item a line)
        for the same key; anything else is parsed whole. Only the new values are checked
        against the schema (with the tables that hold them): the rest was checked with the
        base."""
        lines = text.split("\n")
        base = self._bases.get((lines[0], len(lines)))
        if base is None:
            return None
        if base[3] is None:
            base[3] = _typed(base[2])
        old, doc, _, where = base
        # where the lines differ from the base's, compared in place (C loops: no line hashed)
        at = list(compress(count(), map(ne, lines, old)))
        if not at or len(at) > 64:
            return None
        joined = "\n".join([lines[i] for i in at])
        if "~" in joined or "\\u" in joined or "\\U" in joined:
            return None
        for i in at:
            if where[i] is None:  # not a value line
                return None
        schema_check.check_depth(joined, "")
        root = dict(doc)
        copies: dict[tuple[Any, ...], Any] = {(): root}
        fresh: set[tuple[Any, ...]] = set()  # arrays copied already
        read_line, read_item = self._reader.line, self._reader.item
        for i in at:
            path, key, item, plain = where[i]
            table = copies.get(path)
            if table is None:
                table = root
                for k in range(1, len(path) + 1):
                    sub = copies.get(path[:k])
                    if sub is None:  # a table, or an array of tables (its index in the path)
                        sub = table[path[k - 1]]
                        sub = copies[path[:k]] = list(sub) if isinstance(sub, list) else dict(sub)
                        table[path[k - 1]] = sub
                    table = sub
            if item is None:
                got = read_line(lines[i])
                if got is None or got[0] != key:
                    return None
                value = table[key] = got[1]
            else:
                got = read_item(lines[i])
                if got is None:
                    return None
                value = got[1]
                items = table[key]
                if (path, key) not in fresh:
                    fresh.add((path, key))
                    items = table[key] = list(items)
                items[item] = value
            # only the new values are checked: the tables that hold them were, with the base;
            # a plain value whose place checks its type alone, by its type
            if type(value) not in plain:
                try:
                    if item is None:
                        schema_check.validate_value((*path, key), value)
                    else:
                        schema_check.validate_value((*path, key), [value])
                except SnapshotError:
                    return None  # said again, in full, by the whole piece's parse
        return root[name]

    def load(self, path: str) -> Snapshot:
        """The snapshot at ``path``, as :func:`runsnap.snapshot.load` reads it."""
        data = read_checked(path)  # the plain loader's checks before anything is parsed
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return load(path)
        del data  # not held while the text is parsed (a 10 MB line: one copy fewer)
        try:
            return self._split_load(text, path)
        except _Fallback:
            del text
            return load(path)

    def _split_load(self, text: str, path: str) -> Snapshot:
        _, nl, last_line = text[-len(END_MARKER) - 64:].rstrip().rpartition("\n")
        if not nl or last_line.strip() != END_MARKER:
            raise _Fallback
        # Pieces: the runs of headers with the same section and part (``[runtime]``,
        # ``[[runtime.processes]]``, ``[runtime.vars]``, ``[runtime.modules.*]``...). The ranks
        # of a job differ in a few pieces of a section (its pids, a value): the others are
        # parsed once and shared. Pieces seen before (the same text from the first one's
        # header line on, and a cut where the last ends), one or several in a row, are taken
        # as they are, without looking for headers in them.
        first = next(_headers(text), None)
        if first is None:
            raise _Fallback
        start = first.start()
        doc: dict[str, Any] = dict(self._head(text[:start]))
        found: list[tuple[str, Any, str | None]] = []  # (section, value, part) of each piece
        known = self._known
        end_text = len(text)
        run_at, run = -1, 0  # where the pieces seen before in a row start, how many entries
        while start < end_text:
            eol = text.find("\n", start)
            line = text[start:eol if eol >= 0 else end_text]
            seen = known.get(line)
            hit = False
            if seen is not None:
                for i, entry in enumerate(seen):
                    end = start + len(entry[0])
                    if text.startswith(entry[0], start) and _cut_at(text, end, entry[2],
                                                                      entry[3]):
                        if i:
                            seen.insert(0, seen.pop(i))
                        if run == 0:
                            run_at, run_from = start, len(found)
                        run += 1
                        found += entry[1]
                        hit = True
                        break
            if not hit:
                if run > 1:
                    self._remember(text, run_at, start, found[run_from:])
                run = 0
                m = _HEADER.match(text, start)
                if m is None:
                    raise _Fallback
                name, part = m.group(1), m.group(2)
                end = end_text
                for h in _headers(text, start):
                    if h.group(1) != name or h.group(2) != part:
                        end = h.start()
                        break
                if name in ('"', "'"):
                    raise _Fallback
                piece = text[start:end]
                found.append((name, self.section(name, piece), part))
                self._remember(text, start, end, found[-1:])
            start = end
        if run > 1:
            self._remember(text, run_at, end_text, found[run_from:])
        pieces: dict[str, list[Any]] = {}
        order: list[str] = []
        last: str | None = None
        for name, value, _ in found:
            if name not in pieces:
                if name in doc:
                    raise _Fallback
                pieces[name] = []
                order.append(name)
            elif last != name:
                raise _Fallback  # a section in two places
            pieces[name].append(value)
            last = name
        for name in order:
            doc[name] = self._join(name, pieces[name])
        return Snapshot.from_document(doc, path=path)

    def _remember(self, text: str, start: int, end: int,
                  items: list[tuple[str, Any, str | None]]) -> None:
        """``text[start:end]`` is the pieces ``items`` (section, value, part), seen now."""
        eol = text.find("\n", start, end)
        line = text[start:eol if eol >= 0 else end]
        seen = self._known.setdefault(line, [])
        seen.insert(0, (text[start:end], tuple(items), items[-1][0], items[-1][2]))
        del seen[4:]

    def _join(self, name: str, parts: list[Any]) -> Any:
        """One section from its pieces' tables; the same pieces give the same object."""
        if len(parts) == 1 and all(k in parts[0] for k in schema_check.section_required(name)):
            return parts[0]
        key = (name, *map(id, parts))
        hit = self._joined.get(key)
        if hit is not None:
            return hit[0]
        out: dict[str, Any] = {}
        for part in parts:
            for k, v in part.items():
                if k in out:
                    raise _Fallback
                out[k] = v
        if any(k not in out for k in schema_check.section_required(name)):
            raise _Fallback
        self._joined[key] = (out, parts)  # the parts kept alive: their ids stay theirs
        return out

    def _head(self, text: str) -> dict[str, Any]:
        hit = self._parsed.get(text)
        if hit is None:
            try:
                schema_check.check_depth(text, "")
                hit = decode(self._toml.loads(text))
                schema_check.validate_section("schema", hit.get("schema", 1))
            except (self._toml.TOMLDecodeError, RecursionError, SnapshotError):
                raise _Fallback from None
            self._parsed[text] = hit
        return dict(hit)


def load_many(
    paths: Iterable[str | os.PathLike[str]],
    *,
    progress: Progress | None = None,
    cache: SectionCache | None = None,
    unreadable: list[str] | None = None,
) -> list[Snapshot]:
    """Load every snapshot in ``paths`` (in order), sharing the sections they have in common.

    Raises :class:`~runsnap.errors.SnapshotError` for the first file that is not a snapshot,
    with the same message :func:`runsnap.snapshot.load` gives; given ``unreadable``, such a
    file is left out instead and its message appended there (one rank of thousands cut short
    must not hide the others).
    """
    items: Sequence[str | os.PathLike[str]] = list(paths)
    cache = cache or SectionCache()
    total = len(items)
    step = max(1, total // 100)
    out: list[Snapshot] = []
    # Loading makes millions of small tables and no reference cycles: the cycle collector's
    # full passes over a heap that only grows cost more than the parsing at 32,768 ranks.
    # What is loaded is then frozen out of its later passes (benchmarks/RESULTS.md).
    was = gc.isenabled()
    gc.disable()
    try:
        for i, p in enumerate(items):
            try:
                out.append(cache.load(os.fspath(p)))
            except SnapshotError as exc:
                if unreadable is None:
                    raise
                unreadable.append(str(exc))
            if progress is not None and (i + 1 == total or (i + 1) % step == 0):
                progress(i + 1, total)
    finally:
        gc.freeze()
        if was:
            gc.enable()
    return out


def snapshot_files(folder: str | os.PathLike[str]) -> list[str]:
    """The snapshot files in ``folder`` and its sub-folders (``*.toml``, not hidden), sorted
    naturally so ``rank-2`` comes before ``rank-10``. The trials of a bisection kept in a
    sub-folder (``.runsnap/bisect-<time>-<id>/``) are not ranks and are left out; the folder
    itself, named alone, is searched. Nothing is followed out of ``folder``
    (:mod:`runsnap.snapshot.folders`)."""
    try:
        found = snapshot_paths(os.fspath(folder), recursive=True, skip_dir=is_bisect_folder)
    except OSError as exc:
        raise SnapshotError(f"{os.fspath(folder)}: {exc.strerror or exc}") from None
    if not found:
        raise SnapshotError(f"{os.fspath(folder)}: no snapshot files (*.toml) in this folder")
    return sorted(found, key=natural_key)


_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[Any, ...]:
    """Sort key that orders numbers inside names by value.

    >>> sorted(["r10", "r9", "r1"], key=natural_key)
    ['r1', 'r9', 'r10']
    """
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(text))
