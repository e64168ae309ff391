"""A TOML document of runsnap's own layout read a line at a time, without :mod:`tomllib` for
the lines whose form is plain (:mod:`runsnap.diffing.tomlforms`), and with a memory of the
lines read before: the ranks of one job write the same lines but for a few values. The bulk
loader (:mod:`runsnap.diffing.bulkload`) reads section texts with it; what it cannot read is
tomllib's."""

from __future__ import annotations

import re
from typing import Any

from runsnap.diffing.tomlforms import PLAIN_KEY, SCALAR, compound

__all__ = ["LineReader"]

#: How many plain lines are kept once read (then forgotten all at once, and kept again).
_PLAIN_LINES = 1 << 17

# A one-line ``key = value`` whose key is one bare or quoted key (no dotted keys).
_KEY_VALUE = re.compile(r'(?:[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*")[ \t]*=')


class LineReader:
    """Lines of TOML read and remembered (``toml``: the :mod:`tomllib` module to fall back to)."""

    def __init__(self, toml: Any) -> None:
        self.toml = toml
        self._lines: dict[str, tuple[str, Any]] = {}
        # plain lines read before (the ranks' ``LOCAL_RANK = "1"``, ``env_ms = 3``): a bounded
        # memory of the last ones
        self._plain: dict[str, tuple[str, Any]] = {}
        self._headers: dict[str, tuple[str, ...]] = {}

    def document(self, text: str, where: list[Any] | None = None) -> dict[str, Any] | None:
        """What :mod:`tomllib` makes of ``text``, parsed a line at a time with each distinct
        line parsed once (the ranks' ``[env]`` differ in a few lines of hundreds), or ``None``
        when the text is not only table headers and one-line ``key = value`` lines (then the
        whole text is parsed as usual; so is anything TOML would reject, such as a key or a
        table given twice). A multi-line value always has a first line that is not a whole
        statement, which stops this at once."""
        root: dict[str, Any] = {}
        made = {id(root)}  # tables made by headers here: the only ones entered again
        defined: set[tuple[str, ...]] = set()
        table: dict[str, Any] | None = None
        path: tuple[str, ...] = ()
        lines = self._lines
        split = text.split("\n")
        if where is not None:
            where.extend([None] * len(split))
        i, count = -1, len(split)
        while i + 1 < count:
            i += 1
            line = split[i]
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                many = line.startswith("[[")
                got = self._headers.get(line)
                if got is None:
                    got = self._header_path(line[1:-1] if many and line.endswith("]]")
                                            else line)
                    if got is None:
                        return None
                    self._headers[line] = got
                path = got
                if not many and path in defined:
                    return None
                defined.add(path)
                node = root
                for key in path[:-1] if many else path:
                    nxt = node.get(key)
                    if nxt is None:
                        nxt = node[key] = {}
                        made.add(id(nxt))
                    elif not isinstance(nxt, dict) or id(nxt) not in made:
                        return None
                    node = nxt
                if many:  # ``[[a.b]]``: one more table in the array a.b made here
                    array = node.get(path[-1])
                    if array is None:
                        array = node[path[-1]] = []
                        made.add(id(array))
                    elif not isinstance(array, list) or id(array) not in made:
                        return None
                    node = {}
                    path = (*path, len(array))  # type: ignore[arg-type]
                    array.append(node)
                table = node
                continue
            item = lines.get(line)
            first = i
            if item is None:
                if table is None:
                    return None
                if line.endswith(" = ["):  # an array written one item a line, as runsnap does
                    item, i = self._array(line, split, i)
                    if item is None:
                        return None
                    if where is not None:
                        for j in range(first + 1, i):
                            where[j] = (path, item[0], j - first - 1)
                    first = -1
                else:
                    item = self.line(line)
                    if item is None:
                        return None
            if table is None or item[0] in table:
                return None
            table[item[0]] = item[1]
            if where is not None and first >= 0:
                where[first] = (path, item[0], None)
        return root

    def line(self, line: str) -> tuple[str, Any] | None:
        """``(key, value)`` of a one-line ``key = value``, or ``None``."""
        seen = self._plain.get(line)
        if seen is not None:
            return seen
        m = PLAIN_KEY.match(line)
        if m is not None:
            v = SCALAR.fullmatch(line, m.end())
            if v is not None:
                key = m[1][1:-1] if m[1].startswith('"') else m[1]
                s, i, f, t, fa, empty = v.groups()
                if empty is not None:
                    return key, []  # a new list each time: never shared
                value: Any = (s if s is not None else int(i) if i is not None
                              else float(f) if f is not None else True if t is not None
                              else False)
                got = key, value
                if len(self._plain) >= _PLAIN_LINES:
                    self._plain.clear()
                self._plain[line] = got
                return got
        item = self._lines.get(line)
        if item is not None:
            return item
        if m is not None:
            done, value = compound(line, m.end())
            if done:
                key = m[1][1:-1] if m[1].startswith('"') else m[1]
                item = self._lines[line] = key, value  # kept, as the costly ones are
                return item
        if not _KEY_VALUE.match(line):
            return None
        try:
            parsed = self.toml.loads(line)
        except self.toml.TOMLDecodeError:
            return None
        if len(parsed) != 1:
            return None
        item = self._lines[line] = next(iter(parsed.items()))  # the costly ones are kept
        return item

    def _array(self, first: str, split: list[str], i: int) -> tuple[tuple[str, Any] | None, int]:
        """``key = [`` (line ``i`` of ``split``) followed by ``ITEM,`` lines (indented: by four
        spaces as schema 2 wrote them first, by one since) and ``]``: each item parsed as the
        value of a one-line ``x = ITEM`` (once per distinct item). Returns the item and the
        index of the closing line."""
        head = self.line(first + "]")
        if head is None:
            return None, i
        items: list[Any] = []
        for j in range(i + 1, len(split)):
            line = split[j]
            if line == "]":
                return (head[0], items), j
            got = self.item(line)
            if got is None:
                return None, j
            items.append(got[1])
        return None, len(split)

    def item(self, line: str) -> tuple[str, Any] | None:
        """``("x", ITEM)`` of an array's item line, ``ITEM,`` (indented by four spaces as
        schema 2 wrote them first, by one since, by none in between), or ``None``."""
        if not line.endswith(",") or line.startswith("]"):
            return None
        return self.line("x = " + line[:-1].lstrip(" "))

    def _header_path(self, line: str) -> tuple[str, ...] | None:
        """The keys of a ``[a.b."c"]`` header line, or ``None`` (an array of tables, or not a
        header alone on its line)."""
        if line.startswith("[["):
            return None
        try:
            node: Any = self.toml.loads(line)
        except self.toml.TOMLDecodeError:
            return None
        keys: list[str] = []
        while node:
            (key, node), = node.items()
            keys.append(key)
        return tuple(keys)
