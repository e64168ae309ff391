"""runsnap's six on-disk caches: the package probe's answer, program outputs, runsnap's own
files, scrubbed texts, clean texts and file hashes (the sha256 of model side files).

All exist for speed (runsnap sits in front of every launch) and all are checked, never trusted
blindly, before use:

* **Probe results** are keyed by the interpreter (its path and file identity), the working
  directory and the environment variables that shape ``sys.path``. A cached answer is used
  only while every directory on the recorded ``sys.path`` (and the user site directory, and the
  ``pyvenv.cfg`` beside the interpreter) has the same modification and change times and inode,
  and every ``.pth`` file in them is unchanged. Installing, upgrading or removing a distribution
  adds or removes an entry in its directory, which changes that directory's times: the same
  signal Python's own import system uses to cache directory listings. An interpreter that runs a
  ``sitecustomize`` or ``usercustomize`` module is never cached (such code can change
  ``sys.path`` in ways no file time shows), and neither is a script standing in for Python
  (pyenv's shims choose the interpreter at run time).
* **Program outputs** that cannot change while the program does (``gcc --version``, ``nvcc
  --version``, ``ldconfig -p``) are keyed by the command line and kept while the program file,
  every program a wrapper script names by absolute path (``exec /usr/local/cuda-13.0/bin/nvcc``), and any
  file the caller names (``/etc/ld.so.cache``) keep their size, times and inode.
* **runsnap's own files** (``--log`` files) are remembered by real path with their size, times
  and inode, and left out of a work tree's untracked files while all of them are unchanged.
* **Scrubbed texts**: a large text (a work tree's git diff) as the redactor left it, with where
  the secrets it found stand in the original (offsets, never the values). Keyed by the text's
  sha256 and all else the result depends on (:meth:`runsnap.redact.text.TextRedactor.scrub`);
  the newest :attr:`ScrubbedTexts.KEEP` are kept.
* **Clean texts**: digests (never the texts) of the small texts redaction's rules left as they
  were, under one set of rules and one policy (:class:`CleanTexts`): a capture of an unchanged
  environment searches none of them again.
* **File hashes** are keyed by the real path and used while size, modification time, change
  time and inode are all unchanged (the check git's index makes). The change time cannot be set
  back by tools such as ``touch``, so a rewritten file is always hashed again.

Every file is replaced atomically (:func:`~runsnap.base.atomic.atomic_write`, unsynced: a cache
lost in a crash is rebuilt). ``RUNSNAP_NO_CACHE=1`` turns them all off; ``RUNSNAP_CACHE_DIR``
moves them (default
``$XDG_CACHE_HOME/runsnap``, else ``~/.cache/runsnap``). A cache that cannot be read or written
is simply not used.
"""

from __future__ import annotations

import json
import os

from runsnap.base.atomic import atomic_write
from runsnap.base.digest import sha256
from runsnap.base.files import open_regular, read_head
from runsnap.base.probeanswer import checked

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["CleanTexts", "HashCache", "OutputCache", "ScrubbedTexts", "cache_dir", "file_stamp",
           "load_probe", "probe_cacheable", "probe_key", "program_stamp", "store_probe"]

#: The variables that change what ``sys.path`` an interpreter starts with.
PATH_VARIABLES = ("PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONUSERBASE",
                  "PYTHONSAFEPATH", "PYTHONPLATLIBDIR", "HOME")
#: Bumped whenever what is cached, or how it is checked, changes.
FORMAT = 1
_HASH_CACHE_MAX = 4096


def cache_dir(env: Mapping[str, str] | None = None) -> str | None:
    """Where runsnap keeps its caches, or None when caching is turned off."""
    env = os.environ if env is None else env
    if env.get("RUNSNAP_NO_CACHE", "").strip() not in ("", "0"):
        return None
    if env.get("RUNSNAP_CACHE_DIR"):
        return env["RUNSNAP_CACHE_DIR"]
    # the HOME of ``env`` (a recorded capture's, another shell's), as its XDG_CACHE_HOME is
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"),
                                                     ".cache")
    return os.path.join(base, "runsnap")


def file_stamp(path: str) -> list[int] | None:
    """What changes when ``path`` (a file or a folder) changes: its times, inode and size;
    ``None`` when it does not exist."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_size]


def probe_cacheable(interpreter: str) -> bool:
    """Whether a probe answer for ``interpreter`` may be cached: only for a real executable.

    A script standing in for Python (pyenv's shims, wrapper scripts) picks the interpreter it
    runs at run time, from variables and files (``PYENV_VERSION``, ``.python-version``) that
    no stamp covers, so its answers are never kept.
    """
    try:
        return read_head(interpreter, 2) != b"#!"
    except OSError:
        return False


def probe_key(interpreter: str, cwd: str, env: Mapping[str, str], source: str) -> str:
    """The cache key of one probe: which interpreter, where, with what path settings."""
    parts = [FORMAT, sha256(source.encode()).hexdigest(), interpreter,
             os.path.realpath(interpreter), file_stamp(interpreter), cwd,
             [env.get(name) for name in PATH_VARIABLES]]
    return str(sha256(json.dumps(parts).encode()).hexdigest()[:32])


def _stamps(result: Mapping[str, Any], cwd: str) -> dict[str, list[int] | None]:
    """What must stay the same for ``result`` (a :func:`~runsnap.base.probeanswer.checked`
    answer) to hold: directories, .pth files, pyvenv.cfg."""
    dirs = {os.path.join(cwd, p) if p else cwd for p in result["sys_path"]}
    if result["user_site"]:
        dirs.add(result["user_site"])
    stamps: dict[str, list[int] | None] = {}
    for d in sorted(dirs):
        stamps[d] = file_stamp(d)
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for name in names:
            if name.endswith(".pth"):
                full = os.path.join(d, name)
                stamps[full] = file_stamp(full)
    # The build files the probe read (torch/version.py ...) and the folders it listed: a source
    # checkout rebuilt in place changes them without touching any sys.path directory.
    for module in result["modules"].values():
        for name in [*module["files"], *module["lists"]]:
            full = os.path.normpath(os.path.join(module["dir"], name))
            stamps[full] = file_stamp(full)
    for folder in result["nvidia"]:
        stamps[folder["dir"]] = file_stamp(folder["dir"])
    prefix = result["prefix"]
    if prefix:
        cfg = os.path.join(prefix, "pyvenv.cfg")
        stamps[cfg] = file_stamp(cfg)
    return stamps


def _path(kind: str, key: str, env: Mapping[str, str] | None = None) -> str | None:
    base = cache_dir(env)
    return None if base is None else os.path.join(base, f"{kind}-{key}.json")


def load_probe(key: str, cwd: str) -> dict[str, Any] | None:
    """The cached probe answer for ``key`` (run in ``cwd``) when it still holds, else None."""
    path = _path("probe", key)
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            entry = json.load(fh)
        # a file anything may have written: an answer the probe does not give is probed again
        result, stamps = checked(entry["result"]), entry["stamps"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if _stamps(result, cwd) != stamps:
        return None
    return result


def store_probe(key: str, cwd: str, result: Mapping[str, Any], started_ns: int) -> None:
    """Keep a probe answer that began at ``started_ns`` (``time.time_ns()``).

    Nothing is kept for a customised interpreter, a probe that reported errors, or when any
    stamped file or directory changed after the probe began (an install racing the probe: the
    answer might predate the change that the stamps already show).
    """
    if result["customized"] or result["errors"]:
        return
    path = _path("probe", key)
    if path is None:
        return
    stamps = _stamps(result, cwd)
    if any(st is not None and max(st[0], st[1]) >= started_ns for st in stamps.values()):
        return
    _write_json(path, {"result": result, "stamps": stamps})


def _write_json(path: str, data: Any) -> None:
    """Write atomically (a temporary file renamed into place); errors are ignored."""
    _write_text(path, json.dumps(data))


def _write_text(path: str, text: str) -> bool:
    """Write ``text`` atomically (:func:`~runsnap.base.atomic.atomic_write`, not synced: a cache
    lost in a crash is rebuilt); whether it was written (an error, or a lone surrogate no file
    can hold, leaves nothing)."""
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        atomic_write(path, text.encode("utf-8", "surrogateescape"), durable=False)
        return True
    except (OSError, UnicodeError):
        return False


def program_stamp(program: str, *files: str) -> list[Any]:
    """What must stay the same for a program's answer to hold: the program's real file, the
    programs a wrapper script names by absolute path, and ``files``."""
    real = os.path.realpath(program)
    stamp: list[Any] = [real, file_stamp(real)]
    try:
        head = read_head(real, 4096)
    except OSError:
        head = b""
    if head.startswith(b"#!"):
        for word in head.decode("utf-8", "replace").replace('"', " ").replace("'", " ").split():
            if word.startswith("/") and os.path.isfile(word) and os.access(word, os.X_OK):
                target = os.path.realpath(word)
                stamp += [target, file_stamp(target)]
    for extra in files:
        stamp += [extra, file_stamp(extra)]
    return stamp


class _JsonCache:
    """A JSON file of entries in the cache folder, read on first use, written back by
    :meth:`flush` when something was added; a subclass names its file with ``KIND``."""

    KIND = ""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._path = _path(self.KIND, f"v{FORMAT}", env)
        self._entries: dict[str, list[Any]] | None = None
        self._dirty = False

    def _load(self) -> dict[str, list[Any]]:
        if self._entries is None:
            self._entries = {}
            if self._path is not None:
                try:
                    with open(self._path, encoding="utf-8") as fh:
                        data = json.load(fh)
                    if isinstance(data, dict):
                        self._entries = data
                except (OSError, ValueError):
                    pass
        return self._entries

    def flush(self) -> None:
        """Write new entries back (keeping the newest ``_HASH_CACHE_MAX``)."""
        if not self._dirty or self._path is None or self._entries is None:
            return
        entries = self._entries
        if len(entries) > _HASH_CACHE_MAX:
            entries = dict(list(entries.items())[-_HASH_CACHE_MAX:])
        _write_json(self._path, entries)
        self._dirty = False


class OutputCache(_JsonCache):
    """What programs printed, remembered while :func:`program_stamp` stays the same."""

    KIND = "outputs"

    def get(self, key: str, stamp: list[Any]) -> str | None:
        """The output kept under ``key`` when its stamp is ``stamp``, else None."""
        entry = self._load().get(key)
        if isinstance(entry, list) and len(entry) == 2 and entry[0] == stamp:
            return str(entry[1])
        return None

    def put(self, key: str, stamp: list[Any], output: str) -> None:
        """Keep ``output`` under ``key`` (not when caching is off or the stamp is incomplete)."""
        if self._path is None or any(part is None for part in stamp):
            return
        self._load()[key] = [stamp, output]
        self._dirty = True


class HashCache(_JsonCache):
    """sha256 of files, remembered while a file's size, times and inode stay the same."""

    KIND = "hashes"

    def sha256(self, path: str) -> str:
        """The sha256 of the file at ``path`` (from the cache while the file is unchanged)."""
        real = os.path.realpath(path)
        stamp = file_stamp(real)
        entries = self._load()
        cached = entries.get(real)
        if stamp is not None and cached is not None and cached[:4] == stamp:
            return str(cached[4])
        digest = _sha256_file(real)
        if stamp is not None and self._path is not None:
            entries[real] = [*stamp, digest]
            self._dirty = True
        return digest


class OwnFiles(_JsonCache):
    """Files runsnap wrote besides its snapshots (``--log`` files), remembered with their size,
    times and inode: a capture leaves them out of a work tree's untracked files, as it leaves
    out its snapshots, so one run's log never makes the next run differ. A file changed since
    (by anything but runsnap) is not runsnap's any more."""

    KIND = "own"

    def record(self, path: str) -> None:
        """Remember the file at ``path`` as it is now, and write the list back."""
        real = os.path.realpath(path)
        stamp = file_stamp(real)
        if stamp is not None and self._path is not None:
            self._load()[real] = stamp
            self._dirty = True
            self.flush()

    def holds(self, path: str) -> bool:
        """Whether the file at ``path`` is one runsnap wrote, unchanged since."""
        real = os.path.realpath(path)
        entry = self._load().get(real)
        return entry is not None and entry == file_stamp(real)


class ScrubbedTexts:
    """Large texts as redaction left them, so a capture of an unchanged work tree does not
    search its diff for secrets again. An entry holds the scrubbed text and the (start,
    length) of every secret found in the original, which the redactor fingerprints again
    from the original to remember them; no secret is ever written here."""

    KIND = "scrubbed"
    KEEP = 8
    """Entries kept: the newest (a few work trees, a few states each)."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._base = cache_dir(env)

    def get(self, key: str) -> tuple[str, list[tuple[int, int]]] | None:
        """The scrubbed text and secrets' places kept under ``key``, or None."""
        if self._base is None:
            return None
        try:
            with open(self._path(key), encoding="utf-8", errors="surrogateescape") as fh:
                head, newline, text = fh.read().partition("\n")
            spans = [(int(a), int(n)) for a, n in json.loads(head)["spans"]]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return (text, spans) if newline else None

    def put(self, key: str, text: str, spans: list[tuple[int, int]]) -> None:
        """Keep ``text`` (already scrubbed) under ``key``; drop the oldest beyond KEEP.

        The file is one line of JSON (the places) and then the text as it is, which reads
        back several times faster than the text as a JSON string."""
        if self._base is None:
            return
        if not _write_text(self._path(key), json.dumps({"spans": spans}) + "\n" + text):
            return
        _keep_newest(self._base, f"{self.KIND}-", ".txt", self.KEEP)

    def _path(self, key: str) -> str:
        assert self._base is not None
        return os.path.join(self._base, f"{self.KIND}-{key}.txt")


class CleanTexts:
    """The texts redaction's rules leave as they are, remembered between captures by digest.

    A capture meets the same few hundred small texts each time (variables, package names and
    paths, the host's facts), and searching each for every secret shape was a fifth of a
    capture's own work, with the token rules' compilation. Only the first 16 bytes of each
    text's sha256 are written, never a text, under a key for everything the search depends on
    (:meth:`runsnap.redact.text.TextRedactor.scrub`: runsnap's version and rule files, the
    fingerprint key, the ``--redact``/``--keep`` policy); another key starts afresh. A text
    that held a secret is never recorded: it is searched every time.

    Each key has a file of its own, and the newest :attr:`KEEP` are kept: captures under two
    keys in turn (two projects with their own ``--redact`` settings, two runsnap versions on
    one machine) would otherwise each find the other's file and search every text again.
    """

    KIND = "clean"
    MAX = 20_000
    """Digests kept at most under one key (past that, only the last capture's)."""
    KEEP = 8
    """Keys kept: the newest (a few projects' policies, a few runsnap versions)."""
    _SIZE = 16

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._base = cache_dir(env)
        self._key = b""
        self._held: set[bytes] = set()
        self._new: set[bytes] = set()

    def open(self, key: str) -> None:
        """Use the texts recorded under ``key`` (none when nothing was, or its file was dropped
        for newer keys')."""
        self._key, self._held, self._new = key.encode(), set(), set()
        if self._base is None:
            return
        try:
            with open(self._path(), "rb") as fh:
                head, _, body = fh.read().partition(b"\n")
        except OSError:
            return
        if head == self._key and len(body) % self._SIZE == 0:
            size = self._SIZE
            self._held = {body[i:i + size] for i in range(0, len(body), size)}

    def holds(self, text: str, kind: str = "") -> bool:
        """Whether ``text`` was left as it was under this key (``kind``: another question
        asked of a text, answered the same way: ``credential``, not shaped like one)."""
        if not (self._held or self._new):
            return False
        digest = _text_digest(kind, text)
        return digest in self._held or digest in self._new

    def add(self, text: str, kind: str = "") -> None:
        """Record that the rules left ``text`` as it was (or answered ``kind`` with no)."""
        digest = _text_digest(kind, text)
        if digest not in self._held:
            self._new.add(digest)

    def save(self) -> None:
        """Write what was added since :meth:`open` (nothing when nothing was)."""
        if self._base is None or not self._key or not self._new:
            return
        kept = self._held | self._new
        if len(kept) > self.MAX:
            kept = self._new
        try:
            os.makedirs(self._base, mode=0o700, exist_ok=True)
            atomic_write(self._path(), self._key + b"\n" + b"".join(sorted(kept)),
                         durable=False)
        except OSError:
            return
        self._held, self._new = kept, set()
        # the newest KEEP keys' files (and none of the single file older versions wrote)
        _keep_newest(self._base, f"{self.KIND}-", ".bin", self.KEEP)

    def _path(self) -> str:
        """This key's file, named by the key's digest (the file's first line holds the key
        itself, checked on reading)."""
        assert self._base is not None
        return os.path.join(self._base, f"{self.KIND}-{sha256(self._key).hexdigest()[:24]}.bin")


def _text_digest(kind: str, text: str) -> bytes:
    data = f"{kind}\0{text}".encode("utf-8", "surrogateescape")
    return bytes(sha256(data).digest()[:16])


def _sha256_file(path: str) -> str:
    import hashlib  # OpenSSL's: several times faster on files of megabytes

    h = hashlib.sha256()
    with open_regular(path) as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _keep_newest(folder: str, prefix: str, suffix: str, keep: int) -> None:
    """Remove all but the ``keep`` newest files ``PREFIX*SUFFIX`` in ``folder`` (best effort:
    a cache that cannot be trimmed is only larger)."""
    try:
        mine = [os.path.join(folder, n) for n in os.listdir(folder)
                if n.startswith(prefix) and n.endswith(suffix)]
        mine.sort(key=lambda p: os.stat(p).st_mtime_ns, reverse=True)
        for old in mine[keep:]:
            os.unlink(old)
    except OSError:
        pass
