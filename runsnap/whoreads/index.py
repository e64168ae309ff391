"""One distribution's who-reads index: the files it installed (for an editable install, its
checkout's), every variable-shaped name in them with the files that hold it, and the places
found for each name searched so far; cached per distribution and version."""

from __future__ import annotations

import json
import mmap
import os
import re
import zlib

from runsnap.base.atomic import atomic_write
from runsnap.base.files import open_regular, open_regular_text
from runsnap.base.pythons import add_direct_url
from runsnap.whoreads.places import (
    LIBRARY,
    MANY_NAMES,
    TOKEN,
    WORD,
    WORDS,
    Hit,
    file_tokens,
    in_library,
    lines_with,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any


#: Bumped whenever the index format or what it holds changes.
INDEX_FORMAT = 5
#: Answers the cache keeps per distribution (the most recently asked names): a warm search of
#: one of them reads no file.
CACHED_NAMES = 256


def record_files(location: str, metadata_dir: str) -> list[str]:
    """The Python files and shared libraries a distribution installed, relative to its
    location: from its ``RECORD`` (a wheel's install), else from the ``installed-files.txt``
    of an ``.egg-info`` (pip's legacy ``setup.py install``, as an older pip without ``wheel``
    does it; paths relative to the ``.egg-info`` folder), as :mod:`importlib.metadata` reads
    them."""
    out: list[str] = []
    try:
        with open_regular_text(os.path.join(location, metadata_dir, "RECORD"),
                               errors="surrogateescape") as fh:
            for line in fh:
                path = line.rsplit(",", 2)[0] if line.count(",") >= 2 else line.strip()
                if path.startswith('"') and path.endswith('"'):
                    path = path[1:-1]
                if path.endswith(".py") or LIBRARY.search(path):
                    out.append(path)
        return out
    except OSError:
        pass
    try:
        with open_regular_text(os.path.join(location, metadata_dir, "installed-files.txt"),
                               errors="surrogateescape") as fh:
            for line in fh:
                path = os.path.normpath(os.path.join(metadata_dir, line.strip()))
                if path.endswith(".py") or LIBRARY.search(path):
                    out.append(path)
    except OSError:
        pass
    return out


#: Folders an editable checkout holds that are not the package (walked when the distribution
#: does not name its top-level packages).
_NOT_PACKAGE = frozenset({"__pycache__", "build", "dist", "node_modules", "site-packages",
                          "test", "tests", "benchmark", "benchmarks", "docs", "examples"})
#: At most this many files of an editable checkout are searched.
MAX_SOURCE_FILES = 50_000


def _source_files(dist: Mapping[str, Any]) -> list[str]:
    """The Python files and shared libraries of an editable install's checkout (absolute): under
    each top-level package the distribution names (``top_level.txt``), found in the checkout or
    its ``src/``; else the whole checkout but for hidden folders, builds and tests."""
    source = str(dist["source"])
    tops: list[str] = []
    try:
        with open(os.path.join(str(dist["location"]), str(dist["metadata_dir"]),
                               "top_level.txt"), encoding="utf-8") as fh:
            tops = [line.strip() for line in fh if line.strip()]
    except OSError:
        pass
    roots = [r for t in tops for r in (os.path.join(source, t), os.path.join(source, "src", t))
             if os.path.isdir(r)]
    out = [f"{os.path.join(source, t)}.py" for t in tops
           if os.path.isfile(os.path.join(source, f"{t}.py"))]
    for root in roots or [source]:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                             and (roots or d not in _NOT_PACKAGE))
            out += [os.path.join(folder, f) for f in sorted(files)
                    if f.endswith(".py") or LIBRARY.search(f)]
            if len(out) >= MAX_SOURCE_FILES:
                return out[:MAX_SOURCE_FILES]
    return out


def _stamp(paths: Sequence[str]) -> str:
    """Changes whenever a file is added, removed or written: the count and newest mtime."""
    return f"{len(paths)}-{max((_mtime(p) for p in paths), default=0)}"


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


class Index:
    """One distribution's index: the files it installed (for an editable install, its
    checkout's), and the places found for every name searched so far (none found is remembered
    too, until the checkout changes). ``dist`` is one of the probe's distributions as
    :func:`runsnap.base.probeanswer.checked` gives it: ``name``, ``version``, ``location`` and
    ``metadata_dir`` always there, as text."""

    def __init__(self, dist: Mapping[str, Any], cache: str | None) -> None:
        if dist.get("direct_url_json") and "editable" not in dist:
            dist = dict(dist)
            add_direct_url(dist)  # the probe lists where; direct_url.json says it is editable
        self.dist = dist
        self.location = str(dist["location"])
        self.source = str(dist["source"]) if dist.get("editable") and dist.get("source") \
            else None
        self.sources = _source_files(dist) if self.source else []
        # not hashlib (its import costs more than a warm search): a readable name and a CRC
        key = f"{dist['name']}\0{dist['version']}\0{self.location}\0{INDEX_FORMAT}"
        if self.source:
            key += f"\0{self.source}\0{_stamp(self.sources)}"
        crc = zlib.crc32(key.encode("utf-8", "surrogateescape"))
        stem = re.sub(r"[^A-Za-z0-9._+-]+", "_", f"{dist['name']}-{dist['version']}")
        self.path = os.path.join(cache, "who-reads", f"{stem[:80]}-{crc:08x}.json") \
            if cache else None
        self.files: list[str] | None = None
        self.names: dict[str, list[list[Any]]] = {}
        self.tokens: dict[str, list[int]] | None = None
        """Name -> indexes in :attr:`files` of the files that hold it (one pass, all names)."""
        self.changed = False
        self._load()

    def _load(self) -> None:
        if self.path is None:
            return
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
            files, names, tokens = data["files"], data["names"], data.get("tokens")
        except (OSError, ValueError, KeyError, TypeError):
            return
        if isinstance(files, list) and isinstance(names, dict):
            self.files, self.names = files, names
            self.tokens = tokens if isinstance(tokens, dict) else None

    def _file_list(self) -> list[str]:
        if self.files is None:
            self.files = record_files(self.location, str(self.dist["metadata_dir"]))
            self.files += self.sources  # absolute: os.path.join keeps them as they are
        return self.files

    def build(self) -> None:
        """Read every file once and index every variable-shaped name it holds."""
        tokens: dict[str, list[int]] = {}
        for i, rel in enumerate(self._file_list()):
            for token in file_tokens(os.path.join(self.location, rel), rel.endswith(".py")):
                tokens.setdefault(token, []).append(i)
        self.tokens = tokens
        self.changed = True

    def look_up(self, name: str) -> None:
        """The places of an indexed name: the lines of the few files that hold it."""
        files = self._file_list()
        found: list[list[Any]] = []
        for i in (self.tokens or {}).get(name, ()):
            rel = files[i]
            if rel.endswith(".py"):
                try:
                    with open(os.path.join(self.location, rel), "rb") as fh:
                        found += lines_with(name, fh.read(), rel)
                except OSError:
                    continue
            else:
                found.append([rel, None, "library", ""])
        self.names[name] = found
        self.changed = self.changed or bool(found)  # none found: the index says so again

    def search(self, names: Sequence[str]) -> None:
        """The places of ``names``: from the index (built on first use, in one pass for every
        name), or, for a name the index cannot hold, one pass for those names."""
        missing = [n for n in names if n not in self.names]
        if not missing:
            return
        indexed = [n for n in missing if TOKEN.match(n)]
        if indexed:
            if self.tokens is None:
                self.build()
            for name in indexed:
                self.look_up(name)
        missing = [n for n in missing if not TOKEN.match(n)]
        if not missing:
            return
        self._file_list()
        assert self.files is not None
        found: dict[str, list[list[Any]]] = {n: [] for n in missing}
        words = [n for n in missing if WORD.fullmatch(n)]
        if len(words) > MANY_NAMES:  # one pass over each file's words, not one per name
            self._search_words(words, found)
            missing = [n for n in missing if not WORD.fullmatch(n)]
        encoded = [(n, n.encode("utf-8", "surrogateescape")) for n in missing]
        for rel in self.files if encoded else ():
            full = os.path.join(self.location, rel)
            if rel.endswith(".py"):
                try:
                    with open_regular(full) as fh:
                        data = fh.read()
                except OSError:
                    continue
                for name, raw in encoded:
                    if raw in data:
                        found[name] += lines_with(name, data, rel)
            else:
                for (name, _raw), hit in zip(encoded, in_library(full, [e for _, e in encoded]),
                                             strict=True):
                    if hit:
                        found[name].append([rel, None, "library", ""])
        self.names.update(found)
        self.changed = True

    def _search_words(self, names: Sequence[str], found: dict[str, list[list[Any]]]) -> None:
        """:meth:`search` for many names made of word characters only: each file's words are
        read once and looked up (the same whole-word rule as :func:`lines_with` and
        :func:`in_library`), so the cost is one read per file whatever the number of names."""
        wanted = {n.encode("ascii"): n for n in names}
        for rel in self.files or ():
            full = os.path.join(self.location, rel)
            try:
                with open_regular(full) as fh:
                    if rel.endswith(".py"):
                        data = fh.read()
                        for word in set(WORDS.findall(data)) & wanted.keys():
                            found[wanted[word]] += lines_with(wanted[word], data, rel)
                        continue
                    with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
                        for word in set(WORDS.findall(m)) & wanted.keys():
                            found[wanted[word]].append([rel, None, "library", ""])
            except (OSError, ValueError):  # unreadable, or empty (mmap refuses size 0)
                continue

    def save(self) -> None:
        """Write the index: the files and every indexed name's files, which answer any
        variable-shaped name again by reading the few files that hold it, and the answers to
        the last :data:`CACHED_NAMES` names asked (a warm search reads no file), leaving out
        the indexed names no file holds (the index says so for free). The cache stays the
        size of the index, however many names are asked."""
        if not self.changed or self.path is None:
            return
        kept = [(n, v) for n, v in self.names.items() if v or not TOKEN.match(n)]
        names = dict(kept[-CACHED_NAMES:])
        # dumps, not dump: json.dump encodes in Python, dumps in C (several times faster)
        data = json.dumps({"files": self.files, "names": names, "tokens": self.tokens},
                          separators=(",", ":"))
        try:
            atomic_write(self.path, data.encode("utf-8"), durable=False)
        except OSError:
            pass

    def hits(self, name: str) -> list[Hit]:
        dist, version = str(self.dist["name"]), str(self.dist["version"])
        return [Hit(name, dist, version, self._shown(str(rel)), line, str(kind), str(text))
                for rel, line, kind, text in self.names.get(name, ())]

    def _shown(self, path: str) -> str:
        """A checkout's file by its path in the checkout, as an installed one is shown."""
        if self.source and os.path.isabs(path):
            return os.path.relpath(path, self.source)
        return path
