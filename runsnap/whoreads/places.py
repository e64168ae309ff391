"""What a place that names a variable is (:class:`Hit`, its kind by :func:`classify`), and how
the names shaped like environment variables are found in a file: a ``.py`` file's text, a
shared library's read-only data."""

from __future__ import annotations

import mmap
import os
import re
import struct

from runsnap.base.files import open_regular
from runsnap.base.records import FrozenRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


#: Every :attr:`Hit.kind`, strongest first: a string in a shared library is most often a
#: ``getenv`` of native code, stronger evidence than a mention in a message or a comment.
KINDS = ("declaration", "read", "library", "mention")
#: A name the index holds: upper case, digits and underscores, with an underscore.
TOKEN = re.compile(r"^[A-Z][A-Z0-9]*_[A-Z0-9_]*$")
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
MANY_NAMES = 16
WORD = re.compile(r"[A-Za-z0-9_]+")
WORDS = re.compile(rb"[A-Za-z0-9_]+")
_KEEP = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
LIBRARY = re.compile(r"\.so(\.[0-9]+)*$|\.dylib$")
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


def file_tokens(path: str, python: bool) -> set[str]:
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


def lines_with(name: str, data: bytes, rel: str) -> list[list[Any]]:
    """``[rel, line, kind, text]`` for each line of a ``.py`` file that names ``name`` as a
    whole word."""
    pattern = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")
    out: list[list[Any]] = []
    text = data.decode("utf-8", "replace")
    for number, line in enumerate(text.splitlines(), 1):
        if name in line and pattern.search(line):
            out.append([rel, number, classify(name, line), line.strip()[:160]])
    return out


def in_library(path: str, names: Sequence[bytes]) -> list[bool]:
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
