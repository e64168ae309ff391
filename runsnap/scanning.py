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

Speed: the first search of a distribution reads each of its files once and caches, per
distribution and version, an index of the upper-case tokens of its ``.py`` files (token ->
files) and, per name, the shared libraries that hold it; later searches read only the few files
the index names. The cache lives in runsnap's cache folder (``RUNSNAP_CACHE_DIR``), keyed by
the distribution's name, version and location; ``RUNSNAP_NO_CACHE=1`` turns it off.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import re
from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

__all__ = ["KINDS", "Hit", "classify", "distributions", "render", "who_reads"]

#: Every :attr:`Hit.kind`, strongest first.
KINDS = ("declaration", "read", "mention", "library")

#: Bumped whenever the index format or what it holds changes.
INDEX_FORMAT = 1

_KEEP = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_TOKENS = bytes(c if c in _KEEP else 32 for c in range(256))
_LIBRARY = re.compile(r"\.so(\.[0-9]+)*$|\.dylib$")
_ENV_WORDS = re.compile(r"environ|getenv|[Ee]nv[A-Za-z_]*\s*\(|get_env|env_|_env\b|ENV\[")


@dataclass(frozen=True)
class Hit:
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
    ``metadata_dir``). Raises :class:`~runsnap.errors.UsageError` for a bad interpreter."""
    from runsnap.capturing import build_context
    from runsnap.capturing.context import check_python
    from runsnap.errors import UsageError

    cwd = cwd or os.getcwd()
    env = dict(os.environ if env is None else env)
    if python:
        python = check_python(python, cwd, env)
    ctx = build_context((), env=env, cwd=cwd, python=python)
    probe = ctx.probe
    if "error" in probe:
        raise UsageError(str(probe["error"]))
    return [d for d in probe.get("distributions", []) if d.get("location")]


def _record_files(location: str, metadata_dir: str) -> list[str]:
    """The files a distribution installed (``RECORD``), relative to its location."""
    out: list[str] = []
    record = os.path.join(location, metadata_dir, "RECORD")
    try:
        with open(record, encoding="utf-8", errors="surrogateescape") as fh:
            for line in fh:
                path = line.rsplit(",", 2)[0] if line.count(",") >= 2 else line.strip()
                if path.startswith('"') and path.endswith('"'):
                    path = path[1:-1]
                if path.endswith(".py") or _LIBRARY.search(path):
                    out.append(path)
    except OSError:
        pass
    return out


class _Index:
    """One distribution's index: upper-case tokens of its ``.py`` files -> files, and, per
    name searched, the shared libraries that hold it."""

    def __init__(self, dist: Mapping[str, Any], cache: str | None) -> None:
        self.dist = dist
        self.location = str(dist["location"])
        key = f"{dist.get('name')}\0{dist.get('version')}\0{self.location}\0{INDEX_FORMAT}"
        digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:24]
        self.path = os.path.join(cache, "who-reads", f"{digest}.json") if cache else None
        self.files: list[str] = []
        self.tokens: dict[str, list[int]] = {}
        self.libraries: dict[str, list[str]] = {}
        self.loaded = self._load()
        self.changed = False

    def _load(self) -> bool:
        if self.path is None:
            return False
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
            self.files, self.tokens = data["files"], data["tokens"]
            self.libraries = data["libraries"]
            return True
        except (OSError, ValueError, KeyError, TypeError):
            return False

    def build(self, names: Sequence[str]) -> None:
        """Read every file once: the token index, and the names' shared libraries."""
        self.files = _record_files(self.location, str(self.dist.get("metadata_dir", "")))
        wanted = [n.encode() for n in names]
        for i, rel in enumerate(self.files):
            full = os.path.join(self.location, rel)
            if rel.endswith(".py"):
                try:
                    with open(full, "rb") as fh:
                        data = fh.read()
                except OSError:
                    continue
                for tok in set(data.translate(_TOKENS).split()):
                    if len(tok) > 2 and 65 <= tok[0] <= 90:
                        self.tokens.setdefault(tok.decode("ascii"), []).append(i)
            else:
                for name, found in zip(names, _in_library(full, wanted), strict=True):
                    if found:
                        self.libraries.setdefault(name, []).append(rel)
        for name in names:
            self.libraries.setdefault(name, [])
        self.changed = True

    def libraries_for(self, name: str) -> list[str]:
        if name not in self.libraries:
            libs = [rel for rel in self.files if not rel.endswith(".py")]
            self.libraries[name] = [rel for rel in libs if _in_library(
                os.path.join(self.location, rel), [name.encode()])[0]]
            self.changed = True
        return self.libraries[name]

    def save(self) -> None:
        if not self.changed or self.path is None:
            return
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump({"files": self.files, "tokens": self.tokens,
                           "libraries": self.libraries}, fh, separators=(",", ":"))
            os.replace(tmp, self.path)
        except OSError:
            pass

    def hits(self, name: str) -> list[Hit]:
        dist, version = str(self.dist.get("name", "")), str(self.dist.get("version", ""))
        out: list[Hit] = []
        if name.encode("utf-8", "replace").translate(_TOKENS) == name.encode("utf-8", "replace") \
                and 65 <= ord(name[0]) <= 90:
            candidates: Iterable[int] = self.tokens.get(name, ())
        else:  # a name the index does not hold (lower case: http_proxy): read every file
            candidates = [i for i, rel in enumerate(self.files) if rel.endswith(".py")]
        for i in candidates:
            rel = self.files[i]
            try:
                with open(os.path.join(self.location, rel), encoding="utf-8",
                          errors="replace") as fh:
                    lines = fh.read().splitlines()
            except OSError:
                continue
            pattern = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")
            for number, line in enumerate(lines, 1):
                if name in line and pattern.search(line):
                    out.append(Hit(name, dist, version, rel, number, classify(name, line),
                                   line.strip()[:160]))
        out += [Hit(name, dist, version, rel, None, "library")
                for rel in self.libraries_for(name)]
        return out


def _in_library(path: str, names: Sequence[bytes]) -> list[bool]:
    """Whether each of ``names`` occurs in file ``path`` as a whole string (not inside a longer
    upper-case word)."""
    found = [False] * len(names)
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
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
) -> list[Hit]:
    """Every place the distributions of ``python`` declare, read or mention each of ``names``,
    ordered by kind (declarations first), then distribution, file and line.

    ``dists``: the distributions to search (default: :func:`distributions` of ``python``).
    """
    from runsnap.cache import cache_dir

    wanted = [names] if isinstance(names, str) else list(dict.fromkeys(names))
    folder = cache_dir() if cache else None
    out: list[Hit] = []
    for dist in (dists if dists is not None else distributions(python)):
        index = _Index(dist, folder)
        if not index.loaded:
            index.build(wanted)
        for name in wanted:
            out += index.hits(name)
        index.save()
    rank = {k: i for i, k in enumerate(KINDS)}
    out.sort(key=lambda h: (h.name, rank.get(h.kind, 9), h.dist, h.path, h.line or 0))
    return out


def render(hits: Sequence[Hit], fmt: str = "text") -> str:
    """``text``: one line a place, ``distribution  path/file.py:line  kind`` in columns (with
    the variable's name first when the hits are for several); ``json``:
    ``{"format": "runsnap-who-reads/1", "hits": [...]}``.

    >>> print(render([Hit("X", "pkg", "1.0", "pkg/env.py", 3, "declaration", "X = EnvBool(0)"),
    ...               Hit("X", "pkg", "1.0", "pkg/lib/libx.so", None, "library")]), end="")
    pkg 1.0  pkg/env.py:3     declaration
    pkg 1.0  pkg/lib/libx.so  library
    """
    if fmt == "json":
        return json.dumps({"format": "runsnap-who-reads/1", "hits": [h.to_dict() for h in hits]},
                          indent=2, ensure_ascii=False) + "\n"
    several = len({h.name for h in hits}) > 1
    rows = [((h.name,) if several else ()) + (
        f"{h.dist} {h.version}", h.path if h.line is None else f"{h.path}:{h.line}", h.kind)
        for h in hits]
    if not rows:
        return ""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "".join("  ".join(f"{cell:<{w}}" for cell, w in zip(r, widths, strict=False))
                   + f"  {r[-1]}\n" for r in rows)
