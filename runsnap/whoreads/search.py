"""``who-reads``: where an interpreter's installed packages declare, read or mention a variable.

Static evidence for a run that was not traced: which installed code reads ``NAME``, in the
versions actually installed. Every distribution of the interpreter (listed by runsnap's package
probe) is searched: its ``.py`` files line by line, and the shared libraries it ships
(``libnccl.so`` of ``nvidia-nccl-*``) for the name as a string. Each place is a :class:`Hit`:

* ``declaration``: SGLang's ``NAME = EnvBool(False)`` (any ``Env*(...)`` class), vLLM's
  ``"NAME": lambda: ...`` table of variables;
* ``read``: the name in quotes on a line that reads the environment (``os.environ``,
  ``getenv``, ``environ.get``, a helper with ``env`` in its name), or an attribute read of a
  declared variable (``envs.NAME``, ``NAME.get()``, ``NAME.value``);
* ``mention``: anywhere else (messages, comments, documentation);
* ``library``: a string in a shared library (native code may read it with ``getenv``).

Speed: the first search indexes each distribution in one pass: every name shaped like an
environment variable (upper case with an underscore, ``OMP_NUM_THREADS``) in its ``.py``
files, and in the read-only data (``.rodata``) of its shared libraries, with the files that
hold it. The index is cached per distribution and version, so any later name, asked for the
first time or not, is a look-up that reads only the few files holding it (to find the lines).
A name of another shape (``HOME``, ``http_proxy``) is searched for by itself, as ``grep -F``
does, and its places cached. The cache lives in runsnap's cache folder (``RUNSNAP_CACHE_DIR``),
keyed by the distribution's name, version and location; ``RUNSNAP_NO_CACHE=1`` turns it off.
Measured against ``grep -rn`` over the same files in ``benchmarks/whoreads.py``.

Places in tests, examples and benchmarks (:func:`in_tests`) rank after the package's own code
(``runsnap who-reads --include-tests`` lists them; by default they are counted, not listed).
"""

from __future__ import annotations

import json
import mmap
import os
import re
import sys
import zlib

from runsnap.base.atomic import atomic_write
from runsnap.base.files import open_regular, open_regular_text
from runsnap.base.records import FrozenRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

__all__ = ["KINDS", "Hit", "classify", "distributions", "in_tests", "who_reads"]

#: Every :attr:`Hit.kind`, strongest first: a string in a shared library is most often a
#: ``getenv`` of native code, stronger evidence than a mention in a message or a comment.
KINDS = ("declaration", "read", "library", "mention")

#: Bumped whenever the index format or what it holds changes.
INDEX_FORMAT = 4

#: A name the index holds: upper case, digits and underscores, with an underscore.
_TOKEN = re.compile(r"^[A-Z][A-Z0-9]*_[A-Z0-9_]*$")
#: Where such a name may continue backwards from its first underscore.
_UPPER = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_LOWER = frozenset(b"abcdefghijklmnopqrstuvwxyz")
#: An underscore followed by an upper-case letter or digit: a literal start, which the regex
#: engine finds fast, where a name's own first letter (a character class) would be slow.
_SUFFIX = re.compile(rb"_[A-Z0-9][A-Z0-9_]*")

#: Folders whose files are tests, examples or benchmarks, not the package's own code.
_TEST_DIRS = frozenset({"test", "tests", "testing", "_testing", "example", "examples",
                        "benchmark", "benchmarks", "docs", "doc"})


def in_tests(path: str) -> bool:
    """Whether an installed file belongs to tests, examples or benchmarks.

    >>> in_tests("torch/testing/_internal/common_utils.py"), in_tests("pkg/tests/test_x.py")
    (True, True)
    >>> in_tests("sglang/srt/environ.py"), in_tests("pkg/conftest.py"), in_tests("a/x_test.py")
    (False, True, True)
    """
    parts = path.replace(os.sep, "/").split("/")
    name = parts[-1]
    return (any(p in _TEST_DIRS for p in parts[:-1]) or name == "conftest.py"
            or name.startswith("test_") or name.endswith("_test.py"))


def tokens_in(data: bytes | Any, start: int = 0, end: int | None = None) -> set[str]:
    """Every name shaped like an environment variable in ``data`` (bytes or an ``mmap``,
    between ``start`` and ``end``), as whole words.

    >>> sorted(tokens_in(b'x = os.getenv("OMP_NUM_THREADS") or my_VAR or A_B2c or _X_Y'))
    ['OMP_NUM_THREADS']
    """
    end = len(data) if end is None else end
    out: set[str] = set()
    for m in _SUFFIX.finditer(data, start, end):
        a = m.start()
        while a > start and data[a - 1] in _UPPER:
            a -= 1
        b = m.end()
        if (data[a] in _UPPER and data[a] != 95 and (a == start or data[a - 1] not in _LOWER)
                and (b >= end or data[b] not in _LOWER)):
            out.add(bytes(data[a:b]).decode("ascii"))
    return out


def _rodata(m: Any) -> list[tuple[int, int]]:
    """The ``(start, end)`` of an ELF file's read-only data sections (``.rodata*``), where
    string constants such as a variable's name live; the whole file when it is not a 64-bit
    little-endian ELF file or its headers cannot be read."""
    import struct

    whole = [(0, len(m))]
    try:
        if m[:4] != b"\x7fELF" or m[4] != 2 or m[5] != 1:
            return whole
        shoff, = struct.unpack_from("<Q", m, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", m, 0x3A)
        if not shoff or shentsize < 64 or shstrndx >= shnum:
            return whole
        str_off, = struct.unpack_from("<Q", m, shoff + shstrndx * shentsize + 0x18)
        out = []
        for i in range(shnum):
            base = shoff + i * shentsize
            name_at, = struct.unpack_from("<I", m, base)
            off, size = struct.unpack_from("<QQ", m, base + 0x18)
            end = m.find(b"\0", str_off + name_at)
            if bytes(m[str_off + name_at:end]).startswith(b".rodata") and size:
                out.append((off, min(off + size, len(m))))
        return out or whole
    except (struct.error, ValueError, IndexError):
        return whole

#: Above this many names at once, :class:`_Index` reads each file's words once instead of
#: searching each file once per name.
_MANY_NAMES = 16
#: Answers the cache keeps per distribution (the most recently asked names): a warm search of
#: one of them reads no file.
CACHED_NAMES = 256
_WORD = re.compile(r"[A-Za-z0-9_]+")
_WORDS = re.compile(rb"[A-Za-z0-9_]+")
_KEEP = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_LIBRARY = re.compile(r"\.so(\.[0-9]+)*$|\.dylib$")
_ENV_WORDS = re.compile(r"environ|getenv|[Ee]nv[A-Za-z_]*\s*\(|get_env|env_|_env\b|ENV\[")


class Hit(FrozenRecord):
    """One place in an installed distribution that names the variable."""

    name: str
    """The variable."""
    dist: str
    """The distribution that installed the file."""
    version: str
    """Its version."""
    path: str
    """The file, relative to the distribution's location (``sglang/srt/environ.py``)."""
    line: int | None
    """The line (None for a shared library)."""
    kind: str
    """One of :data:`KINDS`."""
    text: str = ""
    """The line, stripped and cut at 160 characters (empty for a shared library)."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"name": self.name, "dist": self.dist, "version": self.version,
                "path": self.path, "line": self.line, "kind": self.kind, "text": self.text}


def classify(name: str, line: str) -> str:
    """The kind of a ``.py`` line that contains ``name``.

    >>> classify("SGLANG_X", "    SGLANG_X = EnvBool(False)")
    'declaration'
    >>> classify("VLLM_X", '    "VLLM_X": lambda: int(os.getenv("VLLM_X", "0")),')
    'declaration'
    >>> classify("SGLANG_X", "        if envs.SGLANG_X.get():")
    'read'
    >>> classify("HF_HOME", 'HF_HOME = os.path.expanduser(os.getenv("HF_HOME", default))')
    'read'
    >>> classify("HF_HOME", "# set HF_HOME to move the cache")
    'mention'
    """
    n = re.escape(name)
    if re.match(rf"\s*{n}\s*(:[^=]*)?=\s*[\w.]*Env\w*\(", line) or re.match(
            rf"\s*[\"']{n}[\"']\s*:\s*lambda\b", line):
        return "declaration"
    code = line.split("#", 1)[0] if not re.match(r"\s*#", line) else ""
    if not code:
        return "mention"
    if re.search(rf"\b(envs?|environ_vars|ENV)\.{n}\b|\b{n}\s*\.\s*(get|value|is_set)\b", code):
        return "read"
    if re.search(rf"[\"']{n}[\"']", code) and _ENV_WORDS.search(code):
        return "read"
    return "mention"


def distributions(python: str | None = None, cwd: str | None = None,
                  env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The distributions of interpreter ``python`` (default: the ``python`` or ``python3`` on
    ``PATH``), as runsnap's package probe lists them (``name``, ``version``, ``location``,
    ``metadata_dir``). Raises :class:`~runsnap.errors.UsageError` for a bad interpreter.

    The probe runs in "/": installed distributions do not depend on the working directory, and
    a stable folder keeps its cached answer (:mod:`runsnap.base.cache`) valid, where a busy cwd such
    as /tmp changes all the time. Run here rather than through a capture context, whose import
    would be most of a repeated search's cost.
    """
    import time

    from runsnap.base import cache, programs
    from runsnap.base.argv import is_python_name
    from runsnap.errors import UsageError

    cwd = cwd or os.getcwd()
    env = dict(os.environ if env is None else env)
    interpreter: str
    if python and not is_python_name(os.path.basename(python)):
        from runsnap.base.pythons import check_python

        interpreter = check_python(python, cwd, env)
    elif python:
        given = python if os.sep not in python or os.path.isabs(python) \
            else os.path.join(cwd, python)
        found = programs.which(given, path=env.get("PATH", os.defpath))
        if found is None:
            raise UsageError(f"--python {python}: no such interpreter")
        interpreter = found
    else:
        interpreter = next((found for name in ("python", "python3") if (found := programs.which(
            name, path=env.get("PATH", os.defpath)))), sys.executable)
    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "probe",
                           "packages.py"),
              encoding="utf-8") as fh:
        source = fh.read()
    key = cache.probe_key(interpreter, os.sep, env, source) \
        if cache.probe_cacheable(interpreter) else None
    data = cache.load_probe(key, os.sep) if key else None
    if data is None:
        started = time.time_ns()
        result = programs.run([interpreter, "-c", source], cwd=os.sep, env=env, timeout=120)
        try:
            data = json.loads(result.stdout) if result.ok else None
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise UsageError(f"the package probe in {interpreter} failed "
                             f"(exit status {result.returncode})")
        if key:
            cache.store_probe(key, os.sep, data, started)
    return [d for d in data.get("distributions", []) if d.get("location")]


def _record_files(location: str, metadata_dir: str) -> list[str]:
    """The files a distribution installed (``RECORD``), relative to its location."""
    out: list[str] = []
    record = os.path.join(location, metadata_dir, "RECORD")
    try:
        with open_regular_text(record, errors="surrogateescape") as fh:
            for line in fh:
                path = line.rsplit(",", 2)[0] if line.count(",") >= 2 else line.strip()
                if path.startswith('"') and path.endswith('"'):
                    path = path[1:-1]
                if path.endswith(".py") or _LIBRARY.search(path):
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
        with open(os.path.join(str(dist["location"]), str(dist.get("metadata_dir", "")),
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
                    if f.endswith(".py") or _LIBRARY.search(f)]
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


class _Index:
    """One distribution's index: the files it installed (for an editable install, its
    checkout's), and the places found for every name searched so far (none found is remembered
    too, until the checkout changes)."""

    def __init__(self, dist: Mapping[str, Any], cache: str | None) -> None:
        if dist.get("direct_url_json") and "editable" not in dist:
            from runsnap.base.pythons import add_direct_url

            dist = dict(dist)
            add_direct_url(dist)  # the probe lists where; direct_url.json says it is editable
        self.dist = dist
        self.location = str(dist["location"])
        self.source = str(dist["source"]) if dist.get("editable") and dist.get("source") \
            else None
        self.sources = _source_files(dist) if self.source else []
        # not hashlib (its import costs more than a warm search): a readable name and a CRC
        key = f"{dist.get('name')}\0{dist.get('version')}\0{self.location}\0{INDEX_FORMAT}"
        if self.source:
            key += f"\0{self.source}\0{_stamp(self.sources)}"
        crc = zlib.crc32(key.encode("utf-8", "surrogateescape"))
        stem = re.sub(r"[^A-Za-z0-9._+-]+", "_", f"{dist.get('name')}-{dist.get('version')}")
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
            self.files = _record_files(self.location, str(self.dist.get("metadata_dir", "")))
            self.files += self.sources  # absolute: os.path.join keeps them as they are
        return self.files

    def build(self) -> None:
        """Read every file once and index every variable-shaped name it holds."""
        tokens: dict[str, list[int]] = {}
        for i, rel in enumerate(self._file_list()):
            for token in _file_tokens(os.path.join(self.location, rel), rel.endswith(".py")):
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
                        found += _lines_with(name, fh.read(), rel)
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
        indexed = [n for n in missing if _TOKEN.match(n)]
        if indexed:
            if self.tokens is None:
                self.build()
            for name in indexed:
                self.look_up(name)
        missing = [n for n in missing if not _TOKEN.match(n)]
        if not missing:
            return
        self._file_list()
        assert self.files is not None
        found: dict[str, list[list[Any]]] = {n: [] for n in missing}
        words = [n for n in missing if _WORD.fullmatch(n)]
        if len(words) > _MANY_NAMES:  # one pass over each file's words, not one per name
            self._search_words(words, found)
            missing = [n for n in missing if not _WORD.fullmatch(n)]
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
                        found[name] += _lines_with(name, data, rel)
            else:
                for (name, _raw), hit in zip(encoded, _in_library(full, [e for _, e in encoded]),
                                             strict=True):
                    if hit:
                        found[name].append([rel, None, "library", ""])
        self.names.update(found)
        self.changed = True

    def _search_words(self, names: Sequence[str], found: dict[str, list[list[Any]]]) -> None:
        """:meth:`search` for many names made of word characters only: each file's words are
        read once and looked up (the same whole-word rule as :func:`_lines_with` and
        :func:`_in_library`), so the cost is one read per file whatever the number of names."""
        wanted = {n.encode("ascii"): n for n in names}
        for rel in self.files or ():
            full = os.path.join(self.location, rel)
            try:
                with open_regular(full) as fh:
                    if rel.endswith(".py"):
                        data = fh.read()
                        for word in set(_WORDS.findall(data)) & wanted.keys():
                            found[wanted[word]] += _lines_with(wanted[word], data, rel)
                        continue
                    with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
                        for word in set(_WORDS.findall(m)) & wanted.keys():
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
        kept = [(n, v) for n, v in self.names.items() if v or not _TOKEN.match(n)]
        names = dict(kept[-CACHED_NAMES:])
        # dumps, not dump: json.dump encodes in Python, dumps in C (several times faster)
        data = json.dumps({"files": self.files, "names": names, "tokens": self.tokens},
                          separators=(",", ":"))
        try:
            atomic_write(self.path, data.encode("utf-8"), durable=False)
        except OSError:
            pass

    def hits(self, name: str) -> list[Hit]:
        dist, version = str(self.dist.get("name", "")), str(self.dist.get("version", ""))
        return [Hit(name, dist, version, self._shown(str(rel)), line, str(kind), str(text))
                for rel, line, kind, text in self.names.get(name, ())]

    def _shown(self, path: str) -> str:
        """A checkout's file by its path in the checkout, as an installed one is shown."""
        if self.source and os.path.isabs(path):
            return os.path.relpath(path, self.source)
        return path


def _file_tokens(path: str, python: bool) -> set[str]:
    """The variable-shaped names a file holds: a ``.py`` file read whole, a shared library
    through ``mmap``, only its read-only data."""
    try:
        if python:
            with open(path, "rb") as fh:
                return tokens_in(fh.read())
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
            out: set[str] = set()
            for start, end in _rodata(m):
                out |= tokens_in(m, start, end)
            return out
    except (OSError, ValueError):  # unreadable, or empty (mmap refuses size 0)
        return set()


def _lines_with(name: str, data: bytes, rel: str) -> list[list[Any]]:
    """``[rel, line, kind, text]`` for each line of a ``.py`` file that names ``name`` as a
    whole word."""
    pattern = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")
    out: list[list[Any]] = []
    text = data.decode("utf-8", "replace")
    for number, line in enumerate(text.splitlines(), 1):
        if name in line and pattern.search(line):
            out.append([rel, number, classify(name, line), line.strip()[:160]])
    return out


def _in_library(path: str, names: Sequence[bytes]) -> list[bool]:
    """Whether each of ``names`` occurs in file ``path`` as a whole string (not inside a longer
    upper-case word)."""
    found = [False] * len(names)
    try:
        with open_regular(path) as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
            for k, name in enumerate(names):
                at = m.find(name)
                while at >= 0:
                    before = m[at - 1] if at else 0
                    after = m[at + len(name)] if at + len(name) < len(m) else 0
                    if before not in _KEEP and after not in _KEEP:
                        found[k] = True
                        break
                    at = m.find(name, at + 1)
    except (OSError, ValueError):  # unreadable, or empty (mmap refuses size 0)
        pass
    return found


def who_reads(
    names: str | Iterable[str],
    python: str | None = None,
    *,
    dists: Sequence[Mapping[str, Any]] | None = None,
    cache: bool = True,
    include_tests: bool = True,
) -> list[Hit]:
    """Every place the distributions of ``python`` declare, read or mention each of ``names``
    (a batch is answered in one pass), the package's own code first, by kind (declarations
    first), then tests, examples and benchmarks (:func:`in_tests`; left out unless
    ``include_tests``), then distribution, file and line.

    ``dists``: the distributions to search (default: :func:`distributions` of ``python``).
    """
    from runsnap.base.cache import cache_dir

    wanted = [names] if isinstance(names, str) else list(dict.fromkeys(names))
    folder = cache_dir() if cache else None
    out: list[Hit] = []
    for dist in (dists if dists is not None else distributions(python)):
        index = _Index(dist, folder)
        index.search(wanted)
        for name in wanted:
            if index.names.get(name):  # most names are read by no file of most distributions
                out += index.hits(name)
        index.save()
    rank = {k: i for i, k in enumerate(KINDS)}
    if not include_tests:
        out = [h for h in out if not in_tests(h.path)]
    out.sort(key=lambda h: (h.name, in_tests(h.path), rank.get(h.kind, 9), h.dist, h.path,
                            h.line or 0))
    return out
